// Storage precisions, bit-exact: IEEE binary16 (fp16) and bfloat16 (bf16) rounding with
// round-to-nearest, ties to even — what __float2half_rn / __float2bfloat16_rn do on a GPU for
// every non-NaN input.
//
//   fp16: 1 sign, 5 exponent, 10 fraction bits. Largest finite 65504; values >= 65520 in
//         magnitude (the midpoint between 65504 and 2^16) round to inf. Subnormals down
//         to 2^-24 are kept; magnitudes <= 2^-25 round to a signed zero.
//   bf16: 1 sign, 8 exponent, 7 fraction bits: the top half of an fp32. Same range as fp32
//         (subnormals kept). Largest finite 0x1.fcp127 (~3.39e38); values >= 0x1.fep127 in
//         magnitude (the midpoint to 2^128) round to inf.
//   NaN stays NaN (made quiet, sign and top payload bits kept; a GPU may return its own
//   canonical NaN pattern instead); inf stays inf.
//
// Also here: the naive attention of a plain GPU implementation in a given precision (the
// yardstick of TOLERANCES.md) and the tolerance rule itself, so every test applies it
// the same way.
#pragma once

#include <cstdint>

#include "attention_reference.hpp"
#include "problem/dtype.hpp"

namespace fasim::reference {

using MatrixF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// ---- bit patterns -------------------------------------------------------------------
std::uint16_t float_to_fp16_bits(float x);   // round to nearest, ties to even
float fp16_bits_to_float(std::uint16_t h);   // exact
std::uint16_t float_to_bf16_bits(float x);   // round to nearest, ties to even
float bf16_bits_to_float(std::uint16_t b);   // exact

// ---- rounding to a storage dtype ------------------------------------------------------
// round_to(fp32, x) == x; round_to(fp16, x) == fp16_bits_to_float(float_to_fp16_bits(x)).
float round_to(DType dtype, float x);

// Round every element of a float matrix to the dtype (result still stored as float).
MatrixF round_matrix(const MatrixF& A, DType dtype);
// Round every element of a double matrix: first to fp32 (nearest), then to the dtype — the
// path a value takes on a GPU that computes in fp32 and stores in the dtype. The result is
// exactly representable in the dtype.
Matrix round_matrix(const Matrix& A, DType dtype);
// True when every element of A is exactly representable in the dtype (inf counts; NaN not).
bool representable(const Matrix& A, DType dtype);

// Machine epsilon (spacing of the dtype just above 1): fp32 2^-23, fp16 2^-10, bf16 2^-7.
// The unit roundoff of round-to-nearest is half of it.
double machine_epsilon(DType dtype);

// ---- naive attention in a precision ---------------------------------------------------
// What a plain (unfused, three-kernel) GPU implementation computes when tensors are stored
// in `dtype` and arithmetic is fp32:
//   S = scale * Q K^T   fp32 accumulation (k = 0..d-1 in order), then stored in the dtype
//   P = softmax(S)      fp32 on the stored S: row max, exp(S - max), sum, divide; masked
//                       entries are 0; then P stored in the dtype
//   O = P V             fp32 accumulation (j = 0..Nk-1 in order), then stored in the dtype
// Inputs must already be representable in the dtype (see round_matrix); they are rounded
// again defensively, which changes nothing for representable inputs. Returns O as float64.
// Rows that see no key give O = 0. For dtype == fp32 this is plain fp32 attention.
Matrix naive_attention_in_precision(const Matrix& Q, const Matrix& K, const Matrix& V,
                                    const AttentionOptions& options, DType dtype);

// ---- the tolerance rule (TOLERANCES.md) ---------------------------------------------
// An algorithm's output O_alg, computed from inputs representable in `dtype`, passes when
//
//   max|O_alg - O_exact| <= 2 * max|O_naive - O_exact| + floor,
//   floor = machine_epsilon(dtype) * max|O_exact|  +  E_S,
//   E_S   = max over (i, c) of  sum_j P_ij * u32 * A_ij * |V_jc - O_exact_ic|,
//
// where O_exact = exact_attention(...).O, O_naive = naive_attention_in_precision(..., dtype),
// P the exact probabilities, A_ij = |scale| * sum_k |Q_ik| |K_jk| (the size of the terms of
// logit (i, j)) and u32 = 2^-24. NaN or inf anywhere in O_alg fails. When O_naive itself holds inf or
// NaN (its stored S overflowed the dtype: |scale q.k| >= overflow_threshold(dtype)), the bound is the
// floor alone, so an exact answer still passes. See TOLERANCES.md for why.
inline constexpr double kToleranceFactor = 2.0;

struct ToleranceCheck {
    double error = 0;        // max|O_alg - O_exact|
    double naive_error = 0;  // max|O_naive - O_exact|; +inf when naive_overflow
    double output_ulp = 0;   // machine_epsilon(dtype) * max|O_exact|
    double logit_term = 0;   // E_S
    double floor = 0;        // output_ulp + logit_term
    double bound = 0;        // kToleranceFactor * naive_error + floor; floor alone when naive_overflow
    bool naive_overflow = false;  // O_naive holds inf or NaN: its stored S (or P, O) overflowed the dtype, so
                                  // it gives no error scale and the bound is the floor (TOLERANCES.md)
    bool pass = false;
};

// The largest |scale * q_i . k_j| over the visible (i, j), in float64: where it reaches
// overflow_threshold(dtype), an algorithm that stores S in the dtype (standard attention, the naive
// yardstick) gets inf in S and NaN in O, as a GPU does. 0 when no key is visible.
double max_abs_logit(const Matrix& Q, const Matrix& K, const AttentionOptions& options);
// The smallest magnitude that rounds to inf when stored in the dtype: 65520 (fp16), 0x1.fep127 (bf16),
// the fp32 one (2^128 - 2^103) for fp32.
double overflow_threshold(DType dtype);

// E_S above: how far fp32 rounding of the logits (one unit roundoff of the size of their
// terms) moves O, to first order. `exact` must be exact_attention(Q, K, V, options).
double logit_rounding_term(const Matrix& Q, const Matrix& K, const Matrix& V,
                           const AttentionOptions& options, const AttentionResult& exact);

// The rule from its parts (for callers that already hold O_exact, O_naive and E_S).
ToleranceCheck check_tolerance(const Matrix& O_alg, const Matrix& O_exact, const Matrix& O_naive,
                               double logit_term, DType dtype);
// The rule from the inputs: computes O_exact, O_naive and E_S itself.
ToleranceCheck check_tolerance(const Matrix& O_alg, const Matrix& Q, const Matrix& K,
                               const Matrix& V, const AttentionOptions& options, DType dtype);

// LSE (kept in fp32 by every algorithm, whatever the storage dtype). Row i passes when
//   LSE_exact_i = -inf:  LSE_alg_i == -inf exactly;
//   otherwise:           |LSE_alg_i - LSE_exact_i| <= 8 * u32 * (|LSE_exact_i| + sum_j P_ij A_ij + 1).
Vector lse_tolerance(const Matrix& Q, const Matrix& K, const AttentionOptions& options,
                     const AttentionResult& exact);  // per row; 0 for rows that see no key

struct LseCheck {
    double max_error = 0;    // max over finite rows of |LSE_alg - LSE_exact|
    double worst_ratio = 0;  // max over finite rows of error / tolerance
    long first_bad_row = -1; // -1 when every row passes
    bool pass = false;
};
LseCheck check_lse(const Vector& lse_alg, const Matrix& Q, const Matrix& K,
                   const AttentionOptions& options, const AttentionResult& exact);

}  // namespace fasim::reference
