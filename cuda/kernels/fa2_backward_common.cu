// FlashAttention-2 backward's first and last kernels, shared by the CUDA-core (fa2_backward.cu) and the
// tensor-core (fa2_backward_tensor_core.cu) main kernels, as the official implementation runs them:
//
//   fa2_bwd_preprocess   D_i = rowsum(dO_i * O_i) in fp32 (dot(dO, O): the row term of dS = P o (dP - D)
//                        that no K/V block could compute alone), and dq_acc = 0, the fp32 buffer the main
//                        kernel's blocks add their parts of dQ to.
//   fa2_bwd_convert_dq   dQ = dq_acc rounded to the storage dtype.
//
// Both: grid (ceil(N / rows), B*H), 128 threads; a warp takes one row at a time, its lanes strided over d.
//
//   fa2_bwd_sum_groups   grouped K/V heads only (fa2_bwd_tc): dK, dV [B*KV][Nk][d] = the sums over each group's
//                        G = H/KV query heads of the main kernel's per-query-head dK_expanded, dV_expanded
//                        [B*H][Nk][d], in fp32, stored once in the storage dtype: what flash-attention 2's
//                        mha_bwd does with at::sum_out over the group. Grid (ceil(Nk / R), B*KV), 256 threads
//                        (8 warps), R = tile_rules::group_sum_rows (16 rows at d = 128, 32 at d = 64: a 16-byte
//                        vector per thread); block (j, kv) takes rows [j R, min(Nk, (j + 1) R)) of K/V head kv, whose
//                        group is query heads kv G .. kv G + G - 1 (b H + (kv % KV) G). The rows of one head are
//                        contiguous, so the block reads G runs of Bc d elements and writes one, 16 bytes per
//                        thread and step, consecutive threads on consecutive 16 bytes (coalesced).
#include "common/dtype_traits.cuh"
#include "common/dispatch.hpp"
#include "common/launch.cuh"
#include "kernels/launchers.hpp"
#include "kernels/tile_rules.hpp"
#include "problem/dtype.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kThreads = 128;

struct RowParams {
    const void* O;
    const void* dO;
    float* D;
    float* dq_acc;
    void* dQ;
    int N, d, rows;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) fa2_bwd_preprocess_kernel(RowParams p) {
    const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
    const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * p.rows;
    const int q_end = imin(q0 + p.rows, p.N);
    const long long head = static_cast<long long>(bh) * p.N;
    const T* O = static_cast<const T*>(p.O);
    const T* dO = static_cast<const T*>(p.dO);
    for (int r = q0 + warp; r < q_end; r += kThreads / 32) {
        const long long row = (head + r) * p.d;
        float dot = 0.f;
        for (int c = lane; c < p.d; c += 32) {
            dot = fmaf(to_f(dO[row + c]), to_f(O[row + c]), dot);
            p.dq_acc[row + c] = 0.f;
        }
        for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        if (lane == 0) p.D[head + r] = dot;
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) fa2_bwd_convert_dq_kernel(RowParams p) {
    const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * p.rows;
    const long long first = (static_cast<long long>(bh) * p.N + q0) * p.d;
    const long long count = static_cast<long long>(imin(p.rows, p.N - q0)) * p.d;
    T* dQ = static_cast<T*>(p.dQ);
    for (long long i = threadIdx.x; i < count; i += kThreads) dQ[first + i] = from_f<T>(p.dq_acc[first + i]);
}

struct SumParams {
    const void* dk_expanded;
    const void* dv_expanded;
    void* dK;
    void* dV;
    long long head_elems;  // Nk * d: one head of dK, dV or the expanded buffers
    int rows_per_block;    // Bc
    int Nk, d, group;      // group: query heads per K/V head
};

constexpr int kSumThreads = tile_rules::kGroupSumThreads;

// Sums `group` heads of `src` (head stride head_elems), starting at head first_head, into head kv of dst, rows
// [r0, r1): elements [r0 d, r1 d) of each head, 16-byte vectors (d is a multiple of 8, so every vector lies
// inside a row and is aligned).
template <typename T>
__device__ __forceinline__ void sum_rows(const T* src, T* dst, const SumParams& p, long long first_head, long long kv,
                                         int r0, int r1) {
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte vector
    const long long begin = static_cast<long long>(r0) * p.d, count = static_cast<long long>(r1 - r0) * p.d / kVec;
    const T* in = src + first_head * p.head_elems + begin;
    T* out = dst + kv * p.head_elems + begin;
    for (long long v = threadIdx.x; v < count; v += kSumThreads) {
        float acc[kVec];
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[e] = 0.f;
#pragma unroll 4
        for (int g = 0; g < p.group; ++g) {  // unrolled: four parts' loads in flight, not one latency each
            const uint4 raw = *reinterpret_cast<const uint4*>(in + g * p.head_elems + v * kVec);
            const T* x = reinterpret_cast<const T*>(&raw);
#pragma unroll
            for (int e = 0; e < kVec; ++e) acc[e] += to_f(x[e]);
        }
        uint4 packed;
        T* y = reinterpret_cast<T*>(&packed);
#pragma unroll
        for (int e = 0; e < kVec; ++e) y[e] = from_f<T>(acc[e]);
        *reinterpret_cast<uint4*>(out + v * kVec) = packed;
    }
}

template <typename T>
__global__ void __launch_bounds__(kSumThreads) fa2_bwd_sum_groups_kernel(SumParams p) {
    const long long kv = blockIdx.y;  // K/V head over B*KV; its group's first query head is kv * group
    const int r0 = static_cast<int>(blockIdx.x) * p.rows_per_block;
    const int r1 = imin(r0 + p.rows_per_block, p.Nk);
    sum_rows<T>(static_cast<const T*>(p.dk_expanded), static_cast<T*>(p.dK), p, kv * p.group, kv, r0, r1);
    sum_rows<T>(static_cast<const T*>(p.dv_expanded), static_cast<T*>(p.dV), p, kv * p.group, kv, r0, r1);
}

RowParams row_params(const BackwardArgs& a, int rows, const char* kernel) {
    if (rows <= 0)
        throw std::invalid_argument(std::string(kernel) + ": " + std::to_string(rows) + " rows per block: must be >= 1");
    if (a.O == nullptr || a.dO == nullptr || a.D == nullptr || a.dq_acc == nullptr || a.dQ == nullptr)
        throw std::invalid_argument(std::string(kernel) + ": O, dO, D, dq_acc and dQ buffers are required");
    return {a.O, a.dO, a.D, a.dq_acc, a.dQ, a.N, a.d, rows};
}

}  // namespace

