// PyTorch's math attention backend (the fallback of torch.nn.functional.scaled_dot_product_attention), as a
// tile program: the kernels it launches on a CUDA GPU, in order, with what each reads and writes. From ATen's
// _scaled_dot_product_attention_math (PyTorch 2.5 and later); torch 2.11's profiler lists the same kernels
// on an H200 (cuda/results/2026-11-29-h200-decode-stages/torch_decode.json, "kernels" of torch_math):
//
//   1. Q, K, V copied to fp32 ("keep query, key, value in high precision"; fp32 inputs are used as
//      they are, and torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True) turns this off)
//   2. q = Q32·√scale and k = K32·√scale, each a multiply kernel
//   3. causal only: ones(N, Nk) → tril → where(mask, 0, −inf), the additive mask (one head, shared)
//   4. S = q·kᵀ: cuBLAS SGEMM on the CUDA cores (fp32 operands; TF32 is off by default)
//   5. causal only: S += mask
//   6. _safe_softmax: softmax(S), isneginf(S), all() along each row, where(row fully masked, 0, softmax)
//   7. attn.to(fp16): the weights the function also returns (SDPA drops them; they are still computed)
//   8. O32 = attn·V32: SGEMM        9. O = O32.to(fp16)
//
// So with 16-bit inputs every N×Nk tensor lives in HBM as fp32, the kernels from the first GEMM on move
// 36 bytes per score (48 with the causal add), and both products run at the FP32 rate: the "naive PyTorch"
// attention a course compares FlashAttention with is an fp32 program.
#include <cmath>
#include <optional>

