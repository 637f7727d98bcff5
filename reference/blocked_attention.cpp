// FlashAttention-1 and FlashAttention-2 answer keys: plain loops over blocks, written from
// the papers' pseudocode. Comments "[FA1] line k" / "[FA2] line k" cite Algorithm 1 of each
// paper (see blocked_attention.hpp for the references).
//
// The one numerical trap: a row that has seen no visible key yet has m = -inf, and the
// rescale factor exp(m_old - m_new) would be exp(-inf - (-inf)) = exp(NaN). The helper
// rescale() returns 1 when m_old == m_new (that covers -inf == -inf; the quantity it
// multiplies is 0 then anyway) and exp(m_old - m_new) otherwise (0 when only m_old = -inf).
#include "blocked_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fasim::reference {

namespace {

template <typename Scalar>
using Mat = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename Scalar>
using Vec = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

template <typename Scalar>
constexpr Scalar neg_inf() {
    return -std::numeric_limits<Scalar>::infinity();
}

// exp(m_old - m_new) without ever forming -inf - (-inf).
template <typename Scalar>
Scalar rescale(Scalar m_old, Scalar m_new) {
    return m_old == m_new ? Scalar(1) : std::exp(m_old - m_new);
}

void check_blocks(const char* who, long Br, long Bc) {
    if (Br < 1 || Bc < 1) {
        throw std::invalid_argument(std::string(who) + ": block sizes Br = " + std::to_string(Br) +
                                    ", Bc = " + std::to_string(Bc) +
                                    " must both be >= 1; pass positive tile sizes (e.g. 64, 64)");
    }
}

void check_shapes(const char* who, const Matrix& Q, const Matrix& K, const Matrix& V) {
    if (Q.cols() != K.cols() || K.rows() != V.rows()) {
        throw std::invalid_argument(
            std::string(who) + ": shapes Q " + std::to_string(Q.rows()) + "x" +
            std::to_string(Q.cols()) + ", K " + std::to_string(K.rows()) + "x" +
            std::to_string(K.cols()) + ", V " + std::to_string(V.rows()) + "x" +
            std::to_string(V.cols()) + " do not fit; need Q.cols == K.cols and K.rows == V.rows");
    }
}

long ceil_div(long a, long b) { return (a + b - 1) / b; }

// What the block loops must do with block (Q rows [q0, q0+qr), keys [k0, k0+kc)).
enum class BlockKind { skip, full, masked };

BlockKind classify_block(long q0, long qr, long k0, long kc, long N, long Nk,
                         const AttentionOptions& options) {
    if (options.key_length >= 0 && k0 >= options.key_length) return BlockKind::skip;  // padding
    if (options.causal && causal_block_skipped(q0, qr, k0, kc, N, Nk)) return BlockKind::skip;
    const bool padded = options.key_length >= 0 && k0 + kc > options.key_length;
    const bool diagonal = options.causal && causal_block_crosses(q0, qr, k0, kc, N, Nk);
    return (padded || diagonal) ? BlockKind::masked : BlockKind::full;
}

// S_ij = scale * Q_i K_j^T, with invisible entries set to -inf when the block needs a mask.
template <typename Scalar>
Mat<Scalar> scores_block(const Mat<Scalar>& Qi, const Mat<Scalar>& Kj, Scalar scale, long q0,
                         long k0, long N, long Nk, BlockKind kind,
                         const AttentionOptions& options) {
    Mat<Scalar> S = scale * (Qi * Kj.transpose());
    if (kind == BlockKind::masked) {
        for (long r = 0; r < S.rows(); ++r) {
            for (long c = 0; c < S.cols(); ++c) {
                if (!key_visible(q0 + r, k0 + c, N, Nk, options)) S(r, c) = neg_inf<Scalar>();
            }
        }
    }
    return S;
}

// P = exp(S - m) row-wise for a given row max m; rows with m = -inf (nothing visible) give 0.
template <typename Scalar>
Mat<Scalar> exp_shifted(const Mat<Scalar>& S, const Vec<Scalar>& m) {
    Mat<Scalar> P(S.rows(), S.cols());
    for (long r = 0; r < S.rows(); ++r) {
        if (m(r) == neg_inf<Scalar>()) {
            P.row(r).setZero();
        } else {
            P.row(r) = (S.row(r).array() - m(r)).exp().matrix();  // exp(-inf - m) = 0
        }
    }
    return P;
}

}  // namespace

