// Which global loads and stores reach DRAM, given an L2 cache in between.
//
// The model follows what the hardware counters showed on an H200 (a probe: 1056 blocks re-reading one
// 1 MiB buffer, and 8 blocks re-reading one 96 MiB buffer, each read their buffer from DRAM once):
//  1. Blocks that run at the same time share what they read: a tile another block
//     of the same wave already fetched is served by L2, however large the tensor.
//     (8 blocks re-reading one 96 MiB buffer together read it from DRAM once.)
//  2. Otherwise data survives in L2 until about L2-capacity bytes of other data
//     have been touched after its last use (an LRU reuse distance; touches that
//     are shared by concurrent blocks count once).
//  3. A store allocates its line in L2; re-storing a line still resident and
//     dirty costs no second DRAM write (write-back).
//
// Residency is tracked per tile of each tensor's access grid (GlobalTensor::
// region_rows × region_cols), for one representative head: heads are identical
// and disjoint, so the chip-wide rate at which data enters L2 is the head's own
// rate times (blocks running at once) / (blocks of this head running at once).
// A finely tracked tensor (more than kFineGrid tiles per head) that is also more
// than twice the L2 size per head is streamed: written or read in order, it is
// evicted before any re-read, as LRU would do, so every access goes to DRAM,
// except that rule 1 still holds: a tile another block of the same wave read is
// a hit (the naive GEMM's blocks that share a row band of P read it together).
// (That is S and P of standard attention at long sequences.)
#pragma once

#include <cstdint>
#include <vector>

#include "common/count.hpp"
#include "tile/tensors.hpp"

namespace fasim {

class L2Model {
public:
    static constexpr std::int64_t kFineGrid = std::int64_t{1} << 18;
    static constexpr std::int64_t kMaxTrackedRegions = std::int64_t{1} << 22;

    explicit L2Model(std::int64_t capacity_bytes) : capacity_(capacity_bytes) {}

    // A kernel of `grid` blocks, `blocks_per_head` of which belong to the head we
    // simulate (launched first), running `slots` blocks at a time.
    void begin_kernel(std::int64_t slots, std::int64_t grid, std::int64_t blocks_per_head);
    void begin_block(std::int64_t index);
    // After the simulated head's blocks: the other heads' blocks of this kernel
    // bring their own data in before the next kernel starts.
    void end_kernel(std::int64_t heads);

    // Bytes this access moves to or from DRAM.
    std::int64_t read(const Region& r);
    std::int64_t write(const Region& r);

private:
    struct Entry {
        std::int64_t clock = -1;  // chip-wide insertion clock at last use; -1: never touched
        // Global wave index of last use: 64 bits (the entry stays 24 bytes), as a grid of B·H = 2^16 heads of
        // up to 2^24 one-row Q tiles runs 2^40 blocks, past 2^31 waves on 40 SMs.
        std::int64_t wave = -1;
        std::int32_t block = -1;  // block position (within its kernel) of last use
        bool dirty = false;
    };
    static_assert(sizeof(Entry) == 24, "an entry per tracked tile, up to kMaxTrackedRegions of them");
    struct TensorState {
        bool initialised = false, tracked = false;
        std::int64_t grid_rows = 0, grid_cols = 0;
        std::vector<Entry> entries;
    };

    TensorState& state_for(const GlobalTensor& t);
    template <class Visit> void for_each_entry(const Region& r, Visit&& visit);
    bool resident(const Entry& e) const;
    bool concurrent_hit(const Entry& e) const;
    void insert(std::int64_t bytes);
    void advance(Count bytes);
    void touch(Entry& e);

    std::int64_t capacity_;
    // Bytes touched chip-wide (scaled): the LRU reuse clock. Only distances up to the capacity decide
    // anything, so the clock advances by at most capacity + 1 at a time (advance()): chip-wide traffic
    // at batch·heads = 2^16 passes 2^63 bytes, the clock does not.
    std::int64_t clock_ = 0;
    std::int64_t slots_ = 1, grid_ = 1, blocks_per_head_ = 1;
    std::int64_t wave_base_ = 0, next_wave_base_ = 0, wave_ = 0;
    std::int32_t block_ = 0;
    std::int64_t scale_ = 1;        // chip-wide blocks / this head's blocks in the current wave
    Count kernel_inserted_ = 0, kernel_inserted_scaled_ = 0;  // this kernel, by the simulated head
    std::vector<TensorState> tensors_;  // by tensor id

    // Rule 1 for streamed tensors: the latest reads of their tiles, keyed by the tile's coordinates in
    // a 4-way set-associative table that forgets the oldest (a forgotten read is a miss, as without
    // the table). 16 K sets hold far more than the tiles concurrent blocks share.
    struct RecentRead {
        std::uint64_t key = 0;
        std::int64_t wave = -1;
        std::int32_t block = -1;
        std::int64_t stamp = -1;
    };
    static constexpr std::size_t kRecentWays = 4, kRecentSets = std::size_t{1} << 14;
    std::vector<RecentRead> recent_reads_;  // allocated at the first read of a streamed tensor
    std::int64_t recent_stamp_ = 0;
    bool read_by_concurrent_block(const Region& r);
};

}  // namespace fasim
