// Seeded random inputs for a whole problem, in its dtype: Q for every batch·head, K and V for every
// batch·K/V head (grouped-query attention shares them). What fa-sim --trace, the lessons and the tests
// run the functional executor on.
#pragma once

#include <cstdint>
#include <vector>

#include "inputs.hpp"
#include "problem/attention_problem.hpp"

namespace fasim {

struct ProblemInputs {
    std::vector<reference::Matrix> Q;     // [B·H] of N x d
    std::vector<reference::Matrix> K, V;  // [B·KV] of Nk x d
    // K and V as query head bh reads them.
    const reference::Matrix& K_of(const AttentionProblem& p, std::int64_t bh) const {
        return K[static_cast<std::size_t>(p.kv_head_of(bh))];
    }
    const reference::Matrix& V_of(const AttentionProblem& p, std::int64_t bh) const {
        return V[static_cast<std::size_t>(p.kv_head_of(bh))];
    }
};

// Head h's Q, and K/V head h's K and V, are those reference::random_qkv draws from seed + h · head_stride
// (without grouping: one draw per head, as before K/V heads existed).
inline ProblemInputs random_inputs(const AttentionProblem& p, std::uint64_t seed, std::uint64_t head_stride = 1) {
    ProblemInputs in;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        auto qkv = reference::random_qkv(p.N, p.Nk, p.d, seed + static_cast<std::uint64_t>(h) * head_stride, p.dtype);
        in.Q.push_back(std::move(qkv.Q));
        if (h < p.batch_kv_heads()) {
            in.K.push_back(std::move(qkv.K));
            in.V.push_back(std::move(qkv.V));
        }
    }
    return in;
}

}  // namespace fasim
