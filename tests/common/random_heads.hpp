// Fresh random Q, K, V for every batch·head of a problem (K and V per batch·K/V head), in the problem's
// dtype (values rounded to it), for tests that run a tile program functionally and compare with exact
// attention. Shared by the functional and simulator tests.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>

#include "exec/problem_inputs.hpp"

namespace fasim::test {

using HeadInputs = ProblemInputs;

// Head h is drawn from seed + h * 7919.
inline HeadInputs random_heads(const AttentionProblem& p, std::uint64_t seed) { return random_inputs(p, seed, 7919); }

// A seed drawn afresh for each test run (inputs no one tuned a test to), or FASIM_TEST_SEED to repeat one.
inline std::uint64_t test_seed() {
    if (const char* s = std::getenv("FASIM_TEST_SEED")) return std::strtoull(s, nullptr, 10);
    static const std::uint64_t seed = std::random_device{}();
    return seed;
}

}  // namespace fasim::test
