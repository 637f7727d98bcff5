// What running a tile program on the counting executor produced: per kernel,
// bytes per memory level and tensor, on-chip traffic, FLOPs, resources, and the
// per-block work the runtime model schedules.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/count.hpp"
#include "exec/block_work.hpp"
#include "kernels/kernel_execution.hpp"
#include "machine/occupancy.hpp"
#include "tile/tile_program.hpp"

namespace fasim {

// Counters are Counts (common/count.hpp): summed over batch·heads they pass 64 bits at the limits
// (standard attention's S alone is B·H·N·Nk·4 = 2^66 bytes at B·H = 2^16, N = Nk = 2^24).

// Bytes one tensor moves at one level.
struct TensorBytes {
    std::string name;
    Count read = 0, write = 0;
    Count total() const { return read + write; }
    bool operator==(const TensorBytes&) const = default;
};

// Bytes read and written at one level, per tensor, in the program's declaration order
// (entry i is the tensor with id i).
struct LevelTraffic {
    std::vector<TensorBytes> tensors;

    Count read_bytes() const;
    Count write_bytes() const;
    Count total() const { return read_bytes() + write_bytes(); }
    // Adds another count of the same run's tensors (it may know tensors declared later).
    LevelTraffic& operator+=(const LevelTraffic& o);
    // Adds the counts of another run (two passes simulated apart), its tensors matched by name; one this
    // count does not know is appended.
    LevelTraffic& add_by_name(const LevelTraffic& o);
    LevelTraffic scaled(Count factor) const;
    // The entry of a tensor, by id; entries exist for every tensor declared before the kernel ran.
    TensorBytes& operator[](TensorId id) { return tensors[static_cast<std::size_t>(id)]; }
    // Zero for a tensor this level never saw.
    const TensorBytes* find(std::string_view name) const;
    bool operator==(const LevelTraffic&) const = default;
};

// One tensor's bytes at a level (0 when the program has no such tensor).
Count read_of(const LevelTraffic& t, std::string_view name);
Count write_of(const LevelTraffic& t, std::string_view name);

struct KernelRecord {
    KernelDesc desc;
    KernelExecution execution;               // how it runs (kernels/kernel_execution.hpp)
    std::int64_t smem_bytes_per_block = 0;   // measured peak while running
    std::int64_t register_bytes_per_block = 0;
    int registers_per_thread = 0;            // estimate: tiles + 32 for addressing, capped at 255;
                                             // or the compiled kernel's count when given (--registers)
    bool registers_given = false;            // registers_per_thread came from the user, not the estimate
    bool register_spill = false;             // tiles alone need more than 255 per thread
    int row_blocks_per_warp = 1;             // independent 16-row mma blocks one warp works on
    int active_warps = 0;                    // warps that compute (split-Q with few rows: fewer than desc.warps)
    Occupancy occupancy;

    LevelTraffic hbm;   // global loads/stores the algorithm issues (the papers' "HBM accesses")
    LevelTraffic l2;    // the same requests in 32-byte sectors, as L2 sees them
    LevelTraffic dram;  // what reaches DRAM after the L2 model
    // All heads (the counting executor sums one head's blocks, then multiplies by the heads).
    Count smem_read = 0, smem_write = 0;
    Count smem_wavefronts = 0;        // products on the CUDA cores (BlockWork)
    Count lane_matmul_flops = 0;      // products on the CUDA cores (BlockWork)
    // Requests the SMs make of L2, a line per warp access (machine/sectors.hpp); the blocks' share of
    // them is in BlockWork::l2_requests.
    Count l2_read_requests = 0, l2_write_requests = 0;
    Count l2_requests() const { return l2_read_requests + l2_write_requests; }
    Count matmul_flops = 0, nonmatmul_flops = 0, sfu_ops = 0, barriers = 0;
    Count recomputed_matmul_flops = 0;  // of matmul_flops (Product::recompute)
    Count warp_instructions = 0;      // kernels/issue_costs.hpp

    // Work of each block of the simulated heads, in launch order (exec/block_work.hpp): one head, or the
    // heads_simulated heads of one K/V head of a grouped problem (exec/kv_head_units.hpp); the launch
    // repeats them desc.heads / heads_simulated times.
    BlockWorkList block_work;
    std::int64_t heads_simulated = 1;
    // Blocks of the simulated head whose tile program ran (by class: three of each run of alike blocks;
    // by block: all of them). How the counting went, not what it counted.
    std::int64_t blocks_run = 0;
};

}  // namespace fasim
