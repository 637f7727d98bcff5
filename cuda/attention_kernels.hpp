// One host API over the CUDA kernels of the attention algorithms, forward and backward. The kernels are the
// kernel catalog's rows of this repository (sim/kernels/kernel_catalog.hpp), named as there:
//
//   const KernelVariant& k = cuda_kernel("fa2_tc");
//   DeviceTensors t = allocate_tensors(problem, k);   // cudaMalloc'd, RAII
//   ... copy Q, K, V into t.Q, t.K, t.V ...
//   CudaLaunchInfo info = run_attention(k, problem, t, stream);   // asynchronous on `stream`
//
// Layouts and semantics are those of docs/conventions.md: Q [B*H][N][d], K and V [B*KV][Nk][d] (KV = H
// unless a kernel takes grouped K/V heads: query head h of batch b reads K/V head b*KV + h/(H/KV)),
// O [B*H][N][d] in the storage dtype; LSE [B*H][N] fp32 (natural log; -inf for a row that sees no key);
// FA1's m and l [B*H][N] fp32 (m in natural-log units, l the row sum relative to m); standard
// attention's S and P [B*H][N][Nk] in the storage dtype. scale = 1/sqrt(d); causal masking is
// bottom-right aligned.
//
// Which outputs each kernel writes, by its algorithm:
//   standard (standard_*)        S, P, O         (no LSE)
//   tiled, fa2 (tiled, fa2, fa2_tc)  O, LSE
//   flash_decoding              O, LSE, and with more than one split of the keys O_partial
//                               [row_heads*S][rows][d] and LSE_partial [row_heads*S][rows] in fp32 (split s
//                               of row head r at r*S + s; row heads B*KV with rows H/KV when N = 1 and
//                               KV < H, else B*H with rows N)
//   fa1 (fa1, fa1_tc)            O, m, l         (LSE = m + log(l), not written)
//   standard_bwd (standard_cublas_bwd)  dQ, dK, dV from P (the forward's), dP, dS
//   fa2_bwd (fa2_bwd, fa2_bwd_tc)       dQ, dK, dV from O and LSE (any fa2 kernel's), D, dQ_acc; with grouped
//                                       K/V heads (fa2_bwd_tc) also dK_expanded, dV_expanded [B*H][Nk][d]
//
// All arithmetic is fp32 on the CUDA cores (no tensor cores), except standard_cublas, whose two
// GEMMs are cuBLAS's (fp32 compute, TF32 off; fp16/bf16 inputs may use tensor cores there), and
// fa2_tc, FA2 with its two products on the tensor cores (fp16/bf16 operands, fp32 accumulation;
// softmax and rescaling in fp32 on the CUDA cores), and fa1_tc, FA1 likewise on the tensor cores.
// fa1_tc and fa2_tc take fp16/bf16 with d = 64 or 128 only, and need compute capability 8.0+; so does
// flash_decoding (FlashDecoding on the tensor cores). Grouped K/V heads: flash_decoding, fa2_tc and its
// backward fa2_bwd_tc (dK, dV summed over each group's query heads).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/device_buffer.hpp"
#include "kernels/kernel_catalog.hpp"
#include "kernels/tile_rules.hpp"
#include "problem/dtype.hpp"

namespace fasim {

// fa-sim's own CUDA kernels, in catalog order, and one by name (std::invalid_argument naming the
// kernels for an unknown one). Each kernel file registers its launcher under its catalog name
// (kernels/launchers.hpp); a catalog row of this repository without a launcher is an error at start-up.
std::vector<const KernelVariant*> cuda_kernels();
std::string cuda_kernel_names();  // "standard_naive, standard_tiled, ..."
const KernelVariant& cuda_kernel(std::string_view name);

struct CudaProblem {
    int B = 1;
    int H = 1;
    int N = 1;    // query length
    int Nk = 1;   // key length
    int d = 64;   // head dim: 32, 64 or 128
    DType dtype = DType::fp32;
    bool causal = false;
    int KV = 0;         // K/V heads, a divisor of H (1: multi-query attention); 0 = H
    int kv_splits = 0;  // flash_decoding: splits of the keys, 1..ceil(Nk/Bc); 0 = its heuristic

