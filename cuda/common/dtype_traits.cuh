// Storage types and their conversions. Tensors are stored as float, __half or __nv_bfloat16;
// every kernel loads them as float, computes in float and stores rounded to nearest (RN).
//
//   Elem<T>::dtype                  the fasim::DType of T
//   to_f(x), from_f<T>(f)           convert one element
//   round_through<T>(f)             f rounded to T and back (what a tensor-core kernel does to P)
//   ldcg_f(p)                       one element from global memory, cached in L2 only (ld.global.cg)
//   ldcg4(p) / lds4(p)              four consecutive elements (aligned to 4) from global (L2 only) /
//                                   from shared memory, as a float4: 16 bytes for float, 8 for 16-bit types
//   stg4(p, v) / st4(p, v)          store four consecutive elements
//   cp16_cg(dst, src)               16 bytes global -> shared through L2 only (like cp.async.cg in FA2)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "problem/dtype.hpp"

namespace fasim::cuda_detail {

template <typename T>
struct Elem;

template <>
struct Elem<float> {
    static constexpr DType dtype = DType::fp32;
    __host__ __device__ static float to_float(float x) { return x; }
    __host__ __device__ static float from_float(float x) { return x; }
};

template <>
struct Elem<__half> {
    static constexpr DType dtype = DType::fp16;
    __host__ __device__ static float to_float(__half x) { return __half2float(x); }
    __host__ __device__ static __half from_float(float x) { return __float2half_rn(x); }
};

template <>
struct Elem<__nv_bfloat16> {
    static constexpr DType dtype = DType::bf16;
    __host__ __device__ static float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
    __host__ __device__ static __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
};

template <typename T>
__device__ __forceinline__ float to_f(T x) { return Elem<T>::to_float(x); }
template <typename T>
__device__ __forceinline__ T from_f(float x) { return Elem<T>::from_float(x); }
template <typename T>
__device__ __forceinline__ float round_through(float x) { return to_f(from_f<T>(x)); }

// ---- 16-bit bit patterns <-> float -------------------------------------------------------------
__device__ __forceinline__ float bits_to_f(unsigned short b, const __half*) {
    __half_raw r;
    r.x = b;
    return __half2float(__half(r));
}
__device__ __forceinline__ float bits_to_f(unsigned short b, const __nv_bfloat16*) {
    __nv_bfloat16_raw r;
    r.x = b;
    return __bfloat162float(__nv_bfloat16(r));
}
__device__ __forceinline__ unsigned short f_to_bits(float f, const __half*) {
    const __half_raw r = __float2half_rn(f);
    return r.x;
}
__device__ __forceinline__ unsigned short f_to_bits(float f, const __nv_bfloat16*) {
    const __nv_bfloat16_raw r = __float2bfloat16_rn(f);
    return r.x;
}
template <typename T>
__device__ __forceinline__ float4 unpack4(uint2 u) {
    const T* tag = nullptr;
    return make_float4(bits_to_f(static_cast<unsigned short>(u.x & 0xffffu), tag),
                       bits_to_f(static_cast<unsigned short>(u.x >> 16), tag),
                       bits_to_f(static_cast<unsigned short>(u.y & 0xffffu), tag),
                       bits_to_f(static_cast<unsigned short>(u.y >> 16), tag));
}
template <typename T>
__device__ __forceinline__ uint2 pack4(float4 v) {
    const T* tag = nullptr;
    return make_uint2(static_cast<unsigned>(f_to_bits(v.x, tag)) | (static_cast<unsigned>(f_to_bits(v.y, tag)) << 16),
                      static_cast<unsigned>(f_to_bits(v.z, tag)) | (static_cast<unsigned>(f_to_bits(v.w, tag)) << 16));
}

// ---- global loads through L2 only --------------------------------------------------------------
__device__ __forceinline__ float ldcg_f(const float* p) { return __ldcg(p); }
__device__ __forceinline__ float ldcg_f(const __half* p) {
    return bits_to_f(__ldcg(reinterpret_cast<const unsigned short*>(p)), p);
}
__device__ __forceinline__ float ldcg_f(const __nv_bfloat16* p) {
    return bits_to_f(__ldcg(reinterpret_cast<const unsigned short*>(p)), p);
}

__device__ __forceinline__ float4 ldcg4(const float* p) { return __ldcg(reinterpret_cast<const float4*>(p)); }
__device__ __forceinline__ float4 ldcg4(const __half* p) {
    return unpack4<__half>(__ldcg(reinterpret_cast<const uint2*>(p)));
}
__device__ __forceinline__ float4 ldcg4(const __nv_bfloat16* p) {
    return unpack4<__nv_bfloat16>(__ldcg(reinterpret_cast<const uint2*>(p)));
}

// ---- shared-memory loads -----------------------------------------------------------------------
__device__ __forceinline__ float4 lds4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 lds4(const __half* p) {
    return unpack4<__half>(*reinterpret_cast<const uint2*>(p));
}
__device__ __forceinline__ float4 lds4(const __nv_bfloat16* p) {
    return unpack4<__nv_bfloat16>(*reinterpret_cast<const uint2*>(p));
}

// ---- stores (global or shared) -----------------------------------------------------------------
__device__ __forceinline__ void st4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
__device__ __forceinline__ void st4(__half* p, float4 v) { *reinterpret_cast<uint2*>(p) = pack4<__half>(v); }
__device__ __forceinline__ void st4(__nv_bfloat16* p, float4 v) {
    *reinterpret_cast<uint2*>(p) = pack4<__nv_bfloat16>(v);
}

// 16 bytes global -> shared, through L2 only. Both addresses 16-byte aligned.
__device__ __forceinline__ void cp16_cg(void* smem_dst, const void* gmem_src) {
    *reinterpret_cast<uint4*>(smem_dst) = __ldcg(reinterpret_cast<const uint4*>(gmem_src));
}
__device__ __forceinline__ void zero16(void* smem_dst) {
    *reinterpret_cast<uint4*>(smem_dst) = make_uint4(0u, 0u, 0u, 0u);
}

__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr int imax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int round_up(int a, int b) { return ceil_div(a, b) * b; }

}  // namespace fasim::cuda_detail
