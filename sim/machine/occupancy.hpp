// How many thread blocks of a kernel one SM holds at once, and what limits it.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/gpu_spec.hpp"

namespace fasim {

struct Occupancy {
    int blocks_per_sm = 0;
    std::string limiter;        // "shared memory", "registers", "warps", "blocks per SM"
    int warps_per_block = 0;
    double warp_occupancy = 0;  // resident warps / max warps per SM
};

// Registers/thread are rounded up to the allocation unit (8) as the hardware does.
Occupancy compute_occupancy(const GpuSpec& gpu, int warps_per_block, std::int64_t smem_bytes_per_block,
                            int registers_per_thread);

inline std::int64_t concurrent_blocks(const GpuSpec& gpu, const Occupancy& occ) {
    return static_cast<std::int64_t>(gpu.sm_count) * occ.blocks_per_sm;
}

}  // namespace fasim
