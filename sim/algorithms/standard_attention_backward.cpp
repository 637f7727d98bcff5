// Standard attention's backward pass, as a tile program: what an autograd framework runs when the
// forward stored P (N×Nk per head) for it.
//
//   1. dV = Pᵀ dO                  GEMM, P read back from HBM          (kernel gemm_dv)
//   2. dP = dO Vᵀ                  GEMM, dP written to HBM             (kernel gemm_dp)
//   3. dS = P ∘ (dP − rowsum(P∘dP))  row by row: P and dP read, dS written (kernel softmax_bwd)
//   4. dQ = scale · dS K           GEMM, dS read back                  (kernel gemm_dq)
//   5. dK = scale · dSᵀ Q          GEMM, dS read back                  (kernel gemm_dk)
// The N×Nk matrices P, dP and dS crossing HBM are its Θ(N²) bytes; nothing is recomputed: 8·N·Nk·d
// matmul FLOPs per head. The GEMMs are the forward's (--matmul tiled, naive or library).
#include <numeric>

#include "algorithms/causal.hpp"
#include "algorithms/gemm_tiles.hpp"
#include "algorithms/group_sums.hpp"
#include "algorithms/row_softmax.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Tm = cfg.gemm_m, Tn = cfg.gemm_n, Tk = cfg.gemm_k;  // tiles of the N x Nk products
    const std::int64_t Pm = cfg.pv_m, Pn = cfg.pv_n;                        // tiles of the d-wide products
    const double scale = p.softmax_scale();

    const OperandGrid g = operand_grid(cfg);  // as the forward tracks them; dO too
    const GlobalTensor Q = x.declare({"Q", BH, N, d, e, g.rows, g.cols});
    const GlobalTensor K = x.declare({"K", p.batch_kv_heads(), Nk, d, e, g.rows, g.cols});  // grouped: shared by a group
    const GlobalTensor V = x.declare({"V", p.batch_kv_heads(), Nk, d, e, g.rows, g.cols});
    const std::int64_t sp_cols = std::gcd(Tk, Tn);  // as the forward tracks S and P in L2
    const GlobalTensor P = x.declare({"P", BH, N, Nk, e, 1, sp_cols});
    const GlobalTensor dO = x.declare({"dO", BH, N, d, e, g.rows, g.cols});
    const GlobalTensor dP = x.declare({"dP", BH, N, Nk, e, 1, sp_cols});
    const GlobalTensor dS = x.declare({"dS", BH, N, Nk, e, 1, sp_cols});
    const GlobalTensor dQ = x.declare({"dQ", BH, N, d, e, Pm, Pn});
    const KvGradients grads = declare_kv_gradients(x, p, Pm, Pn);  // per query head, summed when grouped

    launch_gemm(x, cfg, BH, {"gemm_dv", "dV = P^T*dO, P read back from HBM", P, dO, true, false, Nk, d, N, Pm, Pn, 1.0, grads.dV_parts});
    launch_gemm(x, cfg, BH, {"gemm_dp", "dP = dO*V^T, written to HBM", dO, V, false, true, N, Nk, d, Tm, Tn, 1.0, dP, &p});

    // dS = P o (dP - D), D = rowsum(P o dP), one block per row (two passes over chunks when a row of P
    // and dP does not fit in shared memory).
    launch_row_softmax_backward(x, p, {P, dP, dS, cfg.softmax_chunk, cfg.warps});

    launch_gemm(x, cfg, BH, {"gemm_dq", "dQ = scale*dS*K, dS read back from HBM", dS, K, false, false, N, d, Nk, Pm, Pn, scale, dQ, &p});
    launch_gemm(x, cfg, BH, {"gemm_dk", "dK = scale*dS^T*Q, dS read back from HBM", dS, Q, true, false, Nk, d, N, Pm, Pn, scale, grads.dK_parts});
    // Grouped K/V heads: each K/V head's dK, dV are its query heads' parts summed (autograd of PyTorch's
    // repeat_interleave, as of flash-attention's dk_expanded).
    sum_kv_gradient_groups(x, p, grads, "sum_groups");
}

// The GEMMs' operand tiles, as the forward's, or the row kernel's staged rows of P and dP.
std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig& cfg) {
    TileConfig gemm = cfg;
    gemm.softmax_chunk = 0;
    const std::int64_t gemms = algorithm("standard").smem_bytes(p, Br, Bc, gemm);
    return std::max(gemms, 2 * cfg.softmax_chunk * p.elem_bytes() + (cfg.softmax_chunk >= p.Nk ? cfg.softmax_chunk * 4 : 0));
}

