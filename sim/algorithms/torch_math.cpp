#include "algorithms/torch_math.hpp"

#include <numeric>
#include <string>

#include "algorithms/aten_elementwise.hpp"
#include "algorithms/gemm_tiles.hpp"

namespace fasim {

TorchMathGrids torch_math_grids(const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t input_rows = elementwise_block(p.d).rows;
    const OperandGrid g = operand_grid(cfg);
    return {input_rows,
            std::gcd(g.rows, input_rows),
            std::gcd(g.cols, p.d),
            std::gcd(cfg.pv_m, input_rows),
            std::gcd(cfg.pv_n, p.d),
            std::gcd(std::gcd(cfg.gemm_k, cfg.gemm_n), kAtenBlockElements)};
}

TileConfig torch_math_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req, TorchMathPass pass) {
    TileConfig c;
    c.matmul = MatmulMode::library;  // 64 x 64 outputs, k-step 32, 8 warps: TileConfig's defaults
    if (req.Br || req.Bc) c.reasons.push_back("--Br/--Bc do not apply to PyTorch's math backend (cuBLAS picks its GEMM tiles)");
    c.reasons.push_back(std::string(torch_math_upcasts(p) ? "16-bit inputs copied to fp32: " : "") +
                        "cuBLAS SGEMMs on the CUDA cores (TF32 off, PyTorch's default), modelled as 64x64 output tiles, "
                        "k-step 32, at the GPU's measured SGEMM rate");
    // The row kernel stages its rows in shared memory (ATen's softmax kernels keep a row there when it fits).
    const std::int64_t per_column = pass == TorchMathPass::forward ? 4 : 2 * 4 + 4;
    const std::int64_t limit = gpu.smem_per_block_bytes;
    c.softmax_chunk = p.Nk;
    if (p.Nk * per_column > limit) {
        c.softmax_chunk = 1;
        while (c.softmax_chunk * 2 * per_column <= limit && c.softmax_chunk * 2 < p.Nk) c.softmax_chunk *= 2;
        c.reasons.push_back(std::string(pass == TorchMathPass::forward ? "softmax" : "softmax backward") + ": a row (" +
                            std::to_string(p.Nk * per_column) + " B) exceeds shared memory, read twice in chunks of " +
                            std::to_string(c.softmax_chunk));
    }
    c.Br = c.gemm_m;
    c.Bc = c.gemm_n;
    return c;
}

std::int64_t torch_math_smem_bytes(const AttentionProblem& p, const TileConfig& cfg, TorchMathPass pass) {
    const std::int64_t gemm = std::max(cfg.gemm_m + cfg.gemm_n, cfg.pv_m + cfg.pv_n) * cfg.gemm_k * 4;  // one k-step's operands
    const std::int64_t row = pass == TorchMathPass::forward
                                 ? cfg.softmax_chunk * 4
                                 : 2 * cfg.softmax_chunk * 4 + (cfg.softmax_chunk >= p.Nk ? cfg.softmax_chunk * 4 : 0);
    return std::max(gemm, row);
}

namespace {

// Bytes per head of C = op(A) op(B), rows x cols over K, fp32, tm x tn output tiles: each A panel read once
// per tile column, each B panel once per tile row, C written once.
ClosedForm::Bytes gemm_bytes(std::int64_t rows, std::int64_t cols, std::int64_t K, std::int64_t tm, std::int64_t tn) {
    const Count r = rows, c = cols, k = K;
    return {4 * (r * k * ceil_div(cols, tn) + c * k * ceil_div(rows, tm)), 4 * r * c};
}
void add(ClosedForm::Bytes& into, const ClosedForm::Bytes& b, Count times = 1) {
    into.read += times * b.read;
    into.write += times * b.write;
}

}  // namespace

ClosedForm::Bytes torch_math_forward_bytes(const AttentionProblem& p, const TileConfig& t) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes(), BH = p.batch_heads(), scores = N * Nk;
    const bool up = torch_math_upcasts(p);
    ClosedForm::Bytes head;  // per head
    if (up) add(head, {e * (N + 2 * Nk) * d, 4 * (N + 2 * Nk) * d});  // Q, K, V to fp32
    add(head, {4 * (N + Nk) * d, 4 * (N + Nk) * d});                   // the two scalings
    add(head, gemm_bytes(p.N, p.Nk, p.d, t.gemm_m, t.gemm_n));         // S = q k^T
    if (p.causal) add(head, {8 * scores, 4 * scores});                 // S += mask
    add(head, {(t.softmax_chunk >= p.Nk ? 4 : 8) * scores, 4 * scores});  // softmax
    add(head, {4 * scores, scores});                                   // isneginf
    add(head, {scores, N});                                            // all() per row
    add(head, {4 * scores + N * ceil_div(p.Nk, elementwise_block(p.Nk).cols), 4 * scores});  // where (a row flag per block)
    if (up) add(head, {4 * scores, e * scores});                       // attn.to(fp16)
    add(head, gemm_bytes(p.N, p.d, p.Nk, t.pv_m, t.pv_n));             // O = attn V
    if (up) add(head, {4 * N * d, e * N * d});                         // O.to(fp16)
    ClosedForm::Bytes all{BH * head.read, BH * head.write};
    add(all, {0, 4});  // the scalar 0
    if (p.causal) add(all, {2 * scores, 6 * scores});  // the mask, once for all heads: ones, tril, where
    return all;
}

ClosedForm::Bytes torch_math_backward_bytes(const AttentionProblem& p, const TileConfig& t) {
    const Count N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes(), BH = p.batch_heads(), scores = N * Nk;
    const bool up = torch_math_upcasts(p);
    ClosedForm::Bytes head;
    if (up) add(head, {e * N * d, 4 * N * d});                          // dO to fp32
    add(head, gemm_bytes(p.N, p.Nk, p.d, t.gemm_m, t.gemm_n));          // dP = dO V^T
    add(head, gemm_bytes(p.Nk, p.d, p.N, t.pv_m, t.pv_n));              // dV = attn^T dO
    add(head, {4 * scores + N * ceil_div(p.Nk, elementwise_block(p.Nk).cols), 4 * scores});  // dP o (row sees a key)
    add(head, {(t.softmax_chunk >= p.Nk ? 8 : 16) * scores, 4 * scores});  // dS = attn o (dP - rowsum(attn o dP))
    add(head, gemm_bytes(p.N, p.d, p.Nk, t.pv_m, t.pv_n));              // dq = dS k
    add(head, gemm_bytes(p.Nk, p.d, p.N, t.pv_m, t.pv_n));              // dk = dS^T q
    add(head, {4 * (N + Nk) * d, 4 * (N + Nk) * d});                    // the two scalings
    if (up) add(head, {4 * (N + 2 * Nk) * d, e * (N + 2 * Nk) * d});   // dQ, dK, dV to fp16
    return {BH * head.read, BH * head.write};
}

}  // namespace fasim
