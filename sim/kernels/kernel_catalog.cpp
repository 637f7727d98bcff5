#include "kernels/kernel_catalog.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace fasim {

namespace {

// Registers of fa-sim's tensor-core kernels as ptxas allocates them for sm_90 (nvcc 13.0), recorded by
// fa-validate: cuda/results/2026-11-25-h200/validate_half.json ("launches"); fa2_tc at d = 64 since its copies
// take one address per tile, cuda/results/2026-11-30-h200-tile-copies-b ("launches"). PyTorch 2.11's
// flash_fwd_kernel on sm_90: ncu launch__registers_per_thread (cuda/results/2026-11-25-h200/profile*/
// raw_torch_flash.csv).
constexpr std::array<int, 2> kFa2TcRegisters{156, 168};
constexpr std::array<int, 2> kFa1TcRegisters{96, 140};
constexpr std::array<int, 2> kTorchFlashRegisters{255, 255};
// fa2_bwd_tc (fp16; bf16 takes 230 at d = 64), ptxas for sm_90 (nvcc 13.0).
constexpr std::array<int, 2> kFa2BwdTcRegisters{232, 255};
// fa2_tc_tuned, ptxas for sm_90 (nvcc 13.0, -Xptxas -v), fp16 and bf16 alike: every register, no spills.
constexpr std::array<int, 2> kFa2TcTunedRegisters{255, 255};
// fa2_wgmma at launch (ptxas for sm_90a, nvcc 13.0): 168 = 65536 / 384 threads, the most one block of three
// warpgroups may start with; setmaxnreg then moves the producer's to the consumers (24 and 240 per thread).
constexpr std::array<int, 2> kFa2WgmmaRegisters{168, 168};
// flash_decoding's split kernel with one key group (fp16 and bf16 alike), ptxas for sm_90 (nvcc 13.0, cuobjdump
// --dump-resource-usage).
constexpr std::array<int, 2> kFlashDecodingRegisters{254, 235};

constexpr std::array<int, 3> kTensorCoreHeadDims{64, 128, 0};
constexpr std::array<int, 3> kTorchHeadDims{64, 128, 0};  // the head dims this repository has timed it at

constexpr KernelVariant kCatalog[] = {
    {.name = "standard_naive",
     .algorithm = "standard",
     .what = "standard attention on naive GEMMs: every thread reads its own operands from global memory",
     .source = "cuda/kernels/standard_gemm_naive.cu, standard_softmax.cu",
     .matmul = MatmulMode::naive},
    {.name = "standard_tiled",
     .algorithm = "standard",
     .what = "standard attention on fa-sim's 64x64x32 shared-memory GEMMs",
     .source = "cuda/kernels/standard_gemm_tiled.cu, standard_softmax.cu"},
    {.name = "standard_cublas",
     .algorithm = "standard",
     .what = "standard attention on cuBLAS GEMMs (tensor cores for fp16/bf16) and fa-sim's softmax",
     .source = "cuda/kernels/standard_cublas.cu, standard_softmax.cu",
     .products = Products::library_gemm,
     .fp32_on_cuda_cores = true,
     .matmul = MatmulMode::library,
     .calibration = Calibration::library_rate},
    {.name = "tiled",
     .algorithm = "tiled",
     .what = "tiled two-pass attention on the CUDA cores, S staged in shared memory",
     .source = "cuda/kernels/tiled_two_pass.cu",
     .tiles = TileRule::fa2},
    {.name = "fa1",
     .algorithm = "fa1",
     .what = "FlashAttention-1 on the CUDA cores: one block per batch*head, split-K warps",
     .source = "cuda/kernels/fa1.cu",
     .tiles = TileRule::fa1},
    {.name = "fa2",
     .algorithm = "fa2",
     .what = "FlashAttention-2 on the CUDA cores: one block per Q tile, split-Q warps, S staged in shared memory",
     .source = "cuda/kernels/fa2.cu",
     .tiles = TileRule::fa2},
    {.name = "fa1_tc",
     .algorithm = "fa1",
     .what = "FlashAttention-1 on the tensor cores (mma.sync), 16-row Q steps over split-K warps, q_splits blocks "
             "per batch*head",
     .source = "cuda/kernels/fa1_tensor_core.cu",
     .products = Products::mma_sync,
     .tiles = TileRule::fa1_tc,
     .fp32 = false,
     .head_dims = kTensorCoreHeadDims,
     .min_compute_capability = 80,
     .registers = kFa1TcRegisters,
     .calibration = Calibration::mma_sync_warp},
    {.name = "fa2_tc",
     .algorithm = "fa2",
     .what = "FlashAttention-2 on the tensor cores (mma.sync), S and P in registers, 64x64 tiles",
     .source = "cuda/kernels/fa2_tensor_core.cu",
     .products = Products::mma_sync,
     .tiles = TileRule::fa2_tc,
     .fp32 = false,
     .head_dims = kTensorCoreHeadDims,
     .min_compute_capability = 80,
     .grouped_kv = true,
     .registers = kFa2TcRegisters,
     .calibration = Calibration::mma_sync_warp,
     .one_address_per_tile = true},
    {.name = "fa2_tc_tuned",
     .algorithm = "fa2",
     .what = "FlashAttention-2 on the tensor cores (mma.sync), tuned: 128-row Q tiles (32 rows per warp), "
             "FlashAttention-2's K/V tiles, K and V double-buffered, lazy rescale, causal Q tiles heaviest first",
     .source = "cuda/kernels/fa2_tensor_core_tuned.cu",
     .products = Products::mma_sync,
     .tiles = TileRule::fa2_tc_tuned,
     .fp32 = false,
     .head_dims = kTensorCoreHeadDims,
     .min_compute_capability = 80,
     .registers = kFa2TcTunedRegisters,
     .calibration = Calibration::mma_sync_warp,
     .causal_heaviest_first = true},
    {.name = "fa2_wgmma",
     .algorithm = "fa2",
     .what = "FlashAttention-2 on Hopper (sm_90a): wgmma products, TMA copies, a producer warpgroup and two "
             "consumer warpgroups of 64 rows each, 128x128 tiles in two stages",
     .source = "cuda/kernels/fa2_hopper.cu, hopper_primitives.cuh",
     .products = Products::wgmma,
     .tiles = TileRule::fa2_wgmma,
     .fp32 = false,
     .head_dims = kTensorCoreHeadDims,
     .min_compute_capability = 90,
     .registers = kFa2WgmmaRegisters,
     .calibration = Calibration::library_rate,
     // The 8 warps of the two consumer warpgroups, which hold the Q tile's rows and compute; the producer
     // warpgroup only issues copies. With 168 registers per thread one block fills an SM either way.
     .warps = 8},
    {.name = "flash_decoding",
     .algorithm = "flash_decoding",
     .what = "FlashDecoding on the tensor cores (mma.sync): the keys split over blocks, K/V tiles double-buffered "
             "with cp.async (four stages when the split grid fits one block per SM), partial outputs combined by "
             "their log-sum-exp; a group's query heads packed as the rows of one Q tile when N = 1",
     .source = "cuda/kernels/flash_decoding.cu",
     .products = Products::mma_sync,
     .tiles = TileRule::flash_decoding,
     .fp32 = false,
     .head_dims = kTensorCoreHeadDims,
     .min_compute_capability = 80,
     .grouped_kv = true,
     .registers = kFlashDecodingRegisters,
     .calibration = Calibration::mma_sync_warp,
     .one_address_per_tile = true},
    {.name = "standard_cublas_bwd",
     .algorithm = "standard_bwd",
     .what = "standard attention's backward: four cuBLAS GEMMs (dV = P^T dO, dP = dO V^T, dQ, dK) and fa-sim's "
             "row kernel dS = P o (dP - rowsum(P o dP))",
     .source = "cuda/kernels/standard_cublas_backward.cu, standard_softmax_backward.cu",
     .products = Products::library_gemm,
     .fp32_on_cuda_cores = true,
     .matmul = MatmulMode::library,
     .calibration = Calibration::library_rate,
     .forward_kernel = "standard_cublas"},
    {.name = "fa2_bwd",
     .algorithm = "fa2_bwd",
     .what = "FlashAttention-2 backward on the CUDA cores: one block per K/V tile, S and P recomputed, dK and dV "
             "kept in the block, dQ added with fp32 atomics",
     .source = "cuda/kernels/fa2_backward.cu, fa2_backward_common.cu",
     .tiles = TileRule::fa2_bwd,
     .warps = 4,
     .forward_kernel = "fa2"},
    {.name = "fa2_bwd_tc",
     .algorithm = "fa2_bwd",
     .what = "FlashAttention-2 backward on the tensor cores (mma.sync): one block per K/V tile, five products per "
             "tile pair, dQ added with fp32 atomics",
     .source = "cuda/kernels/fa2_backward_tensor_core.cu, fa2_backward_common.cu",
     .products = Products::mma_sync,
     .tiles = TileRule::fa2_bwd_tc,
     .fp32 = false,
     .head_dims = kTensorCoreHeadDims,
     .min_compute_capability = 80,
     .grouped_kv = true,
     .registers = kFa2BwdTcRegisters,
     .calibration = Calibration::mma_sync_warp,
     .warps = 8,
     .forward_kernel = "fa2_tc"},
    {.name = "torch_math",
     .algorithm = "torch_math",
     .what = "PyTorch's math SDPA backend: 16-bit inputs copied to fp32, cuBLAS SGEMMs on the CUDA cores, ATen's softmax "
             "and element-wise kernels",
     .source = "PyTorch (cuda/scripts/torch_sdpa.py --backends math)",
     .in_repository = false,
     .products = Products::library_gemm,
     .fp32_on_cuda_cores = true,
     .matmul = MatmulMode::library,
     .calibration = Calibration::library_rate},
    {.name = "torch_flash",
     .algorithm = "fa2",
     .what = "PyTorch's flash SDPA backend (FlashAttention-2's own kernel), mma.sync, 255 registers",
     .source = "PyTorch (cuda/scripts/torch_sdpa.py --backends flash)",
     .in_repository = false,
     .products = Products::mma_sync,
     .fp32 = false,
     .head_dims = kTorchHeadDims,
     .min_compute_capability = 80,
     .registers = kTorchFlashRegisters,
     .calibration = Calibration::mma_sync_warp},
    {.name = "torch_flash_decoding",
     .algorithm = "flash_decoding",
     .what = "PyTorch's flash SDPA backend on decode shapes: flash-attention's split-KV kernel and its combine "
             "(its regular kernel where one split fills the GPU), a group's query heads packed as rows",
     .source = "PyTorch (cuda/scripts/torch_sdpa.py --grid decode)",
     .in_repository = false,
     .products = Products::mma_sync,
     .tiles = TileRule::flash_attn_splitkv,
     .fp32 = false,
     .head_dims = kTorchHeadDims,
     .min_compute_capability = 80,
     .grouped_kv = true,
     .calibration = Calibration::mma_sync_warp},
    {.name = "torch_math_bwd",
     .algorithm = "torch_math_bwd",
     .what = "PyTorch's math SDPA backend, backward: autograd through its fp32 SGEMMs, softmax backward and copies",
     .source = "PyTorch (cuda/scripts/torch_sdpa.py --backends math --pass bwd)",
     .in_repository = false,
     .products = Products::library_gemm,
     .fp32_on_cuda_cores = true,
     .matmul = MatmulMode::library,
     .calibration = Calibration::library_rate,
     .forward_kernel = "torch_math"},
    {.name = "torch_flash_bwd",
     .algorithm = "fa2_bwd",
     .what = "PyTorch's flash SDPA backend, backward (FlashAttention-2's own kernels: dot(dO, O), the K/V-parallel "
             "main kernel with atomic dQ, the dQ conversion)",
     .source = "PyTorch (cuda/scripts/torch_sdpa.py --backends flash --pass bwd)",
     .in_repository = false,
     .products = Products::mma_sync,
     .fp32 = false,
     .head_dims = kTorchHeadDims,
     .min_compute_capability = 80,
     .calibration = Calibration::mma_sync_warp,
     .forward_kernel = "torch_flash"},
};

}  // namespace