    int kv_heads() const { return KV > 0 ? KV : H; }
    int group_size() const { return H / kv_heads(); }  // query heads per K/V head
    bool grouped() const { return kv_heads() != H; }
};

// Throws std::invalid_argument naming the bad value, the allowed range and a fix.
void validate_problem(const CudaProblem& problem);

// Empty when the kernel has code for the problem (the catalog's dtypes and head dims; grouped K/V heads,
// kv_splits and causal masking with N > Nk where it takes them); otherwise the reason, the allowed values
// and the fix. run_attention throws std::invalid_argument with this text. (Kernels also need their
// compute capability: run_attention throws std::runtime_error on an older device.)
std::string cuda_kernel_unsupported(const KernelVariant& kernel, const CudaProblem& problem);

// One kernel launch (or library call) made by run_attention.
struct CudaKernelLaunch {
    std::string name;
    std::array<unsigned, 3> grid{0, 0, 0};  // blocks (0,0,0 for a library call)
    int block_threads = 0;
    std::size_t dynamic_smem_bytes = 0;
    int Br = 0;  // flash kernels: Q-tile rows; GEMMs: output tile rows; 0 where not meaningful
    int Bc = 0;  // flash kernels: K/V-tile rows; GEMMs: output tile columns
    int q_splits = 0;  // fa1_tc: blocks per batch*head (grid.x), each visiting every q_splits-th Q tile
    int kv_splits = 0; // flash_decoding's split kernel: splits of the keys per row head and Q tile
    int registers_per_thread = 0;  // flash kernels: what ptxas allocated (0 where not recorded)
    // Its cp.async tile copies take one address per whole tile (kernels/mma_fragments.cuh, TileAddresses);
    // false: per 16-byte chunk, or no such copies.
    bool one_address_per_tile = false;
    // K and V tiles copied by the copy engine (TMA boxes, one thread asking): FlashDecoding on sm_90+.
    bool kv_copy_engine = false;
};

struct CudaLaunchInfo {
    std::vector<CudaKernelLaunch> kernels;  // in launch order
};

// Device tensors of one problem. Buffers an algorithm does not use are left empty.
struct DeviceTensors {
    DeviceBuffer Q, K, V, O;
    DeviceBuffer LSE;  // tiled, fa2, fa2_tc, flash_decoding
    DeviceBuffer O_partial, LSE_partial;  // flash_decoding with more than one split: fp32 partial O and LSE
    DeviceBuffer m, l; // fa1, fa1_tc
    DeviceBuffer O_acc; // fa1 and fa1_tc with fp16/bf16 storage: the running O in fp32 (FlashAttention-1's o_tmp)
    DeviceBuffer S, P; // standard_*
    // The backward pass: the output gradient dO (an input) and the gradients, in the storage dtype.
    DeviceBuffer dO, dQ, dK, dV;
    DeviceBuffer D, dQ_acc;  // fa2_bwd*: rowsum(dO * O) [B*H][N] and the fp32 dQ [B*H][N][d]
    // fa2_bwd_tc with grouped K/V heads: each query head's dK, dV [B*H][Nk][d] in the storage dtype, summed
    // over its group into dK, dV [B*KV][Nk][d] (flash-attention 2's dk_expanded, dv_expanded)
    DeviceBuffer dK_expanded, dV_expanded;
    DeviceBuffer dP, dS;     // standard_*_bwd: [B*H][N][Nk] in the storage dtype
};

// Allocates what the kernel's algorithm reads and writes (S and P for standard attention, m, l (and
// O_acc for 16-bit storage) for fa1, LSE for tiled and fa2; LSE and, sized for the splits the kernel
// runs on the current device, O_partial and LSE_partial for flash_decoding). K and V hold B*KV heads.
// A backward kernel's tensors include its
// forward's (run the forward kernel, catalog field forward_kernel, on them first) and dO, dQ, dK, dV
// and its own intermediates. Contents are uninitialised.
DeviceTensors allocate_tensors(const CudaProblem& problem, const KernelVariant& kernel);

// Launches the kernel on `stream` (asynchronous; nothing is synchronized unless FASIM_CUDA_SYNC=1).
// Checks that every buffer it touches exists and is large enough, and every launch. A backward kernel
// reads Q, K, V, O, dO and what its forward kept (LSE, or P) and writes dQ, dK, dV.
CudaLaunchInfo run_attention(const KernelVariant& kernel, const CudaProblem& problem, const DeviceTensors& tensors,
                             cudaStream_t stream = nullptr);

// The tiles each flash kernel launches with: kernels/tile_rules.hpp (shared with the simulator).

}  // namespace fasim
