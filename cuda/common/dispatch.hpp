// Run-time dtype / head-dim values -> compile-time template arguments (host code of .cu files).
//
//   with_dtype(dtype, [&](auto tag) { using T = decltype(tag); ... });         // float, __half, __nv_bfloat16
//   with_head_dim(d, [&](auto dc) { constexpr int D = decltype(dc)::value; ... });  // 32, 64, 128
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "problem/dtype.hpp"

namespace fasim::cuda_detail {

template <typename F>
void with_dtype(DType dtype, F&& f) {
    switch (dtype) {
        case DType::fp32: f(float{}); return;
        case DType::fp16: f(__half{}); return;
        case DType::bf16: f(__nv_bfloat16{}); return;
    }
    throw std::invalid_argument("unknown dtype");
}

template <typename F>
void with_head_dim(int d, F&& f) {
    switch (d) {
        case 32: f(std::integral_constant<int, 32>{}); return;
        case 64: f(std::integral_constant<int, 64>{}); return;
        case 128: f(std::integral_constant<int, 128>{}); return;
        default: break;
    }
    throw std::invalid_argument("head dim d = " + std::to_string(d) +
                                " has no CUDA kernel: d must be 32, 64 or 128. Fix: pass --d 32, 64 or 128.");
}

}  // namespace fasim::cuda_detail
