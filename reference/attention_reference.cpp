// Exact attention in float64 (see attention_reference.hpp for the conventions).
//
// One pass per query row: collect the visible logits x_j = scale * <q_i, k_j>, subtract
// the row maximum before exponentiating (so exp never overflows, even for |x| ~ 1e4),
// normalise, and combine the value rows. A row with no visible key gets O = 0 and
// LSE = -inf; nothing of the form exp(-inf - (-inf)) is ever evaluated.
#include "attention_reference.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace fasim::reference {

namespace {

void check_shapes(const Matrix& Q, const Matrix& K, const Matrix& V) {
    if (Q.cols() != K.cols()) {
        throw std::invalid_argument("attention: Q has d = " + std::to_string(Q.cols()) +
                                    " columns but K has " + std::to_string(K.cols()) +
                                    "; Q and K must share the head dimension d");
    }
    if (K.rows() != V.rows()) {
        throw std::invalid_argument("attention: K has Nk = " + std::to_string(K.rows()) +
                                    " rows but V has " + std::to_string(V.rows()) +
                                    "; K and V must have the same number of rows");
    }
}

}  // namespace

bool key_visible(long i, long j, long N, long Nk, const AttentionOptions& options) {
    if (i < 0 || i >= N || j < 0 || j >= Nk) return false;
    if (options.key_length >= 0 && j >= options.key_length) return false;  // padding
    if (options.causal && j > i + (Nk - N)) return false;  // bottom-right aligned causal
    return true;
}

double softmax_scale(long d, const AttentionOptions& options) {
    if (options.scale != 0) return options.scale;
    if (d <= 0) {
        throw std::invalid_argument("attention: head dimension d = " + std::to_string(d) +
                                    " must be >= 1 to form the default scale 1/sqrt(d); "
                                    "pass a non-zero AttentionOptions::scale or a d >= 1");
    }
    return 1.0 / std::sqrt(static_cast<double>(d));
}

AttentionResult exact_attention(const Matrix& Q, const Matrix& K, const Matrix& V,
                                const AttentionOptions& options) {
    check_shapes(Q, K, V);
    const long N = Q.rows();
    const long Nk = K.rows();
    const double scale = softmax_scale(Q.cols(), options);
    constexpr double neg_inf = -std::numeric_limits<double>::infinity();

    AttentionResult result;
    result.O = Matrix::Zero(N, V.cols());
    result.lse = Vector::Constant(N, neg_inf);

    std::vector<long> keys;
    std::vector<double> logits;
    keys.reserve(static_cast<std::size_t>(Nk));
    logits.reserve(static_cast<std::size_t>(Nk));
    for (long i = 0; i < N; ++i) {
        keys.clear();
        logits.clear();
        double m = neg_inf;
        for (long j = 0; j < Nk; ++j) {
            if (!key_visible(i, j, N, Nk, options)) continue;
            const double x = scale * Q.row(i).dot(K.row(j));
            keys.push_back(j);
            logits.push_back(x);
            if (x > m) m = x;
        }
        if (keys.empty()) continue;  // fully masked row: O = 0, LSE = -inf

        double l = 0;
        for (double& x : logits) {
            x = std::exp(x - m);  // in (0, 1]; the maximum contributes exactly 1
            l += x;
        }
        for (std::size_t t = 0; t < keys.size(); ++t) {
            result.O.row(i) += (logits[t] / l) * V.row(keys[t]);
        }
        result.lse(i) = m + std::log(l);
    }
    return result;
}

}  // namespace fasim::reference
