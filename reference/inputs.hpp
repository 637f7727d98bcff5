// Deterministic test inputs: seeded random Q, K, V and a list of named adversarial cases.
//
// Determinism: every generator takes an explicit seed and draws from std::mt19937_64, whose
// output sequence the C++ standard fixes bit for bit. Normal variates are made here by the
// Box-Muller transform from that raw stream (not std::normal_distribution, whose algorithm
// differs between standard libraries). So the same seed gives identical matrices on every
// run, and on every machine whose C library computes log/cos/sqrt the same way (glibc on
// x86-64 and aarch64 does).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attention_reference.hpp"
#include "problem/dtype.hpp"

namespace fasim::reference {

struct QKV {
    Matrix Q;  // N x d
    Matrix K;  // Nk x d
    Matrix V;  // Nk x d
};

// rows x cols matrix of independent N(0, 1) draws, in float64 (not rounded).
Matrix random_normal(long rows, long cols, std::uint64_t seed);

// Q (N x d), K and V (Nk x d) with entries ~ N(0, 1), rounded to the dtype (through fp32),
// returned as float64 matrices whose every value is exactly representable in the dtype.
// Q, K and V come from independent streams derived from `seed`.
QKV random_qkv(long N, long Nk, long d, std::uint64_t seed, DType dtype = DType::fp32);

// A named input case: the shapes and options a test or lesson should loop over.
struct AttentionCase {
    std::string name;         // short identifier, e.g. "large_logits"
    std::string what;         // one line: what it exercises
    AttentionOptions options;
    QKV inputs;               // already representable in the requested dtype
};

// The named cases, in a fixed order:
//   large_logits         Q, K scaled so max |scale * q.k| is ~1e4 (checked in fp32): the
//                        softmax is nearly one-hot; naive exp without max-subtraction overflows
//   large_logits_causal  the same with causal masking (masked blocks next to huge logits)
//   causal_fewer_keys    causal, N = 37 > Nk = 13: the first 24 rows see no key (O = 0)
//   ragged               N = 131, Nk = 197 (primes): no tile size divides them
//   ragged_causal        the same, causal (bottom-right: row i sees keys j <= i + 66)
//   single_query         N = 1, Nk = 77 (decoding)
//   single_query_causal  N = 1, Nk = 77, causal: the one row sees every key
//   single_key           N = 5, Nk = 1: every row copies V's only row
//   head_dim_48/80/96    d not a power of two, N = Nk = 67 (head_dim_80 is causal)
//   key_padding          N = 50, Nk = 64, keys >= 41 are padding
//   causal_padding       N = Nk = 64, causal, keys >= 30 padding (rows < 30 see j <= i)
//   all_padding          key_length = 0: every row sees no key
// Each case draws from its own stream derived from `seed` and the case's name.
std::vector<AttentionCase> named_cases(DType dtype = DType::fp32, std::uint64_t seed = 20240601);
std::vector<std::string> named_case_names();
// One case by name; throws std::invalid_argument listing the valid names if unknown.
AttentionCase named_case(std::string_view name, DType dtype = DType::fp32,
                         std::uint64_t seed = 20240601);

}  // namespace fasim::reference