const char* products_name(Products p) {
    switch (p) {
        case Products::cuda_cores: return "cuda_cores";
        case Products::mma_sync: return "mma_sync";
        case Products::library_gemm: return "library_gemm";
        case Products::wgmma: return "wgmma";
    }
    return "?";
}

const char* tile_rule_name(TileRule r) {
    switch (r) {
        case TileRule::algorithm: return "algorithm";
        case TileRule::fa2: return "fa2_tiles";
        case TileRule::fa1: return "fa1_tiles";
        case TileRule::fa2_tc: return "fixed 64x64";
        case TileRule::fa2_tc_tuned: return "fixed 128x128 (d=64), 128x64 (d=128), K/V double-buffered";
        case TileRule::fa2_wgmma: return "fixed 128x128, K/V in two stages (sm_90a)";
        case TileRule::fa1_tc: return "fixed 16x256 (d=64), 16x128 (d=128)";
        case TileRule::fa2_bwd: return "fa2_bwd_tiles";
        case TileRule::fa2_bwd_tc: return "fixed 64x128 (tile_rules::kFa2BwdTcBr x kFa2BwdTcBc)";
        case TileRule::flash_decoding: return "fixed 64x128 (d=64), 64x64 (d=128), K/V double-buffered";
        case TileRule::flash_attn_splitkv: return "flash-attention's split-KV tiles: 64x256 (d=64), 64x128 (d=128)";
    }
    return "?";
}

