// One output tile of a GEMM, as standard attention's kernels compute it (forward: S = Q Kᵀ, O = P V;
// backward: dV = Pᵀ dO, dP = dO Vᵀ, dQ = dS K, dK = dSᵀ Q): the matrix-product step both its tile
// programs share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "algorithms/algorithm.hpp"

namespace fasim {

// C = op(A)·op(B) with A stored m×k (k×m when a_transposed) and B stored k×n (n×k when b_transposed).
struct GemmShape {
    TensorView A, B;
    bool a_transposed, b_transposed;
    std::int64_t K;  // reduction length
};

inline Region gemm_a_tile(const GemmShape& g, std::int64_t m0, std::int64_t mr, std::int64_t k0, std::int64_t kc) {
    return g.a_transposed ? g.A.tile(k0, kc, m0, mr) : g.A.tile(m0, mr, k0, kc);
}
inline Region gemm_b_tile(const GemmShape& g, std::int64_t n0, std::int64_t nc, std::int64_t k0, std::int64_t kc) {
    return g.b_transposed ? g.B.tile(n0, nc, k0, kc) : g.B.tile(k0, kc, n0, nc);
}

// C[m0:m0+mr, n0:n0+nc], accumulated over k-steps of cfg.gemm_k.
inline Tile gemm_output_tile(Block& b, const GemmShape& g, const TileConfig& cfg, std::int64_t m0, std::int64_t mr,
                             std::int64_t n0, std::int64_t nc) {
    Tile C = b.alloc(mr, nc, Space::Registers, Fill::Zero, "C");
    const Product product{.transpose_a = g.a_transposed, .transpose_b = g.b_transposed, .accumulate = true};
    const std::int64_t steps = (g.K + cfg.gemm_k - 1) / cfg.gemm_k;
    for_each_run(b, 0, steps, {steps - 1}, [&](std::int64_t step) {  // alike k-steps but a ragged last one
        const std::int64_t k0 = step * cfg.gemm_k, kc = std::min(cfg.gemm_k, g.K - k0);
        if (cfg.matmul != MatmulMode::naive) {  // tiled or library: operand tiles through shared memory
            // fa-sim's kernels stage both k-major (As[k][m], Bs[k][n]): A when it is stored m x k, B when
            // it is stored n x k (S = Q K^T); kernels/kernel_execution.hpp charges the transposing copies.
            Tile A = b.load(gemm_a_tile(g, m0, mr, k0, kc), Space::Shared, g.a_transposed ? "A tile" : "A tile (k-major)");
            Tile B = b.load(gemm_b_tile(g, n0, nc, k0, kc), Space::Shared, g.b_transposed ? "B tile (k-major)" : "B tile");
            b.barrier();  // tiles complete before any warp reads them
            b.matmul(C, A, B, product);
            b.barrier();  // all warps done before the next k-step overwrites them
        } else {
            // Naive: one output per thread, every thread reading the operands of its own output from
            // global memory into registers (kernels/kernel_execution.hpp counts its warps' loads).
            Tile A = b.load(gemm_a_tile(g, m0, mr, k0, kc), Space::Registers, "A rows (every thread its own)");
            Tile B = b.load(gemm_b_tile(g, n0, nc, k0, kc), Space::Registers, "B columns (every thread its own)");
            b.matmul(C, A, B, product);
        }
    });
    return C;
}

// The tile grid the L2 model tracks a d-wide operand on (Q, K, V, dO): every product of the forward and
// the backward reads it in whole tiles of it, in either orientation (S = Q Kᵀ by Tm x Tk and Tn x Tk
// tiles, O = P V by Tk x Pn, dQ = dS K and dK = dSᵀ Q by Tk x Pn, dP = dO Vᵀ by Tm x Tk and Tn x Tk). On a
// coarser grid a k-step reading half a tracked tile would find the other half resident, never fetched.
struct OperandGrid {
    std::int64_t rows, cols;
};
inline OperandGrid operand_grid(const TileConfig& cfg) {
    return {std::gcd(std::gcd(cfg.gemm_m, cfg.gemm_n), cfg.gemm_k), std::gcd(cfg.gemm_k, cfg.pv_n)};
}

// A kernel whose block t works on tile (t / tiles_n, t % tiles_n) of a tiles_m x tiles_n grid (a GEMM's
// output tiles, an element-wise kernel's chunks): a grid of rows of alike blocks but the ragged last
// column, alike rows but the ragged last one (KernelDesc::row_blocks); one column: one run down it.
inline KernelDesc grid_kernel(std::string name, std::string role, std::int64_t tiles_m, std::int64_t tiles_n,
                              std::int64_t heads, int warps) {
    KernelDesc k{std::move(name), std::move(role), tiles_m * tiles_n, heads, warps};
    if (tiles_n == 1) {
        k.run_starts = run_starts(tiles_m, {tiles_m - 1});
        return k;
    }
    k.row_blocks = tiles_n;
    k.run_starts = run_starts(tiles_n, {tiles_n - 1});
    k.row_run_starts = run_starts(tiles_m, {tiles_m - 1});
    return k;
}
inline KernelDesc gemm_kernel(std::string name, std::string role, std::int64_t tiles_m, std::int64_t tiles_n,
                              std::int64_t heads, int warps) {
    return grid_kernel(std::move(name), std::move(role), tiles_m, tiles_n, heads, warps);
}

// C = alpha · op(A) op(B), rows x cols, over the K-long sum, one block per tm x tn output tile, every head:
// the GEMM kernels of standard attention's forward and backward and of PyTorch's math backend.
struct GemmLaunch {
    const char* name;
    const char* role;
    const GlobalTensor& A;
    const GlobalTensor& B;
    bool a_transposed, b_transposed;
    std::int64_t rows, cols, K, tm, tn;
    double alpha;
    const GlobalTensor& C;
    // Grouped-query attention: B is K or V, read from the K/V head of the query head's group (GQA's batched
    // GEMM: one K/V head's operand for all G query heads). nullptr: B by the query head, as A and C.
    const AttentionProblem* b_by_kv_head = nullptr;
};
inline void launch_gemm(Executor& x, const TileConfig& cfg, std::int64_t heads, const GemmLaunch& g) {
    const std::int64_t tiles_n = ceil_div(g.cols, g.tn);
    const KernelDesc kernel = gemm_kernel(g.name, g.role, ceil_div(g.rows, g.tm), tiles_n, heads, cfg.gemm_warps);
    x.launch(kernel, [&](Block& b, std::int64_t bh, std::int64_t t) {
        const std::int64_t m0 = (t / tiles_n) * g.tm, n0 = (t % tiles_n) * g.tn;
        const std::int64_t mr = std::min(g.tm, g.rows - m0), nc = std::min(g.tn, g.cols - n0);
        const std::int64_t b_head = g.b_by_kv_head ? g.b_by_kv_head->kv_head_of(bh) : bh;
        Tile out = gemm_output_tile(b, {view(g.A, bh), view(g.B, b_head), g.a_transposed, g.b_transposed, g.K}, cfg, m0, mr, n0, nc);
        if (g.alpha != 1.0) b.map(out, Fn::mul, {out, g.alpha});
        b.store(out, view(g.C, bh).tile(m0, mr, n0, nc));
    });
}

}  // namespace fasim
