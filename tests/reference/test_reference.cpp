// Tests of the CPU references: exact attention, fp16/bf16 rounding, naive attention in a
// precision, the tolerance rule, the blocked FA1/FA2 answer keys, and the input generators.
//
// Randomised tests draw a fresh seed from std::random_device and CAPTURE it, so a failure
// prints it; rerun with FASIM_TEST_SEED=<seed> in the environment to reproduce.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "attention_reference.hpp"
#include "blocked_attention.hpp"
#include "inputs.hpp"
#include "precision.hpp"

using namespace fasim::reference;
using fasim::DType;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Matrix mat(long rows, long cols, std::initializer_list<double> values) {
    Matrix A(rows, cols);
    auto it = values.begin();
    for (long r = 0; r < rows; ++r)
        for (long c = 0; c < cols; ++c) A(r, c) = *it++;
    return A;
}

double max_abs_diff(const Matrix& A, const Matrix& B) {
    if (A.size() == 0) return 0;
    return (A - B).cwiseAbs().maxCoeff();
}

bool all_finite(const Matrix& A) { return A.allFinite(); }

bool no_nan(const Vector& v) { return !v.array().isNaN().any(); }

// |lse_a - lse_b| <= tol * (1 + |lse_b|) for finite entries; -inf exactly where b is -inf.
bool lse_match(const Vector& a, const Vector& b, double tol) {
    if (a.size() != b.size()) return false;
    for (long i = 0; i < a.size(); ++i) {
        if (std::isnan(a(i)) || std::isnan(b(i))) return false;
        if (b(i) == -kInf || a(i) == -kInf) {
            if (a(i) != b(i)) return false;
            continue;
        }
        if (std::abs(a(i) - b(i)) > tol * (1 + std::abs(b(i)))) return false;
    }
    return true;
}

std::uint64_t fresh_seed() {
    if (const char* forced = std::getenv("FASIM_TEST_SEED")) return std::stoull(forced);
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

// Softmax probabilities as a matrix: attention with V = identity gives O = P.
Matrix probabilities(const Matrix& Q, const Matrix& K, const AttentionOptions& options) {
    const Matrix I = Matrix::Identity(K.rows(), K.rows());
    return exact_attention(Q, K, I, options).O;
}

// An independent oracle for rounding: the nearest value among all finite values of the
// 16-bit format (decoded by *_bits_to_float), ties to the even bit pattern, and overflow to
// inf past the midpoint between the largest finite value and the next power of two.
struct Format16 {
    std::vector<double> values;        // all finite non-negative values, ascending
    std::vector<std::uint16_t> codes;  // their bit patterns
    double overflow_midpoint = 0;
    std::uint16_t inf_code = 0;
};

Format16 make_format(float (*decode)(std::uint16_t), std::uint16_t inf_code,
                     double next_power_of_two) {
    Format16 f;
    for (std::uint32_t h = 0; h < 0x8000u; ++h) {
        const float x = decode(static_cast<std::uint16_t>(h));
        if (!std::isfinite(x)) continue;
        f.values.push_back(x);
        f.codes.push_back(static_cast<std::uint16_t>(h));
    }
    // Positive codes of a sign-magnitude format are ordered like their values.
    REQUIRE(std::is_sorted(f.values.begin(), f.values.end()));
    f.overflow_midpoint = (f.values.back() + next_power_of_two) / 2;
    f.inf_code = inf_code;
    return f;
}

std::uint16_t oracle_round(const Format16& f, float x) {
    const auto sign = static_cast<std::uint16_t>(std::signbit(x) ? 0x8000u : 0u);
    const double a = std::abs(static_cast<double>(x));
    if (a >= f.overflow_midpoint) return sign | f.inf_code;
    const auto it = std::lower_bound(f.values.begin(), f.values.end(), a);
    const auto hi = static_cast<std::size_t>(it - f.values.begin());
    if (hi == f.values.size()) return sign | f.codes.back();  // above the largest finite value
    if (f.values[hi] == a) return sign | f.codes[hi];
    const std::size_t lo = hi - 1;
    const double dlo = a - f.values[lo];
    const double dhi = f.values[hi] - a;
    if (dlo < dhi) return sign | f.codes[lo];
    if (dhi < dlo) return sign | f.codes[hi];
    return sign | ((f.codes[lo] & 1u) == 0 ? f.codes[lo] : f.codes[hi]);
}

// FA2's numerics in a storage dtype, row by row (Br does not change the arithmetic): scores
// in fp32 from dtype inputs, running max and sum in fp32, P~ rounded to the dtype before the
// P~V product (fp32 accumulation), O/l rounded to the dtype once at the end. Used only to
// check that the TOLERANCES.md rule is one a real tiled kernel meets.
Matrix fa2_in_precision(const Matrix& Q, const Matrix& K, const Matrix& V,
                        const AttentionOptions& options, DType dtype, long Bc) {
    const long N = Q.rows(), Nk = K.rows(), d = Q.cols(), dv = V.cols();
    const auto scale = static_cast<float>(softmax_scale(d, options));
    const MatrixF q = Q.cast<float>(), k = K.cast<float>(), v = V.cast<float>();
    constexpr float ninf = -std::numeric_limits<float>::infinity();
    Matrix O = Matrix::Zero(N, dv);
    for (long i = 0; i < N; ++i) {
        float m = ninf, l = 0;
        std::vector<float> acc(static_cast<std::size_t>(dv), 0.0f);
        for (long k0 = 0; k0 < Nk; k0 += Bc) {
            const long kc = std::min(Bc, Nk - k0);
            std::vector<float> s(static_cast<std::size_t>(kc), ninf);
            float block_max = ninf;
            for (long c = 0; c < kc; ++c) {
                if (!key_visible(i, k0 + c, N, Nk, options)) continue;
                float dot = 0;
                for (long t = 0; t < d; ++t) dot += q(i, t) * k(k0 + c, t);
                s[static_cast<std::size_t>(c)] = scale * dot;
                block_max = std::max(block_max, scale * dot);
            }
            const float m_new = std::max(m, block_max);
            if (m_new == ninf) continue;
            const float alpha = (m == m_new) ? 1.0f : std::exp(m - m_new);
            l *= alpha;
            for (float& a : acc) a *= alpha;
            for (long c = 0; c < kc; ++c) {
                const float p = std::exp(s[static_cast<std::size_t>(c)] - m_new);
                l += p;
                const float p_stored = round_to(dtype, p);
                for (long t = 0; t < dv; ++t) acc[static_cast<std::size_t>(t)] += p_stored * v(k0 + c, t);
            }
            m = m_new;
        }
        if (l == 0) continue;
        for (long t = 0; t < dv; ++t)
            O(i, t) = round_to(dtype, acc[static_cast<std::size_t>(t)] / l);
    }
    return O;
}

}  // namespace

// ===================================================================================
// Exact attention
// ===================================================================================

