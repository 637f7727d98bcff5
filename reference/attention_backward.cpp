#include "attention_backward.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>

#include "precision.hpp"

namespace fasim::reference {

namespace {

void check_shapes(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO) {
    if (Q.cols() != K.cols() || K.rows() != V.rows() || dO.rows() != Q.rows() || dO.cols() != V.cols())
        throw std::invalid_argument("attention backward: shapes Q " + std::to_string(Q.rows()) + "x" +
                                    std::to_string(Q.cols()) + ", K " + std::to_string(K.rows()) + "x" +
                                    std::to_string(K.cols()) + ", V " + std::to_string(V.rows()) + "x" +
                                    std::to_string(V.cols()) + ", dO " + std::to_string(dO.rows()) + "x" +
                                    std::to_string(dO.cols()) + " do not fit; need Q.cols == K.cols, K.rows == V.rows "
                                    "and dO shaped like O (Q.rows x V.cols)");
}

// The exact probabilities P (N x Nk), masked entries 0.
Matrix probabilities(const Matrix& Q, const Matrix& K, const AttentionOptions& options, const AttentionResult& exact) {
    const long N = Q.rows(), Nk = K.rows();
    const double scale = softmax_scale(Q.cols(), options);
    Matrix P = Matrix::Zero(N, Nk);
    for (long i = 0; i < N; ++i) {
        if (exact.lse(i) == -std::numeric_limits<double>::infinity()) continue;
        for (long j = 0; j < Nk; ++j)
            if (key_visible(i, j, N, Nk, options)) P(i, j) = std::exp(scale * Q.row(i).dot(K.row(j)) - exact.lse(i));
    }
    return P;
}

// C = A op(B) in fp32, k in order, every element stored in the dtype.
MatrixF product(const MatrixF& A, const MatrixF& B, bool transpose_a, bool transpose_b, float alpha, DType dtype) {
    const long m = transpose_a ? A.cols() : A.rows(), k = transpose_a ? A.rows() : A.cols();
    const long n = transpose_b ? B.rows() : B.cols();
    MatrixF C(m, n);
    for (long i = 0; i < m; ++i)
        for (long j = 0; j < n; ++j) {
            float acc = 0;
            for (long t = 0; t < k; ++t) acc += (transpose_a ? A(t, i) : A(i, t)) * (transpose_b ? B(j, t) : B(t, j));
            C(i, j) = round_to(dtype, alpha * acc);
        }
    return C;
}

}  // namespace

AttentionGradients exact_attention_backward(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                            const AttentionOptions& options) {
    check_shapes(Q, K, V, dO);
    const AttentionResult exact = exact_attention(Q, K, V, options);
    const double scale = softmax_scale(Q.cols(), options);
    const Matrix P = probabilities(Q, K, options, exact);
    const Matrix dP = dO * V.transpose();
    const Vector D = (dO.array() * exact.O.array()).rowwise().sum().matrix();
    const Matrix dS = (P.array() * (dP.colwise() - D).array()).matrix();
    return {scale * dS * K, scale * dS.transpose() * Q, P.transpose() * dO};
}

AttentionGradients gradient_term_sizes(const Matrix& Q, const Matrix& K, const Matrix& V, const Matrix& dO,
                                       const AttentionOptions& options) {
    check_shapes(Q, K, V, dO);
    const AttentionResult exact = exact_attention(Q, K, V, options);
    const double scale = std::abs(softmax_scale(Q.cols(), options));
    const Matrix P = probabilities(Q, K, options, exact);
    // dP and D as sums of their terms' absolute values: a sum rounds by the size of its terms, not of its
    // result (D - dP cancels to 0 with one key, and largely with random dO).
    const Matrix dP = dO.cwiseAbs() * V.cwiseAbs().transpose();
    const Vector D = (dO.cwiseAbs().array() * exact.O.cwiseAbs().array()).rowwise().sum().matrix();
    const Matrix dS = (P.array() * (dP.colwise() + D).array()).matrix();
    return {scale * dS * K.cwiseAbs(), scale * dS.transpose() * Q.cwiseAbs(), P.transpose() * dO.cwiseAbs()};
}

AttentionGradients naive_attention_backward_in_precision(const Matrix& Q, const Matrix& K, const Matrix& V,
                                                         const Matrix& dO, const AttentionOptions& options, DType dtype) {
    check_shapes(Q, K, V, dO);
    const long N = Q.rows(), Nk = K.rows();
    const auto scale = static_cast<float>(softmax_scale(Q.cols(), options));
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    const MatrixF q = round_matrix(MatrixF(Q.cast<float>()), dtype), k = round_matrix(MatrixF(K.cast<float>()), dtype),
                  v = round_matrix(MatrixF(V.cast<float>()), dtype), dout = round_matrix(MatrixF(dO.cast<float>()), dtype);
    // The forward's stored S and P (as naive_attention_in_precision computes them).
    MatrixF S = product(q, k, false, true, scale, dtype);
    MatrixF P = MatrixF::Zero(N, Nk);
    for (long i = 0; i < N; ++i) {
        float m = neg_inf;
        for (long j = 0; j < Nk; ++j) {
            if (!key_visible(i, j, N, Nk, options)) S(i, j) = neg_inf;
            m = std::max(m, S(i, j));
        }
        if (m == neg_inf) continue;
        float l = 0;
        for (long j = 0; j < Nk; ++j) l += (P(i, j) = std::exp(S(i, j) - m));
        for (long j = 0; j < Nk; ++j) P(i, j) = round_to(dtype, P(i, j) / l);
    }
    const MatrixF dV = product(P, dout, true, false, 1.0f, dtype);
    const MatrixF dP = product(dout, v, false, true, 1.0f, dtype);
    MatrixF dS(N, Nk);
    for (long i = 0; i < N; ++i) {
        float D = 0;
        for (long j = 0; j < Nk; ++j) D += P(i, j) * dP(i, j);
        for (long j = 0; j < Nk; ++j) dS(i, j) = round_to(dtype, P(i, j) * (dP(i, j) - D));
    }
    const MatrixF dQ = product(dS, k, false, false, scale, dtype);
    const MatrixF dK = product(dS, q, true, false, scale, dtype);
    return {dQ.cast<double>(), dK.cast<double>(), dV.cast<double>()};
}

double largest_logit_terms(const Matrix& Q, const Matrix& K, const AttentionOptions& options) {
    const double scale = std::abs(softmax_scale(Q.cols(), options));
    const Matrix A = scale * (Q.cwiseAbs() * K.cwiseAbs().transpose());
    return A.size() ? A.maxCoeff() : 0.0;
}

GradientCheck check_gradient(const Matrix& G_alg, const Matrix& G_exact, const Matrix& G_naive, double logit_size,
                             DType dtype, double term_size) {
    if (G_alg.rows() != G_exact.rows() || G_alg.cols() != G_exact.cols() || G_naive.rows() != G_exact.rows() ||
        G_naive.cols() != G_exact.cols())
        throw std::invalid_argument("check_gradient: the gradients' shapes differ");
    GradientCheck c;
    if (G_exact.size() == 0) {
        c.pass = true;
        return c;
    }
    constexpr double u32 = 1.0 / (1 << 24);
    const double size = G_exact.cwiseAbs().maxCoeff();
    const bool finite = G_alg.allFinite();
    c.error = finite ? (G_alg - G_exact).cwiseAbs().maxCoeff() : std::numeric_limits<double>::infinity();
    // A naive backward that overflowed the dtype (inf/NaN) gives no error scale: the bound is the floor alone
    // (as check_tolerance does), not NaN.
    const bool naive_overflow = !G_naive.allFinite();
    c.naive_error = naive_overflow ? std::numeric_limits<double>::infinity() : (G_naive - G_exact).cwiseAbs().maxCoeff();
    c.floor = machine_epsilon(dtype) * size + 16 * u32 * (1 + logit_size) * std::max(size, term_size);
    c.bound = (naive_overflow ? 0.0 : 2 * c.naive_error) + c.floor;
    c.pass = finite && c.error <= c.bound;
    return c;
}

GradientChecks check_gradients(const AttentionGradients& got, const Matrix& Q, const Matrix& K, const Matrix& V,
                               const Matrix& dO, const AttentionOptions& options, DType dtype) {
    const AttentionGradients exact = exact_attention_backward(Q, K, V, dO, options);
    const AttentionGradients naive = naive_attention_backward_in_precision(Q, K, V, dO, options, dtype);
    const AttentionGradients terms = gradient_term_sizes(Q, K, V, dO, options);
    const double a = largest_logit_terms(Q, K, options);
    auto largest = [](const Matrix& M) { return M.size() ? M.maxCoeff() : 0.0; };
    return {check_gradient(got.dQ, exact.dQ, naive.dQ, a, dtype, largest(terms.dQ)),
            check_gradient(got.dK, exact.dK, naive.dK, a, dtype, largest(terms.dK)),
            check_gradient(got.dV, exact.dV, naive.dV, a, dtype, largest(terms.dV))};
}

bool GroupedGradientChecks::pass() const {
    for (const auto* checks : {&dQ, &dK, &dV})
        for (const GradientCheck& c : *checks)
            if (!c.pass) return false;
    return true;
}

GroupedGradientChecks check_grouped_gradients(const std::vector<Matrix>& dQ, const std::vector<Matrix>& dK,
                                              const std::vector<Matrix>& dV, const std::vector<Matrix>& Q,
                                              const std::vector<Matrix>& K, const std::vector<Matrix>& V,
                                              const std::vector<Matrix>& dO, const std::vector<std::int64_t>& kv_head_of,
                                              const AttentionOptions& options, DType dtype) {
    const std::size_t heads = Q.size(), kv_heads = K.size();
    if (dQ.size() != heads || dO.size() != heads || kv_head_of.size() != heads || V.size() != kv_heads ||
        dK.size() != kv_heads || dV.size() != kv_heads)
        throw std::invalid_argument("check_grouped_gradients: " + std::to_string(heads) + " query heads and " +
                                    std::to_string(kv_heads) + " K/V heads, but the gradients or the map differ in number");
    // Per K/V head: the group's float64 gradients and naive backwards summed, and the heads' floors summed
    // (TOLERANCES.md, "Grouped K/V heads"; cuda-check's check_gradients applies the same rule).
    struct Sum {
        Matrix exact, naive;
        double floor = 0;
        int parts = 0;
    };
    std::vector<Sum> dk(kv_heads), dv(kv_heads);
    GroupedGradientChecks out;
    auto largest = [](const Matrix& M) { return M.size() ? M.maxCoeff() : 0.0; };
    for (std::size_t h = 0; h < heads; ++h) {
        const auto kv = static_cast<std::size_t>(kv_head_of[h]);
        if (kv >= kv_heads) throw std::invalid_argument("check_grouped_gradients: query head " + std::to_string(h) + " maps to K/V head " +
                                                        std::to_string(kv) + " of " + std::to_string(kv_heads));
        const AttentionGradients exact = exact_attention_backward(Q[h], K[kv], V[kv], dO[h], options);
        const AttentionGradients naive = naive_attention_backward_in_precision(Q[h], K[kv], V[kv], dO[h], options, dtype);
        const AttentionGradients terms = gradient_term_sizes(Q[h], K[kv], V[kv], dO[h], options);
        const double a = largest_logit_terms(Q[h], K[kv], options);
        out.dQ.push_back(check_gradient(dQ[h], exact.dQ, naive.dQ, a, dtype, largest(terms.dQ)));
        for (auto [sum, e, n, t] : {std::tuple{&dk[kv], &exact.dK, &naive.dK, &terms.dK}, std::tuple{&dv[kv], &exact.dV, &naive.dV, &terms.dV}}) {
            sum->exact = sum->parts ? Matrix(sum->exact + *e) : *e;
            sum->naive = sum->parts ? Matrix(sum->naive + *n) : *n;
            sum->floor += check_gradient(*e, *e, *n, a, dtype, largest(*t)).floor;
            ++sum->parts;
        }
    }
    for (std::size_t kv = 0; kv < kv_heads; ++kv)
        for (auto [sum, got, checks] : {std::tuple{&dk[kv], &dK[kv], &out.dK}, std::tuple{&dv[kv], &dV[kv], &out.dV}}) {
            if (sum->parts == 0) throw std::invalid_argument("check_grouped_gradients: K/V head " + std::to_string(kv) + " has no query head");
            // A plain grouped backward stores the group's sum in the dtype; one head's naive gradient is stored already.
            const Matrix naive = sum->parts > 1 ? round_matrix(sum->naive, dtype) : sum->naive;
            GradientCheck c = check_gradient(*got, sum->exact, naive, 0, dtype, 0);  // its error and naive error
            c.floor = sum->floor;
            c.bound = (std::isfinite(c.naive_error) ? 2 * c.naive_error : 0.0) + c.floor;
            c.pass = got->allFinite() && c.error <= c.bound;
            checks->push_back(c);
        }
    return out;
}

}  // namespace fasim::reference