#include "algorithms/aten_elementwise.hpp"
#include "algorithms/row_softmax.hpp"
#include "algorithms/torch_math.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const bool upcast = torch_math_upcasts(p);
    const TorchMathGrids g = torch_math_grids(p, cfg);

    const GlobalTensor Q = x.declare({"Q", BH, N, d, e, g.input_rows, d});
    const GlobalTensor K = x.declare({"K", BH, Nk, d, e, g.input_rows, d});
    const GlobalTensor V = x.declare({"V", BH, Nk, d, e, g.input_rows, d});
    const GlobalTensor O = x.declare({"O", BH, N, d, e, g.input_rows, d});
    // The fp32 copies (the inputs themselves when they are fp32).
    const GlobalTensor Q32 = upcast ? x.declare({"Q_fp32", BH, N, d, 4, g.operand_rows, g.operand_cols}) : Q;
    const GlobalTensor K32 = upcast ? x.declare({"K_fp32", BH, Nk, d, 4, g.operand_rows, g.operand_cols}) : K;
    const GlobalTensor V32 = upcast ? x.declare({"V_fp32", BH, Nk, d, 4, g.operand_rows, g.operand_cols}) : V;
    const GlobalTensor Qs = x.declare({"q_scaled", BH, N, d, 4, g.operand_rows, g.operand_cols});
    const GlobalTensor Ks = x.declare({"k_scaled", BH, Nk, d, 4, g.operand_rows, g.operand_cols});
    const GlobalTensor S = x.declare({"S", BH, N, Nk, 4, 1, g.score_cols});
    const GlobalTensor P = x.declare({"P", BH, N, Nk, 4, 1, g.score_cols});
    // isneginf(S) and all() of each row are bool tensors. fa-sim stores their complements (1 where a score
    // is visible; 1 where a row sees some key), which a row max computes: the same bytes.
    const GlobalTensor Flags = x.declare({"neg_inf_flags", BH, N, Nk, 1, 1, g.score_cols});
    const GlobalTensor Rows = x.declare({"masked_rows", BH, N, 1, 1, 1, 1});
    const GlobalTensor Zero = x.declare({"zero", 1, 1, 1, 4, 1, 1});
    const GlobalTensor Attn = x.declare({"attn", BH, N, Nk, 4, 1, g.score_cols});
    const GlobalTensor O32 = upcast ? x.declare({"O_fp32", BH, N, d, 4, g.output_rows, g.output_cols}) : O;
    const double root_scale = std::sqrt(p.softmax_scale());

    if (upcast) {
        launch_copy(x, "copy_q_fp32", "Q.to(float32)", Q, Q32);
        launch_copy(x, "copy_k_fp32", "K.to(float32)", K, K32);
        launch_copy(x, "copy_v_fp32", "V.to(float32)", V, V32);
    }
    launch_copy(x, "mul_q", "q = Q * sqrt(scale)", Q32, Qs, root_scale);

    // The causal mask, one N x Nk fp32 tensor for every head: ones(N, Nk, bool).tril(), then made additive.
    // (fa-sim's bool tensors hold 0 for true and -inf for false: the additive mask they encode.)
    std::optional<GlobalTensor> mask;
    if (p.causal) {
        const GlobalTensor ones = x.declare({"mask_ones", 1, N, Nk, 1, 1, g.score_cols});
        const GlobalTensor tril = x.declare({"mask_tril", 1, N, Nk, 1, 1, g.score_cols});
        mask = x.declare({"mask", 1, N, Nk, 4, 1, g.score_cols});
        launch_elementwise(x, "mask_ones", "ones(N, Nk, bool)", 1, N, Nk,
                           [&](Block& b, std::int64_t, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc) {
                               Tile t = b.alloc(nr, nc, Space::Registers, Fill::Zero, "ones");
                               b.store(t, view(ones, 0).tile(r0, nr, c0, nc));
                           });
        launch_elementwise(x, "mask_tril", "tril(): false above the diagonal", 1, N, Nk,
                           [&](Block& b, std::int64_t, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc) {
                               Tile t = b.load(view(ones, 0).tile(r0, nr, c0, nc), Space::Registers, "ones");
                               b.mask(t, {r0, c0, N, Nk, true});
                               b.store(t, view(tril, 0).tile(r0, nr, c0, nc));
                           });
        launch_copy(x, "mask_where", "where(mask, 0, -inf): the additive mask", tril, *mask);
    }
    launch_copy(x, "mul_k", "k = K * sqrt(scale) (of K^T, a transposed view)", K32, Ks, root_scale);

    launch_gemm(x, cfg, BH, {"gemm_qk", "S = q*k^T: cuBLAS SGEMM, fp32 on the CUDA cores; S written to HBM", Qs, Ks, false,
                             true, N, Nk, d, cfg.gemm_m, cfg.gemm_n, 1.0, S});
    if (mask)
        launch_elementwise(x, "add_mask", "S += mask (in place)", BH, N, Nk,
                           [&](Block& b, std::int64_t h, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc) {
                               Tile s = b.load(view(S, h).tile(r0, nr, c0, nc), Space::Registers, "S");
                               Tile m = b.load(view(*mask, 0).tile(r0, nr, c0, nc), Space::Registers, "mask");
                               b.map(s, Fn::add, {s, m});
                               b.store(s, view(S, h).tile(r0, nr, c0, nc));
                           });

    // _safe_softmax: softmax, then rows that see no key set to 0 (softmax gives NaN there).
    launch_row_softmax(x, p, {S, P, cfg.softmax_chunk, false, cfg.warps});
    launch_elementwise(x, "isneginf", "isneginf(S), a bool per score", BH, N, Nk,
                       [&](Block& b, std::int64_t h, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc) {
                           Tile s = b.load(view(S, h).tile(r0, nr, c0, nc), Space::Registers, "S");
                           b.map(s, Fn::seen, {s});
                           b.store(s, view(Flags, h).tile(r0, nr, c0, nc));
                       });
    // all() along each row: ATen's reduce kernel, a block per row walking it in 512-element chunks.
    const std::int64_t chunks = ceil_div(Nk, kAtenBlockElements);
    x.launch(KernelDesc{"all_rows", "all(isneginf) along each row", N, BH, 16, run_starts(N, {})},
             [&](Block& b, std::int64_t h, std::int64_t row) {
                 Tile any = b.alloc_statistic(1, Space::Registers, Fill::Zero, "row sees a key");
                 for_each_run(b, 0, chunks, {chunks - 1}, [&](std::int64_t c) {
                     const std::int64_t c0 = c * kAtenBlockElements, nc = std::min(kAtenBlockElements, Nk - c0);
                     Tile f = b.load(view(Flags, h).tile(row, 1, c0, nc), Space::Registers, "flags");
                     Tile m = b.row_max(f, 1.0, "chunk");
                     b.map(any, Fn::max, {any, m});
                 });
                 b.store(any, view(Rows, h).tile(row, 1, 0, 1));
             });
    x.launch(KernelDesc{"fill_zero", "scalar_tensor(0.0)", 1, 1, kAtenWarps, {0}}, [&](Block& b, std::int64_t, std::int64_t) {
        Tile z = b.alloc(1, 1, Space::Registers, Fill::Zero, "0");
        b.store(z, view(Zero, 0).tile(0, 1, 0, 1));
    });
    launch_elementwise(x, "where_rows", "where(all masked, 0, softmax)", BH, N, Nk,
                       [&](Block& b, std::int64_t h, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc) {
                           Tile s = b.load(view(P, h).tile(r0, nr, c0, nc), Space::Registers, "softmax");
                           Tile seen = b.load(view(Rows, h).tile(r0, nr, 0, 1), Space::Registers, "masked_rows");
                           b.map(s, Fn::mul, {s, per_row(seen)});
                           b.store(s, view(Attn, h).tile(r0, nr, c0, nc));
                       });
    if (upcast) {
        const GlobalTensor attn_out = x.declare({"attn_out", BH, N, Nk, e, 1, g.score_cols});
        launch_copy(x, "copy_attn_half", "attn.to(fp16): the weights it also returns", Attn, attn_out);
    }
    launch_gemm(x, cfg, BH, {"gemm_pv", "O = attn*V: cuBLAS SGEMM, fp32 on the CUDA cores", Attn, V32, false, false, N, d, Nk,
                             cfg.pv_m, cfg.pv_n, 1.0, O32});
    if (upcast) launch_copy(x, "copy_o_half", "O.to(fp16)", O32, O);
}

std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t, std::int64_t, const TileConfig& cfg) {
    return torch_math_smem_bytes(p, cfg, TorchMathPass::forward);
}

TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    return torch_math_tiles(p, gpu, req, TorchMathPass::forward);
}

ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    ClosedForm f;
    f.hbm = torch_math_forward_bytes(p, t);
    f.matmul_flops = Count(4) * p.batch_heads() * p.N * p.Nk * p.d;
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    return 2 * Count(p.batch_heads()) * ceil_div(p.N, t.gemm_m) * ceil_div(p.Nk, t.gemm_n);
}

}  // namespace

const Algorithm& torch_math_attention_algorithm() {
    static const Algorithm a{
        .id = "torch_math",
        .title = "PyTorch's math SDPA backend (16-bit inputs copied to fp32; SGEMMs; ATen softmax and element-wise kernels)",
        .name = "PyTorch math",
        .label = "torch math",
        .library_model = true,
        .fp32_products = true,
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
