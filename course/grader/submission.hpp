// What a student's tile program file includes: the tile API (the same one the built-in algorithms in
// sim/algorithms/ are written against) and FASIM_SUBMISSION, which hands the program to the grader.
//
//   void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) { ... }
//   FASIM_SUBMISSION("fa2_forward", program)
//
// The file is compiled into a grader executable (course/CMakeLists.txt: fasim_add_submission), whose
// main() runs the program on the functional and counting executors and writes results.json.
#pragma once

#include <string_view>

#include "algorithms/algorithm.hpp"
#include "algorithms/causal.hpp"
#include "tile/tile_program.hpp"

namespace fasim::course {

using TileProgram = void (*)(Executor&, const AttentionProblem&, const TileConfig&);

// Called once per FASIM_SUBMISSION, before main(); returns true so that it can initialise a constant.
bool register_submission(std::string_view assignment, TileProgram program);

}  // namespace fasim::course

#define FASIM_SUBMISSION(assignment, program)                                                        \
    namespace {                                                                                      \
    [[maybe_unused]] const bool fasim_submission_registered =                                        \
        ::fasim::course::register_submission(assignment, program);                                   \
    }
