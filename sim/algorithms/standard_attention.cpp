// Standard attention (FlashAttention paper, Algorithm 0), as a tile program.
//
//   1. S = scale·Q·Kᵀ  — a matrix product; S is written to HBM   (kernel gemm_qk)
//   2. P = softmax(S)  — S read back, P written to HBM           (kernel softmax)
//   3. O = P·V         — P read back, O written                  (kernel gemm_pv)
// The N×Nk matrices S and P crossing HBM four times are its Θ(N²) traffic.
//
// The two products are SRAM-tiled GEMMs (64×64 output tile per block, operand
// tiles of k-step 32 through shared memory), or with --matmul naive, GEMMs whose
// threads each read their own operands from global memory (no SRAM reuse), or with
// --matmul library, a vendor GEMM's large tiles (cuBLAS on Hopper: 32768 outputs per block). A
// tiled GEMM re-reads operand panels from global memory (once per output tile
// column/row); the papers' formula counts each operand once, which is what DRAM
// sees when L2 serves those re-reads.
#include <numeric>

#include "algorithms/algorithm.hpp"
#include "algorithms/causal.hpp"
#include "algorithms/gemm_tiles.hpp"
#include "algorithms/row_softmax.hpp"
#include "common/errors.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Tm = cfg.gemm_m, Tn = cfg.gemm_n, Tk = cfg.gemm_k;  // S = QK^T's tiles
    const std::int64_t Pm = cfg.pv_m, Pn = cfg.pv_n;                        // O = PV's output tile

    const OperandGrid g = operand_grid(cfg);  // the backward reads Q, K and V in other tiles
    const GlobalTensor Q = x.declare({"Q", BH, N, d, e, g.rows, g.cols});
    const GlobalTensor K = x.declare({"K", p.batch_kv_heads(), Nk, d, e, g.rows, g.cols});  // grouped: shared by a group
    const GlobalTensor V = x.declare({"V", p.batch_kv_heads(), Nk, d, e, g.rows, g.cols});
    const GlobalTensor O = x.declare({"O", BH, N, d, e, Pm, Pn});
    // S and P are tracked in L2 in pieces as wide as both the GEMMs' output tiles and their k-steps
    // (a store of half a tracked piece would otherwise find the other half already written).
    const std::int64_t sp_cols = std::gcd(Tk, Tn);
    const GlobalTensor S = x.declare({"S", BH, N, Nk, e, 1, sp_cols});
    const GlobalTensor P = x.declare({"P", BH, N, Nk, e, 1, sp_cols});


    // 1. S = scale·Q·Kᵀ, written to HBM.
    launch_gemm(x, cfg, BH, {"gemm_qk", "S = scale*Q*K^T, one output tile per block; S written to HBM", Q, K, false, true, N,
                             Nk, d, Tm, Tn, p.softmax_scale(), S, &p});

    // 2. P = softmax(S) row by row: S read from HBM, P written to HBM.
    launch_row_softmax(x, p, {S, P, cfg.softmax_chunk, p.causal, cfg.warps});

    // 3. O = P·V, P read from HBM.
    launch_gemm(x, cfg, BH, {"gemm_pv", "O = P*V, one output tile per block", P, V, false, false, N, d, Nk, Pm, Pn, 1.0, O, &p});
}

// Operand tiles of one k-step (a library GEMM keeps two k-steps in flight: double buffering), or the
// softmax's staged row of S, whichever is larger.
std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t, std::int64_t, const TileConfig& cfg) {
    const std::int64_t e = p.elem_bytes();
    const std::int64_t stages = cfg.matmul == MatmulMode::library ? 2 : 1;
    const std::int64_t gemm = cfg.matmul == MatmulMode::naive ? 0
                            : stages * std::max(cfg.gemm_m + cfg.gemm_n, cfg.pv_m + cfg.pv_n) * cfg.gemm_k * e;
    return std::max(gemm, cfg.softmax_chunk * e);
}

std::string bytes_text(std::int64_t b) { return std::to_string(b) + " B"; }