TEST_CASE("exact attention, d = 1, worked by hand", "[reference][exact]") {
    // q = 2, keys 1 and -1, scale = 1/sqrt(1) = 1: logits 2 and -2.
    const Matrix Q = mat(1, 1, {2});
    const Matrix K = mat(2, 1, {1, -1});
    const Matrix V = mat(2, 1, {3, 5});
    const AttentionResult r = exact_attention(Q, K, V);
    const double e2 = std::exp(2.0), em2 = std::exp(-2.0);
    CHECK(r.O(0, 0) == Approx((3 * e2 + 5 * em2) / (e2 + em2)).epsilon(1e-15));
    CHECK(r.lse(0) == Approx(std::log(e2 + em2)).epsilon(1e-15));

    // q = 0: all logits equal, so O is the mean of V's rows: (1 + 2 + 6) / 3 = 3.
    const AttentionResult u = exact_attention(mat(1, 1, {0}), mat(3, 1, {4, -7, 9}),
                                              mat(3, 1, {1, 2, 6}));
    CHECK(u.O(0, 0) == Approx(3.0).epsilon(1e-15));
    CHECK(u.lse(0) == Approx(std::log(3.0)).epsilon(1e-15));

    // Explicit scale 0.5 with d = 1: logits 0.5 * 2 * (1, -1) = (1, -1).
    AttentionOptions half;
    half.scale = 0.5;
    const AttentionResult h = exact_attention(Q, K, V, half);
    const double e1 = std::exp(1.0), em1 = std::exp(-1.0);
    CHECK(h.O(0, 0) == Approx((3 * e1 + 5 * em1) / (e1 + em1)).epsilon(1e-15));
}

TEST_CASE("exact attention, d = 4: default scale is 1/sqrt(d) = 1/2", "[reference][exact]") {
    // q.k = 4 for key 0 and 0 for key 1; scaled logits 2 and 0.
    const Matrix Q = mat(1, 4, {1, 1, 1, 1});
    const Matrix K = mat(2, 4, {1, 1, 1, 1, 0, 0, 0, 0});
    const Matrix V = mat(2, 2, {1, 0, 0, 1});
    const AttentionResult r = exact_attention(Q, K, V);
    const double p0 = std::exp(2.0) / (std::exp(2.0) + 1.0);
    CHECK(r.O(0, 0) == Approx(p0).epsilon(1e-15));
    CHECK(r.O(0, 1) == Approx(1 - p0).epsilon(1e-15));
    CHECK(softmax_scale(4, {}) == 0.5);
}

TEST_CASE("exact attention equals the textbook formula softmax(scale QK^T) V",
          "[reference][exact]") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const QKV x = random_qkv(5, 7, 3, seed);
    const double scale = 1 / std::sqrt(3.0);
    // Direct formula, no max subtraction (fine for logits of order 1).
    const Matrix E = (scale * x.Q * x.K.transpose()).array().exp().matrix();
    const Vector row_sums = E.rowwise().sum();
    const Matrix P = row_sums.cwiseInverse().asDiagonal() * E;
    const Matrix O = P * x.V;
    const AttentionResult r = exact_attention(x.Q, x.K, x.V);
    CHECK(max_abs_diff(r.O, O) < 1e-14);
    for (long i = 0; i < 5; ++i) CHECK(r.lse(i) == Approx(std::log(row_sums(i))).epsilon(1e-14));
}

TEST_CASE("softmax rows sum to 1 and masked entries are exactly 0", "[reference][exact]") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    for (const auto& [N, Nk, causal, key_length] :
         std::vector<std::tuple<long, long, bool, long>>{{9, 9, false, -1},
                                                        {9, 9, true, -1},
                                                        {6, 11, true, -1},
                                                        {11, 6, true, -1},
                                                        {8, 10, false, 7},
                                                        {8, 10, true, 4}}) {
        CAPTURE(N, Nk, causal, key_length);
        const QKV x = random_qkv(N, Nk, 8, seed);
        AttentionOptions o;
        o.causal = causal;
        o.key_length = key_length;
        const Matrix P = probabilities(x.Q, x.K, o);
        for (long i = 0; i < N; ++i) {
            bool sees_any = false;
            for (long j = 0; j < Nk; ++j) {
                if (key_visible(i, j, N, Nk, o)) {
                    sees_any = true;
                    CHECK(P(i, j) > 0);
                } else {
                    CHECK(P(i, j) == 0.0);
                }
            }
            CHECK(P.row(i).sum() == Approx(sees_any ? 1.0 : 0.0).margin(1e-14));
        }
    }
}

TEST_CASE("causal masking is bottom-right aligned", "[reference][exact][causal]") {
    AttentionOptions causal;
    causal.causal = true;

    // N = 4 queries, Nk = 2 keys: query i sees key j iff j <= i + (2 - 4) = i - 2.
    CHECK_FALSE(key_visible(0, 0, 4, 2, causal));
    CHECK_FALSE(key_visible(1, 0, 4, 2, causal));
    CHECK(key_visible(2, 0, 4, 2, causal));
    CHECK_FALSE(key_visible(2, 1, 4, 2, causal));
    CHECK(key_visible(3, 0, 4, 2, causal));
    CHECK(key_visible(3, 1, 4, 2, causal));

    const Matrix Q = mat(4, 1, {1, 2, 3, 4});
    const Matrix K = mat(2, 1, {0.5, -0.5});
    const Matrix V = mat(2, 2, {10, 20, 30, 40});
    const AttentionResult r = exact_attention(Q, K, V, causal);
    // Rows 0 and 1 see no key: O = 0 exactly, LSE = -inf, no NaN.
    for (long i : {0L, 1L}) {
        CHECK(r.O(i, 0) == 0.0);
        CHECK(r.O(i, 1) == 0.0);
        CHECK(r.lse(i) == -kInf);
    }
    // Row 2 sees only key 0: O = V row 0, LSE = logit = 3 * 0.5.
    CHECK(r.O(2, 0) == 10.0);
    CHECK(r.O(2, 1) == 20.0);
    CHECK(r.lse(2) == Approx(1.5).epsilon(1e-15));
    // Row 3 sees both keys: logits 2 and -2.
    const double p = std::exp(2.0) / (std::exp(2.0) + std::exp(-2.0));
    CHECK(r.O(3, 0) == Approx(10 * p + 30 * (1 - p)).epsilon(1e-14));
    CHECK(r.O(3, 1) == Approx(20 * p + 40 * (1 - p)).epsilon(1e-14));

    // N = 2 queries, Nk = 4 keys: query 0 sees keys 0..2, query 1 sees all four.
    CHECK(key_visible(0, 2, 2, 4, causal));
    CHECK_FALSE(key_visible(0, 3, 2, 4, causal));
    CHECK(key_visible(1, 3, 2, 4, causal));
    // N = Nk: the usual lower triangle.
    CHECK(key_visible(3, 3, 5, 5, causal));
    CHECK_FALSE(key_visible(3, 4, 5, 5, causal));
}

