// PyTorch's math attention backend, backward: what autograd runs for torch_math's forward
// (torch.autograd.grad of O with respect to Q, K and V), each node's kernels, in the order PyTorch's
// engine takes the nodes (the latest made first among those ready):
//
//   1. dO.to(float32)                                  (the forward's last copy, undone)
//   2. dP = dO·V32ᵀ, then dV32 = attnᵀ·dO              (the second SGEMM's backward: two SGEMMs)
//   3. dP ∘ (row sees a key), a multiply kernel         (the where of _safe_softmax: no gradient for
//                                                        fully masked rows)
//   4. dS = attn ∘ (dP − rowsum(attn ∘ dP))            (softmax's backward, _softmax_backward_data;
//                                                        S += mask passes dS through)
//   5. dq = dS·k, then dk = dSᵀ·q                       (the first SGEMM's backward)
//   6. dk·√scale, dq·√scale                             (the scalings' backward)
//   7. dV, dK, dQ .to(fp16)                             (the input copies' backward)
//
// The forward kept attn (fp32, N×Nk per head) for steps 2 and 4, the row flags for step 3, q and k for
// step 5. fp32 inputs skip the copies. torch 2.11's profiler lists these kernels in this order on an H200
// (cuda/results/2026-11-29-h200-gemm-shapes/torch_math_kernels.json); step 3 shows there as a multiply of
// two fp32 tensors over the N×Nk gradient, modelled with the row flags as its second operand (the
// profiler does not say which tensor it reads).
#include <cmath>

