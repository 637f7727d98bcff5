// Seeded input generators (see inputs.hpp for the determinism contract).
#include "inputs.hpp"

#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include "precision.hpp"

namespace fasim::reference {

namespace {

// SplitMix64 finaliser: turns (seed, stream id) into well-mixed, distinct engine seeds.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
    return mix(seed ^ mix(stream));
}

// FNV-1a of a name, to give every named case its own stream.
std::uint64_t name_hash(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

// Uniform in (0, 1] and [0, 1) from the top 53 bits of one engine output.
double uniform_open0(std::mt19937_64& rng) {
    return static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53;
}
double uniform_closed0(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

void check_dims(const char* who, long N, long Nk, long d) {
    if (N < 0 || Nk < 0 || d < 1) {
        throw std::invalid_argument(std::string(who) + ": N = " + std::to_string(N) +
                                    ", Nk = " + std::to_string(Nk) + ", d = " +
                                    std::to_string(d) +
                                    "; need N >= 0, Nk >= 0 and d >= 1");
    }
}

struct CaseSpec {
    const char* name;
    const char* what;
    long N, Nk, d;
    bool causal;
    long key_length;
    bool large_logits;
};

constexpr CaseSpec kCases[] = {
    {"large_logits", "max |scale*q.k| ~ 1e4: near one-hot softmax, needs max subtraction", 64,
     64, 64, false, -1, true},
    {"large_logits_causal", "large logits next to causally masked entries", 64, 64, 64, true, -1,
     true},
    {"causal_fewer_keys", "causal with Nk < N: rows 0..23 see no key (O = 0, LSE = -inf)", 37,
     13, 32, true, -1, false},
    {"ragged", "N, Nk prime: no tile size divides them", 131, 197, 64, false, -1, false},
    {"ragged_causal", "ragged and causal, Nk > N (bottom-right: row i sees j <= i + 66)", 131,
     197, 64, true, -1, false},
    {"single_query", "N = 1 (decoding)", 1, 77, 64, false, -1, false},
    {"single_query_causal", "N = 1 causal: bottom-right alignment lets it see every key", 1, 77,
     64, true, -1, false},
    {"single_key", "Nk = 1: every row copies V's only row", 5, 1, 64, false, -1, false},
    {"head_dim_48", "d = 48 (not a power of two)", 67, 67, 48, false, -1, false},
    {"head_dim_80", "d = 80 (not a power of two)", 67, 67, 80, true, -1, false},
    {"head_dim_96", "d = 96 (not a power of two)", 67, 67, 96, false, -1, false},
    {"key_padding", "keys >= 41 of 64 are padding", 50, 64, 64, false, 41, false},
    {"causal_padding", "causal and keys >= 30 padding", 64, 64, 64, true, 30, false},
    {"all_padding", "key_length = 0: no row sees any key", 16, 24, 32, false, 0, false},
};

AttentionCase make_case(const CaseSpec& spec, DType dtype, std::uint64_t seed) {
    const std::uint64_t case_seed = stream_seed(seed, name_hash(spec.name));
    AttentionCase c;
    c.name = spec.name;
    c.what = spec.what;
    c.options.causal = spec.causal;
    c.options.key_length = spec.key_length;
    if (!spec.large_logits) {
        c.inputs = random_qkv(spec.N, spec.Nk, spec.d, case_seed, dtype);
        return c;
    }
    // Large logits: Q = a*G1, K = a*G2 with a chosen so that max |scale * q.k| ~ 1e4.
    const Matrix G1 = random_normal(spec.N, spec.d, stream_seed(case_seed, 1));
    const Matrix G2 = random_normal(spec.Nk, spec.d, stream_seed(case_seed, 2));
    const double scale = softmax_scale(spec.d, c.options);
    const double peak = (scale * (G1 * G2.transpose())).cwiseAbs().maxCoeff();
    const double a = std::sqrt(1.0e4 / peak);
    c.inputs.Q = round_matrix(Matrix(a * G1), dtype);
    c.inputs.K = round_matrix(Matrix(a * G2), dtype);
    c.inputs.V = round_matrix(random_normal(spec.Nk, spec.d, stream_seed(case_seed, 3)), dtype);
    return c;
}

}  // namespace

Matrix random_normal(long rows, long cols, std::uint64_t seed) {
    if (rows < 0 || cols < 0) {
        throw std::invalid_argument("random_normal: rows = " + std::to_string(rows) +
                                    ", cols = " + std::to_string(cols) + "; both must be >= 0");
    }
    std::mt19937_64 rng(seed);
    Matrix A(rows, cols);
    // Box-Muller: two uniforms give two independent N(0, 1) values. Row-major fill order.
    double spare = 0;
    bool have_spare = false;
    for (long r = 0; r < rows; ++r) {
        for (long c = 0; c < cols; ++c) {
            if (have_spare) {
                A(r, c) = spare;
                have_spare = false;
                continue;
            }
            const double u1 = uniform_open0(rng);
            const double u2 = uniform_closed0(rng);
            const double radius = std::sqrt(-2.0 * std::log(u1));
            const double angle = 2.0 * std::numbers::pi * u2;
            A(r, c) = radius * std::cos(angle);
            spare = radius * std::sin(angle);
            have_spare = true;
        }
    }
    return A;
}

QKV random_qkv(long N, long Nk, long d, std::uint64_t seed, DType dtype) {
    check_dims("random_qkv", N, Nk, d);
    QKV qkv;
    qkv.Q = round_matrix(random_normal(N, d, stream_seed(seed, 1)), dtype);
    qkv.K = round_matrix(random_normal(Nk, d, stream_seed(seed, 2)), dtype);
    qkv.V = round_matrix(random_normal(Nk, d, stream_seed(seed, 3)), dtype);
    return qkv;
}

std::vector<AttentionCase> named_cases(DType dtype, std::uint64_t seed) {
    std::vector<AttentionCase> cases;
    for (const CaseSpec& spec : kCases) cases.push_back(make_case(spec, dtype, seed));
    return cases;
}

std::vector<std::string> named_case_names() {
    std::vector<std::string> names;
    for (const CaseSpec& spec : kCases) names.emplace_back(spec.name);
    return names;
}

AttentionCase named_case(std::string_view name, DType dtype, std::uint64_t seed) {
    for (const CaseSpec& spec : kCases) {
        if (name == spec.name) return make_case(spec, dtype, seed);
    }
    std::string valid;
    for (const CaseSpec& spec : kCases) valid += std::string(valid.empty() ? "" : ", ") + spec.name;
    throw std::invalid_argument("named_case: unknown case '" + std::string(name) +
                                "'; valid names: " + valid);
}

}  // namespace fasim::reference
