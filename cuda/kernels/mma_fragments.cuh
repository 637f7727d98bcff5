// Thin wrappers over the PTX instructions a tensor-core kernel needs (sm_80+), with the register
// layouts they produce, so that a kernel can say which matrix element each register holds.
// Used by the tensor-core kernels (fa1_tensor_core.cu, fa2_tensor_core.cu); call them only from code
// compiled for __CUDA_ARCH__ >= 800.
//
//   cp_async_16<P>(dst, src, valid) 16 bytes global -> shared, asynchronous, L2 only (cp.async.cg);
//                                  P = 128 or 256 also asks L2 to prefetch that many bytes around them;
//                                  valid = false writes 16 zero bytes instead (reads nothing)
//   cp_async_commit()              closes the current group of cp.async copies
//   cp_async_wait<n>()             waits until at most n of this thread's groups are still in flight
//   load_tile_async<T, D, ROWS, LD, THREADS[, P, A]>(dst, head, row0, nvalid)
//                                  a ROWS x D tile of a row-major matrix into shared memory (row
//                                  stride LD) by cp_async_16, rows past nvalid zero-filled;
//                                  A = TileAddresses::per_chunk or one_per_tile (below)
//   fast_exp2(x)                   2^x with one ex2.approx.ftz (common/fast_math.cuh, included here)
//   ldmatrix_x4(r, p)              four 8x8 b16 matrices shared -> registers (layout below)
//   ldmatrix_x4_trans(r, p)        the same, each matrix transposed
//   mma_16816<T>(c, a, b0, b1)     c += A B, A 16x16, B 16x8 in T (__half or __nv_bfloat16), c fp32
//   pack2<T>(lo, hi)               two floats -> one register of two T, rounded to nearest (even)
//
// Notation (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"):
//   lane = 4*g + t,  g = groupID = lane >> 2 (0..7),  t = threadID_in_group = lane & 3 (0..3).
//   A (16x16, row-major, 4 regs of 2 elements, low half = lower column):
//       a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]
//       a[2] = A[g][2t+8, 2t+9]   a[3] = A[g+8][2t+8, 2t+9]
//   B (16x8, "col": stored as its transpose, 2 regs):
//       b0 = B[2t, 2t+1][g]       b1 = B[2t+8, 2t+9][g]
//   C, D (16x8, fp32, 4 regs):
//       c[0], c[1] = C[g][2t], C[g][2t+1]       c[2], c[3] = C[g+8][2t], C[g+8][2t+1]
//   ldmatrix .m8n8 .x4: lanes 8i..8i+7 give the addresses of rows 0..7 of matrix i (16 bytes each,
//       16-byte aligned); register r[i] of lane 4g+t then holds  M_i[g][2t, 2t+1];
//       with .trans it holds  M_i[2t][g], M_i[2t+1][g]  (the matrix read column-wise).
// So an A fragment is ldmatrix_x4 of the four 8x8 quarters (top-left, bottom-left, top-right,
// bottom-right) of a row-major 16x16 tile; a B fragment of B = Xᵀ is ldmatrix (no .trans) of X's
// rows, and a B fragment of a row-major B is ldmatrix .trans.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/fast_math.cuh"

namespace fasim::cuda_detail {

// The 32-bit shared-memory address of a generic pointer into shared memory (what ldmatrix and
// cp.async take).
__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- cp.async: global -> shared without passing through registers ------------------------------
// The copy runs in the background; the thread goes on until cp_async_wait. .cg: cached in L2 only,
// like cp16_cg in dtype_traits.cuh. src-size 0 (valid = false) zero-fills the 16 bytes and reads
// nothing, which is how a tile row past the end of the sequence becomes zeros.
// L2_PREFETCH (0, 128 or 256): also asks L2 to fetch that many bytes around the 16 from DRAM
// (.L2::128B, .L2::256B), so a streaming kernel keeps more of DRAM's bandwidth in flight.
template <int L2_PREFETCH = 0>
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, bool valid) {
    static_assert(L2_PREFETCH == 0 || L2_PREFETCH == 128 || L2_PREFETCH == 256, "L2 prefetch of 0, 128 or 256 bytes");
    const unsigned src_bytes = valid ? 16u : 0u;
    if constexpr (L2_PREFETCH == 256)
        asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)),
                     "l"(gmem_src), "r"(src_bytes)
                     : "memory");
    else if constexpr (L2_PREFETCH == 128)
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)),
                     "l"(gmem_src), "r"(src_bytes)
                     : "memory");
    else
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem_dst)), "l"(gmem_src),
                     "r"(src_bytes)
                     : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// How a tile copy forms its addresses. per_chunk: each 16-byte copy computes its own source address