// The GEMMs' output tiles (fixed by --matmul; --Br/--Bc do not apply) and the softmax's row chunk.
TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c;
    c.matmul = req.matmul;
    const std::int64_t d = p.d, e = p.elem_bytes(), limit = gpu.smem_per_block_bytes;
    if (req.Br || req.Bc) c.reasons.push_back("--Br/--Bc do not apply to standard attention (GEMM tiles are fixed)");
    if (c.matmul == MatmulMode::naive) {
        c.gemm_m = c.gemm_n = c.pv_m = c.pv_n = 16;
        c.reasons.push_back("naive GEMMs: 16x16 outputs per block, each thread reads its own operands from global memory");
    } else if (c.matmul == MatmulMode::library && p.dtype == DType::fp32) {
        // cuBLAS's fp32 GEMMs (CUDA cores) have not been profiled: 64x64 output tiles, at the FP32
        // rate cuBLAS reaches (the GPU preset's effective FP32 throughput).
        c.reasons.push_back("library GEMMs in fp32 (cuBLAS SGEMM, not profiled): 64x64 output tiles at cuBLAS's "
                            "measured FP32 rate");
    } else if (c.matmul == MatmulMode::library) {
        // The library's output tiles, k-step and warps are the GPU's (gpu.model.library_gemm_*: cuBLAS on
        // the H200, ncu: 384-thread blocks, k-step 128 bytes, 256x128 tiles for S, 32768 outputs for O:
        // 512x64 or 256x128). O's tile is (outputs/d) x d, d at most S's tile columns, at most max_rows
        // rows (so the operand tiles of d = 32 still fit).
        const GpuSpec::Model& m = gpu.model;
        c.gemm_m = m.library_gemm_s_rows;
        c.gemm_n = m.library_gemm_s_cols;
        c.gemm_k = std::max<std::int64_t>(1, m.library_gemm_k_step_bytes / e);
        c.pv_n = std::min<std::int64_t>(d, m.library_gemm_s_cols);
        c.pv_m = std::min<std::int64_t>(m.library_gemm_o_outputs / c.pv_n, m.library_gemm_o_max_rows);
        c.gemm_warps = m.library_gemm_warps;
        c.reasons.push_back("library GEMMs (cuBLAS-like): output tiles S " + std::to_string(c.gemm_m) + "x" +
                            std::to_string(c.gemm_n) + ", O " + std::to_string(c.pv_m) + "x" +
                            std::to_string(c.pv_n) + ", k-step " + std::to_string(c.gemm_k) +
                            " double-buffered, " + std::to_string(c.gemm_warps) + " warps per block");
    } else {
        c.reasons.push_back("tiled GEMMs: 64x64 output tile per block, k-step 32, operand tiles in shared memory");
    }
    c.softmax_chunk = p.Nk;
    if (p.Nk * e > limit) {
        c.softmax_chunk = 1;
        while (c.softmax_chunk * 2 * e <= limit) c.softmax_chunk *= 2;
        c.reasons.push_back("a row of S (" + bytes_text(p.Nk * e) + ") exceeds shared memory (" + bytes_text(limit) +
                            "): softmax reads S twice in chunks of " + std::to_string(c.softmax_chunk));
    } else {
        c.reasons.push_back("softmax stages one row of S (" + bytes_text(p.Nk * e) + ") in shared memory");
    }
    c.Br = c.gemm_m;
    c.Bc = c.gemm_n;
    return c;
}

// The bytes of the three kernels when a GEMM's output tiling is Tm x Tn (S = QKᵀ) and Pm x Pn
// (O = PV): each operand panel is read once per output tile that needs it (a naive GEMM is the
// 1 x 1 tiling: every thread reads its own operands), the softmax reads S once or, in chunks, twice.
ClosedForm::Bytes standard_bytes(const AttentionProblem& p, std::int64_t Tm, std::int64_t Tn, std::int64_t Pm, std::int64_t Pn,
                                 std::int64_t softmax_passes) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, BH = p.batch_heads();
    const std::int64_t d = p.d, e = p.elem_bytes();
    const Count reads = N * d * ceil_div(p.Nk, Tn) + Nk * d * ceil_div(p.N, Tm)   // S = Q Kᵀ
                               + softmax_passes * N * Nk                             // softmax reads S
                               + N * Nk * ceil_div(d, Pn) + Nk * d * ceil_div(p.N, Pm);  // O = P V
    return {BH * e * reads, BH * e * (2 * N * Nk + N * d)};  // S, P, O written once
}

ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    const bool naive = t.matmul == MatmulMode::naive;
    ClosedForm f;
    f.hbm = standard_bytes(p, naive ? 1 : t.gemm_m, naive ? 1 : t.gemm_n, naive ? 1 : t.pv_m, naive ? 1 : t.pv_n,
                           t.softmax_chunk >= p.Nk ? 1 : 2);
    // Algorithm 0's own count, each operand read once: 2Nd + 2Nk·d + 4·N·Nk elements.
    f.papers_hbm = standard_bytes(p, p.N, p.Nk, p.N, p.d, 1);
    f.matmul_flops = Count(4) * p.batch_heads() * p.N * p.Nk * p.d;  // the mask does not skip any of it
    f.leading_hbm_bytes = 4 * static_cast<double>(p.N) * static_cast<double>(p.Nk) * static_cast<double>(p.elem_bytes()) *
                          static_cast<double>(p.batch_heads());
    f.leading_text = "standard 4\u00B7" + std::string(p.Nk == p.N ? "N\u00B2" : "N\u00B7Nk") +
                     "\u00B7e\u00B7B\u00B7H (S and P each written and read once)";
    return f;
}

// Output tiles of S (naive GEMMs load every operand element per thread: about 50 times the work of a
// tiled 64x64 output tile per 16x16 one, measured with the counting executor).
Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    const Count tiles = Count(p.batch_heads()) * ceil_div(p.N, t.gemm_m) * ceil_div(p.Nk, t.gemm_n);
    return t.matmul == MatmulMode::naive ? 50 * tiles : tiles;
}

}  // namespace

const Algorithm& standard_attention_algorithm() {
    static const Algorithm a{
        .id = "standard",
        .title = "Standard attention (Algorithm 0: S and P through HBM)",
        .name = "standard",
        .label = "standard",
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