TEST_CASE("key padding masks keys at index >= key_length", "[reference][exact][padding]") {
    AttentionOptions pad;
    pad.key_length = 2;
    CHECK(key_visible(0, 1, 3, 4, pad));
    CHECK_FALSE(key_visible(0, 2, 3, 4, pad));
    CHECK_FALSE(key_visible(0, 3, 3, 4, pad));

    // Padding keys change nothing: same answer as dropping them.
    const QKV x = random_qkv(3, 4, 5, 7);
    const AttentionResult padded = exact_attention(x.Q, x.K, x.V, pad);
    const AttentionResult dropped =
        exact_attention(x.Q, x.K.topRows(2), x.V.topRows(2));
    CHECK(max_abs_diff(padded.O, dropped.O) == 0.0);
    CHECK(lse_match(padded.lse, dropped.lse, 0));

    pad.key_length = 0;  // nothing visible
    const AttentionResult none = exact_attention(x.Q, x.K, x.V, pad);
    CHECK(none.O.isZero(0));
    for (long i = 0; i < 3; ++i) CHECK(none.lse(i) == -kInf);
}

TEST_CASE("large logits give no inf or NaN", "[reference][exact][large]") {
    // By hand: logits 1e4 and -1e4 (d = 1, scale 1). Naive exp(1e4) would overflow.
    const AttentionResult r =
        exact_attention(mat(1, 1, {100}), mat(3, 1, {100, -100, 99.99}), mat(3, 1, {1, 2, 3}));
    CHECK(std::isfinite(r.O(0, 0)));
    const double p3 = std::exp(-1.0);  // logit 9999 vs 10000
    CHECK(r.O(0, 0) == Approx((1 + 3 * p3) / (1 + p3)).epsilon(1e-12));
    CHECK(r.lse(0) == Approx(1e4 + std::log(1 + p3)).epsilon(1e-15));

    for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
        for (const char* name : {"large_logits", "large_logits_causal"}) {
            CAPTURE(fasim::dtype_name(t), name);
            const AttentionCase c = named_case(name, t);
            // The case really reaches |scale * s| ~ 1e4 when S is computed in fp32.
            const MatrixF S = (c.inputs.Q.cast<float>() * c.inputs.K.cast<float>().transpose()) *
                              static_cast<float>(softmax_scale(c.inputs.Q.cols(), c.options));
            CHECK(S.cwiseAbs().maxCoeff() > 5e3f);
            CHECK(S.cwiseAbs().maxCoeff() < 2e4f);
            const AttentionResult e = exact_attention(c.inputs.Q, c.inputs.K, c.inputs.V, c.options);
            CHECK(all_finite(e.O));
            CHECK(e.lse.allFinite());
            const Matrix naive =
                naive_attention_in_precision(c.inputs.Q, c.inputs.K, c.inputs.V, c.options, t);
            CHECK(all_finite(naive));
        }
    }
}

TEST_CASE("bad shapes and scales are reported, not crashed on", "[reference][exact]") {
    CHECK_THROWS_AS(exact_attention(Matrix::Zero(2, 3), Matrix::Zero(2, 4), Matrix::Zero(2, 4)),
                    std::invalid_argument);
    CHECK_THROWS_AS(exact_attention(Matrix::Zero(2, 3), Matrix::Zero(2, 3), Matrix::Zero(3, 3)),
                    std::invalid_argument);
    CHECK_THROWS_AS(softmax_scale(0, {}), std::invalid_argument);
    CHECK_THROWS_AS(flash_attention_2(Matrix::Zero(2, 3), Matrix::Zero(2, 3),
                                      Matrix::Zero(2, 3), {}, 0, 4),
                    std::invalid_argument);
    CHECK_THROWS_AS(flash_attention_1(Matrix::Zero(2, 3), Matrix::Zero(2, 3),
                                      Matrix::Zero(2, 3), {}, 4, -1),
                    std::invalid_argument);
    CHECK_THROWS_AS(online_softmax_row(Vector::Zero(3), 0), std::invalid_argument);
    CHECK_THROWS_AS(named_case("no_such_case"), std::invalid_argument);
}

// ===================================================================================
// fp16 / bf16 rounding
// ===================================================================================

