// The kernel catalog: one row for every kernel whose time fa-sim predicts and checks against a
// measurement - fa-sim's own CUDA kernels (cuda/kernels/) and the PyTorch kernels timed beside them.
// A row says which registered algorithm the kernel implements and how it runs: how it multiplies
// matrices, where its score tile lives, its tile rule, its registers, which measured constant
// calibrates its issue model, and which dtypes and head dims it has code for. The CUDA launch
// table (cuda/attention_kernels.cu), the simulator's model of a measured kernel
// (model/kernel_setup.hpp), fa-sim --kernel and --list-kernels, lesson 09 and the scripts in
// cuda/scripts/ read it. A new kernel is its .cu file and one row here (docs/adding-an-algorithm.md).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "algorithms/algorithm.hpp"
#include "kernels/tile_rules.hpp"
#include "problem/dtype.hpp"

namespace fasim {

// How a kernel multiplies matrices.
enum class Products : std::uint8_t {
    cuda_cores,    // FFMA on the CUDA cores, each lane loading its own operands (fa-sim's first kernels)
    mma_sync,      // warp-level tensor-core instructions, FlashAttention's way
    library_gemm,  // a vendor GEMM library (cuBLAS; wgmma on Hopper)
    wgmma,         // Hopper's warpgroup instructions, operands from shared memory by descriptor (sm_90a)
};
const char* products_name(Products p);  // "cuda_cores", "mma_sync", "library_gemm", "wgmma"

// Where a kernel's tiles come from.
enum class TileRule : std::uint8_t {
    algorithm,  // the algorithm's own mapping (the papers' defaults; standard's GEMM tiles)
    fa2,        // fa2_tiles() of kernels/tile_rules.hpp, what the CUDA-core fa2 and tiled launchers call
    fa1,        // fa1_tiles() of kernels/tile_rules.hpp
    fa2_tc,     // fixed in the kernel: tile_rules::kFa2TcBr x kFa2TcBc
    fa2_tc_tuned,  // fixed in the kernel: tile_rules::kFa2TcTunedBr x fa2_tc_tuned_bc(d)
    fa2_wgmma,     // fixed in the kernel: tile_rules::kFa2WgmmaBr x kFa2WgmmaBc
    fa1_tc,     // fixed in the kernel: tile_rules::kFa1TcBr x fa1_tc_bc(d)
    fa2_bwd,    // fa2_bwd_tiles() of kernels/tile_rules.hpp, what the CUDA-core FA2 backward's launcher calls
    fa2_bwd_tc, // fixed in the kernel: tile_rules::kFa2BwdTcBr x kFa2BwdTcBc
    flash_decoding,      // fixed in the kernel: tile_rules::kFlashDecodingBr x flash_decoding_bc(d)
    flash_attn_splitkv,  // flash-attention's split-KV kernel: tile_rules::kFlashDecodingBr x flash_attn_splitkv_bc(d)
};
const char* tile_rule_name(TileRule r);

// The measured constant that calibrates a kernel's issue model (model/runtime_model.cpp).
enum class Calibration : std::uint8_t {
    lone_warp_cuda_core,  // a lone warp of fa-sim's CUDA-core flash code issues in 37% of cycles
    mma_sync_warp,        // a warp of an mma.sync flash kernel is ready in 17% of cycles
    library_rate,         // the GPU preset's measured GEMM rate
};
const char* calibration_text(Calibration c);

struct KernelVariant {
    std::string_view name;       // what cuda-check, fa-validate, the results and --kernel call it
    std::string_view algorithm;  // the registered algorithm it implements
    std::string_view what;       // one line
    std::string_view source;     // where its code is
    bool in_repository = true;   // a kernel of cuda/ (cuda-check checks it); false: PyTorch's, timed by torch_sdpa.py
    Products products = Products::cuda_cores;  // with fp16/bf16 inputs
    bool fp32_on_cuda_cores = false;           // a library GEMM that computes fp32 inputs on the CUDA cores
    MatmulMode matmul = MatmulMode::tiled;     // standard attention's GEMMs
    TileRule tiles = TileRule::algorithm;
    bool fp32 = true;                          // has code for fp32 storage (fp16 and bf16: every kernel)
    std::array<int, 3> head_dims{32, 64, 128};  // the head dims it has code for (0: none)
    int min_compute_capability = 75;           // sm_75 (T4) and up; tensor-core kernels sm_80
    bool grouped_kv = false;                   // takes fewer K/V heads than query heads (GQA, MQA)
    // Registers per thread at d = 64 and d = 128 where known (ptxas, sm_90; what runs record overrides it);
    // 0: the runs record them, or the model estimates them from the tiles.
    std::array<int, 2> registers{0, 0};
    Calibration calibration = Calibration::lone_warp_cuda_core;
    int warps = 0;  // warps per block where the algorithm leaves it open (FA2's backward); 0: the algorithm's
    // With the causal mask, each head's Q tiles are launched last first: the heaviest first, so that the
    // lightest fill the tail of the grid (FA2 forward kernels; PyTorch's flash launches them in order).
    bool causal_heaviest_first = false;
    // Its cp.async tile copies take one address per whole tile, not one per 16-byte chunk
    // (cuda/kernels/mma_fragments.cuh, TileAddresses; the instruction counts of kernels/issue_costs.hpp).
    bool one_address_per_tile = false;
    // A backward kernel: the forward kernel whose outputs it reads (O and LSE, or P); cuda-check and
    // fa-validate run that one first. Empty for a forward kernel.
    std::string_view forward_kernel{};

    bool tensor_cores(DType dtype) const { return products != Products::cuda_cores && !(dtype == DType::fp32 && fp32_on_cuda_cores); }
    bool has_head_dim(int d) const;
    int registers_at(int d) const { return d == 64 ? registers[0] : d == 128 ? registers[1] : 0; }
    // Empty when the kernel has code for this dtype and head dim; otherwise why not, the allowed
    // values and a fix naming `flag`, the option that picks a kernel (one line).
    std::string unsupported(DType dtype, int d, std::string_view flag = "--kernel") const;
};

std::span<const KernelVariant> kernel_catalog();
const KernelVariant* find_kernel(std::string_view name);  // nullptr for an unknown name
std::string kernel_names();                               // "standard_naive, standard_tiled, ..., torch_flash"

// fa-sim's own CUDA-core kernel of an algorithm (--cuda-cores), with standard attention's GEMMs as asked;
// nullptr when there is none.
const KernelVariant* cuda_core_kernel(const Algorithm& algo, MatmulMode matmul);

// The tiles the kernel's rule picks on a GPU with `smem_per_block` bytes of shared memory per block;
// Br = Bc = 0 for TileRule::algorithm (the algorithm's own mapping decides). Throws
// std::invalid_argument where nothing fits.
TileChoice kernel_tiles(const KernelVariant& k, int d, DType dtype, std::size_t smem_per_block);

// The dynamic shared memory the kernel launches with for tiles Br x Bc: its layout for those tiles where
// its tiles can be chosen (fa2, tiled, fa1, fa2_bwd on the CUDA cores), its fixed need where they are its
// own; 0 where the layout is not known (the simulator then counts the tiles a block holds).
std::size_t kernel_smem_bytes(const KernelVariant& k, int Br, int Bc, int d, DType dtype);

}  // namespace fasim
