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
// A tensor as wide as a key sequence (more columns than any head dimension: S, P and
// their gradients, N x Nk) that is finely tracked (more than kFineGrid tiles per head)
// and more than twice the L2 size per head is streamed: written once and read once in
// order, it is evicted before any re-read, as LRU would do, so every access goes to
// DRAM, except that rule 1 still holds: a region another block of the same wave read is
// a hit (the naive GEMM's blocks that share a row band of P read it together). Q, K, V
// and O stay tracked at any length (up to kMaxTrackedRegions tiles): a GEMM's blocks
// re-read their row bands from one wave to the next.
//
// Two ways in: read() and write() take one access at a time, in program order (the counting
// executor's per-block path); loop() takes a loop of alike items, runs some of them through read()
// and write() and carries the rest over once it has shown that they would do exactly what the last
// one did (machine/l2_loops.cpp). Both give the same bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "machine/tile_states.hpp"
#include "machine/wave_reads.hpp"
#include "tile/tensors.hpp"

namespace fasim {

class L2Model {
public:
    static constexpr std::int64_t kFineGrid = std::int64_t{1} << 18;
    static constexpr std::int64_t kMaxTrackedRegions = std::int64_t{1} << 22;
    static constexpr std::int64_t kWidestHeadDim = 256;

    explicit L2Model(std::int64_t capacity_bytes);
    ~L2Model();
    L2Model(L2Model&&) noexcept;
    L2Model(const L2Model&) = delete;
    L2Model& operator=(const L2Model&) = delete;

    // A kernel of `grid` blocks, `blocks_per_head` of which belong to the head we
    // simulate (launched first), running `slots` blocks at a time.
    void begin_kernel(std::int64_t slots, std::int64_t grid, std::int64_t blocks_per_head);
    void begin_block(std::int64_t index);
    // After the simulated head's blocks: the other heads' blocks of this kernel
    // bring their own data in before the next kernel starts.
    void end_kernel(std::int64_t heads);

    // Bytes this access moves to or from DRAM (also added to dram_by_tensor()).
    std::int64_t read(const Region& r);
    std::int64_t write(const Region& r);

    // DRAM bytes read and written since the model was made, by tensor id.
    struct Dram {
        std::int64_t read = 0, write = 0;
        bool operator==(const Dram&) const = default;
    };
    const std::vector<Dram>& dram_by_tensor() const { return dram_; }
    // Pages of tile states held, over all tensors (TileStates::pages_held).
    std::size_t tile_pages_held() const {
        std::size_t pages = 0;
        for (const TensorState& s : tensors_) pages += s.tiles.pages_held();
        return pages;
    }

    // One access of a loop's item: `region` where it is in item 0, moving by `step` per item. A loop of
    // alike items: each makes the same accesses (nested loops unrolled into `accesses`, or not: see
    // ItemAccess), moved by their steps, and advances the block index by block_step and the wave by
    // wave_step (a loop of blocks, or of whole waves of blocks).
    struct Step {
        std::int64_t head = 0, rows = 0, cols = 0;
        bool operator==(const Step&) const = default;
    };
    struct ItemAccess {
        Region region;  // in item 0
        bool write = false;
        Step step;      // per item
        // The same access repeated by loops inside the item, each (count, step); their positions are
        // what the item touches. An access of a loop of n K/V tiles inside a block item is one
        // ItemAccess with inner = {(n, one tile down)}.
        std::vector<std::pair<std::int64_t, Step>> inner;
    };
    struct LoopShape {
        std::int64_t count = 0;
        std::vector<ItemAccess> accesses;
        std::int64_t block_step = 0, wave_step = 0;
    };
    // Loops shorter than this are run item by item (carrying over needs two items run and recorded, every
    // tile they touch before and after, which costs more than the few it could save): their shape is not read.
    static constexpr std::int64_t kShortLoop = 16;
    // Runs item k of the loop through read() and write() (and begin_block where items are blocks).
    using RunItem = std::function<void(std::int64_t k)>;
    // Runs the loop's items in order; an item that would repeat exactly what the one before it did is
    // not run but carried over (machine/l2_loops.cpp). `shape` must list every access the items make.
    void loop(const LoopShape& shape, const RunItem& run_item);