const char* calibration_text(Calibration c) {
    switch (c) {
        case Calibration::lone_warp_cuda_core:
            return "a lone warp issues in 37% of cycles (ncu, fa-sim's fa2 fp32 on the H200, cuda/results/2026-11-22-h200-b)";
        case Calibration::mma_sync_warp:
            return "a warp is ready in 17% of cycles (ncu mean over fa2_tc, fa1_tc and PyTorch's FA2 on the H200, "
                   "cuda/results/2026-11-25-h200)";
        case Calibration::library_rate: return "the GPU preset's measured GEMM rate";
    }
    return "?";
}

bool KernelVariant::has_head_dim(int d) const { return std::find(head_dims.begin(), head_dims.end(), d) != head_dims.end(); }

std::string KernelVariant::unsupported(DType dtype, int d, std::string_view flag) const {
    const std::string n(name);
    if (dtype == DType::fp32 && !fp32)
        return n + " has no fp32 kernel: it takes fp16 or bf16. Fix: pass --dtype fp16 or bf16, or use " + std::string(flag) +
               " " + std::string(algorithm) + " for fp32";
    if (!has_head_dim(d)) {
        std::string dims;
        for (int h : head_dims)
            if (h > 0) dims += (dims.empty() ? "" : ", ") + std::to_string(h);
        return n + " has no kernel for head dim d = " + std::to_string(d) + ": d must be " + dims + ". Fix: pass --d " +
               std::to_string(head_dims[0]) + " or " + std::to_string(head_dims[1]) + ", or use " + std::string(flag) + " " +
               std::string(algorithm) + " for d = " + std::to_string(d);
    }
    return {};
}

