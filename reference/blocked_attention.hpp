// Teaching "answer keys": FlashAttention-1 and FlashAttention-2 written straight from the
// papers, as plain loops over blocks of Eigen matrices. They are NOT the simulator's tile
// programs (those live in sim/ and run on executors); they are what a student's hand-written
// version should look like, and an independent check that blocking + online softmax
// reproduce exact attention.
//
//   [FA1] Dao et al., "FlashAttention: Fast and Memory-Efficient Exact Attention with
//         IO-Awareness", 2022, Algorithm 1 (lines 1-16). Scale and masking as in its
//         Algorithm 2.
//   [FA2] Dao, "FlashAttention-2: Faster Attention with Better Parallelism and Work
//         Partitioning", 2023, Algorithm 1 (forward pass, lines 1-17), with causal block
//         skipping from its Section 3.1.1.
//
// Conventions (same as exact_attention): scale = 1/sqrt(d) unless given, bottom-right
// aligned causal mask, key padding, and a row that sees no key gives O = 0, LSE = -inf,
// never NaN. N and Nk need not be multiples of Br and Bc: the last blocks are short.
//
// Scalar is the arithmetic type (double by default; float shows fp32 rounding behaviour).
// Inputs and outputs are float64 matrices; inputs are converted to Scalar first.
#pragma once

#include <vector>

#include "attention_reference.hpp"

namespace fasim::reference {

// ---- online softmax of one row (Milakov & Gimelshein 2018; [FA1] Section 3.1) ----------
// State after each chunk of `chunk` consecutive entries:
//   m_new = max(m_old, max(chunk)),  l_new = exp(m_old - m_new) * l_old + sum exp(x - m_new).
struct OnlineSoftmaxStep {
    long begin = 0;          // chunk covers x[begin, end)
    long end = 0;
    double chunk_max = 0;    // max of the chunk (-inf if all of it is masked)
    double m = 0;            // running max after the chunk
    double l = 0;            // running sum of exp(x - m) after the chunk
    double correction = 0;   // exp(m_old - m_new) applied to the old l (1 when m unchanged;
                             // 1 by definition while both are -inf)
};

struct OnlineSoftmaxResult {
    Vector p;                              // softmax(x); all zeros if every entry is -inf
    double m = 0;                          // final max (-inf if every entry is -inf)
    double l = 0;                          // final sum of exp(x - m) (0 if all -inf)
    double lse = 0;                        // m + log(l) (-inf if all -inf)
    std::vector<OnlineSoftmaxStep> steps;  // one per chunk, in order
};

// Entries equal to -inf are masked (contribute 0). chunk >= 1.
OnlineSoftmaxResult online_softmax_row(const Vector& x, long chunk);

// ---- FlashAttention-1, [FA1] Algorithm 1 ------------------------------------------------
// Outer loop over K/V blocks j, inner loop over Q blocks i; O, l and m are "HBM" arrays that
// are read and written back on every (i, j) step (line 12's formula).
struct FlashAttention1Result {
    Matrix O;    // N x dv
    Vector l;    // N, the final row sums (0 for rows that see no key)
    Vector m;    // N, the final row maxima (-inf for rows that see no key)
    Vector lse;  // N, m + log(l)
};

template <typename Scalar = double>
FlashAttention1Result flash_attention_1(const Matrix& Q, const Matrix& K, const Matrix& V,
                                        const AttentionOptions& options, long Br, long Bc);

// ---- FlashAttention-2 forward, [FA2] Algorithm 1 -----------------------------------------
// Outer loop over Q blocks i, inner over K/V blocks j; unnormalised O rescaled by
// exp(m_old - m_new), divided by l once at the end; only LSE = m + log(l) is kept.
template <typename Scalar = double>
AttentionResult flash_attention_2(const Matrix& Q, const Matrix& K, const Matrix& V,
                                  const AttentionOptions& options, long Br, long Bc);

// Whether the K/V block [k0, k0+Bc) x Q block [q0, q0+Br) is entirely above the causal
// diagonal (every query row in the block sees none of its keys) and can be skipped, and
// whether it crosses the diagonal (must be masked element by element). Padding is separate.
bool causal_block_skipped(long q0, long q_rows, long k0, long k_cols, long N, long Nk);
bool causal_block_crosses(long q0, long q_rows, long k0, long k_cols, long N, long Nk);

extern template FlashAttention1Result flash_attention_1<double>(const Matrix&, const Matrix&,
                                                                const Matrix&,
                                                                const AttentionOptions&, long,
                                                                long);
extern template FlashAttention1Result flash_attention_1<float>(const Matrix&, const Matrix&,
                                                               const Matrix&,
                                                               const AttentionOptions&, long,
                                                               long);
extern template AttentionResult flash_attention_2<double>(const Matrix&, const Matrix&,
                                                          const Matrix&, const AttentionOptions&,
                                                          long, long);
extern template AttentionResult flash_attention_2<float>(const Matrix&, const Matrix&,
                                                         const Matrix&, const AttentionOptions&,
                                                         long, long);

}  // namespace fasim::reference
