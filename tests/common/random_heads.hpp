// Fresh random Q, K, V for every batch·head of a problem, in the problem's dtype (values rounded to
// it), for tests that run a tile program functionally and compare with exact attention.
// Shared by the functional and simulator tests.
#pragma once

#include <cstdint>
#include <vector>

#include "inputs.hpp"
#include "problem/attention_problem.hpp"

namespace fasim::test {

struct HeadInputs {
    std::vector<reference::Matrix> Q, K, V;
};

// Head h is drawn from seed + h * 7919.
inline HeadInputs random_heads(const AttentionProblem& p, std::uint64_t seed) {
    HeadInputs in;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        auto qkv = reference::random_qkv(p.N, p.Nk, p.d, seed + static_cast<std::uint64_t>(h) * 7919, p.dtype);
        in.Q.push_back(qkv.Q);
        in.K.push_back(qkv.K);
        in.V.push_back(qkv.V);
    }
    return in;
}

}  // namespace fasim::test