bool causal_block_skipped(long q0, long q_rows, long k0, long /*k_cols*/, long N, long Nk) {
    // The last row of the block sees keys j <= (q0 + q_rows - 1) + (Nk - N); every other row
    // sees fewer. The block is dead when even its first key is beyond that.
    return k0 > (q0 + q_rows - 1) + (Nk - N);
}

bool causal_block_crosses(long q0, long q_rows, long k0, long k_cols, long N, long Nk) {
    // Some entry is masked when the block's last key is beyond what its first row may see.
    return !causal_block_skipped(q0, q_rows, k0, k_cols, N, Nk) &&
           k0 + k_cols - 1 > q0 + (Nk - N);
}

// ---- online softmax ----------------------------------------------------------------------
OnlineSoftmaxResult online_softmax_row(const Vector& x, long chunk) {
    if (chunk < 1) {
        throw std::invalid_argument("online_softmax_row: chunk = " + std::to_string(chunk) +
                                    " must be >= 1; pass a positive chunk length");
    }
    const long n = x.size();
    OnlineSoftmaxResult result;
    double m = neg_inf<double>();  // running max
    double l = 0;                  // running sum of exp(x - m)
    for (long begin = 0; begin < n; begin += chunk) {
        const long end = std::min(n, begin + chunk);
        OnlineSoftmaxStep step;
        step.begin = begin;
        step.end = end;
        step.chunk_max = x.segment(begin, end - begin).maxCoeff();
        const double m_new = std::max(m, step.chunk_max);
        double chunk_sum = 0;
        if (m_new != neg_inf<double>()) {
            for (long t = begin; t < end; ++t) chunk_sum += std::exp(x(t) - m_new);  // -inf -> 0
        }
        step.correction = rescale(m, m_new);
        l = step.correction * l + chunk_sum;  // old sum re-expressed relative to the new max
        m = m_new;
        step.m = m;
        step.l = l;
        result.steps.push_back(step);
    }
    result.m = m;
    result.l = l;
    result.p = Vector::Zero(n);
    if (m == neg_inf<double>()) {
        result.lse = neg_inf<double>();
        return result;
    }
    for (long t = 0; t < n; ++t) result.p(t) = std::exp(x(t) - m) / l;
    result.lse = m + std::log(l);
    return result;
}

