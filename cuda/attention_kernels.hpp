// One host API over the CUDA kernels of the four attention algorithms (forward pass).
//
//   DeviceTensors t = allocate_tensors(problem, algo);   // cudaMalloc'd, RAII
//   ... copy Q, K, V into t.Q, t.K, t.V ...
//   CudaLaunchInfo info = run_attention(algo, problem, t, stream);   // asynchronous on `stream`
//
// Layouts and semantics are those of docs/conventions.md: Q [B*H][N][d], K and V [B*H][Nk][d],
// O [B*H][N][d] in the storage dtype; LSE [B*H][N] fp32 (natural log; -inf for a row that sees no key);
// FA1's m and l [B*H][N] fp32 (m in natural-log units, l the row sum relative to m); standard
// attention's S and P [B*H][N][Nk] in the storage dtype. scale = 1/sqrt(d); causal masking is
// bottom-right aligned.
//
// Which outputs each algorithm writes:
//   standard_*          S, P, O         (no LSE)
//   tiled, fa2, fa2_tc  O, LSE
//   fa1, fa1_tc         O, m, l         (LSE = m + log(l), not written)
//
// All arithmetic is fp32 on the CUDA cores (no tensor cores), except standard_cublas, whose two
// GEMMs are cuBLAS's (fp32 compute, TF32 off; fp16/bf16 inputs may use tensor cores there), and
// fa2_tc, FA2 with its two products on the tensor cores (fp16/bf16 operands, fp32 accumulation;
// softmax and rescaling in fp32 on the CUDA cores), and fa1_tc, FA1 likewise on the tensor cores.
// fa1_tc and fa2_tc take fp16/bf16 with d = 64 or 128 only, and need compute capability 8.0+.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/device_buffer.hpp"
#include "problem/dtype.hpp"

namespace fasim {

enum class CudaAlgo { standard_naive, standard_tiled, standard_cublas, tiled, fa1, fa2, fa1_tc, fa2_tc };

inline constexpr std::array<CudaAlgo, 8> kAllCudaAlgos = {CudaAlgo::standard_naive, CudaAlgo::standard_tiled,
                                                          CudaAlgo::standard_cublas, CudaAlgo::tiled,
                                                          CudaAlgo::fa1,            CudaAlgo::fa2,
                                                          CudaAlgo::fa1_tc,         CudaAlgo::fa2_tc};

const char* cuda_algo_name(CudaAlgo algo);
std::optional<CudaAlgo> parse_cuda_algo(std::string_view name);

struct CudaProblem {
    int B = 1;
    int H = 1;
    int N = 1;    // query length
    int Nk = 1;   // key length
    int d = 64;   // head dim: 32, 64 or 128
    DType dtype = DType::fp32;
    bool causal = false;
};

// Throws std::invalid_argument naming the bad value, the allowed range and a fix.
void validate_problem(const CudaProblem& problem);

// Empty when `algo` has a kernel for the problem's dtype and head dim; otherwise the reason, the
// allowed values and the fix (only fa1_tc and fa2_tc have gaps: fp16/bf16 and d = 64 or 128). run_attention
// throws std::invalid_argument with this text. (They also need compute capability 8.0+: run_attention
// throws std::runtime_error on an older device.)
std::string cuda_algo_unsupported(CudaAlgo algo, const CudaProblem& problem);

// One kernel launch (or library call) made by run_attention.
struct CudaKernelLaunch {
    std::string name;
    std::array<unsigned, 3> grid{0, 0, 0};  // blocks (0,0,0 for a library call)
    int block_threads = 0;
    std::size_t dynamic_smem_bytes = 0;
    int Br = 0;  // flash kernels: Q-tile rows; GEMMs: output tile rows; 0 where not meaningful
    int Bc = 0;  // flash kernels: K/V-tile rows; GEMMs: output tile columns
    int q_splits = 0;  // fa1_tc: blocks per batch*head (grid.x), each visiting every q_splits-th Q tile
    int registers_per_thread = 0;  // flash kernels: what ptxas allocated (0 where not recorded)
};

struct CudaLaunchInfo {
    std::vector<CudaKernelLaunch> kernels;  // in launch order
};

// Device tensors of one problem. Buffers an algorithm does not use are left empty.
struct DeviceTensors {
    DeviceBuffer Q, K, V, O;
    DeviceBuffer LSE;  // tiled, fa2, fa2_tc
    DeviceBuffer m, l; // fa1, fa1_tc
    DeviceBuffer O_acc; // fa1 and fa1_tc with fp16/bf16 storage: the running O in fp32 (FlashAttention-1's o_tmp)
    DeviceBuffer S, P; // standard_*
};

// Allocates what `algo` reads and writes (S and P only for the standard algorithms, m, l (and O_acc
// for 16-bit storage) only for fa1 and fa1_tc, LSE for tiled, fa2 and fa2_tc). Contents are uninitialised.
DeviceTensors allocate_tensors(const CudaProblem& problem, CudaAlgo algo);

// Launches `algo` on `stream` (asynchronous; nothing is synchronized unless FASIM_CUDA_SYNC=1).
// Checks that every buffer it touches exists and is large enough, and every launch.
CudaLaunchInfo run_attention(CudaAlgo algo, const CudaProblem& problem, const DeviceTensors& tensors,
                             cudaStream_t stream = nullptr);

// Tile sizes the flash kernels use on a device with `smem_per_block` bytes of shared memory per
// block (the opt-in maximum), with the dynamic shared memory the kernel then needs.
struct TileChoice {
    int Br = 0;
    int Bc = 0;
    std::size_t smem_bytes = 0;
};
// (fa1_tc and fa2_tc are not chosen here: their tiles are fixed in their kernel files.)
// fa2 and tiled: d <= 64: 128x128; d <= 128: 128x64; else 64x64; then, while the kernel's shared
// memory (Q, K, V tiles plus its S tile and row statistics) does not fit, halve Bc, then Br, then Bc ...
TileChoice fa2_tiles(int d, DType dtype, std::size_t smem_per_block);
// fa1: M = smem_per_block / sizeof(dtype) elements; Bc = ceil(M / 4d), Br = min(Bc, d); if the kernel's
// shared memory does not fit, Bc = floor(M / 4d); if that still does not fit, Bc is lowered one at a time.
TileChoice fa1_tiles(int d, DType dtype, std::size_t smem_per_block);

}  // namespace fasim