TEST_CASE("fp16 rounding: known bit patterns", "[reference][precision][fp16]") {
    CHECK(float_to_fp16_bits(1.0f) == 0x3c00);
    CHECK(float_to_fp16_bits(-2.0f) == 0xc000);
    CHECK(float_to_fp16_bits(0.0f) == 0x0000);
    CHECK(float_to_fp16_bits(-0.0f) == 0x8000);
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1.0.
    CHECK(float_to_fp16_bits(1.0f + 0x1p-11f) == 0x3c00);
    // 1 + 3*2^-11 is halfway between 0x3c01 (odd) and 0x3c02 (even) -> 0x3c02.
    CHECK(float_to_fp16_bits(1.0f + 3 * 0x1p-11f) == 0x3c02);
    // Just above the tie rounds up.
    CHECK(float_to_fp16_bits(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
    CHECK(float_to_fp16_bits(0.1f) == 0x2e66);
    CHECK(float_to_fp16_bits(65504.0f) == 0x7bff);     // largest finite
    CHECK(float_to_fp16_bits(65519.996f) == 0x7bff);   // just below the midpoint
    CHECK(float_to_fp16_bits(65520.0f) == 0x7c00);     // midpoint, ties to even -> inf
    CHECK(float_to_fp16_bits(-65520.0f) == 0xfc00);
    CHECK(float_to_fp16_bits(1e6f) == 0x7c00);
    CHECK(float_to_fp16_bits(std::numeric_limits<float>::infinity()) == 0x7c00);
    CHECK(float_to_fp16_bits(-std::numeric_limits<float>::infinity()) == 0xfc00);
    // Subnormals: k * 2^-24.
    CHECK(float_to_fp16_bits(0x1p-24f) == 0x0001);        // smallest subnormal
    CHECK(float_to_fp16_bits(0x1p-25f) == 0x0000);        // tie between 0 and 2^-24 -> 0
    CHECK(float_to_fp16_bits(-0x1p-25f) == 0x8000);
    CHECK(float_to_fp16_bits(0x1.8p-25f) == 0x0001);      // 0.75 * 2^-24 -> 2^-24
    CHECK(float_to_fp16_bits(0x1.8p-24f) == 0x0002);      // 1.5 * 2^-24: tie -> even 2
    CHECK(float_to_fp16_bits(0x1.4p-23f) == 0x0002);      // 2.5 * 2^-24: tie -> even 2
    CHECK(float_to_fp16_bits(6.0e-8f) == 0x0001);
    CHECK(float_to_fp16_bits(1023 * 0x1p-24f) == 0x03ff);  // largest subnormal
    CHECK(float_to_fp16_bits(1023.5f * 0x1p-24f) == 0x0400);  // tie -> 1024 = min normal
    CHECK(float_to_fp16_bits(0x1p-14f) == 0x0400);
    CHECK(float_to_fp16_bits(1e-30f) == 0x0000);
    CHECK(float_to_fp16_bits(from_bits(0x00000001u)) == 0x0000);  // fp32 subnormal
    // NaN stays NaN.
    CHECK(std::isnan(fp16_bits_to_float(float_to_fp16_bits(std::nanf("")))));
    CHECK(std::isnan(fp16_bits_to_float(float_to_fp16_bits(from_bits(0x7f800001u)))));
    CHECK(std::isnan(fp16_bits_to_float(float_to_fp16_bits(from_bits(0xffc00000u)))));

    // Decoding.
    CHECK(fp16_bits_to_float(0x3c00) == 1.0f);
    CHECK(fp16_bits_to_float(0x7bff) == 65504.0f);
    CHECK(fp16_bits_to_float(0x0001) == 0x1p-24f);
    CHECK(fp16_bits_to_float(0x03ff) == 1023 * 0x1p-24f);
    CHECK(fp16_bits_to_float(0x3555) == 0.333251953125f);
    CHECK(fp16_bits_to_float(0xc000) == -2.0f);
    CHECK(std::signbit(fp16_bits_to_float(0x8000)));
    CHECK(fp16_bits_to_float(0x7c00) == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(fp16_bits_to_float(0x7e00)));

    CHECK(round_to(DType::fp16, 1.0f + 0x1p-11f) == 1.0f);
    CHECK(round_to(DType::fp16, 65520.0f) == std::numeric_limits<float>::infinity());
    CHECK(round_to(DType::fp32, 1.0f + 0x1p-23f) == 1.0f + 0x1p-23f);
}

TEST_CASE("bf16 rounding: known bit patterns", "[reference][precision][bf16]") {
    CHECK(float_to_bf16_bits(1.0f) == 0x3f80);
    // 1.00390625 = 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even -> 1.0.
    CHECK(float_to_bf16_bits(1.00390625f) == 0x3f80);
    CHECK(round_to(DType::bf16, 1.00390625f) == 1.0f);
    // 1 + 3*2^-8: halfway between 0x3f81 (odd) and 0x3f82 -> 0x3f82.
    CHECK(float_to_bf16_bits(1.0f + 3 * 0x1p-8f) == 0x3f82);
    CHECK(float_to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
    CHECK(float_to_bf16_bits(3.14159265f) == 0x4049);
    CHECK(float_to_bf16_bits(-0.0f) == 0x8000);
    // Overflow: largest finite bf16 is 0x7f7f; the midpoint 0x7f7f8000 ties to even -> inf.
    CHECK(float_to_bf16_bits(from_bits(0x7f7f7fffu)) == 0x7f7f);
    CHECK(float_to_bf16_bits(from_bits(0x7f7f8000u)) == 0x7f80);
    CHECK(float_to_bf16_bits(std::numeric_limits<float>::max()) == 0x7f80);
    CHECK(float_to_bf16_bits(-std::numeric_limits<float>::max()) == 0xff80);
    CHECK(float_to_bf16_bits(std::numeric_limits<float>::infinity()) == 0x7f80);
    // Subnormals are kept (bf16 has fp32's exponent range).
    CHECK(float_to_bf16_bits(from_bits(0x00008000u)) == 0x0000);  // tie -> even 0
    CHECK(float_to_bf16_bits(from_bits(0x00018000u)) == 0x0002);  // tie -> even 2
    CHECK(float_to_bf16_bits(from_bits(0x00010000u)) == 0x0001);
    CHECK(float_to_bf16_bits(from_bits(0x00408000u)) == 0x0040);
    // NaN stays NaN, including signalling NaNs whose payload sits in the dropped bits.
    CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(from_bits(0x7f800001u)))));
    CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(from_bits(0xff800001u)))));
    CHECK(float_to_bf16_bits(from_bits(0x7fc00000u)) == 0x7fc0);

    CHECK(bf16_bits_to_float(0x3f80) == 1.0f);
    CHECK(bf16_bits_to_float(0x4049) == 3.140625f);
    CHECK(bf16_bits_to_float(0x7f7f) == from_bits(0x7f7f0000u));
}

TEST_CASE("fp16 and bf16 rounding agree with a nearest-value oracle", "[reference][precision]") {
    const Format16 fp16 = make_format(fp16_bits_to_float, 0x7c00, 65536.0);
    const Format16 bf16 = make_format(bf16_bits_to_float, 0x7f80, std::ldexp(1.0, 128));
    CHECK(fp16.values.size() == 0x7c00);  // 31 binades x 1024 codes
    CHECK(bf16.values.size() == 0x7f80);

    // Every finite 16-bit value round-trips exactly.
    for (std::uint32_t h = 0; h < 0x10000u; ++h) {
        const auto b = static_cast<std::uint16_t>(h);
        if ((b & 0x7fffu) < 0x7c00u) {
            REQUIRE(float_to_fp16_bits(fp16_bits_to_float(b)) == b);
        }
        if ((b & 0x7fffu) <= 0x7f80u) {
            REQUIRE(float_to_bf16_bits(bf16_bits_to_float(b)) == b);
        }
    }

    // A stride through all fp32 bit patterns (both signs, every binade), plus every
    // midpoint between neighbouring fp16 values and its two fp32 neighbours.
    long checked = 0;
    for (std::uint64_t u = 0; u <= 0xffffffffu; u += 4093) {
        const float x = from_bits(static_cast<std::uint32_t>(u));
        if (std::isnan(x)) continue;
        REQUIRE(float_to_fp16_bits(x) == oracle_round(fp16, x));
        REQUIRE(float_to_bf16_bits(x) == oracle_round(bf16, x));
        ++checked;
    }
    for (std::size_t t = 0; t + 1 < fp16.values.size(); ++t) {
        const auto mid = static_cast<float>((fp16.values[t] + fp16.values[t + 1]) / 2);
        for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), -mid}) {
            REQUIRE(float_to_fp16_bits(x) == oracle_round(fp16, x));
            ++checked;
        }
    }
    CHECK(checked > 1000000);
#if defined(__FLT16_MAX__)
    // Cross-check with the compiler's own float -> _Float16 conversion where it exists.
    for (std::uint64_t u = 0; u <= 0xffffffffu; u += 65537) {
        const float x = from_bits(static_cast<std::uint32_t>(u));
        if (std::isnan(x)) continue;
        const auto h = static_cast<_Float16>(x);
        REQUIRE(float_to_fp16_bits(x) == std::bit_cast<std::uint16_t>(h));
    }
#endif
}

