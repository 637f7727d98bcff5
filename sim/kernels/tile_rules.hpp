// The tiles fa-sim's CUDA kernels run with: the one rule the launchers in cuda/ call and the
// simulator applies when it models those kernels (kernels/kernel_catalog.hpp), so the two cannot
// disagree (tests/cuda/test_cuda_tiles.cpp checks it over every GPU preset, dtype, head dim and
// kernel). Host C++, no CUDA; the constants are also read by the kernels' device code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/smem_layouts.hpp"
#include "problem/dtype.hpp"

namespace fasim {

// Tiles and the dynamic shared memory a kernel then needs.
struct TileChoice {
    int Br = 0;
    int Bc = 0;
    std::size_t smem_bytes = 0;
};

namespace tile_rules {

// fa2_tc (cuda/kernels/fa2_tensor_core.cu): one 64-row Q tile per block (4 warps x 16 rows), 64-key
// K/V tiles, at every head dim.
inline constexpr int kFa2TcBr = 64;
inline constexpr int kFa2TcBc = 64;
// fa2_tc_tuned (cuda/kernels/fa2_tensor_core_tuned.cu): 128 query rows per block (4 warps x 32), K/V tiles
// of 128 keys at d <= 64 and 64 at d = 128 (FlashAttention-2's forward tiles), K and V double-buffered,
// rows padded by 8 elements: Q + 2 K + 2 V is 92 KB (d = 64) or 104 KB (d = 128), two blocks per SM.
inline constexpr int kFa2TcTunedBr = 128;
inline constexpr int kFa2TcTunedPad = 8;
FASIM_HD constexpr int fa2_tc_tuned_bc(int d) { return d <= 64 ? 128 : 64; }
FASIM_HD constexpr std::size_t fa2_tc_tuned_smem_bytes(int d, int elem_bytes) {
    return static_cast<std::size_t>(kFa2TcTunedBr + 4 * fa2_tc_tuned_bc(d)) * static_cast<std::size_t>(d + kFa2TcTunedPad) *
           static_cast<std::size_t>(elem_bytes);
}
// fa2_wgmma (cuda/kernels/fa2_hopper.cu, sm_90a): 128 query rows per block (two consumer warpgroups of 64),
// 128-key K/V tiles, two stages of K and V, tiles stored as 128-byte-swizzled slabs of 64 columns; 9 mbarriers
// after them and 1 KB of slack to align the tiles to the swizzle's 1 KB atoms: 161 KB at d = 128, 81 KB at d = 64.
inline constexpr int kFa2WgmmaBr = 128;
inline constexpr int kFa2WgmmaBc = 128;
inline constexpr int kFa2WgmmaStages = 2;
FASIM_HD constexpr std::size_t fa2_wgmma_smem_bytes(int d) {
    return static_cast<std::size_t>(kFa2WgmmaBr + 2 * kFa2WgmmaStages * kFa2WgmmaBc) * static_cast<std::size_t>(d) * 2 + 9 * 8 +
           1024;
}
// fa1_tc (cuda/kernels/fa1_tensor_core.cu): a Q tile is one m16 row block shared by the 4 warps; a
// K/V tile 256 keys at d = 64, 128 at d = 128 (the split-K warps each take a quarter).
inline constexpr int kFa1TcBr = 16;
FASIM_HD constexpr int fa1_tc_bc(int d) { return d <= 64 ? 256 : 128; }
// fa1_tc's blocks per batch*head (FlashAttention-1's num_splits idea): as many as one wave of the SMs
// holds, never more than there are Q tiles. Rounding down matters: all blocks do about the same work,
// so one block more than the slots would start a second wave and double the time.
FASIM_HD constexpr int fa1_tc_q_splits(long long BH, long long N, int sms, int blocks_per_sm) {
    const long long tiles = (N + kFa1TcBr - 1) / kFa1TcBr;
    const long long fit = static_cast<long long>(sms) * blocks_per_sm / BH;
    return static_cast<int>(fit < 1 ? 1 : (fit > tiles ? tiles : fit));
}

// fa2_bwd_tc (cuda/kernels/fa2_backward_tensor_core.cu): one block (8 warps x 16 keys) per K/V tile of
// kFa2BwdTcBc = 128 keys, stepping over Q tiles of kFa2BwdTcBr = 64 rows, at every head dim.
inline constexpr int kFa2BwdTcBr = 64;
inline constexpr int kFa2BwdTcBc = 128;
inline constexpr int kFa2BwdTcPad = 8;  // elements per shared-memory row (16 bytes: conflict-free ldmatrix)
// Its dynamic shared memory, as the kernel carves it: K_j, V_j [Bc][d + 8], Q and dO [2][Br][d + 8]
// (double-buffered) and dS^T [Bc][Br + 8] in the storage dtype, then LSE and D [2][Br] in fp32.
FASIM_HD constexpr std::size_t fa2_bwd_tc_smem_bytes(int d, int elem_bytes) {
    const std::size_t elems = static_cast<std::size_t>(2 * kFa2BwdTcBc + 4 * kFa2BwdTcBr) *
                                  static_cast<std::size_t>(d + kFa2BwdTcPad) +
                              static_cast<std::size_t>(kFa2BwdTcBc) * (kFa2BwdTcBr + kFa2BwdTcPad);
    return elems * static_cast<std::size_t>(elem_bytes) + 4u * kFa2BwdTcBr * sizeof(float);
}

// flash_decoding (cuda/kernels/flash_decoding.cu, and the simulator's default for the algorithm): 64 query
// rows (4 warps x 16) by 128 keys at d <= 64, 64 at d <= 128, else 32. Half of flash-attention's split-KV
// tiles, because the kernel double-buffers K and V: Q + 2 x (K + V), rows padded by 8 elements, is 81 KiB
// (d = 64) or 85 KiB (d = 128), so two blocks share an SM, the two the split heuristic counts on.
inline constexpr int kFlashDecodingBr = 64;
inline constexpr int kFlashDecodingWarps = 4;
inline constexpr int kFlashDecodingPad = 8;     // elements per shared-memory row (16 bytes: conflict-free ldmatrix)
inline constexpr int kFlashDecodingStages = 2;  // K/V tile buffers: tile j + 1 is copied while tile j is used
// When the whole grid fits one block per SM (batch-1 decoding with few K/V heads: MQA's 114-128 splits),
// the second block per SM the two stages leave room for is never used, and each SM streams one tile at a
// time: the split kernel then keeps three tiles in flight in four stages (one block per SM).
inline constexpr int kFlashDecodingDeepStages = 4;
FASIM_HD constexpr int flash_decoding_bc(int d) { return d <= 64 ? 128 : d <= 128 ? 64 : 32; }
// Grouped K/V heads: the kernel that sums each group's dK, dV parts (fa2_bwd_sum_groups, and the simulator's
// sums of every backward) gives each block as many key rows as its 256 threads cover with one 16-byte vector
// each: 16 at d = 128 and 32 at d = 64 in fp16/bf16.
inline constexpr int kGroupSumThreads = 256;
FASIM_HD constexpr int group_sum_rows(int d, int elem_bytes) {
    const int rows = kGroupSumThreads * 16 / (d * elem_bytes);
    return rows > 0 ? rows : 1;
}
// K/V stages of a split kernel of `blocks` blocks on `sm_count` SMs.
FASIM_HD constexpr int flash_decoding_stages(std::int64_t blocks, std::int64_t sm_count) {
    return blocks <= sm_count ? kFlashDecodingDeepStages : kFlashDecodingStages;
}
// Its dynamic shared memory, as the kernel carves it: the Q tile, then per stage a K and a V tile, rows of
// d + 8 elements in the storage dtype.
FASIM_HD constexpr std::size_t flash_decoding_smem_bytes(int d, int elem_bytes, int stages = kFlashDecodingStages) {
    return static_cast<std::size_t>(kFlashDecodingBr + 2 * stages * flash_decoding_bc(d)) *
           static_cast<std::size_t>(d + kFlashDecodingPad) * static_cast<std::size_t>(elem_bytes);
}
// Warps of a split block that share each K/V tile's keys: with few query rows (one, or a packed group of
// query heads) only one or two of the 4 warps' 16-row bands hold rows, so the block's warps split into
// key groups, each working on its own slice of every tile (Bc / groups keys) for the same rows; the
// groups' m, l and O are merged once, at the end. `rows`: query rows per row head.
FASIM_HD constexpr int flash_decoding_key_groups(std::int64_t rows) { return rows <= 16 ? 4 : rows <= 32 ? 2 : 1; }
// flash-attention's own split-KV kernel (PyTorch's flash backend on decode shapes): 64 x 256 at d <= 64,
// 64 x 128 at d <= 128, else 64 x 64; single K and V buffers.
FASIM_HD constexpr int flash_attn_splitkv_bc(int d) { return d <= 64 ? 256 : d <= 128 ? 128 : 64; }

// How many splits of the keys FlashDecoding runs: flash-attention's num_splits_heuristic
// (flash_api.cpp). One split when the unsplit blocks nearly fill the GPU (80% of `slots`, flash-attention
// counts 2 blocks of 4 warps per SM); otherwise the fewest splits whose last wave is at least 85% as full
// as the best choice's, among the counts that change the K/V tiles per split; at most 128 splits.
inline std::int64_t flash_decoding_splits(std::int64_t blocks, std::int64_t slots, std::int64_t kv_tiles) {
    if (static_cast<double>(blocks) >= 0.8 * static_cast<double>(slots)) return 1;
    const std::int64_t max_splits = std::min({std::int64_t{128}, slots, kv_tiles});
    auto tiles_per_split = [&](std::int64_t s) { return (kv_tiles + s - 1) / s; };
    auto eligible = [&](std::int64_t s) { return s == 1 || tiles_per_split(s) != tiles_per_split(s - 1); };
    std::vector<double> efficiency(static_cast<std::size_t>(std::max<std::int64_t>(max_splits, 0) + 1), 0.0);
    double best = 0;
    for (std::int64_t s = 1; s <= max_splits; ++s) {
        if (!eligible(s)) continue;
        const double waves = static_cast<double>(blocks * s) / static_cast<double>(slots);
        efficiency[static_cast<std::size_t>(s)] = waves / std::ceil(waves);
        best = std::max(best, efficiency[static_cast<std::size_t>(s)]);
    }
    for (std::int64_t s = 1; s <= max_splits; ++s)
        if (eligible(s) && efficiency[static_cast<std::size_t>(s)] >= 0.85 * best) return s;
    return 1;
}

// The splits that hold K/V tiles when `splits` are asked for: each takes ceil(kv_tiles / splits) tiles, so
// the last can be left empty (10 tiles in 6 splits: 2 + 2 + 2 + 2 + 2, so 5 splits). The simulator's
// choose_tiles rounds the same way.
inline std::int64_t flash_decoding_nonempty_splits(std::int64_t kv_tiles, std::int64_t splits) {
    const std::int64_t per_split = (kv_tiles + splits - 1) / splits;
    return (kv_tiles + per_split - 1) / per_split;
}

}  // namespace tile_rules

// fa2 and tiled on the CUDA cores (cuda/kernels/fa2.cu, tiled_two_pass.cu), for a device with
// `smem_per_block` bytes of shared memory per block (the opt-in maximum): d <= 64: 128x128;
// d <= 128: 128x64; else 64x64; then, while the kernel's shared memory (Q, K, V tiles plus its S
// tile and row statistics, flash_smem_layout) does not fit, halve Bc, then Br, then Bc ...
inline TileChoice fa2_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const int e = static_cast<int>(dtype_bytes(dtype));
    TileChoice t;
    t.Br = d <= 64 ? 128 : (d <= 128 ? 128 : 64);
    t.Bc = d <= 64 ? 128 : 64;
    bool halve_bc = true;
    while (cuda_detail::flash_smem_layout(t.Br, t.Bc, d, e).total > smem_per_block) {
        if ((halve_bc && t.Bc > 8) || t.Br <= 16) {
            if (t.Bc <= 8)
                throw std::invalid_argument("fa2/tiled: no tile fits in " + std::to_string(smem_per_block) +
                                            " bytes of shared memory per block (d = " + std::to_string(d) + ")");
            t.Bc /= 2;
        } else {
            t.Br /= 2;
        }
        halve_bc = !halve_bc;
    }
    t.smem_bytes = cuda_detail::flash_smem_layout(t.Br, t.Bc, d, e).total;
    return t;
}

