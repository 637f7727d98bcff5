// Host entry points of the kernel files (internal to fasim_cuda; run_attention is the public API).
// Each launcher dispatches on dtype (and head dim), launches, checks the launch, and describes it.
//
// The launch table: each kernel file registers the entry point of the kernel it implements under its
// name in the kernel catalog (sim/kernels/kernel_catalog.hpp), with FASIM_REGISTER_KERNEL at the end
// of the file. run_attention looks the kernel up there; nothing else lists the kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "attention_kernels.hpp"

namespace fasim::cuda_detail {

// Runs one catalog kernel of the problem on its tensors (everything after validation and the
// catalog's dtype and head-dim check).
using KernelEntry = CudaLaunchInfo (*)(const CudaProblem&, const DeviceTensors&, cudaStream_t);
// The tiles the entry launches its main kernel with on a device with `smem_per_block` bytes of shared
// memory per block (GEMMs: the output tile; 0 x 0 where a library decides). The entry calls it
// itself; tests/cuda/test_cuda_tiles.cpp checks it against the simulator's tiles for the kernel.
using KernelTiles = TileChoice (*)(int d, DType dtype, std::size_t smem_per_block);

// Adds a kernel to the launch table; aborts at start-up when the name is not a catalog row of this
// repository, or is registered twice.
struct KernelRegistration {
    KernelRegistration(std::string_view catalog_name, KernelEntry entry, KernelTiles tiles);
};
#define FASIM_REGISTER_KERNEL(catalog_name, entry, tiles) \
    static const ::fasim::cuda_detail::KernelRegistration fasim_kernel_registration{catalog_name, entry, tiles}

struct RegisteredKernel {
    KernelEntry entry = nullptr;
    KernelTiles tiles = nullptr;
};
// What a kernel file registered for a catalog name; entry nullptr when nothing.
RegisteredKernel registered_kernel(std::string_view catalog_name);
// The catalog names registered, sorted.
std::vector<std::string> registered_kernel_names();

// Helpers for the entries.
// Opt-in shared memory per block of the current device (cached per device).
std::size_t device_smem_per_block();
// Streaming multiprocessors of the current device (cached per device).
int device_sm_count();
// Compute capability of the current device, e.g. 90 for 9.0.
int device_compute_capability();
// Throws std::invalid_argument unless `buf` holds at least `need` bytes.
void check_buffer(const DeviceBuffer& buf, std::size_t need, const char* name, std::string_view kernel);

// Batched row-major GEMM: C[b] = alpha * op(A[b]) * op(B[b]), C [M][N]; op(A) = A^T with A [K][M] when
// trans_a (cuBLAS only), else A with A [M][K]; op(B) = B^T with B [N][K] when trans_b, else B with B [K][N].
// C stored rounded to the dtype.
struct GemmArgs {
    DType dtype = DType::fp32;
    const void* A = nullptr;
    const void* B = nullptr;
    void* C = nullptr;
    int M = 0, N = 0, K = 0;
    float alpha = 1.f;
    long long strideA = 0, strideB = 0, strideC = 0;  // elements between batches
    int batch = 1;
    bool trans_b = false;
    bool trans_a = false;  // launch_gemm_cublas only (the backward's dV = P^T dO and dK = dS^T Q)
};
CudaKernelLaunch launch_gemm_naive(const GemmArgs& args, cudaStream_t stream);
CudaKernelLaunch launch_gemm_tiled(const GemmArgs& args, cudaStream_t stream);
CudaKernelLaunch launch_gemm_cublas(const GemmArgs& args, cudaStream_t stream);
// Standard attention with one of those GEMMs: S = scale * Q K^T, P = softmax(S), O = P V.
using GemmLauncher = CudaKernelLaunch (*)(const GemmArgs&, cudaStream_t);
CudaLaunchInfo run_standard(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream, GemmLauncher gemm,
                            std::string_view kernel);

// Row-wise softmax of S [rows][Nk] into P (rows = B*H*N; query index = row % N for the causal mask).
struct SoftmaxArgs {
    DType dtype = DType::fp32;
    const void* S = nullptr;
    void* P = nullptr;
    long long rows = 0;
    int N = 0, Nk = 0;
    bool causal = false;
    std::size_t smem_per_block = 0;  // device opt-in limit: a row is staged in shared memory if it fits
};
CudaKernelLaunch launch_softmax(const SoftmaxArgs& args, cudaStream_t stream);

struct FlashArgs {
    DType dtype = DType::fp32;
    int d = 64;
    const void* Q = nullptr;
    const void* K = nullptr;
    const void* V = nullptr;
    void* O = nullptr;
    float* lse = nullptr;  // tiled, fa2
    float* m = nullptr;    // fa1
    float* l = nullptr;    // fa1
    float* o_acc = nullptr; // fa1 with fp16/bf16 storage: the running O in fp32 (fp32 accumulates in O)
    int BH = 1, N = 1, Nk = 1;
    int H = 1, KV = 1;  // query and K/V heads per batch: query head h of batch b reads K/V head b*KV + h/(H/KV)
    int Br = 0, Bc = 0;
    bool causal = false;
    float scale = 1.f;
};
CudaKernelLaunch launch_tiled_two_pass(const FlashArgs& args, cudaStream_t stream);
std::vector<CudaKernelLaunch> launch_fa1(const FlashArgs& args, cudaStream_t stream);  // init, then main
// FA1's init kernel (line 2): o_acc = 0, l = 0, m = -inf, and O = 0 in the rows causal masking hides
// from every key (counted in Q tiles of args.Br rows). Used by launch_fa1 and launch_fa1_tc.
CudaKernelLaunch launch_fa1_init(const FlashArgs& args, float* o_acc, cudaStream_t stream);
// fa1 on the tensor cores (fa1_tensor_core.cu): fixed tiles Br = 16, Bc = 256 (d = 64) or 128 (d = 128)
// (args.Br, args.Bc are ignored), fp16/bf16 with the fp32 o_acc, d 64 or 128, (q_splits, B*H) blocks.
// Init, then main. Throws like launch_fa2_tc.
std::vector<CudaKernelLaunch> launch_fa1_tc(const FlashArgs& args, cudaStream_t stream);
std::string fa1_tc_unsupported_reason(DType dtype, int d);
CudaKernelLaunch launch_fa2(const FlashArgs& args, cudaStream_t stream);
// fa2 on the tensor cores (fa2_tensor_core.cu): fixed 64x64 tiles (args.Br, args.Bc are ignored), fp16/bf16,
// d 64 or 128. Throws std::invalid_argument for another dtype or head dim, std::runtime_error on a
// device below compute capability 8.0.
CudaKernelLaunch launch_fa2_tc(const FlashArgs& args, cudaStream_t stream);
// Empty when fa2_tc has a kernel for (dtype, d); otherwise what is wrong, the allowed values and the fix.
std::string fa2_tc_unsupported_reason(DType dtype, int d);

// ---- FlashDecoding (flash_decoding.cu) ----
// How the launcher lays a problem out, host only: the row heads its blocks run over and their query rows
// (with N = 1 and grouped K/V heads, a group's query heads packed as the rows of one Q tile: the same
// memory as Q [B*H][1][d]), the tiles (tile_rules.hpp), and the splits of the keys on a device of
// `sm_count` SMs: kv_splits, else the heuristic with 2 blocks per SM, either way rounded down to the
// splits that hold K/V tiles, as the simulator's choose_tiles does. Throws std::invalid_argument for a
// kv_splits outside 0..ceil(Nk/Bc).
struct FlashDecodingLayout {
    bool packed = false;
    int row_heads = 0;              // B*KV when packed, else B*H
    int rows = 0;                   // query rows per row head: H/KV when packed, else N
    int row_heads_per_batch = 0;    // KV when packed, else H
    int row_heads_per_kv_head = 0;  // 1 when packed, else H/KV
    int Br = 0, Bc = 0;
    int q_tiles = 0;          // ceil(rows / Br)
    int kv_tiles = 0;         // ceil(Nk / Bc)
    int splits = 0;           // S: split s takes K/V tiles [s * tiles_per_split, (s + 1) * tiles_per_split)
    int tiles_per_split = 0;  // ceil(kv_tiles / S)
    int stages = 0;           // K/V tile buffers of the split kernel (tile_rules::flash_decoding_stages)
};
FlashDecodingLayout flash_decoding_layout(const CudaProblem& p, int sm_count);

// ---- The backward pass ----
// What every backward kernel reads and writes. Layouts as the forward's (attention_kernels.hpp): dO, dQ
// [B*H][N][d], K, V, dK, dV [B*KV][Nk][d] in the storage dtype; LSE, D [B*H][N] fp32; dq_acc [B*H][N][d] fp32.
// Grouped K/V heads (KV < H, fa2_bwd_tc only): the main kernel writes each query head's dK, dV into
// dk_expanded, dv_expanded [B*H][Nk][d] (storage dtype), and fa2_bwd_sum_groups sums each group into dK, dV.
struct BackwardArgs {
    DType dtype = DType::fp32;
    int d = 64;
    const void* Q = nullptr;
    const void* K = nullptr;
    const void* V = nullptr;
    const void* O = nullptr;
    const void* dO = nullptr;
    const float* lse = nullptr;  // the forward's logsumexp (natural log; -inf for a row that sees no key)
    void* dQ = nullptr;
    void* dK = nullptr;
    void* dV = nullptr;
    float* D = nullptr;       // rowsum(dO * O), written by the preprocessing kernel
    float* dq_acc = nullptr;  // fp32 dQ, zeroed by the preprocessing kernel, added to atomically
    void* dk_expanded = nullptr;  // grouped K/V heads only: per query head dK, dV [B*H][Nk][d]
    void* dv_expanded = nullptr;
    int BH = 1, N = 1, Nk = 1;
    int H = 1, KV = 1;  // query and K/V heads per batch (KV divides H)
    int Br = 0, Bc = 0;  // Q rows per inner step, K/V rows per block
    bool causal = false;
    float scale = 1.f;
};
// Q, K, V, O, dO, LSE, dQ, dK, dV, D and dQ_acc checked and set, the problem's shape, scale 1/sqrt(d).
BackwardArgs backward_args(const CudaProblem& p, const DeviceTensors& t, std::string_view kernel);

// FlashAttention-2 backward's first and last kernels, shared by fa2_bwd and fa2_bwd_tc
// (fa2_backward_common.cu): D = rowsum(dO * O) in fp32 and dq_acc = 0, one block per `rows` query rows;
// then dQ = dq_acc in the storage dtype.
CudaKernelLaunch launch_fa2_bwd_preprocess(const BackwardArgs& args, int rows, cudaStream_t stream);
CudaKernelLaunch launch_fa2_bwd_convert_dq(const BackwardArgs& args, int rows, cudaStream_t stream);
// Grouped K/V heads: dK, dV [B*KV][Nk][d] = the sum over each group's H/KV query heads of dk_expanded,
// dv_expanded, in fp32, stored once in the storage dtype; grid (ceil(Nk / Bc), B*KV), 256 threads, each block
// the rows [j Bc, (j + 1) Bc) of one K/V head (fa2_backward_common.cu). d a multiple of 8.
CudaKernelLaunch launch_fa2_bwd_sum_groups(const BackwardArgs& args, cudaStream_t stream);

// Standard attention's backward row kernel (standard_softmax_backward.cu): per row of P and dP [rows][Nk],
// D = rowsum(P * dP) (fp32) and dS = P * (dP - D), stored in the dtype.
struct SoftmaxBackwardArgs {
    DType dtype = DType::fp32;
    const void* P = nullptr;
    const void* dP = nullptr;
    void* dS = nullptr;
    long long rows = 0;
    int Nk = 0;
    std::size_t smem_per_block = 0;  // device opt-in limit: a row of P and dP is staged if it fits
};
CudaKernelLaunch launch_softmax_backward(const SoftmaxBackwardArgs& args, cudaStream_t stream);

// The flash kernels' arguments: Q, K, V, O checked and set, the problem's shape, scale 1/sqrt(d).
FlashArgs flash_args(const CudaProblem& p, const DeviceTensors& t, std::string_view kernel);
// The output buffers of each algorithm family, checked and set.
void set_lse(FlashArgs& f, const CudaProblem& p, const DeviceTensors& t, std::string_view kernel);        // tiled, fa2
void set_fa1_state(FlashArgs& f, const CudaProblem& p, const DeviceTensors& t, std::string_view kernel);  // m, l, O_acc

}  // namespace fasim::cuda_detail
