#include "machine/l2_model.hpp"

#include <algorithm>

namespace fasim {

void L2Model::begin_kernel(std::int64_t slots, std::int64_t grid, std::int64_t blocks_per_head) {
    slots_ = std::max<std::int64_t>(1, slots);
    grid_ = grid;
    blocks_per_head_ = blocks_per_head;
    wave_base_ = next_wave_base_;
    next_wave_base_ = wave_base_ + (grid + slots_ - 1) / slots_;
    kernel_inserted_ = kernel_inserted_scaled_ = 0;
}

void L2Model::end_kernel(std::int64_t heads) {
    const L2Clock others = kernel_inserted_ * heads - kernel_inserted_scaled_;
    if (others > 0) clock_ += others;
}

inline void L2Model::insert(std::int64_t bytes) {
    clock_ += static_cast<L2Clock>(bytes) * scale_;
    kernel_inserted_ += bytes;
    kernel_inserted_scaled_ += static_cast<L2Clock>(bytes) * scale_;
}

void L2Model::begin_block(std::int64_t index) {
    const std::int64_t w = index / slots_;
    wave_ = wave_base_ + w;
    block_ = index;
    const std::int64_t chip = std::min(slots_, grid_ - w * slots_);
    const std::int64_t mine = std::min(slots_, blocks_per_head_ - w * slots_);
    scale_ = std::max<std::int64_t>(1, chip / std::max<std::int64_t>(1, mine));
    forget_old_tiles();
}

void L2Model::forget_old_tiles() {
    // A tile of an earlier wave is read by no block as a concurrent hit; nor, in a kernel of one block per
    // head (FA1's), is a tile this block touched: no other block of the head shares its wave.
    const bool lone_block = blocks_per_head_ == 1;
    for (TensorState& s : tensors_) {
        if (s.tiles.pages_held() < s.forget_at) continue;
        s.tiles.forget_pages([&](const Entry& e) { return (e.wave < wave_ || lone_block) && clock_ - e.clock > capacity_; });
        s.forget_at = std::max(kForgetPages, 2 * s.tiles.pages_held());
    }
}

L2Model::TensorState& L2Model::state_for(const GlobalTensor& t) {
    const auto id = static_cast<std::size_t>(t.id);
    if (id >= tensors_.size()) tensors_.resize(id + 1);
    TensorState& s = tensors_[id];
    if (!s.initialised) {
        s.initialised = true;
        s.grid_rows = (t.rows + t.region_rows - 1) / t.region_rows;
        s.grid_cols = (t.cols + t.region_cols - 1) / t.region_cols;
        const std::int64_t regions = s.grid_rows * s.grid_cols;
        const bool streamed = t.cols > kWidestHeadDim && regions > kFineGrid && t.bytes_per_head() > 2 * capacity_;
        s.tracked = regions <= kMaxTrackedRegions && !streamed;
        if (s.tracked) s.tiles.reset(s.grid_rows * s.grid_cols);
    }
    return s;
}

inline bool L2Model::resident(const Entry& e) const {
    if (e.clock < 0) return false;          // never fetched
    if (concurrent_hit(e)) return true;     // a concurrent block fetched it
    return clock_ - e.clock <= capacity_;   // fewer than an L2's worth of bytes touched since
}

inline void L2Model::touch(Entry& e) {
    e.clock = clock_;
    e.wave = wave_;
    e.set_block(block_);
}

// Bytes touched since a tile's last use decide whether it is still resident: a miss
// brings bytes in, and a hit on data this head used earlier re-touches them (both
// push other data towards eviction). A hit on what a concurrent block of the same
// wave just fetched is the same bytes, shared: it does not age anything.
inline bool L2Model::concurrent_hit(const Entry& e) const { return e.clock >= 0 && e.wave == wave_ && e.block() != block_; }

// A read of a region another block of this wave read: shared. Otherwise this block is now its reader.
bool L2Model::read_by_concurrent_block(const Region& r) {
    // A kernel whose simulated head is one block (FA1's) has no other block of it in any wave: nothing read is
    // shared, and the record, which only tells this block's reads from another's, is not kept (FA1's forward
    // and backward at d = 128, N = 2^24, peaked at 161 MB with it, 79 MB without).
    if (blocks_per_head_ == 1) return false;
    wave_reads_.start_wave(wave_);
    const WaveReads::Key key = WaveReads::key_of(r);
    const std::optional<std::int64_t> reader = wave_reads_.reader(key);
    if (reader && *reader != block_) return true;
    wave_reads_.record(key, block_);
    return false;
}

L2Model::Dram& L2Model::dram_of(const GlobalTensor& t) {
    const auto id = static_cast<std::size_t>(t.id);
    if (id >= dram_.size()) dram_.resize(id + 1);
    return dram_[id];
}

std::int64_t L2Model::read(const Region& r) {
    if (!state_for(*r.tensor).tracked && read_by_concurrent_block(r)) return 0;  // shared: no DRAM, no aging
    std::int64_t dram = 0;
    for_each_entry(r, [&](Entry* e, std::int64_t bytes) {
        const bool hit = e != nullptr && resident(*e);
        if (!hit) {
            dram += bytes;
            if (e) e->set_dirty(false);
        }
        if (!(e && concurrent_hit(*e))) insert(bytes);
        if (e) touch(*e);
    });
    dram_of(*r.tensor).read += dram;
    if (blocks_per_head_ == 1) forget_old_tiles();  // a lone block touches all of a head's tiles
    return dram;
}

std::int64_t L2Model::write(const Region& r) {
    std::int64_t dram = 0;
    for_each_entry(r, [&](Entry* e, std::int64_t bytes) {
        const bool hit = e != nullptr && resident(*e);
        if (!(e && concurrent_hit(*e))) insert(bytes);
        if (!(hit && e->dirty())) dram += bytes;  // a resident dirty line is written back once
        if (e) {
            touch(*e);
            e->set_dirty(true);
        }
    });
    dram_of(*r.tensor).write += dram;
    if (blocks_per_head_ == 1) forget_old_tiles();
    return dram;
}

}  // namespace fasim
