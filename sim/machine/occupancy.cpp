#include "machine/occupancy.hpp"

#include <algorithm>
#include <limits>

namespace fasim {

Occupancy compute_occupancy(const GpuSpec& gpu, int warps_per_block, std::int64_t smem_bytes_per_block,
                            int registers_per_thread) {
    Occupancy occ;
    occ.warps_per_block = warps_per_block;
    const int by_blocks = gpu.max_blocks_per_sm;
    const int by_warps = gpu.max_warps_per_sm / warps_per_block;
    const int regs = (registers_per_thread + 7) / 8 * 8;
    const int by_regs = gpu.registers_per_sm / (regs * 32 * warps_per_block);
    // CUDA C++ Programming Guide (shared memory, compute capability 8.x and 9.x): 1 KB of shared
    // memory per block is reserved for system use (cudaDevAttrReservedSharedMemoryPerBlock).
    const std::int64_t reserved = gpu.compute_capability >= 80 ? 1024 : 0;
    const int by_smem = smem_bytes_per_block > 0
                            ? static_cast<int>(gpu.smem_per_sm_bytes / (smem_bytes_per_block + reserved))
                            : std::numeric_limits<int>::max();
    occ.blocks_per_sm = std::min({by_blocks, by_warps, by_regs, by_smem});
    if (occ.blocks_per_sm == by_smem) occ.limiter = "shared memory";
    else if (occ.blocks_per_sm == by_regs) occ.limiter = "registers";
    else if (occ.blocks_per_sm == by_warps) occ.limiter = "warps";
    else occ.limiter = "blocks per SM";
    occ.warp_occupancy = static_cast<double>(occ.blocks_per_sm * warps_per_block) / gpu.max_warps_per_sm;
    return occ;
}

}  // namespace fasim
