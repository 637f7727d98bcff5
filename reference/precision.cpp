// Bit-exact fp16/bf16 rounding and naive attention in a storage precision.
#include "precision.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace fasim::reference {

// ---- fp16 ----------------------------------------------------------------------------
std::uint16_t float_to_fp16_bits(float x) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t mag = bits & 0x7fffffffu;

    if (mag > 0x7f800000u) {  // NaN: quiet it, keep the top payload bits and the sign
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x03ffu));
    }
    if (mag >= 0x477ff000u) {  // |x| >= 65520 (midpoint 65504..65536, ties to even = up), or inf
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    }
    if (mag >= 0x38800000u) {  // |x| >= 2^-14: a normal fp16
        // Re-bias the exponent (127 -> 15) and keep the top 10 fraction bits.
        std::uint32_t h = (mag - 0x38000000u) >> 13;
        const std::uint32_t rest = mag & 0x1fffu;  // the 13 bits dropped
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // nearest, ties to even
        return static_cast<std::uint16_t>(sign | h);  // a carry may go to the next binade: fine
    }
    // |x| < 2^-14: an fp16 subnormal k * 2^-24 (k = 0..1023; k = 1024 is the smallest normal).
    const std::uint32_t exponent = mag >> 23;  // biased fp32 exponent, <= 112 here
    if (exponent < 102) return sign;           // |x| < 2^-25: rounds to zero
    const std::uint32_t significand = (mag & 0x007fffffu) | 0x00800000u;
    // |x| = significand * 2^(exponent - 150), so k = significand * 2^(exponent - 126).
    const std::uint32_t shift = 126u - exponent;  // 14..24
    std::uint32_t k = significand >> shift;
    const std::uint32_t rest = significand & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (k & 1u))) ++k;
    return static_cast<std::uint16_t>(sign | k);
}

float fp16_bits_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    const std::uint32_t fraction = h & 0x03ffu;
    if (exponent == 0x1fu) {  // inf or NaN
        return std::bit_cast<float>(sign | 0x7f800000u | (fraction << 13));
    }
    if (exponent == 0) {  // zero or subnormal: fraction * 2^-24, exact in fp32
        const float magnitude = std::ldexp(static_cast<float>(fraction), -24);
        return sign ? -magnitude : magnitude;
    }
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (fraction << 13));
}

// ---- bf16 ----------------------------------------------------------------------------
std::uint16_t float_to_bf16_bits(float x) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: quiet it, keep the sign
        return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);
    }
    // Add just under half an ulp of bf16, plus one when the kept part is odd (ties to even).
    // A carry out of the fraction moves to the next binade, and past the largest finite
    // value to inf, as it should.
    const std::uint32_t lsb = (bits >> 16) & 1u;
    return static_cast<std::uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

float bf16_bits_to_float(std::uint16_t b) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// ---- rounding --------------------------------------------------------------------------
float round_to(DType dtype, float x) {
    switch (dtype) {
        case DType::fp32: return x;
        case DType::fp16: return fp16_bits_to_float(float_to_fp16_bits(x));
        case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(x));
    }
    return x;
}

MatrixF round_matrix(const MatrixF& A, DType dtype) {
    return A.unaryExpr([dtype](float x) { return round_to(dtype, x); });
}

Matrix round_matrix(const Matrix& A, DType dtype) {
    return A.unaryExpr(
        [dtype](double x) { return static_cast<double>(round_to(dtype, static_cast<float>(x))); });
}

bool representable(const Matrix& A, DType dtype) {
    for (long r = 0; r < A.rows(); ++r) {
        for (long c = 0; c < A.cols(); ++c) {
            const double x = A(r, c);
            if (std::isnan(x)) return false;
            const auto f = static_cast<float>(x);
            if (static_cast<double>(f) != x) return false;
            if (round_to(dtype, f) != f) return false;
        }
    }
    return true;
}

