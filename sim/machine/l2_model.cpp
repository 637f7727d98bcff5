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

void L2Model::end_kernel(std::int64_t heads) { advance(kernel_inserted_ * heads - kernel_inserted_scaled_); }

void L2Model::insert(std::int64_t bytes) {
    const Count scaled = Count(bytes) * scale_;
    advance(scaled);
    kernel_inserted_ += bytes;
    kernel_inserted_scaled_ += scaled;
}

// A tile is resident while the clock has moved at most capacity_ since its last use, so an advance of
// more than capacity_ + 1 decides nothing that capacity_ + 1 does not: every tile touched before it is
// evicted either way, and later distances are sums of later advances. Clamping keeps the clock within
// 64 bits: it grows by at most capacity_ + 1 per access of the simulated head and per kernel (with a
// 64 MiB L2, 2^37 accesses before it could reach 2^63: days of simulation).
void L2Model::advance(Count bytes) {
    if (bytes <= 0) return;
    clock_ += bytes > capacity_ ? capacity_ + 1 : bytes.to_int64();
}

void L2Model::begin_block(std::int64_t index) {
    const std::int64_t w = index / slots_;
    wave_ = wave_base_ + w;
    block_ = static_cast<std::int32_t>(index);
    const std::int64_t chip = std::min(slots_, grid_ - w * slots_);
    const std::int64_t mine = std::min(slots_, blocks_per_head_ - w * slots_);
    scale_ = std::max<std::int64_t>(1, chip / std::max<std::int64_t>(1, mine));
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
        const bool streamed = regions > kFineGrid && t.bytes_per_head() > 2 * capacity_;
        s.tracked = regions <= kMaxTrackedRegions && !streamed;
        if (s.tracked) s.entries.assign(static_cast<std::size_t>(s.grid_rows * s.grid_cols), Entry{});
    }
    return s;
}

// Calls visit(entry_or_null, bytes) for each grid tile the region overlaps.
template <class Visit>
void L2Model::for_each_entry(const Region& r, Visit&& visit) {
    const GlobalTensor& t = *r.tensor;
    TensorState& s = state_for(t);
    if (!s.tracked) {
        visit(static_cast<Entry*>(nullptr), r.bytes());
        return;
    }
    const std::int64_t rr = t.region_rows, rc = t.region_cols;
    for (std::int64_t gr = r.row0 / rr; gr * rr < r.row0 + r.nrows; ++gr) {
        const std::int64_t rows = std::min((gr + 1) * rr, r.row0 + r.nrows) - std::max(gr * rr, r.row0);
        for (std::int64_t gc = r.col0 / rc; gc * rc < r.col0 + r.ncols; ++gc) {
            const std::int64_t cols = std::min((gc + 1) * rc, r.col0 + r.ncols) - std::max(gc * rc, r.col0);
            visit(&s.entries[static_cast<std::size_t>(gr * s.grid_cols + gc)], rows * cols * t.elem_bytes);
        }
    }
}

bool L2Model::resident(const Entry& e) const {
    if (e.clock < 0) return false;          // never fetched
    if (concurrent_hit(e)) return true;     // a concurrent block fetched it
    return clock_ - e.clock <= capacity_;   // fewer than an L2's worth of bytes touched since
}

void L2Model::touch(Entry& e) {
    e.clock = clock_;
    e.wave = wave_;
    e.block = block_;
}

// Bytes touched since a tile's last use decide whether it is still resident: a miss
// brings bytes in, and a hit on data this head used earlier re-touches them (both
// push other data towards eviction). A hit on what a concurrent block of the same
// wave just fetched is the same bytes, shared: it does not age anything.
bool L2Model::concurrent_hit(const Entry& e) const { return e.clock >= 0 && e.wave == wave_ && e.block != block_; }

bool L2Model::read_by_concurrent_block(const Region& r) {
    std::uint64_t key = static_cast<std::uint64_t>(r.tensor->id) + 1;
    for (const std::int64_t v : {r.head, r.row0, r.nrows, r.col0, r.ncols})
        key = key * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(v);
    if (recent_reads_.empty()) recent_reads_.assign(kRecentWays * kRecentSets, RecentRead{});
    RecentRead* set = &recent_reads_[((key ^ (key >> 29)) % kRecentSets) * kRecentWays];
    RecentRead* oldest = set;
    for (RecentRead* way = set; way != set + kRecentWays; ++way) {
        if (way->stamp >= 0 && way->key == key) {
            if (way->wave == wave_ && way->block != block_) return true;
            oldest = way;  // the same tile, read by this block or in an earlier wave: this read replaces it
            break;
        }
        if (way->stamp < oldest->stamp) oldest = way;
    }
    *oldest = {key, wave_, block_, recent_stamp_++};
    return false;
}

std::int64_t L2Model::read(const Region& r) {
    if (!state_for(*r.tensor).tracked && read_by_concurrent_block(r)) return 0;  // shared: no DRAM, no aging
    std::int64_t dram = 0;
    for_each_entry(r, [&](Entry* e, std::int64_t bytes) {
        const bool hit = e != nullptr && resident(*e);
        if (!hit) {
            dram += bytes;
            if (e) e->dirty = false;
        }
        if (!(e && concurrent_hit(*e))) insert(bytes);
        if (e) touch(*e);
    });
    return dram;
}

std::int64_t L2Model::write(const Region& r) {
    std::int64_t dram = 0;
    for_each_entry(r, [&](Entry* e, std::int64_t bytes) {
        const bool hit = e != nullptr && resident(*e);
        if (!(e && concurrent_hit(*e))) insert(bytes);
        if (!(hit && e->dirty)) dram += bytes;  // a resident dirty line is written back once
        if (e) {
            touch(*e);
            e->dirty = true;
        }
    });
    return dram;
}

}  // namespace fasim
