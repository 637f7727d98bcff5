// Fast special functions shared by the kernels.
//
//   fast_exp2(x)   2^x with one ex2.approx.ftz (no range check, denormals flushed)
#pragma once

namespace fasim::cuda_detail {

// 2^x on the SFU: ex2.approx.ftz.f32 (relative error about 2^-22; results below 2^-126 flush to 0).
// exp2f adds a range check and two multiplies to keep such denormal results, which softmax never needs.
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

}  // namespace fasim::cuda_detail