TEST_CASE("round_matrix and representable", "[reference][precision]") {
    const Matrix A = mat(1, 3, {1.0 + std::ldexp(1.0, -11), 65520.0, 0.1});
    const Matrix R = round_matrix(A, DType::fp16);
    CHECK(R(0, 0) == 1.0);
    CHECK(R(0, 1) == kInf);
    CHECK(R(0, 2) == static_cast<double>(fp16_bits_to_float(0x2e66)));
    CHECK(representable(R, DType::fp16));
    CHECK_FALSE(representable(A, DType::fp16));
    CHECK(representable(round_matrix(A, DType::bf16), DType::bf16));
    CHECK(representable(round_matrix(A, DType::fp32), DType::fp32));
    CHECK_FALSE(representable(mat(1, 1, {0.1}), DType::fp32));  // 0.1 is not a float
    const MatrixF F = round_matrix(MatrixF(A.cast<float>()), DType::bf16);
    CHECK(F(0, 0) == 1.0f);
    CHECK(machine_epsilon(DType::fp16) == std::ldexp(1.0, -10));
    CHECK(machine_epsilon(DType::bf16) == std::ldexp(1.0, -7));
    CHECK(machine_epsilon(DType::fp32) == static_cast<double>(std::numeric_limits<float>::epsilon()));
}

// ===================================================================================
// Naive attention in a precision, and the tolerance rule
// ===================================================================================

TEST_CASE("naive attention in fp16/bf16 has errors of the expected size",
          "[reference][precision][naive]") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    double errors[3] = {0, 0, 0};
    for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
        CAPTURE(fasim::dtype_name(t));
        const QKV x = random_qkv(256, 256, 64, seed, t);
        REQUIRE(representable(x.Q, t));
        REQUIRE(representable(x.V, t));
        const Matrix exact = exact_attention(x.Q, x.K, x.V).O;
        const Matrix naive = naive_attention_in_precision(x.Q, x.K, x.V, {}, t);
        REQUIRE(representable(naive, t));
        const double rel = max_abs_diff(naive, exact) / exact.cwiseAbs().maxCoeff();
        CAPTURE(rel);
        errors[static_cast<int>(t)] = rel;
        if (t == DType::fp32) {
            CHECK(rel > 0);
            CHECK(rel < 1e-5);
        } else {
            CHECK(rel > 1e-5);
            CHECK(rel < 1e-1);
            // At least the rounding of O itself, at most a few hundred ulps.
            CHECK(rel > 0.1 * machine_epsilon(t));
            CHECK(rel < 300 * machine_epsilon(t));
        }
    }
    // bf16 keeps 3 fewer fraction bits than fp16.
    CHECK(errors[2] > 2 * errors[1]);
}

TEST_CASE("naive attention: fully masked rows are zero and d=1 works by hand",
          "[reference][precision][naive]") {
    AttentionOptions causal;
    causal.causal = true;
    const Matrix Q = mat(4, 1, {1, 2, 3, 4});
    const Matrix K = mat(2, 1, {0.5, -0.5});
    const Matrix V = mat(2, 2, {10, 20, 30, 40});
    for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
        const Matrix O = naive_attention_in_precision(Q, K, V, causal, t);
        CHECK(O.topRows(2).isZero(0));
        CHECK(O(2, 0) == 10.0);  // single visible key: P = 1 exactly
        CHECK(O(2, 1) == 20.0);
        CHECK(all_finite(O));
    }
    // fp16 by hand, row 3: logits 2 and -2 (exact in fp16); p0 = 1/(1+e^-4) in fp32, rounded
    // to fp16; O = p0*10 + p1*30 accumulated in fp32, rounded to fp16.
    const float e = std::exp(-4.0f);
    const float p0 = round_to(DType::fp16, 1.0f / (1.0f + e));
    const float p1 = round_to(DType::fp16, e / (1.0f + e));
    const Matrix O = naive_attention_in_precision(Q, K, V, causal, DType::fp16);
    CHECK(O(3, 0) == static_cast<double>(round_to(DType::fp16, p0 * 10.0f + p1 * 30.0f)));
}

TEST_CASE("the tolerance rule: exact passes, a bound-sized error fails, NaN fails",
          "[reference][precision][tolerance]") {
    const QKV x = random_qkv(64, 64, 32, 11, DType::fp16);
    const AttentionResult ex = exact_attention(x.Q, x.K, x.V);
    const Matrix& exact = ex.O;
    const Matrix naive = naive_attention_in_precision(x.Q, x.K, x.V, {}, DType::fp16);
    const double es = logit_rounding_term(x.Q, x.K, x.V, {}, ex);
    CHECK(es > 0);
    CHECK(es < 1e-5);  // fp32 logit rounding: far below fp16's output rounding
    const ToleranceCheck same = check_tolerance(naive, exact, naive, es, DType::fp16);
    CHECK(same.pass);
    CHECK(same.error == same.naive_error);
    CHECK(same.output_ulp == machine_epsilon(DType::fp16) * exact.cwiseAbs().maxCoeff());
    CHECK(same.floor == same.output_ulp + es);
    CHECK(same.bound == 2 * same.naive_error + same.floor);
    // The convenience form computes the same thing from the inputs.
    const ToleranceCheck from_inputs = check_tolerance(naive, x.Q, x.K, x.V, {}, DType::fp16);
    CHECK(from_inputs.bound == Approx(same.bound).epsilon(1e-12));
    CHECK(check_tolerance(exact, exact, naive, es, DType::fp16).pass);
    Matrix off = exact;
    off(3, 4) += 1.01 * same.bound;
    CHECK_FALSE(check_tolerance(off, exact, naive, es, DType::fp16).pass);
    off(3, 4) = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(check_tolerance(off, exact, naive, es, DType::fp16).pass);

    // When naive happens to be exact (one key: O = V's row), the floor still admits a
    // one-ulp difference in the stored output, and E_S is 0 (a single key has P = 1).
    const Matrix Q1 = x.Q.topRows(1), K1 = x.K.topRows(1), V1 = x.V.topRows(1);
    const AttentionResult ex1 = exact_attention(Q1, K1, V1);
    const Matrix naive1 = naive_attention_in_precision(Q1, K1, V1, {}, DType::fp16);
    REQUIRE(naive1 == ex1.O);
    CHECK(logit_rounding_term(Q1, K1, V1, {}, ex1) == 0.0);
    const double top = ex1.O.cwiseAbs().maxCoeff();
    const double ulp = machine_epsilon(DType::fp16) * std::exp2(std::floor(std::log2(top)));
    Matrix one_ulp = ex1.O;
    for (long c = 0; c < one_ulp.cols(); ++c) {
        if (std::abs(one_ulp(0, c)) == top) one_ulp(0, c) -= std::copysign(ulp, one_ulp(0, c));
    }
    CHECK(check_tolerance(one_ulp, Q1, K1, V1, {}, DType::fp16).pass);
    Matrix two_ulp = ex1.O;
    two_ulp(0, 0) += 2.5 * machine_epsilon(DType::fp16) * top;
    CHECK_FALSE(check_tolerance(two_ulp, Q1, K1, V1, {}, DType::fp16).pass);
}