#include "algorithms/aten_elementwise.hpp"
#include "algorithms/row_softmax.hpp"
#include "algorithms/torch_math.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const bool upcast = torch_math_upcasts(p);
    const TorchMathGrids g = torch_math_grids(p, cfg);
    const double root_scale = std::sqrt(p.softmax_scale());

    // What the forward kept (declared as it declares them).
    const GlobalTensor Q = x.declare({"Q", BH, N, d, e, g.input_rows, d});
    const GlobalTensor K = x.declare({"K", BH, Nk, d, e, g.input_rows, d});
    const GlobalTensor V = x.declare({"V", BH, Nk, d, e, g.input_rows, d});
    const GlobalTensor V32 = upcast ? x.declare({"V_fp32", BH, Nk, d, 4, g.operand_rows, g.operand_cols}) : V;
    const GlobalTensor Qs = x.declare({"q_scaled", BH, N, d, 4, g.operand_rows, g.operand_cols});
    const GlobalTensor Ks = x.declare({"k_scaled", BH, Nk, d, 4, g.operand_rows, g.operand_cols});
    const GlobalTensor Attn = x.declare({"attn", BH, N, Nk, 4, 1, g.score_cols});
    const GlobalTensor Rows = x.declare({"masked_rows", BH, N, 1, 1, 1, 1});
    // The gradients.
    const GlobalTensor dO = x.declare({"dO", BH, N, d, e, g.input_rows, d});
    const GlobalTensor dO32 = upcast ? x.declare({"dO_fp32", BH, N, d, 4, g.operand_rows, g.operand_cols}) : dO;
    const GlobalTensor dP = x.declare({"dP", BH, N, Nk, 4, 1, g.score_cols});
    const GlobalTensor dSoftmax = x.declare({"dP_rows", BH, N, Nk, 4, 1, g.score_cols});
    const GlobalTensor dS = x.declare({"dS", BH, N, Nk, 4, 1, g.score_cols});
    const GlobalTensor dq = x.declare({"dq_scaled", BH, N, d, 4, g.output_rows, g.output_cols});
    const GlobalTensor dk = x.declare({"dk_scaled", BH, Nk, d, 4, g.output_rows, g.output_cols});
    const GlobalTensor dQ = x.declare({"dQ", BH, N, d, e, g.input_rows, d});
    const GlobalTensor dK = x.declare({"dK", BH, Nk, d, e, g.input_rows, d});
    const GlobalTensor dV = x.declare({"dV", BH, Nk, d, e, g.input_rows, d});
    const GlobalTensor dQ32 = upcast ? x.declare({"dQ_fp32", BH, N, d, 4, g.output_rows, g.output_cols}) : dQ;
    const GlobalTensor dK32 = upcast ? x.declare({"dK_fp32", BH, Nk, d, 4, g.output_rows, g.output_cols}) : dK;
    const GlobalTensor dV32 = upcast ? x.declare({"dV_fp32", BH, Nk, d, 4, g.output_rows, g.output_cols}) : dV;

    if (upcast) launch_copy(x, "copy_do_fp32", "dO.to(float32)", dO, dO32);
    launch_gemm(x, cfg, BH, {"gemm_dp", "dP = dO*V^T: cuBLAS SGEMM; dP written to HBM", dO32, V32, false, true, N, Nk, d,
                             cfg.gemm_m, cfg.gemm_n, 1.0, dP});
    launch_gemm(x, cfg, BH, {"gemm_dv", "dV = attn^T*dO: cuBLAS SGEMM, attn read back", Attn, dO32, true, false, Nk, d, N,
                             cfg.pv_m, cfg.pv_n, 1.0, dV32});
    launch_elementwise(x, "mul_rows_bwd", "dP * (row sees a key): the where's backward", BH, N, Nk,
                       [&](Block& b, std::int64_t h, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc) {
                           Tile grad = b.load(view(dP, h).tile(r0, nr, c0, nc), Space::Registers, "dP");
                           Tile seen = b.load(view(Rows, h).tile(r0, nr, 0, 1), Space::Registers, "masked_rows");
                           b.map(grad, Fn::mul, {grad, per_row(seen)});
                           b.store(grad, view(dSoftmax, h).tile(r0, nr, c0, nc));
                       });
    launch_row_softmax_backward(x, p, {Attn, dSoftmax, dS, cfg.softmax_chunk, cfg.warps});
    launch_gemm(x, cfg, BH, {"gemm_dq", "dq = dS*k: cuBLAS SGEMM, dS read back", dS, Ks, false, false, N, d, Nk, cfg.pv_m,
                             cfg.pv_n, 1.0, dq});
    launch_gemm(x, cfg, BH, {"gemm_dk", "dk = dS^T*q: cuBLAS SGEMM, dS read back", dS, Qs, true, false, Nk, d, N, cfg.pv_m,
                             cfg.pv_n, 1.0, dk});
    launch_copy(x, "mul_dk", "dK = dk * sqrt(scale)", dk, dK32, root_scale);
    launch_copy(x, "mul_dq", "dQ = dq * sqrt(scale)", dq, dQ32, root_scale);
    if (upcast) {
        launch_copy(x, "copy_dv_half", "dV.to(fp16)", dV32, dV);
        launch_copy(x, "copy_dk_half", "dK.to(fp16)", dK32, dK);
        launch_copy(x, "copy_dq_half", "dQ.to(fp16)", dQ32, dQ);
    }
}

std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t, std::int64_t, const TileConfig& cfg) {
    return torch_math_smem_bytes(p, cfg, TorchMathPass::backward);
}

TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    return torch_math_tiles(p, gpu, req, TorchMathPass::backward);
}

ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    ClosedForm f;
    f.hbm = torch_math_backward_bytes(p, t);
    f.matmul_flops = Count(8) * p.batch_heads() * p.N * p.Nk * p.d;
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    return 4 * Count(p.batch_heads()) * ceil_div(p.N, t.gemm_m) * ceil_div(p.Nk, t.gemm_n);
}

}  // namespace

const Algorithm& torch_math_attention_backward_algorithm() {
    static const Algorithm a{
        .id = "torch_math_bwd",
        .title = "PyTorch's math SDPA backend, backward (autograd: SGEMMs, softmax backward, copies back to fp16)",
        .name = "PyTorch math backward",
        .label = "torch math",
        .family = "torch_math",
        .pass = Pass::backward,
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