// The forward's GEMM tiles (--matmul); the row kernel stages a row of P and of dP (and their product),
// in chunks when they do not fit.
TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c = algorithm("standard").choose_tiles(p, gpu, req);
    c.reasons.pop_back();  // the forward's softmax line
    const std::int64_t e = p.elem_bytes(), limit = gpu.smem_per_block_bytes;
    c.softmax_chunk = p.Nk;
    if (p.Nk * (2 * e + 4) > limit) {
        c.softmax_chunk = 1;  // the largest power of two whose P and dP chunks fit, short of a whole row
        while (c.softmax_chunk * 2 * 2 * e <= limit && c.softmax_chunk * 2 < p.Nk) c.softmax_chunk *= 2;
        c.reasons.push_back("a row of P and dP (" + std::to_string(2 * p.Nk * e) + " B) exceeds shared memory (" +
                            std::to_string(limit) + " B): the row kernel reads them twice in chunks of " +
                            std::to_string(c.softmax_chunk));
    } else {
        c.reasons.push_back("the row kernel stages one row of P, dP and P*dP (" + std::to_string(p.Nk * (2 * e + 4)) +
                            " B) in shared memory");
    }
    return c;
}

// Bytes of the five kernels when the GEMMs' output tiles are tm x tn (the N x Nk product dP) and pm x pn
// (the d-wide ones): each operand panel is read once per output tile that needs it (the naive GEMM is
// the 1 x 1 tiling); the row kernel reads P and dP once or, in chunks, twice.
ClosedForm::Bytes backward_bytes(const AttentionProblem& p, std::int64_t tm, std::int64_t tn, std::int64_t pm, std::int64_t pn,
                                 std::int64_t passes) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, BH = p.batch_heads();
    const std::int64_t d = p.d, e = p.elem_bytes();
    const Count reads = N * Nk * ceil_div(d, pn) + N * d * ceil_div(p.Nk, pm)   // dV = P^T dO
                        + N * d * ceil_div(p.Nk, tn) + Nk * d * ceil_div(p.N, tm)  // dP = dO V^T
                        + passes * 2 * N * Nk                                      // the row kernel
                        + N * Nk * ceil_div(d, pn) + Nk * d * ceil_div(p.N, pm)   // dQ = dS K
                        + N * Nk * ceil_div(d, pn) + N * d * ceil_div(p.Nk, pm);  // dK = dS^T Q
    return {BH * e * reads, BH * e * (2 * N * Nk + 2 * Nk * d + N * d)};  // dP, dS; dK, dV; dQ
}

ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    const bool naive = t.matmul == MatmulMode::naive;
    ClosedForm f;
    f.hbm = backward_bytes(p, naive ? 1 : t.gemm_m, naive ? 1 : t.gemm_n, naive ? 1 : t.pv_m, naive ? 1 : t.pv_n,
                           t.softmax_chunk >= p.Nk ? 1 : 2);
    f.papers_hbm = backward_bytes(p, p.N, p.Nk, std::max(p.N, p.Nk), p.d, 1);  // each operand once
    const ClosedForm::Bytes groups = kv_gradient_group_bytes(p);  // grouped K/V heads: the sum of dK, dV parts
    f.hbm->read += groups.read;
    f.hbm->write += groups.write;
    f.matmul_flops = Count(8) * p.batch_heads() * p.N * p.Nk * p.d;
    f.leading_hbm_bytes = 7 * static_cast<double>(p.N) * static_cast<double>(p.Nk) * static_cast<double>(p.elem_bytes()) *
                          static_cast<double>(p.batch_heads());
    f.leading_text = "standard backward 7\u00B7" + std::string(p.Nk == p.N ? "N\u00B2" : "N\u00B7Nk") +
                     "\u00B7e\u00B7B\u00B7H (P read twice, dP written and read, dS written and read twice)";
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    const Count tiles = 2 * Count(p.batch_heads()) * ceil_div(p.N, t.gemm_m) * ceil_div(p.Nk, t.gemm_n);
    return t.matmul == MatmulMode::naive ? 50 * tiles : tiles;
}

}  // namespace

const Algorithm& standard_attention_backward_algorithm() {
    static const Algorithm a{
        .id = "standard_bwd",
        .title = "Standard attention backward (P read back from HBM; dP and dS through HBM)",
        .name = "standard backward",
        .label = "standard",
        .family = "standard",
        .pass = Pass::backward,
        .matmul_modes = true,
        .grouped_kv = true,
        .baseline = true,
        .choose_tiles = choose_tiles,
        .smem_bytes = smem_bytes,
        .program = program,
        .closed_form = closed_form,
        .tile_steps = tile_steps,
        .tile_step_budget = 64'000'000,
    };
    return a;
}

}  // namespace fasim