TEST_CASE("the tolerance rule is met by FA2-style arithmetic in every precision",
          "[reference][precision][tolerance]") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    for (DType t : {DType::fp16, DType::bf16, DType::fp32}) {
        for (const auto& [N, Nk, d, causal] : std::vector<std::tuple<long, long, long, bool>>{
                 {256, 256, 64, false}, {256, 256, 64, true}, {100, 300, 48, false},
                 {300, 100, 96, true}, {1, 500, 64, false}}) {
            for (long Bc : {16L, 64L, 128L}) {
                CAPTURE(fasim::dtype_name(t), N, Nk, d, causal, Bc);
                const QKV x = random_qkv(N, Nk, d, seed + static_cast<std::uint64_t>(N + Nk), t);
                AttentionOptions o;
                o.causal = causal;
                const Matrix alg = fa2_in_precision(x.Q, x.K, x.V, o, t, Bc);
                const ToleranceCheck c = check_tolerance(alg, x.Q, x.K, x.V, o, t);
                CAPTURE(c.error, c.naive_error, c.floor, c.bound);
                CHECK(c.pass);
                // The floor does not swamp the rule: for fp16/bf16 it is the output rounding.
                if (t != DType::fp32) CHECK(c.logit_term < 0.05 * c.output_ulp);
            }
        }
    }
    // Every named case in every dtype.
    for (DType t : {DType::fp16, DType::bf16}) {
        for (const AttentionCase& c : named_cases(t, seed)) {
            CAPTURE(fasim::dtype_name(t), c.name);
            const Matrix alg = fa2_in_precision(c.inputs.Q, c.inputs.K, c.inputs.V, c.options, t, 32);
            const ToleranceCheck r = check_tolerance(alg, c.inputs.Q, c.inputs.K, c.inputs.V, c.options, t);
            CAPTURE(r.error, r.naive_error, r.floor);
            CHECK(r.pass);
        }
    }
    // The float answer keys (fp32 arithmetic, Eigen's own summation order) meet the fp32 rule
    // for O and the LSE rule.
    for (const AttentionCase& c : named_cases(DType::fp32, seed)) {
        const Matrix& Q = c.inputs.Q;
        const Matrix& K = c.inputs.K;
        const Matrix& V = c.inputs.V;
        const AttentionResult ex = exact_attention(Q, K, V, c.options);
        const Matrix naive = naive_attention_in_precision(Q, K, V, c.options, DType::fp32);
        const double es = logit_rounding_term(Q, K, V, c.options, ex);
        for (const auto& [Br, Bc] : std::vector<std::pair<long, long>>{{64, 64}, {16, 32}, {1, 4}}) {
            CAPTURE(c.name, Br, Bc);
            const AttentionResult fa2 = flash_attention_2<float>(Q, K, V, c.options, Br, Bc);
            const FlashAttention1Result fa1 = flash_attention_1<float>(Q, K, V, c.options, Br, Bc);
            const ToleranceCheck c2 = check_tolerance(fa2.O, ex.O, naive, es, DType::fp32);
            const ToleranceCheck c1 = check_tolerance(fa1.O, ex.O, naive, es, DType::fp32);
            CAPTURE(c2.error, c1.error, c2.naive_error, c2.floor);
            CHECK(c2.pass);
            CHECK(c1.pass);
            const LseCheck l2 = check_lse(fa2.lse, Q, K, c.options, ex);
            const LseCheck l1 = check_lse(fa1.lse, Q, K, c.options, ex);
            CAPTURE(l2.worst_ratio, l1.worst_ratio, l2.first_bad_row, l1.first_bad_row);
            CHECK(l2.pass);
            CHECK(l1.pass);
        }
    }
}

TEST_CASE("the LSE rule: -inf exactly where no key is seen", "[reference][precision][tolerance]") {
    AttentionOptions causal;
    causal.causal = true;
    const QKV x = random_qkv(6, 3, 8, 3);
    const AttentionResult ex = exact_attention(x.Q, x.K, x.V, causal);
    CHECK(check_lse(ex.lse, x.Q, x.K, causal, ex).pass);
    Vector bad = ex.lse;
    bad(0) = 0;  // row 0 sees no key: must be -inf
    CHECK(check_lse(bad, x.Q, x.K, causal, ex).first_bad_row == 0);
    bad = ex.lse;
    bad(5) = std::numeric_limits<double>::quiet_NaN();
    CHECK(check_lse(bad, x.Q, x.K, causal, ex).first_bad_row == 5);
    bad = ex.lse;
    bad(4) += 1e-3;
    CHECK_FALSE(check_lse(bad, x.Q, x.K, causal, ex).pass);
    const Vector tol = lse_tolerance(x.Q, x.K, causal, ex);
    CHECK(tol(0) == 0.0);
    CHECK(tol(5) > 0);
    CHECK(tol(5) < 1e-5);
}

// ===================================================================================
// Online softmax and the FA1 / FA2 answer keys
// ===================================================================================

TEST_CASE("online softmax: a worked example", "[reference][blocked][online]") {
    Vector x(3);
    x << 1, 3, 2;
    const OnlineSoftmaxResult r = online_softmax_row(x, 2);
    REQUIRE(r.steps.size() == 2);
    // Chunk 1 = {1, 3}: m = 3, l = e^-2 + 1.
    CHECK(r.steps[0].begin == 0);
    CHECK(r.steps[0].end == 2);
    CHECK(r.steps[0].chunk_max == 3);
    CHECK(r.steps[0].m == 3);
    CHECK(r.steps[0].l == Approx(std::exp(-2.0) + 1).epsilon(1e-15));
    CHECK(r.steps[0].correction == 0.0);  // from m = -inf: the empty sum is scaled by 0
    // Chunk 2 = {2}: max stays 3, correction 1, l += e^-1.
    CHECK(r.steps[1].chunk_max == 2);
    CHECK(r.steps[1].m == 3);
    CHECK(r.steps[1].correction == 1.0);
    CHECK(r.steps[1].l == Approx(std::exp(-2.0) + 1 + std::exp(-1.0)).epsilon(1e-15));
    const double l = 1 + std::exp(-1.0) + std::exp(-2.0);
    CHECK(r.p(0) == Approx(std::exp(-2.0) / l).epsilon(1e-15));
    CHECK(r.p(1) == Approx(1 / l).epsilon(1e-15));
    CHECK(r.p(2) == Approx(std::exp(-1.0) / l).epsilon(1e-15));
    CHECK(r.lse == Approx(3 + std::log(l)).epsilon(1e-15));

    // A rising maximum rescales the old sum: x = {0, 5} in chunks of 1.
    Vector y(2);
    y << 0, 5;
    const OnlineSoftmaxResult s = online_softmax_row(y, 1);
    CHECK(s.steps[1].correction == Approx(std::exp(-5.0)).epsilon(1e-15));
    CHECK(s.l == Approx(1 + std::exp(-5.0)).epsilon(1e-15));

    // Everything masked: p = 0, lse = -inf, no NaN.
    const OnlineSoftmaxResult z = online_softmax_row(Vector::Constant(5, -kInf), 2);
    CHECK(z.p.isZero(0));
    CHECK(z.lse == -kInf);
    CHECK(z.l == 0.0);
    for (const auto& st : z.steps) CHECK(st.correction == 1.0);
}