// fa1 on the CUDA cores (cuda/kernels/fa1.cu): M = smem_per_block / sizeof(dtype) elements;
// Bc = ceil(M / 4d), Br = min(Bc, d) (Algorithm 1, line 1); if the kernel's shared memory
// (fa1_smem_layout) does not fit, Bc = floor(M / 4d); if that still does not fit, Bc is lowered one
// at a time.
inline TileChoice fa1_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const int e = static_cast<int>(dtype_bytes(dtype));
    const long long M = static_cast<long long>(smem_per_block) / e;  // elements
    auto fits = [&](int Br, int Bc) { return cuda_detail::fa1_smem_layout(Br, Bc, d, e).total <= smem_per_block; };
    TileChoice t;
    t.Bc = static_cast<int>((M + 4LL * d - 1) / (4LL * d));  // ceil(M / 4d)
    t.Br = t.Bc < d ? t.Bc : d;
    if (!fits(t.Br, t.Bc)) {
        t.Bc = static_cast<int>(M / (4LL * d));  // floor(M / 4d)
        t.Br = t.Bc < d ? t.Bc : d;
    }
    while (t.Bc > 1 && !fits(t.Br, t.Bc)) {  // beyond the paper: the kernel's own buffers do not fit
        --t.Bc;
        t.Br = t.Bc < d ? t.Bc : d;
    }
    if (t.Bc < 1 || !fits(t.Br, t.Bc))
        throw std::invalid_argument("fa1: no tile fits in " + std::to_string(smem_per_block) +
                                    " bytes of shared memory per block (d = " + std::to_string(d) + ")");
    t.smem_bytes = cuda_detail::fa1_smem_layout(t.Br, t.Bc, d, e).total;
    return t;
}