// ---- FlashAttention-1 -----------------------------------------------------------------------
template <typename Scalar>
FlashAttention1Result flash_attention_1(const Matrix& Q, const Matrix& K, const Matrix& V,
                                        const AttentionOptions& options, long Br, long Bc) {
    check_blocks("flash_attention_1", Br, Bc);
    check_shapes("flash_attention_1", Q, K, V);
    const long N = Q.rows();
    const long Nk = K.rows();
    const long dv = V.cols();
    const auto scale = static_cast<Scalar>(softmax_scale(Q.cols(), options));
    const Mat<Scalar> q = Q.cast<Scalar>();
    const Mat<Scalar> k = K.cast<Scalar>();
    const Mat<Scalar> v = V.cast<Scalar>();

    // [FA1] line 1 picks Br, Bc from the SRAM size M; here they are parameters.
    // [FA1] line 2: initialise O = 0, l = 0, m = -inf "in HBM".
    Mat<Scalar> O = Mat<Scalar>::Zero(N, dv);
    Vec<Scalar> l = Vec<Scalar>::Zero(N);
    Vec<Scalar> m = Vec<Scalar>::Constant(N, neg_inf<Scalar>());

    // [FA1] lines 3-4: Tr blocks of Br rows of Q, O, l, m; Tc blocks of Bc rows of K, V.
    // The last block of each is short when N or Nk is not a multiple of the block size.
    const long Tr = ceil_div(N, Br);
    const long Tc = ceil_div(Nk, Bc);

    for (long j = 0; j < Tc; ++j) {  // [FA1] line 5: outer loop over K/V blocks
        const long k0 = j * Bc;
        const long kc = std::min(Bc, Nk - k0);
        // [FA1] line 6: load K_j, V_j to SRAM.
        const Mat<Scalar> Kj = k.middleRows(k0, kc);
        const Mat<Scalar> Vj = v.middleRows(k0, kc);

        for (long i = 0; i < Tr; ++i) {  // [FA1] line 7: inner loop over Q blocks
            const long q0 = i * Br;
            const long qr = std::min(Br, N - q0);
            const BlockKind kind = classify_block(q0, qr, k0, kc, N, Nk, options);
            if (kind == BlockKind::skip) continue;  // above the causal diagonal, or all padding

            // [FA1] line 8: load Q_i, O_i, l_i, m_i from HBM to SRAM.
            const Mat<Scalar> Qi = q.middleRows(q0, qr);
            const Mat<Scalar> Oi = O.middleRows(q0, qr);
            const Vec<Scalar> li = l.segment(q0, qr);
            const Vec<Scalar> mi = m.segment(q0, qr);

            // [FA1] line 9: S_ij = Q_i K_j^T (scaled by tau and masked as in [FA1] Algorithm 2).
            const Mat<Scalar> Sij = scores_block(Qi, Kj, scale, q0, k0, N, Nk, kind, options);

            // [FA1] line 10: m~_ij = rowmax(S_ij), P~_ij = exp(S_ij - m~_ij), l~_ij = rowsum(P~_ij).
            const Vec<Scalar> m_tilde = Sij.rowwise().maxCoeff();
            const Mat<Scalar> P_tilde = exp_shifted(Sij, m_tilde);
            const Vec<Scalar> l_tilde = P_tilde.rowwise().sum();

            // [FA1] line 11: m_new = max(m_i, m~_ij),
            //                l_new = e^(m_i - m_new) l_i + e^(m~_ij - m_new) l~_ij.
            Vec<Scalar> m_new(qr), l_new(qr), alpha(qr), beta(qr);
            for (long r = 0; r < qr; ++r) {
                m_new(r) = std::max(mi(r), m_tilde(r));
                alpha(r) = rescale(mi(r), m_new(r));
                beta(r) = rescale(m_tilde(r), m_new(r));
                l_new(r) = alpha(r) * li(r) + beta(r) * l_tilde(r);
            }

            // [FA1] line 12: O_i <- diag(l_new)^-1 (diag(l_i) e^(m_i - m_new) O_i
            //                                        + e^(m~_ij - m_new) P~_ij V_j), to HBM.
            const Mat<Scalar> PV = P_tilde * Vj;
            for (long r = 0; r < qr; ++r) {
                if (l_new(r) == Scalar(0)) continue;  // row has seen no key yet: O_i stays 0
                O.row(q0 + r) = ((li(r) * alpha(r)) * Oi.row(r) + beta(r) * PV.row(r)) / l_new(r);
            }
            // [FA1] line 13: l_i <- l_new, m_i <- m_new, to HBM.
            l.segment(q0, qr) = l_new;
            m.segment(q0, qr) = m_new;
        }  // [FA1] line 14
    }  // [FA1] line 15

    // [FA1] line 16: return O. (m and l are kept for the backward pass; LSE = m + log l.)
    FlashAttention1Result result;
    result.O = O.template cast<double>();
    result.l = l.template cast<double>();
    result.m = m.template cast<double>();
    result.lse = Vector::Constant(N, neg_inf<double>());
    for (long r = 0; r < N; ++r) {
        if (l(r) > Scalar(0)) result.lse(r) = static_cast<double>(m(r) + std::log(l(r)));
    }
    return result;
}