TEST_CASE("online softmax equals exact softmax for every chunk length",
          "[reference][blocked][online]") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    for (long n : {1L, 2L, 7L, 64L, 129L}) {
        Vector x = random_normal(n, 1, seed + static_cast<std::uint64_t>(n)).col(0) * 3.0;
        if (n > 2) x(1) = -kInf;  // a masked entry
        // Exact softmax via exact attention: one query, d = 1, scale 1, logits x, V = I.
        const Vector direct = [&] {
            Vector e(n);
            const double m = x.maxCoeff();
            for (long t = 0; t < n; ++t) e(t) = std::exp(x(t) - m);
            return Vector(e / e.sum());
        }();
        for (long chunk : {1L, 3L, 16L, 1000L}) {
            CAPTURE(n, chunk);
            const OnlineSoftmaxResult r = online_softmax_row(x, chunk);
            CHECK((r.p - direct).cwiseAbs().maxCoeff() < 1e-15);
            CHECK(r.p.sum() == Approx(1.0).margin(1e-14));
            CHECK(static_cast<long>(r.steps.size()) == (n + chunk - 1) / chunk);
            CHECK(r.m == x.maxCoeff());
            for (std::size_t s = 1; s < r.steps.size(); ++s) CHECK(r.steps[s].m >= r.steps[s - 1].m);
        }
    }
}

TEST_CASE("causal block classification", "[reference][blocked][causal]") {
    // N = Nk = 8, 4x4 blocks: block (0, 1) is above the diagonal, (0, 0) and (1, 1) cross it.
    CHECK(causal_block_skipped(0, 4, 4, 4, 8, 8));
    CHECK_FALSE(causal_block_skipped(0, 4, 0, 4, 8, 8));
    CHECK(causal_block_crosses(0, 4, 0, 4, 8, 8));
    CHECK(causal_block_crosses(4, 4, 4, 4, 8, 8));
    CHECK_FALSE(causal_block_crosses(4, 4, 0, 4, 8, 8));  // fully below: no mask needed
    CHECK_FALSE(causal_block_crosses(0, 4, 4, 4, 8, 8));  // skipped, not "crossing"
    // Bottom-right alignment with Nk = N + 4: the diagonal moves right by 4.
    CHECK_FALSE(causal_block_skipped(0, 4, 4, 4, 8, 12));
    CHECK(causal_block_crosses(0, 4, 4, 4, 8, 12));
    CHECK(causal_block_skipped(0, 4, 8, 4, 8, 12));
}

TEST_CASE("FA1 and FA2 answer keys equal exact attention (random ragged shapes)",
          "[reference][blocked]") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    const std::vector<std::pair<long, long>> shapes = {{1, 1},   {1, 77},  {5, 1},   {37, 13},
                                                       {64, 64}, {131, 197}, {197, 131}, {100, 100}};
    const std::vector<std::pair<long, long>> tiles = {{1, 1},  {16, 16}, {32, 8},
                                                      {7, 13}, {64, 128}, {256, 256}};
    long runs = 0;
    for (const auto& [N, Nk] : shapes) {
        const long d = (N + Nk) % 2 ? 48 : 16;
        const QKV x = random_qkv(N, Nk, d, seed + static_cast<std::uint64_t>(N * 1000 + Nk));
        for (bool causal : {false, true}) {
            for (long key_length : {-1L, (Nk * 2) / 3}) {
                AttentionOptions o;
                o.causal = causal;
                o.key_length = key_length;
                const AttentionResult exact = exact_attention(x.Q, x.K, x.V, o);
                for (const auto& [Br, Bc] : tiles) {
                    if (Br * Bc == 1 && N * Nk > 5000) continue;  // 1x1 tiles: small shapes only
                    CAPTURE(N, Nk, d, causal, key_length, Br, Bc);
                    const FlashAttention1Result fa1 = flash_attention_1(x.Q, x.K, x.V, o, Br, Bc);
                    const AttentionResult fa2 = flash_attention_2(x.Q, x.K, x.V, o, Br, Bc);
                    CHECK(max_abs_diff(fa1.O, exact.O) < 1e-12);
                    CHECK(max_abs_diff(fa2.O, exact.O) < 1e-12);
                    CHECK(lse_match(fa1.lse, exact.lse, 1e-13));
                    CHECK(lse_match(fa2.lse, exact.lse, 1e-13));
                    CHECK(all_finite(fa1.O));
                    CHECK(all_finite(fa2.O));
                    ++runs;
                }
            }
        }
    }
    CHECK(runs > 150);
}

TEST_CASE("FA1 and FA2 answer keys on every named case", "[reference][blocked][cases]") {
    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
        for (const AttentionCase& c : named_cases(t, seed)) {
            CAPTURE(fasim::dtype_name(t), c.name);
            const Matrix& Q = c.inputs.Q;
            const Matrix& K = c.inputs.K;
            const Matrix& V = c.inputs.V;
            REQUIRE(representable(Q, t));
            REQUIRE(representable(K, t));
            REQUIRE(representable(V, t));
            const AttentionResult exact = exact_attention(Q, K, V, c.options);
            REQUIRE(all_finite(exact.O));
            REQUIRE(no_nan(exact.lse));
            // Logits up to 1e4 carry absolute errors of 1e4 * 2^-52 ~ 2e-12 in float64.
            const double tol = c.name.rfind("large_logits", 0) == 0 ? 1e-9 : 1e-12;
            for (const auto& [Br, Bc] : std::vector<std::pair<long, long>>{{16, 16}, {64, 32}, {5, 11}}) {
                CAPTURE(Br, Bc);
                const FlashAttention1Result fa1 = flash_attention_1(Q, K, V, c.options, Br, Bc);
                const AttentionResult fa2 = flash_attention_2(Q, K, V, c.options, Br, Bc);
                CHECK(max_abs_diff(fa1.O, exact.O) < tol);
                CHECK(max_abs_diff(fa2.O, exact.O) < tol);
                CHECK(lse_match(fa1.lse, exact.lse, tol));
                CHECK(lse_match(fa2.lse, exact.lse, tol));
            }
            // Rows that see no key: O = 0 exactly and LSE = -inf, for all three.
            const FlashAttention1Result fa1 = flash_attention_1(Q, K, V, c.options, 16, 16);
            const AttentionResult fa2 = flash_attention_2(Q, K, V, c.options, 16, 16);
            for (long i = 0; i < Q.rows(); ++i) {
                bool sees_any = false;
                for (long j = 0; j < K.rows(); ++j) sees_any = sees_any || key_visible(i, j, Q.rows(), K.rows(), c.options);
                if (sees_any) continue;
                CHECK(exact.O.row(i).isZero(0));
                CHECK(fa1.O.row(i).isZero(0));
                CHECK(fa2.O.row(i).isZero(0));
                CHECK(exact.lse(i) == -kInf);
                CHECK(fa1.lse(i) == -kInf);
                CHECK(fa1.l(i) == 0.0);
                CHECK(fa1.m(i) == -kInf);
                CHECK(fa2.lse(i) == -kInf);
            }
        }
    }
}

