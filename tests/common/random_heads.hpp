// Fresh random Q, K, V for every batch·head of a problem (K and V per batch·K/V head), in the problem's
// dtype (values rounded to it), for tests that run a tile program functionally and compare with exact
// attention. Shared by the functional and simulator tests.
#pragma once

#include <cstdint>

#include "exec/problem_inputs.hpp"

namespace fasim::test {

using HeadInputs = ProblemInputs;

// Head h is drawn from seed + h * 7919.
inline HeadInputs random_heads(const AttentionProblem& p, std::uint64_t seed) { return random_inputs(p, seed, 7919); }

}  // namespace fasim::test
