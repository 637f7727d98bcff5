// Exact attention in float64: the answer every algorithm, executor and CUDA kernel
// is checked against. One head at a time; row-major [rows][d] matrices.
//
// Conventions shared by the whole product:
//   scale    softmax(scale * Q K^T) with scale = 1/sqrt(d) unless given.
//   causal   bottom-right aligned (as flash-attention >= 2.1): query i may see key j
//            iff j <= i + (Nk - N). With Nk < N the first N - Nk rows see no key.
//   padding  keys j >= key_length are masked (key_length < 0: no padding).
//   masked   a row that sees no key has O = 0 and LSE = -inf (never NaN).
//   LSE      logsumexp over the row of scale * S (natural log).
#pragma once

#include <Eigen/Dense>

namespace fasim::reference {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;

struct AttentionOptions {
    bool causal = false;
    long key_length = -1;  // keys at index >= key_length are padding; -1: none
    double scale = 0;      // 0: 1/sqrt(d)
};

struct AttentionResult {
    Matrix O;    // N x d
    Vector lse;  // N
};

// True when query row i may attend to key column j under the options above.
bool key_visible(long i, long j, long N, long Nk, const AttentionOptions& options);
double softmax_scale(long d, const AttentionOptions& options);

AttentionResult exact_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                const AttentionOptions& options = {});

}  // namespace fasim::reference
