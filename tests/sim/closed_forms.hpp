// The papers' traffic formulas, written out independently of the simulator, in
// bytes for all heads. Element counts follow DESIGN.md ("Domain facts").
#pragma once

#include <cstdint>

#include "problem/attention_problem.hpp"

namespace fasim::test {

inline std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Bytes {
    std::int64_t read = 0, write = 0;
    std::int64_t total() const { return read + write; }
};

// FlashAttention paper, Algorithm 0 (standard attention): 2Nd + 2Nk·d + 4·N·Nk
// elements, each GEMM operand counted once.
inline std::int64_t standard_paper_bytes(const AttentionProblem& p) {
    return p.batch_heads() * p.elem_bytes() * (2 * p.N * p.d + 2 * p.Nk * p.d + 4 * p.N * p.Nk);
}

// What standard attention's SRAM-tiled GEMMs request: the papers' count plus the
// operand panels a Tm×Tn output tiling re-reads (Q once per S tile column, K once
// per S tile row, P once per O tile column, V once per O tile row).
inline Bytes standard_tiled_gemm_bytes(const AttentionProblem& p, std::int64_t Tm, std::int64_t Tn) {
    const std::int64_t N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes(), BH = p.batch_heads();
    const std::int64_t reads = N * d * cdiv(Nk, Tn) + Nk * d * cdiv(N, Tm)  // S = Q Kᵀ
                               + N * Nk                                     // softmax reads S
                               + N * Nk * cdiv(d, Tn) + Nk * d * cdiv(N, Tm);  // O = P V
    const std::int64_t writes = N * Nk + N * Nk + N * d;                     // S, P, O
    return {BH * e * reads, BH * e * writes};
}

// FlashAttention Algorithm 1: reads 2Nk·d + Tc(2Nd + 2N), writes (Nd + 2N) + Tc(Nd + 2N)
// elements. Q, K, V and the final O in the storage dtype; ℓ, m and the running O in fp32
// (O_acc, FlashAttention-1's o_tmp): the init and the first Tc - 1 O writes and all Tc O
// reads are 4 bytes per element, the last write e bytes.
inline Bytes fa1_bytes(const AttentionProblem& p, std::int64_t Bc) {
    const std::int64_t N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes(), BH = p.batch_heads();
    const std::int64_t Tc = cdiv(Nk, Bc);
    return {BH * (2 * Nk * d * e + Tc * (N * d * e + N * d * 4 + 2 * N * 4)),
            BH * ((N * d * 4 + 2 * N * 4) + (Tc - 1) * N * d * 4 + N * d * e + Tc * 2 * N * 4)};
}

// FlashAttention-2: reads Nd + Tr·2Nk·d, writes Nd + N (LSE in fp32).
inline Bytes fa2_bytes(const AttentionProblem& p, std::int64_t Br) {
    const std::int64_t N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes(), BH = p.batch_heads();
    return {BH * e * (N * d + cdiv(N, Br) * 2 * Nk * d), BH * (e * N * d + 4 * N)};
}

// Tiled two-pass attention (derived in tiled_attention.cpp's header): Q once; K twice
// and V once per Q tile; O and LSE written once.
inline Bytes tiled_bytes(const AttentionProblem& p, std::int64_t Br) {
    const std::int64_t N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes(), BH = p.batch_heads();
    return {BH * e * (N * d + cdiv(N, Br) * 3 * Nk * d), BH * (e * N * d + 4 * N)};
}

}  // namespace fasim::test
