// What the two programs of PyTorch's math attention backend share (torch_math_attention.cpp, the forward;
// torch_math_attention_backward.cpp, what autograd runs for it): when it copies its inputs to fp32, its
// GEMM tiles and row-kernel chunks, the tile grids the L2 model tracks its tensors on, and the closed
// forms of the bytes its kernels move.
#pragma once

#include <cstdint>

#include "algorithms/algorithm.hpp"

namespace fasim {

// 16-bit inputs are copied to fp32 before anything else; fp32 inputs are used as they are.
inline bool torch_math_upcasts(const AttentionProblem& p) { return p.dtype != DType::fp32; }

struct TorchMathGrids {
    std::int64_t input_rows;                  // Q, K, V, O, dO, dQ, dK, dV: as the copy kernels take them (x d)
    std::int64_t operand_rows, operand_cols;  // the fp32 N x d operands the GEMMs read
    std::int64_t output_rows, output_cols;    // the fp32 N x d outputs the GEMMs write
    std::int64_t score_cols;                  // the N x Nk tensors (x 1 row)
};
TorchMathGrids torch_math_grids(const AttentionProblem& p, const TileConfig& cfg);

enum class TorchMathPass : std::uint8_t { forward, backward };
// cuBLAS SGEMM's tiles as fa-sim models an fp32 library GEMM (64 x 64 outputs, k-step 32, 8 warps) and the
// row kernel's chunk: the forward's softmax stages a row of S, the backward's a row of P and dP.
TileConfig torch_math_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req, TorchMathPass pass);
std::int64_t torch_math_smem_bytes(const AttentionProblem& p, const TileConfig& cfg, TorchMathPass pass);

// HBM bytes every kernel of the pass loads and stores, all heads (the GEMMs re-read an operand panel once
// per output tile that needs it, as standard attention's formula counts them).
ClosedForm::Bytes torch_math_forward_bytes(const AttentionProblem& p, const TileConfig& t);
ClosedForm::Bytes torch_math_backward_bytes(const AttentionProblem& p, const TileConfig& t);

}  // namespace fasim
