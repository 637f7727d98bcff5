// Grades one tile program against one assignment: the functional executor runs it on fresh random
// inputs (drawn from the seed) and its outputs are checked against float64 attention with the
// dtype-aware rule of reference/TOLERANCES.md; the counting executor counts its HBM traffic, checked
// against the reference algorithm's closed form and against the reference program's own counts.
// The traffic tests score only once every numbers test passes: a program that computes the wrong
// thing gets no credit for moving few bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "assignments.hpp"
#include "submission.hpp"

namespace fasim::course {

struct GradedTest {
    std::string name;    // "O equals exact attention: ragged: N = Nk = 50"
    double score = 0, max_score = 0;
    std::string output;  // why it passed or failed, with the numbers
    bool passed() const { return score == max_score; }
};

struct Grade {
    std::string assignment;
    std::uint64_t seed = 0;
    std::vector<GradedTest> tests;
    double score() const;
    double max_score() const;
};

// A tile program: a C++ function, or (through the Python module) a Python callable.
using ProgramFn = std::function<void(Executor&, const AttentionProblem&, const TileConfig&)>;

Grade grade(const Assignment& assignment, const ProgramFn& program, std::uint64_t seed);

}  // namespace fasim::course