// ---- FlashAttention-2 -----------------------------------------------------------------------
template <typename Scalar>
AttentionResult flash_attention_2(const Matrix& Q, const Matrix& K, const Matrix& V,
                                  const AttentionOptions& options, long Br, long Bc) {
    check_blocks("flash_attention_2", Br, Bc);
    check_shapes("flash_attention_2", Q, K, V);
    const long N = Q.rows();
    const long Nk = K.rows();
    const long dv = V.cols();
    const auto scale = static_cast<Scalar>(softmax_scale(Q.cols(), options));
    const Mat<Scalar> q = Q.cast<Scalar>();
    const Mat<Scalar> k = K.cast<Scalar>();
    const Mat<Scalar> v = V.cast<Scalar>();

    // [FA2] lines 1-2: Tr blocks of Br rows of Q (and of O, L); Tc blocks of Bc rows of K, V.
    const long Tr = ceil_div(N, Br);
    const long Tc = ceil_div(Nk, Bc);

    AttentionResult result;
    result.O = Matrix::Zero(N, dv);
    result.lse = Vector::Constant(N, neg_inf<double>());

    for (long i = 0; i < Tr; ++i) {  // [FA2] line 3: outer loop over Q blocks (one thread block)
        const long q0 = i * Br;
        const long qr = std::min(Br, N - q0);
        // [FA2] line 4: load Q_i to SRAM.
        const Mat<Scalar> Qi = q.middleRows(q0, qr);
        // [FA2] line 5: O_i = 0 (unnormalised accumulator), l_i = 0, m_i = -inf, on chip.
        Mat<Scalar> Oi = Mat<Scalar>::Zero(qr, dv);
        Vec<Scalar> li = Vec<Scalar>::Zero(qr);
        Vec<Scalar> mi = Vec<Scalar>::Constant(qr, neg_inf<Scalar>());

        for (long j = 0; j < Tc; ++j) {  // [FA2] line 6: inner loop over K/V blocks
            const long k0 = j * Bc;
            const long kc = std::min(Bc, Nk - k0);
            // [FA2] Section 3.1.1: skip blocks above the causal diagonal (and all-padding ones);
            // only blocks that cross the diagonal are masked element by element.
            const BlockKind kind = classify_block(q0, qr, k0, kc, N, Nk, options);
            if (kind == BlockKind::skip) continue;

            // [FA2] line 7: load K_j, V_j to SRAM.
            const Mat<Scalar> Kj = k.middleRows(k0, kc);
            const Mat<Scalar> Vj = v.middleRows(k0, kc);

            // [FA2] line 8: S_i^(j) = Q_i K_j^T (times the softmax scale; masked if needed).
            const Mat<Scalar> Sij = scores_block(Qi, Kj, scale, q0, k0, N, Nk, kind, options);

            // [FA2] line 9: m_i^(j) = max(m_i^(j-1), rowmax(S_i^(j))),
            //               P~_i^(j) = exp(S_i^(j) - m_i^(j)),
            //               l_i^(j) = e^(m_i^(j-1) - m_i^(j)) l_i^(j-1) + rowsum(P~_i^(j)).
            const Vec<Scalar> row_max = Sij.rowwise().maxCoeff();
            Vec<Scalar> m_new(qr), alpha(qr);
            for (long r = 0; r < qr; ++r) {
                m_new(r) = std::max(mi(r), row_max(r));
                alpha(r) = rescale(mi(r), m_new(r));
            }
            const Mat<Scalar> P_tilde = exp_shifted(Sij, m_new);
            li = alpha.cwiseProduct(li) + P_tilde.rowwise().sum();

            // [FA2] line 10: O_i^(j) = diag(e^(m_i^(j-1) - m_i^(j))) O_i^(j-1) + P~_i^(j) V_j.
            // Only a rescale by exp(m_old - m_new); no division by l inside the loop.
            Oi = alpha.asDiagonal() * Oi;
            Oi += P_tilde * Vj;
            mi = m_new;
        }  // [FA2] line 11

        for (long r = 0; r < qr; ++r) {
            if (li(r) == Scalar(0)) continue;  // row saw no key: O = 0, LSE = -inf
            // [FA2] line 12: O_i = diag(l_i^(Tc))^-1 O_i^(Tc), once, at the end.
            // [FA2] line 14: write O_i to HBM.
            result.O.row(q0 + r) = (Oi.row(r) / li(r)).template cast<double>();
            // [FA2] line 13: L_i = m_i^(Tc) + log(l_i^(Tc)); line 15: write L_i to HBM.
            result.lse(q0 + r) = static_cast<double>(mi(r) + std::log(li(r)));
        }
    }  // [FA2] line 16
    return result;  // [FA2] line 17: return O and the logsumexp L.
}

template FlashAttention1Result flash_attention_1<double>(const Matrix&, const Matrix&,
                                                         const Matrix&, const AttentionOptions&,
                                                         long, long);
template FlashAttention1Result flash_attention_1<float>(const Matrix&, const Matrix&,
                                                        const Matrix&, const AttentionOptions&,
                                                        long, long);
template AttentionResult flash_attention_2<double>(const Matrix&, const Matrix&, const Matrix&,
                                                   const AttentionOptions&, long, long);
template AttentionResult flash_attention_2<float>(const Matrix&, const Matrix&, const Matrix&,
                                                  const AttentionOptions&, long, long);

}  // namespace fasim::reference