double machine_epsilon(DType dtype) {
    switch (dtype) {
        case DType::fp32: return std::ldexp(1.0, -23);
        case DType::fp16: return std::ldexp(1.0, -10);
        case DType::bf16: return std::ldexp(1.0, -7);
    }
    return 0;
}

// ---- naive attention in a precision --------------------------------------------------------
Matrix naive_attention_in_precision(const Matrix& Q, const Matrix& K, const Matrix& V,
                                    const AttentionOptions& options, DType dtype) {
    if (Q.cols() != K.cols() || K.rows() != V.rows()) {
        throw std::invalid_argument(
            "naive_attention_in_precision: shapes Q " + std::to_string(Q.rows()) + "x" +
            std::to_string(Q.cols()) + ", K " + std::to_string(K.rows()) + "x" +
            std::to_string(K.cols()) + ", V " + std::to_string(V.rows()) + "x" +
            std::to_string(V.cols()) + " do not fit; need Q.cols == K.cols and K.rows == V.rows");
    }
    const long N = Q.rows();
    const long Nk = K.rows();
    const long d = Q.cols();
    const long dv = V.cols();
    const auto scale = static_cast<float>(softmax_scale(d, options));
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();

    // Inputs as stored in memory.
    const MatrixF q = round_matrix(MatrixF(Q.cast<float>()), dtype);
    const MatrixF k = round_matrix(MatrixF(K.cast<float>()), dtype);
    const MatrixF v = round_matrix(MatrixF(V.cast<float>()), dtype);

    // The three kernels, one query row at a time (rows are independent, so this gives the
    // same numbers as three whole-matrix passes while keeping memory at O(Nk)).
    Matrix O = Matrix::Zero(N, dv);
    std::vector<float> s(static_cast<std::size_t>(Nk));
    std::vector<float> p(static_cast<std::size_t>(Nk));
    std::vector<float> acc(static_cast<std::size_t>(dv));
    for (long i = 0; i < N; ++i) {
        // Kernel 1: S = scale * Q K^T, fp32 accumulation over k in order, stored in the dtype.
        // Masked entries hold -inf.
        float m = neg_inf;
        for (long j = 0; j < Nk; ++j) {
            const auto js = static_cast<std::size_t>(j);
            if (!key_visible(i, j, N, Nk, options)) {
                s[js] = neg_inf;
                continue;
            }
            float dot = 0;
            for (long c = 0; c < d; ++c) dot += q(i, c) * k(j, c);
            s[js] = round_to(dtype, scale * dot);
            m = std::max(m, s[js]);
        }
        if (m == neg_inf) continue;  // no visible key (or only -inf logits): O row = 0

        // Kernel 2: P = softmax(S) in fp32 on the stored S (max, exp, sum, divide), stored in
        // the dtype. Masked entries give exp(-inf) = 0.
        float l = 0;
        for (long j = 0; j < Nk; ++j) {
            const auto js = static_cast<std::size_t>(j);
            p[js] = std::exp(s[js] - m);
            l += p[js];
        }
        for (float& x : p) x = round_to(dtype, x / l);

        // Kernel 3: O = P V, fp32 accumulation over j in order, stored in the dtype.
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (long j = 0; j < Nk; ++j) {
            const float pj = p[static_cast<std::size_t>(j)];
            for (long c = 0; c < dv; ++c) acc[static_cast<std::size_t>(c)] += pj * v(j, c);
        }
        for (long c = 0; c < dv; ++c) {
            O(i, c) = static_cast<double>(round_to(dtype, acc[static_cast<std::size_t>(c)]));
        }
    }
    return O;
}

