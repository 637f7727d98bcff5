// The backward pass of attention in float64, and the yardstick the algorithms' gradients are held
// to. One head at a time; the conventions of attention_reference.hpp (scale, causal, padding,
// masked rows).
//
// With P = softmax(scale * Q K^T) and the output gradient dO:
//   dV = P^T dO,  dP = dO V^T,  D_i = sum_j P_ij dP_ij = rowsum(dO o O)_i,
//   dS = P o (dP - D),  dQ = scale * dS K,  dK = scale * dS^T Q.
// Masked entries have P = 0, so they contribute nothing; a row that sees no key has dQ = 0.
#pragma once

#include <cstdint>
#include <vector>

#include "attention_reference.hpp"
#include "problem/dtype.hpp"

namespace fasim::reference {

struct AttentionGradients {
    Matrix dQ;  // N x d
    Matrix dK;  // Nk x d
    Matrix dV;  // Nk x dv
};

AttentionGradients exact_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                            const AttentionOptions& options = {});

// What a plain GPU implementation computes when tensors are stored in `dtype` and arithmetic is fp32:
// the forward of naive_attention_in_precision (S, P and O stored in the dtype), then
//   dV = P^T dO, dP = dO V^T (stored), D = rowsum(P o dP) in fp32, dS = P o (dP - D) (stored),
//   dQ = scale dS K, dK = scale dS^T Q,
// every product accumulated in fp32 in order and stored in the dtype. Inputs must be representable
// in the dtype. Returns float64 copies.
AttentionGradients naive_attention_backward_in_precision(const Matrix& Q, const Matrix& K, const Matrix& V,
                                                         const Matrix& dO, const AttentionOptions& options, DType dtype);

// The rule for a gradient G_alg (dQ, dK or dV), as for the output (TOLERANCES.md): it passes when
//   max|G_alg - G_exact| <= 2 * max|G_naive - G_exact| + floor,
//   floor = machine_epsilon(dtype) * max|G_exact| + 16 * u32 * (1 + A_max) * T,
// with A_max = |scale| * max_ij sum_k |Q_ik| |K_jk| the size of the largest logit's terms: fp32
// rounding of the logits moves P, and with it every gradient, by about u32 * A relative to the size of
// what the gradient sums (u32 = 2^-24). T is that size, the largest entry of the gradient computed with
// every term's absolute value (gradient_term_sizes; at least max|G_exact|): a gradient can be 0 where
// its terms are not (with one key, dS = P (dP - D) = 0 and dQ = dK = 0, while an algorithm that forms D
// from O differs from dP in the last fp32 bit). term_size 0: T = max|G_exact|. NaN fails.
struct GradientCheck {
    double error = 0, naive_error = 0, floor = 0, bound = 0;
    bool pass = false;
};
GradientCheck check_gradient(const Matrix& G_alg, const Matrix& G_exact, const Matrix& G_naive, double logit_size,
                             DType dtype, double term_size = 0);

// The gradients with every term taken by its absolute value, in float64: dQ = scale |dS| |K|,
// dK = scale |dS|^T |Q|, dV = P^T |dO| with |dS| = P o (|dO| |V|^T + rowsum(|dO| o |O|)), dP = dO V^T and
// D = rowsum(dO o O) summed term by term in absolute value too. The sizes the rounding errors of the sums
// scale with.
AttentionGradients gradient_term_sizes(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                       const AttentionOptions& options = {});
// A_max above.
double largest_logit_terms(const Matrix& Q, const Matrix& K, const AttentionOptions& options);

// One head's three gradients, each checked with the rule above against the float64 backward and a
// naive backward in `dtype`, both computed here from the inputs.
struct GradientChecks {
    GradientCheck dQ, dK, dV;
    bool pass() const { return dQ.pass && dK.pass && dV.pass; }
};
GradientChecks check_gradients(const AttentionGradients& got, const Matrix& Q, const Matrix& K, const Matrix& V,
                               const Matrix& dO, const AttentionOptions& options, DType dtype);

// Grouped-query attention: query head h reads K/V head kv_head_of[h] (K, V one matrix per K/V head;
// Q, dO and the algorithm's dQ one per query head; its dK, dV one per K/V head). dQ of each query head is
// judged as above, with its group's K and V. dK and dV of a K/V head are the sums over its query heads, held
// to the rule for that sum (TOLERANCES.md, "Grouped K/V heads"): the exact gradient is the sum of their
// float64 gradients, the naive one the sum of their naive backwards rounded to the dtype, and the floor the
// sum of their floors. With one query head per K/V head this is check_gradients head by head.
struct GroupedGradientChecks {
    std::vector<GradientCheck> dQ;      // per query head
    std::vector<GradientCheck> dK, dV;  // per K/V head
    bool pass() const;
};
GroupedGradientChecks check_grouped_gradients(const std::vector<Matrix>& dQ, const std::vector<Matrix>& dK,
                                              const std::vector<Matrix>& dV, const std::vector<Matrix>& Q,
                                              const std::vector<Matrix>& K, const std::vector<Matrix>& V,
                                              const std::vector<Matrix>& dO, const std::vector<std::int64_t>& kv_head_of,
                                              const AttentionOptions& options, DType dtype);

}  // namespace fasim::reference