CudaKernelLaunch launch_fa2_bwd_preprocess(const BackwardArgs& a, int rows, cudaStream_t stream) {
    const RowParams p = row_params(a, rows, "fa2_bwd_preprocess");
    CudaKernelLaunch info;
    info.name = "fa2_bwd_preprocess";
    info.block_threads = kThreads;
    info.Br = rows;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, rows)), static_cast<unsigned>(a.BH), 1);
    info.grid = {grid.x, grid.y, grid.z};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        info.registers_per_thread =
            launch_kernel("fa2_bwd_preprocess", fa2_bwd_preprocess_kernel<T>, grid, dim3(kThreads), 0, stream, p);
    });
    return info;
}

CudaKernelLaunch launch_fa2_bwd_sum_groups(const BackwardArgs& a, cudaStream_t stream) {
    if (a.d % 8 != 0 || a.H <= 0 || a.KV <= 0 || a.H % a.KV != 0 || a.BH % a.H != 0)
        throw std::invalid_argument("fa2_bwd_sum_groups: d = " + std::to_string(a.d) + ", H = " + std::to_string(a.H) +
                                    ", KV = " + std::to_string(a.KV) + ": needs d a multiple of 8 and KV dividing H");
    // As many rows per block as its threads cover with one 16-byte vector each (16 at d = 128 in fp16/bf16):
    // with a K/V tile's 128 rows per block, MQA at N = 2048 had 32 blocks for 132 SMs, each thread summing 8
    // vectors of 16 parts one load latency after another (2026-11-30-h200-gqa-backward: 35-64 us over the
    // ungrouped problem). tile_rules::group_sum_rows, which the simulator's fa2_bwd_sum_groups uses too.
    const int Bc = tile_rules::group_sum_rows(a.d, static_cast<int>(dtype_bytes(a.dtype)));
    if (a.dk_expanded == nullptr || a.dv_expanded == nullptr || a.dK == nullptr || a.dV == nullptr)
        throw std::invalid_argument("fa2_bwd_sum_groups: dK_expanded, dV_expanded, dK and dV buffers are required");
    const int kv_heads = a.BH / a.H * a.KV;  // B*KV
    const SumParams p{a.dk_expanded, a.dv_expanded, a.dK, a.dV, static_cast<long long>(a.Nk) * a.d, Bc, a.Nk, a.d,
                      a.H / a.KV};
    CudaKernelLaunch info;
    info.name = "fa2_bwd_sum_groups";
    info.block_threads = kSumThreads;
    info.Br = 0;
    info.Bc = Bc;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.Nk, Bc)), static_cast<unsigned>(kv_heads), 1);
    info.grid = {grid.x, grid.y, grid.z};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        info.registers_per_thread =
            launch_kernel("fa2_bwd_sum_groups", fa2_bwd_sum_groups_kernel<T>, grid, dim3(kSumThreads), 0, stream, p);
    });
    return info;
}

CudaKernelLaunch launch_fa2_bwd_convert_dq(const BackwardArgs& a, int rows, cudaStream_t stream) {
    const RowParams p = row_params(a, rows, "fa2_bwd_convert_dq");
    CudaKernelLaunch info;
    info.name = "fa2_bwd_convert_dq";
    info.block_threads = kThreads;
    info.Br = rows;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, rows)), static_cast<unsigned>(a.BH), 1);
    info.grid = {grid.x, grid.y, grid.z};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        info.registers_per_thread =
            launch_kernel("fa2_bwd_convert_dq", fa2_bwd_convert_dq_kernel<T>, grid, dim3(kThreads), 0, stream, p);
    });
    return info;
}

}  // namespace fasim::cuda_detail