// fa2_bwd on the CUDA cores (cuda/kernels/fa2_backward.cu): start at Br = Bc = 64 (the kernel's lane
// layouts cover 64 x 64 exactly; on H100/H200 every dtype and d <= 128 fits) and, while the kernel's
// shared memory (fa2_bwd_smem_layout) does not fit, halve Bc, then Br, then Bc ... down to 16 x 16.
// Bc first: it halves the K, V tiles and the fp32 dK, dV accumulators, the largest buffers.
inline TileChoice fa2_bwd_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const int e = static_cast<int>(dtype_bytes(dtype));
    TileChoice t{64, 64, 0};
    bool halve_bc = true;
    while (cuda_detail::fa2_bwd_smem_layout(t.Br, t.Bc, d, e).total > smem_per_block) {
        if (t.Br <= 16 && t.Bc <= 16)
            throw std::invalid_argument("fa2_bwd: no tile fits in " + std::to_string(smem_per_block) +
                                        " bytes of shared memory per block (d = " + std::to_string(d) + ")");
        if ((halve_bc && t.Bc > 16) || t.Br <= 16) t.Bc /= 2;
        else t.Br /= 2;
        halve_bc = !halve_bc;
    }
    t.smem_bytes = cuda_detail::fa2_bwd_smem_layout(t.Br, t.Bc, d, e).total;
    return t;
}

}  // namespace fasim