// ---- the tolerance rule ------------------------------------------------------------------
namespace {

constexpr double kU32 = 0x1.0p-24;  // unit roundoff of fp32

void require_same_shape(const char* who, const char* a_name, const Matrix& a, const char* b_name,
                        const Matrix& b) {
    if (a.rows() != b.rows() || a.cols() != b.cols()) {
        throw std::invalid_argument(std::string(who) + ": " + a_name + " is " +
                                    std::to_string(a.rows()) + "x" + std::to_string(a.cols()) +
                                    " but " + b_name + " is " + std::to_string(b.rows()) + "x" +
                                    std::to_string(b.cols()) + "; they must match");
    }
}

// Calls f(i, j, P_ij, A_ij) for every visible (i, j) of a row that sees some key, with
// P_ij = exp(scale q_i.k_j - LSE_i) and A_ij = |scale| sum_k |Q_ik| |K_jk|. Works on blocks
// of rows so that memory stays O(block * Nk).
template <typename F>
void for_each_probability(const Matrix& Q, const Matrix& K, const AttentionOptions& options,
                          const AttentionResult& exact, F&& f) {
    const long N = Q.rows();
    const long Nk = K.rows();
    const double scale = softmax_scale(Q.cols(), options);
    const Matrix K_abs_t = K.cwiseAbs().transpose();
    constexpr long kRows = 128;
    for (long r0 = 0; r0 < N; r0 += kRows) {
        const long rows = std::min(kRows, N - r0);
        const Matrix S = scale * (Q.middleRows(r0, rows) * K.transpose());
        const Matrix A = std::abs(scale) * (Q.middleRows(r0, rows).cwiseAbs() * K_abs_t);
        for (long r = 0; r < rows; ++r) {
            const long i = r0 + r;
            if (exact.lse(i) == -std::numeric_limits<double>::infinity()) continue;
            for (long j = 0; j < Nk; ++j) {
                if (!key_visible(i, j, N, Nk, options)) continue;
                f(i, j, std::exp(S(r, j) - exact.lse(i)), A(r, j));
            }
        }
    }
}

}  // namespace

double logit_rounding_term(const Matrix& Q, const Matrix& K, const Matrix& V,
                           const AttentionOptions& options, const AttentionResult& exact) {
    require_same_shape("logit_rounding_term", "exact.O", exact.O, "Q rows x V cols",
                       Matrix(Q.rows(), V.cols()));
    double worst = 0;
    Eigen::VectorXd acc = Eigen::VectorXd::Zero(V.cols());
    long row = -1;
    auto flush = [&] {
        if (row >= 0 && acc.size() > 0) worst = std::max(worst, acc.maxCoeff());
        acc.setZero();
    };
    for_each_probability(Q, K, options, exact, [&](long i, long j, double p, double a) {
        if (i != row) {
            flush();
            row = i;
        }
        const double w = p * kU32 * a;
        acc += w * (V.row(j) - exact.O.row(i)).cwiseAbs().transpose();
    });
    flush();
    return worst;
}

ToleranceCheck check_tolerance(const Matrix& O_alg, const Matrix& O_exact, const Matrix& O_naive,
                               double logit_term, DType dtype) {
    require_same_shape("check_tolerance", "O_alg", O_alg, "O_exact", O_exact);
    require_same_shape("check_tolerance", "O_naive", O_naive, "O_exact", O_exact);
    ToleranceCheck c;
    c.logit_term = logit_term;
    if (O_exact.size() == 0) {
        c.floor = c.bound = logit_term;
        c.pass = true;
        return c;
    }
    const bool finite = O_alg.allFinite();
    c.error = finite ? (O_alg - O_exact).cwiseAbs().maxCoeff() : std::numeric_limits<double>::infinity();
    // Naive attention that overflowed (inf in its stored S, hence NaN in O) measures no error scale:
    // without this its NaN made the bound NaN and failed even an exact answer.
    c.naive_overflow = !O_naive.allFinite();
    c.naive_error = c.naive_overflow ? std::numeric_limits<double>::infinity() : (O_naive - O_exact).cwiseAbs().maxCoeff();
    c.output_ulp = machine_epsilon(dtype) * O_exact.cwiseAbs().maxCoeff();
    c.floor = c.output_ulp + c.logit_term;
    c.bound = (c.naive_overflow ? 0.0 : kToleranceFactor * c.naive_error) + c.floor;
    c.pass = finite && c.error <= c.bound;
    return c;
}