    // How many items loop() carried over instead of running (for tests and the bench).
    std::int64_t items_carried_over() const { return carried_over_; }

private:
    using Entry = TileState;
    struct TensorState {
        bool initialised = false, tracked = false;
        std::int64_t grid_rows = 0, grid_cols = 0;
        TileStates tiles;
        std::size_t forget_at = kForgetPages;  // pages held when forget_old_tiles next looks
    };
    // A causal staircase's blocks are played one at a time and leave every tile they touch with a state
    // of its own, 32 bytes each (tens of MB a tensor at N = 2^24 with small tiles). A tile last touched in
    // an earlier wave, more than an L2's worth of bytes ago, is a miss and no concurrent block's for
    // ever after, as a tile never touched is: read() and write() and every class L2Model::loop forms treat
    // the two alike. So is, in a kernel of one block per head (FA1's, which runs a head in one block), a
    // tile the block itself touched that long ago: no other block of its wave can read it as a concurrent
    // hit. Once a tensor holds this many pages (and each time it doubles), pages of such tiles are freed:
    // at each block, and after every access in a kernel of one block per head.
    static constexpr std::size_t kForgetPages = 256;  // 8 MB of tile states
    void forget_old_tiles();

    TensorState& state_for(const GlobalTensor& t);
    template <class Visit> void for_each_entry(const Region& r, Visit&& visit);
    template <class Visit> void for_each_index(const Region& r, Visit&& visit);
    // Per tile of every read() and write(): inlined, as GCC left them calls (one of each per tile; FA1's
    // forward and backward together at d = 128 track Q on a grid of one row, 83 to 128 tiles an access).
    [[gnu::always_inline]] inline bool resident(const Entry& e) const;
    [[gnu::always_inline]] inline bool concurrent_hit(const Entry& e) const;
    [[gnu::always_inline]] inline void insert(std::int64_t bytes);
    [[gnu::always_inline]] inline void touch(Entry& e);
    Dram& dram_of(const GlobalTensor& t);

    std::int64_t capacity_;
    L2Clock clock_ = 0;             // bytes touched chip-wide (scaled): the LRU reuse clock
    std::int64_t slots_ = 1, grid_ = 1, blocks_per_head_ = 1;
    std::int64_t wave_base_ = 0, next_wave_base_ = 0;
    std::int64_t wave_ = 0, block_ = 0;
    std::int64_t scale_ = 1;        // chip-wide blocks / this head's blocks in the current wave
    L2Clock kernel_inserted_ = 0, kernel_inserted_scaled_ = 0;  // this kernel, by the simulated head
    std::vector<TensorState> tensors_;  // by tensor id
    std::vector<Dram> dram_;            // by tensor id

    WaveReads wave_reads_;  // rule 1 for streamed tensors
    bool read_by_concurrent_block(const Region& r);

    // loop()'s bookkeeping (machine/l2_loops.cpp).
    struct LoopTiles;
    struct Context;
    struct LoopScratch;
    bool can_carry_over(const LoopShape& shape, LoopTiles& tiles);
    struct StridedTiles;
    bool recurring_tiles(const ItemAccess& a, const TensorState& s, StridedTiles& out) const;
    void carry_moving_tiles(const LoopTiles& tiles, std::size_t tensor, const std::vector<Entry>& post, std::int64_t k0,
                            std::int64_t m, const TileStates::Advance& per_item);
    std::int64_t carried_over_ = 0;
    std::vector<std::unique_ptr<LoopScratch>> scratch_;  // one per nesting level of loop()
    std::size_t loop_depth_ = 0;
};

// Calls visit(tile_index, bytes) for each grid tile of a tracked tensor the region overlaps.
template <class Visit>
void L2Model::for_each_index(const Region& r, Visit&& visit) {
    const GlobalTensor& t = *r.tensor;
    const TensorState& s = state_for(t);
    const std::int64_t rr = t.region_rows, rc = t.region_cols;
    for (std::int64_t gr = r.row0 / rr; gr * rr < r.row0 + r.nrows; ++gr) {
        const std::int64_t rows = std::min((gr + 1) * rr, r.row0 + r.nrows) - std::max(gr * rr, r.row0);
        for (std::int64_t gc = r.col0 / rc; gc * rc < r.col0 + r.ncols; ++gc) {
            const std::int64_t cols = std::min((gc + 1) * rc, r.col0 + r.ncols) - std::max(gc * rc, r.col0);
            visit(gr * s.grid_cols + gc, rows * cols * t.elem_bytes);
        }
    }
}

// Calls visit(entry_or_null, bytes) for each grid tile the region overlaps.
template <class Visit>
void L2Model::for_each_entry(const Region& r, Visit&& visit) {
    TensorState& s = state_for(*r.tensor);
    if (!s.tracked) {
        visit(static_cast<Entry*>(nullptr), r.bytes());
        return;
    }
    // Visiting changes states, never runs: a stretch of stored tiles found holds for the rest of the region.
    TileStates::Stored stored;
    for_each_index(r, [&](std::int64_t index, std::int64_t bytes) {
        if (index < stored.first || index >= stored.end) {
            stored = s.tiles.stored_around(index);
            if (stored.first == stored.end) {  // in a run: at() cuts it
                visit(&s.tiles.at(index), bytes);
                return;
            }
        }
        visit(stored.tiles + (index - stored.first), bytes);
    });
}

}  // namespace fasim