TEST_CASE("named cases have the promised shapes and masks", "[reference][inputs]") {
    const std::vector<std::string> names = named_case_names();
    CHECK(names.size() == named_cases().size());
    const AttentionCase fewer = named_case("causal_fewer_keys");
    CHECK(fewer.inputs.Q.rows() == 37);
    CHECK(fewer.inputs.K.rows() == 13);
    CHECK(fewer.options.causal);
    const AttentionResult r = exact_attention(fewer.inputs.Q, fewer.inputs.K, fewer.inputs.V, fewer.options);
    for (long i = 0; i < 37; ++i) CHECK((r.lse(i) == -kInf) == (i < 24));
    for (const char* name : {"head_dim_48", "head_dim_80", "head_dim_96"}) {
        const AttentionCase c = named_case(name);
        CHECK((c.inputs.Q.cols() & (c.inputs.Q.cols() - 1)) != 0);  // not a power of two
    }
    const AttentionCase ragged = named_case("ragged");
    for (long tile : {16L, 32L, 64L, 128L}) {
        CHECK(ragged.inputs.Q.rows() % tile != 0);
        CHECK(ragged.inputs.K.rows() % tile != 0);
    }
    CHECK(named_case("single_query").inputs.Q.rows() == 1);
    const AttentionCase all_pad = named_case("all_padding");
    CHECK(exact_attention(all_pad.inputs.Q, all_pad.inputs.K, all_pad.inputs.V, all_pad.options).O.isZero(0));
}

TEST_CASE("input generators are deterministic and rounded", "[reference][inputs]") {
    // The engine itself: the standard fixes the 10000th output of a default-seeded mt19937_64.
    std::mt19937_64 engine;
    engine.discard(9999);
    CHECK(engine() == 9981545732273789042ull);

    // The generator's own stream is pinned: lessons print numbers drawn from it. (Values from
    // glibc's log/cos/sin; the margin allows a last-bit difference in another C library.)
    const Matrix g = random_normal(1, 3, 42);
    CHECK(g(0, 0) == Approx(-0.48121769980184492).epsilon(1e-14));
    CHECK(g(0, 1) == Approx(-0.57453687389830566).epsilon(1e-14));
    CHECK(g(0, 2) == Approx(0.49458385623521345).epsilon(1e-14));
    const QKV pinned = random_qkv(2, 2, 2, 7, DType::fp16);
    CHECK(pinned.Q(0, 0) == 1.435546875);
    CHECK(pinned.V(1, 1) == -0.2078857421875);

    const std::uint64_t seed = fresh_seed();
    CAPTURE(seed);
    for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
        const QKV a = random_qkv(33, 21, 48, seed, t);
        const QKV b = random_qkv(33, 21, 48, seed, t);
        CHECK(a.Q == b.Q);
        CHECK(a.K == b.K);
        CHECK(a.V == b.V);
        CHECK(representable(a.Q, t));
        CHECK(representable(a.K, t));
        CHECK(representable(a.V, t));
        const QKV c = random_qkv(33, 21, 48, seed + 1, t);
        CHECK(a.Q != c.Q);
        CHECK(a.Q.topRows(21) != a.K);  // (was a.Q != a.K.topRows(21): 33 rows against 21, an out-of-bounds read that
                                         // the sanitizer build's Eigen assertion caught)
    }
    // Roughly N(0, 1).
    const Matrix G = random_normal(200, 200, seed);
    const double mean = G.mean();
    const double var = (G.array() - mean).square().mean();
    CHECK(std::abs(mean) < 0.02);
    CHECK(std::abs(var - 1) < 0.03);
    // Named cases are reproducible too.
    CHECK(named_case("ragged", DType::bf16, 5).inputs.V == named_case("ragged", DType::bf16, 5).inputs.V);
}

// ---- Hardening (issue 25): logits beyond what fp16 stores ----

TEST_CASE("fp16 logits that overflow: naive attention's O is NaN, the bound stays finite, exact results pass", "[reference][tolerance][hardening]") {
    // |scale q.k| = 0.5 * 4 * 256 * 256 = 131072 >= 65520: the stored S is inf, as on a GPU.
    const long N = 4, d = 4;
    Matrix Q = Matrix::Constant(N, d, 256.0), K = Matrix::Constant(N, d, 256.0);
    Matrix V(N, d);
    for (long i = 0; i < N; ++i)
        for (long c = 0; c < d; ++c) V(i, c) = 0.25 * static_cast<double>(i - c);  // exact in fp16
    K(1, 0) = 300.0;  // one key wins outright
    AttentionOptions options;
    REQUIRE(representable(Q, DType::fp16));
    REQUIRE(representable(K, DType::fp16));
    CHECK(max_abs_logit(Q, K, options) >= overflow_threshold(DType::fp16));
    CHECK(overflow_threshold(DType::fp16) == 65520.0);
    CHECK(max_abs_logit(Q, K, options) < overflow_threshold(DType::bf16));
    const Matrix naive = naive_attention_in_precision(Q, K, V, options, DType::fp16);
    CHECK_FALSE(naive.allFinite());  // faithful: S overflowed to inf, softmax gave NaN

    const AttentionResult exact = exact_attention(Q, K, V, options);
    const Matrix exact16 = round_matrix(exact.O, DType::fp16);
    const ToleranceCheck c = check_tolerance(exact16, Q, K, V, options, DType::fp16);
    CHECK(c.naive_overflow);
    CHECK(std::isfinite(c.bound));  // was NaN: every answer failed
    CHECK(c.bound == c.floor);
    CHECK(c.pass);
    // FlashAttention-2 keeps S in fp32 (here in double): it passes; NaN or a wrong answer still fails.
    CHECK(check_tolerance(flash_attention_2(Q, K, V, options, 2, 2).O, Q, K, V, options, DType::fp16).pass);
    Matrix wrong = exact16;
    wrong(0, 0) += 0.5;
    CHECK_FALSE(check_tolerance(wrong, Q, K, V, options, DType::fp16).pass);
    CHECK_FALSE(check_tolerance(naive, Q, K, V, options, DType::fp16).pass);
    // Inputs that do not overflow: unchanged.
    const QKV x = random_qkv(16, 16, 8, 3, DType::fp16);
    const ToleranceCheck normal = check_tolerance(exact_attention(x.Q, x.K, x.V, options).O, x.Q, x.K, x.V, options, DType::fp16);
    CHECK_FALSE(normal.naive_overflow);
    CHECK(normal.bound == Approx(kToleranceFactor * normal.naive_error + normal.floor));
}