ToleranceCheck check_tolerance(const Matrix& O_alg, const Matrix& Q, const Matrix& K,
                               const Matrix& V, const AttentionOptions& options, DType dtype) {
    const AttentionResult exact = exact_attention(Q, K, V, options);
    const Matrix naive = naive_attention_in_precision(Q, K, V, options, dtype);
    return check_tolerance(O_alg, exact.O, naive, logit_rounding_term(Q, K, V, options, exact),
                           dtype);
}

double max_abs_logit(const Matrix& Q, const Matrix& K, const AttentionOptions& options) {
    const long N = Q.rows();
    const long Nk = K.rows();
    const double scale = softmax_scale(Q.cols(), options);
    double largest = 0;
    constexpr long kRows = 128;
    for (long r0 = 0; r0 < N; r0 += kRows) {
        const long rows = std::min(kRows, N - r0);
        const Matrix S = scale * (Q.middleRows(r0, rows) * K.transpose());
        for (long r = 0; r < rows; ++r)
            for (long j = 0; j < Nk; ++j)
                if (key_visible(r0 + r, j, N, Nk, options)) largest = std::max(largest, std::abs(S(r, j)));
    }
    return largest;
}

double overflow_threshold(DType dtype) {
    switch (dtype) {
        case DType::fp16: return 65520.0;                  // midpoint of 65504 and 2^16
        case DType::bf16: return std::ldexp(255.0, 120);    // 0x1.fep127, midpoint to 2^128
        case DType::fp32: break;
    }
    return std::ldexp(1.0, 128) - std::ldexp(1.0, 103);    // midpoint of FLT_MAX and 2^128
}

Vector lse_tolerance(const Matrix& Q, const Matrix& K, const AttentionOptions& options,
                     const AttentionResult& exact) {
    const long N = Q.rows();
    Vector pa = Vector::Zero(N);  // sum_j P_ij A_ij
    for_each_probability(Q, K, options, exact,
                         [&](long i, long /*j*/, double p, double a) { pa(i) += p * a; });
    Vector tol = Vector::Zero(N);
    for (long i = 0; i < N; ++i) {
        if (exact.lse(i) == -std::numeric_limits<double>::infinity()) continue;
        tol(i) = 8 * kU32 * (std::abs(exact.lse(i)) + pa(i) + 1);
    }
    return tol;
}

LseCheck check_lse(const Vector& lse_alg, const Matrix& Q, const Matrix& K,
                   const AttentionOptions& options, const AttentionResult& exact) {
    if (lse_alg.size() != exact.lse.size()) {
        throw std::invalid_argument("check_lse: lse_alg has " + std::to_string(lse_alg.size()) +
                                    " rows but the exact LSE has " +
                                    std::to_string(exact.lse.size()) + "; they must match");
    }
    const Vector tol = lse_tolerance(Q, K, options, exact);
    constexpr double neg_inf = -std::numeric_limits<double>::infinity();
    LseCheck c;
    for (long i = 0; i < lse_alg.size(); ++i) {
        bool ok;
        if (exact.lse(i) == neg_inf) {
            ok = lse_alg(i) == neg_inf;
        } else {
            const double e = std::abs(lse_alg(i) - exact.lse(i));  // NaN -> comparisons false
            ok = e <= tol(i);
            if (!std::isnan(e)) {
                c.max_error = std::max(c.max_error, e);
                c.worst_ratio = std::max(c.worst_ratio, e / tol(i));
            }
        }
        if (!ok && c.first_bad_row < 0) c.first_bad_row = i;
    }
    c.pass = c.first_bad_row < 0;
    return c;
}

}  // namespace fasim::reference
