// Tensor maps for the copy engine (TMA): how a kernel's [heads][rows][d] operand is described to
// cp.async.bulk.tensor. Host code; the kernels that use them (fa2_hopper.cu, flash_decoding.cu) read the
// boxes with the 128-byte swizzle that hopper_primitives.cuh describes.
#pragma once

#include <cuda.h>

#include "problem/dtype.hpp"

namespace fasim::cuda_detail {

// Columns of a box: 64 16-bit elements, one 128-byte swizzled row.
inline constexpr int kTensorMapBoxCols = 64;

// A [BH][rows][d] tensor of 16-bit elements (fp16 or bf16) as a 3-D tensor map whose box is 64 columns x
// box_rows rows of one head, 128-byte-swizzled; rows past `rows` read as zeros. `kernel` names the kernel in
// the error a failed encoding raises.
CUtensorMap tensor_map_16bit(const char* kernel, const void* data, int BH, int rows, int d, int box_rows, DType dtype);

}  // namespace fasim::cuda_detail
