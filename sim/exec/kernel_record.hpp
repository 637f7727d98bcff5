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

#include "kernels/kernel_execution.hpp"
#include "machine/occupancy.hpp"
#include "tile/tile_program.hpp"

namespace fasim {

// Bytes one tensor moves at one level.
struct TensorBytes {
    std::string name;
    std::int64_t read = 0, write = 0;
    std::int64_t total() const { return read + write; }
    bool operator==(const TensorBytes&) const = default;
};

// Bytes read and written at one level, per tensor, in the program's declaration order
// (entry i is the tensor with id i).
struct LevelTraffic {
    std::vector<TensorBytes> tensors;

    std::int64_t read_bytes() const;
    std::int64_t write_bytes() const;
    std::int64_t total() const { return read_bytes() + write_bytes(); }
    // Adds another count of the same run's tensors (it may know tensors declared later).
    LevelTraffic& operator+=(const LevelTraffic& o);
    // Adds the counts of another run (two passes simulated apart), its tensors matched by name; one this
    // count does not know is appended.
    LevelTraffic& add_by_name(const LevelTraffic& o);
    LevelTraffic scaled(std::int64_t factor) const;
    // The entry of a tensor, by id; entries exist for every tensor declared before the kernel ran.
    TensorBytes& operator[](TensorId id) { return tensors[static_cast<std::size_t>(id)]; }
    // Zero for a tensor this level never saw.
    const TensorBytes* find(std::string_view name) const;
    bool operator==(const LevelTraffic&) const = default;
};

// One tensor's bytes at a level (0 when the program has no such tensor).
std::int64_t read_of(const LevelTraffic& t, std::string_view name);
std::int64_t write_of(const LevelTraffic& t, std::string_view name);

// The work of one thread block (what the runtime model needs to time it).
struct BlockWork {
    std::int64_t matmul_flops = 0, nonmatmul_flops = 0, sfu_ops = 0;
    std::int64_t recomputed_matmul_flops = 0;  // of matmul_flops: products an earlier pass already did
    std::int64_t smem_bytes = 0;   // read + written
    // When the products run on the CUDA cores (kernels/cuda_core_products.hpp), what CUDA-core runs are
    // timed by: the 128-byte wavefronts the shared-memory pipe serves for those accesses, and the
    // matmul FLOPs the lanes execute (whole micro-tiles: matmul_flops plus padding).
    std::int64_t smem_wavefronts = 0;
    std::int64_t lane_matmul_flops = 0;
    std::int64_t l2_bytes = 0;     // sector bytes requested from L2 (read + write)
    std::int64_t l2_requests = 0;  // requests to L2: a line per warp access (machine/sectors.hpp)
    std::int64_t barriers = 0;
    // Instructions as a warp-level mma.sync kernel issues them, in thread-instructions (/32 = warp
    // instructions; kernels/issue_costs.hpp): what latency-bound tensor-core kernels are timed by.
    std::int64_t thread_instructions = 0;
    bool operator==(const BlockWork&) const = default;
};

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
    Occupancy occupancy;

    LevelTraffic hbm;   // global loads/stores the algorithm issues (the papers' "HBM accesses")
    LevelTraffic l2;    // the same requests in 32-byte sectors, as L2 sees them
    LevelTraffic dram;  // what reaches DRAM after the L2 model
    std::int64_t smem_read = 0, smem_write = 0;
    std::int64_t smem_wavefronts = 0;        // all heads, products on the CUDA cores (BlockWork)
    std::int64_t lane_matmul_flops = 0;      // all heads, products on the CUDA cores (BlockWork)
    // All heads: requests the SMs make of L2, a line per warp access (machine/sectors.hpp); the blocks'
    // share of them is in BlockWork::l2_requests.
    std::int64_t l2_read_requests = 0, l2_write_requests = 0;
    std::int64_t l2_requests() const { return l2_read_requests + l2_write_requests; }
    std::int64_t matmul_flops = 0, nonmatmul_flops = 0, sfu_ops = 0, barriers = 0;
    std::int64_t recomputed_matmul_flops = 0;  // all heads; of matmul_flops (Product::recompute)
    std::int64_t warp_instructions = 0;      // all heads (kernels/issue_costs.hpp)

    // Work of each block of one head, in launch order, run-length encoded.
    std::vector<std::pair<BlockWork, std::int64_t>> block_work;
    // Blocks of the simulated head whose tile program ran (by class: three of each run of alike blocks;
    // by block: all of them). How the counting went, not what it counted.
    std::int64_t blocks_run = 0;
};

}  // namespace fasim