// and clamps it for rows past the end (about 12 instructions per LDGSTS in fa2_tc, sm_90). one_per_tile:
// a whole tile (every tile but a sequence's last) takes one source and one destination address per
// thread, each copy adding an offset known at compile time (about 2 per LDGSTS and 16 per tile: the
// address, the whole-tile test, 64-bit offsets past the LDGSTS immediate's reach); a partial tile still
// goes per chunk. Which one a kernel uses was measured, not assumed (cuda/results/2026-11-30-h200-tile-copies):
// one_per_tile freed fa2_tc's d = 128 kernel of its register spills (40 bytes under its 168-register
// launch bounds) and made it 9-12% faster, FlashDecoding 0-3%; fa1_tc (d = 64), fa2_tc_tuned and the
// backward ran 1-3% slower with it (fuller register files, other schedules), so they copy per chunk.
enum class TileAddresses { per_chunk, one_per_tile };

// Starts copying rows [row0, row0 + ROWS) of a row-major [rows][D] matrix (one head's) into a
// shared tile of row stride LD; tile rows r >= nvalid are zero-filled. All THREADS threads of the
// block take part, consecutive threads on consecutive 16-byte chunks (coalesced). Completes at
// cp_async_wait.
template <typename T, int D, int ROWS, int LD, int THREADS, int L2_PREFETCH = 0,
          TileAddresses ADDRESSES = TileAddresses::per_chunk>
__device__ __forceinline__ void load_tile_async(T* dst, const T* head, int row0, int nvalid) {
    constexpr int kChunks = D * static_cast<int>(sizeof(T)) / 16;  // 16-byte chunks per row
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));         // elements per chunk
    static_assert(ROWS * kChunks % THREADS == 0, "every thread copies the same number of chunks");
    if constexpr (ADDRESSES == TileAddresses::one_per_tile) {
        if (nvalid >= ROWS) {
            // The thread's chunks are one column of the tile, kRowStep rows apart (the per-chunk path's
            // assignment: chunk q = threadIdx.x + it * THREADS).
            static_assert(THREADS % kChunks == 0, "a thread keeps one column of chunks");
            constexpr int kRowStep = THREADS / kChunks;
            const int r = static_cast<int>(threadIdx.x) / kChunks;
            const int c = (static_cast<int>(threadIdx.x) % kChunks) * kVec;
            const T* src = head + static_cast<long long>(row0 + r) * D + c;
            T* to = dst + r * LD + c;
#pragma unroll
            for (int it = 0; it < ROWS / kRowStep; ++it)
                cp_async_16<L2_PREFETCH>(to + it * kRowStep * LD, src + it * kRowStep * D, true);
            return;
        }
    }
#pragma unroll
    for (int it = 0; it < ROWS * kChunks / THREADS; ++it) {
        const int q = static_cast<int>(threadIdx.x) + it * THREADS;
        const int r = q / kChunks;
        const int c = (q - r * kChunks) * kVec;
        const bool valid = r < nvalid;
        // A row past the end reads nothing; it is pointed at row 0 only to keep the address valid.
        const T* src = head + (valid ? static_cast<long long>(row0 + r) * D : 0LL) + c;
        cp_async_16<L2_PREFETCH>(dst + r * LD + c, src, valid);
    }
}

// ---- ldmatrix: one warp-wide load of 8x8 b16 matrices in mma fragment layout ---------------------
// `p` is this lane's row address (see the layout above); every lane of the warp must take part.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

// ---- mma.sync m16n8k16: D = A B + C with fp32 accumulation, C and D the same registers -----------
template <typename T>
__device__ __forceinline__ void mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                                         unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- two floats -> one 32-bit register of two 16-bit values (lo in bits 0..15) --------------------
// Round to nearest even: what the simulator's round_to_storage models for P.
template <typename T>
__device__ __forceinline__ unsigned pack2(float lo, float hi);

template <>
__device__ __forceinline__ unsigned pack2<__half>(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
}

template <>
__device__ __forceinline__ unsigned pack2<__nv_bfloat16>(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned*>(&h);
}

}  // namespace fasim::cuda_detail