std::span<const KernelVariant> kernel_catalog() { return kCatalog; }

const KernelVariant* find_kernel(std::string_view name) {
    for (const KernelVariant& k : kCatalog)
        if (k.name == name) return &k;
    return nullptr;
}

std::string kernel_names() {
    std::string s;
    for (const KernelVariant& k : kCatalog) s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
}

const KernelVariant* cuda_core_kernel(const Algorithm& algo, MatmulMode matmul) {
    for (const KernelVariant& k : kCatalog)
        if (k.in_repository && k.algorithm == algo.id && k.products == Products::cuda_cores &&
            (!algo.matmul_modes || k.matmul == matmul))
            return &k;
    // A library GEMM computes fp32 on the CUDA cores (cuBLAS SGEMM): standard_cublas with --matmul library.
    for (const KernelVariant& k : kCatalog)
        if (k.in_repository && k.algorithm == algo.id && k.fp32_on_cuda_cores && k.matmul == matmul) return &k;
    return nullptr;
}

TileChoice kernel_tiles(const KernelVariant& k, int d, DType dtype, std::size_t smem_per_block) {
    switch (k.tiles) {
        case TileRule::algorithm: return {};
        case TileRule::fa2: return fa2_tiles(d, dtype, smem_per_block);
        case TileRule::fa1: return fa1_tiles(d, dtype, smem_per_block);
        case TileRule::fa2_tc: return {tile_rules::kFa2TcBr, tile_rules::kFa2TcBc, 0};
        case TileRule::fa2_wgmma: {
            const std::size_t need = tile_rules::fa2_wgmma_smem_bytes(d);
            if (need > smem_per_block)
                throw std::invalid_argument("fa2_wgmma: its " + std::to_string(need) + " B of shared memory at d = " +
                                            std::to_string(d) + " do not fit " + std::to_string(smem_per_block) +
                                            " B per block");
            return {tile_rules::kFa2WgmmaBr, tile_rules::kFa2WgmmaBc, need};
        }
        case TileRule::fa2_tc_tuned: {
            const std::size_t need = tile_rules::fa2_tc_tuned_smem_bytes(d, static_cast<int>(dtype_bytes(dtype)));
            if (need > smem_per_block)
                throw std::invalid_argument("fa2_tc_tuned: its " + std::to_string(need) + " B of shared memory at d = " +
                                            std::to_string(d) + " do not fit " + std::to_string(smem_per_block) +
                                            " B per block");
            return {tile_rules::kFa2TcTunedBr, tile_rules::fa2_tc_tuned_bc(d), need};
        }
        case TileRule::fa1_tc: return {tile_rules::kFa1TcBr, tile_rules::fa1_tc_bc(d), 0};
        case TileRule::fa2_bwd: return fa2_bwd_tiles(d, dtype, smem_per_block);
        case TileRule::fa2_bwd_tc: {
            const std::size_t need = tile_rules::fa2_bwd_tc_smem_bytes(d, static_cast<int>(dtype_bytes(dtype)));
            if (need > smem_per_block)
                throw std::invalid_argument("fa2_bwd_tc: its " + std::to_string(need) + " B of shared memory at d = " +
                                            std::to_string(d) + " do not fit " + std::to_string(smem_per_block) +
                                            " B per block");
            return {tile_rules::kFa2BwdTcBr, tile_rules::kFa2BwdTcBc, need};
        }
        case TileRule::flash_decoding: {
            const std::size_t need = tile_rules::flash_decoding_smem_bytes(d, static_cast<int>(dtype_bytes(dtype)));
            if (need > smem_per_block)
                throw std::invalid_argument("flash_decoding: its " + std::to_string(need) + " B of shared memory at d = " +
                                            std::to_string(d) + " do not fit " + std::to_string(smem_per_block) +
                                            " B per block");
            return {tile_rules::kFlashDecodingBr, tile_rules::flash_decoding_bc(d), need};
        }
        case TileRule::flash_attn_splitkv: return {tile_rules::kFlashDecodingBr, tile_rules::flash_attn_splitkv_bc(d), 0};
    }
    return {};
}

std::size_t kernel_smem_bytes(const KernelVariant& k, int Br, int Bc, int d, DType dtype) {
    const int e = static_cast<int>(dtype_bytes(dtype));
    switch (k.tiles) {
        case TileRule::fa2: return cuda_detail::flash_smem_layout(Br, Bc, d, e).total;
        case TileRule::fa1: return cuda_detail::fa1_smem_layout(Br, Bc, d, e).total;
        case TileRule::fa2_bwd: return cuda_detail::fa2_bwd_smem_layout(Br, Bc, d, e).total;
        default: break;
    }
    // Kernels with tiles of their own: their need holds only for those tiles (any shared memory fits here:
    // the caller checks it against the GPU).
    try {
        const TileChoice own = kernel_tiles(k, d, dtype, std::numeric_limits<std::size_t>::max());
        return own.Br == Br && own.Bc == Bc ? own.smem_bytes : 0;
    } catch (const std::invalid_argument&) {
        return 0;
    }
}

}  // namespace fasim
