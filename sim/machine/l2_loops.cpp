// L2Model::loop: a loop of alike items (the blocks of a wave, whole waves, one block's K/V tiles) run
// through read() and write() until the model has shown that the items after the last one would each do
// exactly what it did; those are then carried over at once.
//
// Why that is exact. An item's effect on the L2 model depends only on the state of the tiles it touches
// and on the clock, wave and block it runs at. Its tiles are of two kinds:
//  - recurring tiles, which every item touches (the K/V tiles every Q tile's block reads): their state
//    when an item starts is what the item before left. If two consecutive items left them in the same
//    state relative to where each ended, every later item finds them as the last one did.
//  - moving tiles, one set per item, shifted by a fixed number of tiles from one item to the next (each
//    block's own Q tile): they have not been touched by this loop before their item, so their state is
//    what it was before the loop. A later item makes the same decisions as the last one if each of its
//    moving tiles falls in the same class as the last item's tile did: never fetched or evicted for
//    sure, resident for sure (even after the whole item's bytes), or fetched by another block of the
//    same wave (rule 1), with the same dirty bit. A tile on the edge of eviction stops the carry-over.
// Items that pass are carried over: their DRAM bytes and clock advance are the last item's, and every
// tile they touch gets the state the last item left on its own tile, shifted by the items between.
// Anything the checks cannot show (two moving accesses of one tensor with different steps, windows that
// overlap, a moving tile that is also recurring) runs item by item, as read() and write() would.
#include <algorithm>
#include <climits>
#include <map>
#include <tuple>

#include "machine/l2_model.hpp"

namespace fasim {

namespace {

using Step = L2Model::Step;
using ItemAccess = L2Model::ItemAccess;

constexpr std::int64_t kMaxPositions = std::int64_t{1} << 22;  // positions one item's accesses may enumerate
constexpr std::int64_t kBoxedReads = 1024;  // a streamed read with more regions an item is followed as a box

bool is_zero(const Step& s) { return s.head == 0 && s.rows == 0 && s.cols == 0; }

Region moved(const Region& r, const Step& s, std::int64_t k) {
    Region m = r;
    m.head += k * s.head;
    m.row0 += k * s.rows;
    m.col0 += k * s.cols;
    return m;
}

// Calls visit(region) at every position of an access inside item 0: its inner loops' steps that move it
// (a step of zero repeats the same region). False when there are more than `budget` positions.
template <class Visit>
bool for_each_position(const ItemAccess& a, std::int64_t& budget, Visit&& visit) {
    std::vector<std::pair<std::int64_t, Step>> dims;
    for (const auto& d : a.inner)
        if (d.first > 1 && !is_zero(d.second)) dims.push_back(d);
    std::int64_t n = 1;
    for (const auto& d : dims) {
        if (d.first > budget / n) return false;
        n *= d.first;
    }
    if (n > budget) return false;
    budget -= n;
    std::vector<std::int64_t> idx(dims.size(), 0);
    for (std::int64_t p = 0; p < n; ++p) {
        Region r = a.region;
        for (std::size_t i = 0; i < dims.size(); ++i) r = moved(r, dims[i].second, idx[i]);
        visit(r);
        for (std::size_t i = dims.size(); i-- > 0;) {
            if (++idx[i] < dims[i].first) break;
            idx[i] = 0;
        }
    }
    return true;
}

// The first u in [1, limit) at which a + b u > 0 is no longer as it is at u = 0, or limit.
std::int64_t first_change_positive(L2Clock a, L2Clock b, std::int64_t limit) {
    L2Clock u = limit;
    if (a > 0 && b < 0) u = (a + (-b) - 1) / -b;  // a + b u <= 0 from u >= a / -b
    if (a <= 0 && b > 0) u = -a / b + 1;          // a + b u > 0 from u > -a / b
    return u < limit ? static_cast<std::int64_t>(u) : limit;
}

// The same for a + b u == 0.
std::int64_t first_change_zero(L2Clock a, L2Clock b, std::int64_t limit) {
    L2Clock u = limit;
    if (b != 0 && a == 0) u = 1;
    if (b != 0 && a != 0 && (-a) % b == 0 && -a / b > 0) u = -a / b;
    return u < limit ? static_cast<std::int64_t>(u) : limit;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

void sort_unique(std::vector<std::int64_t>& v) {
    if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

// Ranges [first, end) sorted and joined where they overlap or touch.
void merge_ranges(std::vector<std::pair<std::int64_t, std::int64_t>>& ranges) {
    if (!std::is_sorted(ranges.begin(), ranges.end())) std::sort(ranges.begin(), ranges.end());
    std::size_t out = 0;
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        if (out > 0 && ranges[i].first <= ranges[out - 1].second) {
            ranges[out - 1].second = std::max(ranges[out - 1].second, ranges[i].second);
            continue;
        }
        ranges[out++] = ranges[i];
    }
    ranges.resize(out);
}

constexpr std::int64_t kShortRange = 64;  // recurring tiles checked one by one against the moving windows

}  // namespace

// The tiles an access touches at every position of the loops inside its item: `count` runs of `length`
// tile indices, the first from `first`, each `period` after the one before (period >= 0).
struct L2Model::StridedTiles {
    std::int64_t first = 0, length = 0, period = 0, count = 1;
    bool operator<(const StridedTiles& o) const { return std::tie(period, count, first) < std::tie(o.period, o.count, o.first); }
};

// What a loop's items touch, found from item 0's accesses.
struct L2Model::LoopTiles {
    struct Tracked {
        TensorId id = -1;
        // The tiles every item touches, as ranges [first, end) of tile indices (sorted, apart): a block's loop
        // over all K/V tiles is one range, however many tiles.
        std::vector<std::pair<std::int64_t, std::int64_t>> recurring;
        std::vector<std::int64_t> recurring_tiles;  // found one by one, before they join `recurring`
        // Accesses whose runs have gaps between them (one of K's two column halves, tile after tile): runs
        // that fill each other's gaps join `recurring` as one range, the others are listed one by one.
        std::vector<StridedTiles> strided;
        std::vector<std::int64_t> moving;  // item 0's tile indices
        std::int64_t shift = 0;            // entries the moving tiles move per item
    };
    struct Streamed {  // reads of an untracked tensor (rule 1's record)
        TensorId id = -1;
        std::vector<WaveReads::Key> recurring, moving;  // moving: item 0's
        Step step;
        // The moving reads by access: item 0's first region, the loops inside the item that move it, and
        // its regions' range in `moving` (a carried-over loop records each as a family).
        struct Read {
            WaveReads::Key base;
            std::vector<std::pair<std::int64_t, WaveReads::Move>> inner;
            std::size_t begin = 0, end = 0;
        };
        std::vector<Read> reads;
        // Items reading many regions each (a block's whole row band of P) are followed by where their
        // regions start (box: item 0's) instead of region by region: `moving` stays empty.
        bool boxed = false;
        WaveReads::Box box;
    };
    std::vector<Tracked> tracked;
    std::vector<Streamed> streamed;
    bool streamed_reads = false;  // the items read streamed tensors (in a loop of waves, not followed)
};

bool L2Model::can_carry_over(const LoopShape& shape, LoopTiles& tiles) {
    std::int64_t budget = kMaxPositions;
    const std::int64_t n = shape.count;
    // The lists of an earlier call are emptied, not freed: their room is used again.
    for (auto& t : tiles.tracked) {
        t.id = -1;
        t.recurring.clear();
        t.recurring_tiles.clear();
        t.strided.clear();
        t.moving.clear();
        t.shift = 0;
    }
    tiles.streamed.clear();
    tiles.streamed_reads = false;
    std::size_t used = 0;
    auto tracked_of = [&](TensorId id) -> LoopTiles::Tracked& {
        for (std::size_t i = 0; i < used; ++i)
            if (tiles.tracked[i].id == id) return tiles.tracked[i];
        if (used == tiles.tracked.size()) tiles.tracked.emplace_back();
        tiles.tracked[used].id = id;
        return tiles.tracked[used++];
    };
    auto streamed_of = [&](TensorId id) -> LoopTiles::Streamed& {
        for (auto& t : tiles.streamed)
            if (t.id == id) return t;
        tiles.streamed.emplace_back();
        tiles.streamed.back().id = id;
        return tiles.streamed.back();
    };
    struct Trim {  // whatever the answer, the list holds the tensors of this loop only
        LoopTiles& tiles;
        std::size_t& used;
        ~Trim() { tiles.tracked.resize(used); }
    } trim{tiles, used};
    for (const ItemAccess& a : shape.accesses) {
        const GlobalTensor& t = *a.region.tensor;
        TensorState& s = state_for(t);
        if (s.tracked) {
            // The tiles move by whole tiles of the tracking grid, or the items do not touch alike tiles.
            if (a.step.rows % t.region_rows != 0 || a.step.cols % t.region_cols != 0) return false;
            const std::int64_t shift = a.step.rows / t.region_rows * s.grid_cols + a.step.cols / t.region_cols;
            LoopTiles::Tracked& tt = tracked_of(t.id);
            if (shift != 0) {
                if (tt.shift != 0 && tt.shift != shift) return false;
                tt.shift = shift;
            }
            if (shift == 0) {
                StridedTiles runs;
                if (recurring_tiles(a, s, runs)) {
                    if (runs.period <= runs.length) tt.recurring.emplace_back(runs.first, runs.first + runs.length + (runs.count - 1) * runs.period);
                    else tt.strided.push_back(runs);
                    continue;
                }
            }
            std::vector<std::int64_t>& into = shift == 0 ? tt.recurring_tiles : tt.moving;
            const bool ok = for_each_position(a, budget, [&](const Region& r) {
                for_each_index(r, [&](std::int64_t index, std::int64_t) { into.push_back(index); });
            });
            if (!ok) return false;
        } else if (!a.write && shape.wave_step != 0) {
            // Each wave starts rule 1's record afresh: reads in different waves never meet, and a wave's own
            // reads meet as in the wave before. Nothing to follow, but the last wave runs (loop()).
            tiles.streamed_reads = true;
        } else if (!a.write) {  // writes of an untracked tensor always reach DRAM: no state to follow
            LoopTiles::Streamed& st = streamed_of(t.id);
            const bool moving = !is_zero(a.step);
            if (moving) {
                if (!st.reads.empty() && !(st.step == a.step)) return false;
                st.step = a.step;
            }
            LoopTiles::Streamed::Read read{WaveReads::key_of(a.region), {}, st.moving.size(), 0};
            std::int64_t positions = 1;
            for (const auto& [count, step] : a.inner)
                if (count > 1 && !is_zero(step)) {
                    read.inner.push_back({count, {step.head, step.rows, step.cols}});
                    positions *= count;
                }
            if (moving && (st.boxed || positions > kBoxedReads)) {
                // Where this read's regions start, as a box.
                if (!st.boxed && !st.moving.empty()) return false;  // regions listed one by one already
                WaveReads::Box b;
                const std::int64_t at[3] = {read.base.head, read.base.row0, read.base.col0};
                for (int c = 0; c < 3; ++c) b.lo[c] = b.hi[c] = at[c];
                for (const auto& [count, move] : read.inner) {
                    const std::int64_t span[3] = {(count - 1) * move.head, (count - 1) * move.rows, (count - 1) * move.cols};
                    for (int c = 0; c < 3; ++c) (span[c] < 0 ? b.lo[c] : b.hi[c]) += span[c];
                }
                if (!st.boxed) st.box = b;
                for (int c = 0; c < 3; ++c) {
                    st.box.lo[c] = std::min(st.box.lo[c], b.lo[c]);
                    st.box.hi[c] = std::max(st.box.hi[c], b.hi[c]);
                }
                st.boxed = true;
                st.reads.push_back(std::move(read));
                continue;
            }
            const bool ok = for_each_position(a, budget, [&](const Region& r) {
                (moving ? st.moving : st.recurring).push_back(WaveReads::key_of(r));
            });
            if (!ok) return false;
            read.end = st.moving.size();
            if (moving) st.reads.push_back(std::move(read));
        }
    }
    // Runs of one period and count whose first runs, from the lowest, leave no gap up to a whole period further
    // (K's two column halves, each a tile in every row of K's grid) touch every tile from there to the last run's
    // end: one range. Runs that join nothing are listed tile by tile.
    auto join_strided = [&budget](LoopTiles::Tracked& t) {
        std::sort(t.strided.begin(), t.strided.end());
        for (std::size_t i = 0; i < t.strided.size();) {
            const StridedTiles& lowest = t.strided[i];
            std::int64_t covered = lowest.first;  // one past the last tile the chain's first runs reach
            std::size_t end = i;
            for (; end < t.strided.size(); ++end) {
                const StridedTiles& r = t.strided[end];
                if (r.period != lowest.period || r.count != lowest.count || r.first > covered) break;
                covered = std::max(covered, r.first + r.length);
            }
            if (covered - lowest.first >= lowest.period) {
                t.recurring.emplace_back(lowest.first, covered + (lowest.count - 1) * lowest.period);
            } else {
                for (std::size_t j = i; j < end; ++j) {
                    const StridedTiles& r = t.strided[j];
                    if (r.count > budget / r.length) return false;
                    budget -= r.count * r.length;
                    for (std::int64_t k = 0; k < r.count; ++k)
                        for (std::int64_t x = 0; x < r.length; ++x) t.recurring_tiles.push_back(r.first + k * r.period + x);
                }
            }
            i = end;
        }
        return true;
    };
    for (auto& t : tiles.tracked) {
        if (!join_strided(t)) return false;
        sort_unique(t.recurring_tiles);
        for (const std::int64_t r : t.recurring_tiles) t.recurring.emplace_back(r, r + 1);
        merge_ranges(t.recurring);
        sort_unique(t.moving);
        if (t.moving.empty()) continue;
        // Each item's moving tiles are its own: the windows do not overlap, and no recurring tile lies in
        // any item's window (a long recurring range: none lies between the first window and the last).
        const std::int64_t lo = t.moving.front(), hi = t.moving.back();
        if (hi - lo >= (t.shift > 0 ? t.shift : -t.shift)) return false;
        const std::int64_t reach_lo = lo + std::min<std::int64_t>(0, (n - 1) * t.shift), reach_hi = hi + std::max<std::int64_t>(0, (n - 1) * t.shift);
        for (const auto& [first, end] : t.recurring) {
            if (end - first > kShortRange) {
                if (first <= reach_hi && end - 1 >= reach_lo) return false;
                continue;
            }
            for (std::int64_t r = first; r < end; ++r) {
                const std::int64_t k0 = floor_div(r - lo, t.shift);  // the window over r, if any, is k0's or a neighbour's
                for (std::int64_t k = k0 - 1; k <= k0 + 1; ++k) {
                    const std::int64_t at = r - k * t.shift;
                    if (k >= 0 && k < n && at >= lo && at <= hi && std::binary_search(t.moving.begin(), t.moving.end(), at))
                        return false;
                }
            }
        }
    }
    for (auto& t : tiles.streamed) {
        if (t.boxed) {
            // Items' boxes apart along a coordinate the step moves further than a box spans, and no
            // recurring read starting in any item's box.
            const std::int64_t step[3] = {t.step.head, t.step.rows, t.step.cols};
            int c = -1;
            for (int i = 0; i < 3 && c < 0; ++i)
                if (step[i] != 0 && (step[i] > 0 ? step[i] : -step[i]) > t.box.hi[i] - t.box.lo[i]) c = i;
            if (c < 0) return false;
            for (const WaveReads::Key& key : t.recurring) {
                const std::int64_t at[3] = {key.head, key.row0, key.col0};
                const std::int64_t k0 = floor_div(at[c] - t.box.lo[c], step[c]);
                for (std::int64_t k = k0 - 1; k <= k0 + 1; ++k) {
                    if (k < 0 || k >= n) continue;
                    bool inside = true;
                    for (int i = 0; i < 3; ++i) inside = inside && at[i] >= t.box.lo[i] + k * step[i] && at[i] <= t.box.hi[i] + k * step[i];
                    if (inside) return false;
                }
            }
            continue;
        }
        if (t.moving.empty()) continue;
        // A moving read's region is its item's own: no other read, moving or recurring, is ever the same
        // region. Regions that differ by whole steps lie on one line; their positions on it must be n apart.
        const Step& s = t.step;
        auto line = [&](const WaveReads::Key& key) {
            const std::int64_t q = s.rows != 0 ? floor_div(key.row0, s.rows) : s.cols != 0 ? floor_div(key.col0, s.cols)
                                                                                            : floor_div(key.head, s.head);
            WaveReads::Key base = key;
            base.head -= q * s.head;
            base.row0 -= q * s.rows;
            base.col0 -= q * s.cols;
            return std::pair{base, q};
        };
        std::map<std::tuple<TensorId, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>, std::vector<std::int64_t>> positions;
        auto tuple_of = [](const WaveReads::Key& k) { return std::tuple{k.tensor, k.head, k.row0, k.nrows, k.col0, k.ncols}; };
        for (const WaveReads::Key& key : t.moving) {
            const auto [base, q] = line(key);
            positions[tuple_of(base)].push_back(q);
        }
        for (auto& [base, qs] : positions) {
            sort_unique(qs);  // a region the item reads twice (two passes over a row) is still its own
            for (std::size_t i = 1; i < qs.size(); ++i)
                if (qs[i] - qs[i - 1] < n) return false;
        }
        for (const WaveReads::Key& key : t.recurring) {
            const auto [base, q] = line(key);
            const auto it = positions.find(tuple_of(base));
            if (it == positions.end()) continue;
            for (const std::int64_t m : it->second)
                if (q - m >= 0 && q - m < n) return false;
        }
    }
    return true;
}

// The tiles an access touches at every position of the loops inside its item, as runs of tile indices
// (StridedTiles), where they are: its region covers part of one row of the grid's tiles (one run), whole rows
// (one run), or the same columns of several rows (a run per row); at most one loop inside the item moves it,
// by whole tiles, and a region of several rows' runs only by its own height (the runs continue down the grid).
bool L2Model::recurring_tiles(const ItemAccess& a, const TensorState& s, StridedTiles& out) const {
    const Region& r = a.region;
    const std::int64_t rr = r.tensor->region_rows, rc = r.tensor->region_cols;
    if (r.nrows <= 0 || r.ncols <= 0) return false;
    const std::int64_t gr0 = r.row0 / rr, gr1 = (r.row0 + r.nrows - 1) / rr, gc0 = r.col0 / rc, gc1 = (r.col0 + r.ncols - 1) / rc;
    const bool whole_rows = gc0 == 0 && gc1 == s.grid_cols - 1;
    const std::int64_t first = gr0 * s.grid_cols + gc0;
    // The region itself: one run, or a run per grid row.
    const std::int64_t rows = whole_rows ? 1 : gr1 - gr0 + 1;
    const std::int64_t length = whole_rows ? (gr1 - gr0) * s.grid_cols + gc1 - gc0 + 1 : gc1 - gc0 + 1;
    std::int64_t count = 1, shift = 0;
    for (const auto& [c, step] : a.inner) {
        if (c <= 1 || (step.rows == 0 && step.cols == 0)) continue;  // another head's: the same tiles (one head is tracked)
        if (count > 1) return false;                                 // two loops move it
        if (step.rows % rr != 0 || step.cols % rc != 0 || (whole_rows && step.cols != 0)) return false;
        count = c;
        shift = step.rows / rr * s.grid_cols + step.cols / rc;
    }
    if (rows > 1) {
        // Several rows' runs, period grid_cols; a loop must move them by exactly their rows, so that positions
        // continue the same runs.
        const std::int64_t height = rows * s.grid_cols;
        if (count > 1 && shift != height && shift != -height) return false;
        out = {shift < 0 ? first + (count - 1) * shift : first, length, s.grid_cols, rows * count};
        return true;
    }
    // Runs in increasing order: a loop walking backwards starts from its last position.
    out = {shift < 0 ? first + (count - 1) * shift : first, length, shift < 0 ? -shift : shift, count};
    return true;
}

namespace {

// What a moving tile's state means for the item that touches it first.
enum class Pre : std::uint8_t { miss, hit_clean, hit_dirty, shared_clean, shared_dirty, unknown };
// A streamed read: no record in this wave, a record of this block, or of another block (shared).
enum class StreamedPre : std::uint8_t { absent, same_block, other_block };

}  // namespace

struct L2Model::Context {
    L2Clock clock_start = 0, clock_end = 0;
    std::int64_t wave_end = 0, block_end = 0, scale = 1;
    L2Clock inserted = 0, inserted_scaled = 0;
};

// One level of loop()'s nesting: what it keeps of the items it ran, reused from call to call (the tile
// lists of a long loop are large).
struct L2Model::LoopScratch {
    static constexpr std::int64_t kNoRead = INT64_MIN;  // a streamed region with no record in this wave
    struct Rel {  // a tile's state relative to the end of the item that left it (every item touches it)
        std::int64_t clock = 0, wave = 0, block = 0;
        bool touched = false, dirty = false;
        bool operator==(const Rel&) const = default;
    };
    // Recurring tiles [first, end) after an item: tile first + q * period + r is base[r] advanced by q
    // steps (period = base.size(); a stretch of tiles stored one by one is a single period).
    struct RelRun {
        std::int64_t first = 0, end = 0;
        std::vector<Rel> base;
        TileStates::Advance step;
        bool operator==(const RelRun&) const = default;
        bool one_by_one() const { return end - first == static_cast<std::int64_t>(base.size()); }
    };
    // A recurring streamed region's reader after an item: relative to the item's block (it recorded the
    // region, or a loop of waves), or, within a wave, where a block no later item runs read it first, that
    // block: the later items' reads are shared and leave the record as it is (a row's blocks each reading
    // the row's one mask element).
    struct RecurringReader {
        std::int64_t block = kNoRead;
        bool kept = false;
        bool operator==(const RecurringReader&) const = default;
    };
    struct Item {
        std::int64_t k = 0;
        Context ctx;
        std::vector<Dram> dram;                                  // by tensor id
        std::vector<std::vector<RelRun>> recurring;              // per LoopTiles::tracked, after the item
        std::vector<std::vector<Entry>> moving_pre, moving_post; // per LoopTiles::tracked
        std::vector<std::vector<Pre>> moving_class;
        std::vector<std::vector<RecurringReader>> streamed_recurring;
        std::vector<std::vector<StreamedPre>> streamed_class;
        std::vector<bool> streamed_unread;  // boxed tensors: the item found none of its regions recorded
    };
    LoopTiles tiles;
    Item records[2];
};

L2Model::L2Model(std::int64_t capacity_bytes) : capacity_(capacity_bytes) {}
L2Model::~L2Model() = default;
L2Model::L2Model(L2Model&&) noexcept = default;

void L2Model::loop(const LoopShape& shape, const RunItem& run_item) {
    const std::int64_t n = shape.count;
    if (n < kShortLoop) {
        for (std::int64_t k = 0; k < n; ++k) run_item(k);
        return;
    }
    // This call's scratch: loops nest (waves, blocks, a block's loops), each level its own.
    if (loop_depth_ == scratch_.size()) scratch_.push_back(std::make_unique<LoopScratch>());
    LoopScratch& scratch = *scratch_[loop_depth_];
    struct Depth {
        std::size_t& d;
        explicit Depth(std::size_t& depth) : d(depth) { ++d; }
        ~Depth() { --d; }
    } depth(loop_depth_);
    LoopTiles& tiles = scratch.tiles;
    if (!can_carry_over(shape, tiles)) {
        for (std::int64_t k = 0; k < n; ++k) run_item(k);
        return;
    }
    using Rel = LoopScratch::Rel;
    using Item = LoopScratch::Item;
    using RecurringReader = LoopScratch::RecurringReader;
    constexpr std::int64_t kNoRead = LoopScratch::kNoRead;
    auto tiles_of = [&](const LoopTiles::Tracked& t) -> TileStates& { return tensors_[static_cast<std::size_t>(t.id)].tiles; };
    auto tile_at = [&](const LoopTiles::Tracked& t, std::size_t i, std::int64_t k) {
        return tiles_of(t).get(t.moving[i] + k * t.shift);
    };
    auto classify = [&](const Entry& e, L2Clock start, std::int64_t wave, std::int64_t block, L2Clock advance) {
        if (e.clock < 0) return Pre::miss;
        if (e.wave == wave && e.block() != block) return e.dirty() ? Pre::shared_dirty : Pre::shared_clean;
        const L2Clock age = start - e.clock;
        if (age > capacity_) return Pre::miss;  // its age only grows during the item
        if (age + advance <= capacity_) return e.dirty() ? Pre::hit_dirty : Pre::hit_clean;
        return Pre::unknown;                    // evicted or not depending on when in the item: run it
    };
    // A streamed region a later item will read: a wave not begun has no record yet; a tensor nothing but
    // this loop recorded in this wave has none of it either (the loop's own regions are never a later
    // item's, can_carry_over saw to that).
    const std::int64_t loop_stamp = wave_reads_.stamp();
    auto streamed_lookup = [&](const WaveReads::Key& key, std::int64_t wave, std::int64_t block) {
        if (wave != wave_reads_.wave() || !wave_reads_.recorded_before(key.tensor, loop_stamp + 1)) return StreamedPre::absent;
        const std::optional<std::int64_t> reader = wave_reads_.reader(key);
        if (!reader) return StreamedPre::absent;
        return *reader == block ? StreamedPre::same_block : StreamedPre::other_block;
    };
    auto moved_key = [](WaveReads::Key key, const Step& s, std::int64_t k) {
        key.head += k * s.head;
        key.row0 += k * s.rows;
        key.col0 += k * s.cols;
        return key;
    };
    // Where a boxed streamed tensor's regions of item k start.
    auto box_at = [](const LoopTiles::Streamed& t, std::int64_t k) {
        WaveReads::Box b = t.box;
        const std::int64_t step[3] = {t.step.head, t.step.rows, t.step.cols};
        for (int c = 0; c < 3; ++c) {
            b.lo[c] += k * step[c];
            b.hi[c] += k * step[c];
        }
        return b;
    };
    // The chip-wide scale of the wave `wave` (begin_block's rule), for loops over whole waves.
    auto scale_of_wave = [&](std::int64_t wave) {
        const std::int64_t w = wave - wave_base_;
        const std::int64_t chip = std::min(slots_, grid_ - w * slots_), mine = std::min(slots_, blocks_per_head_ - w * slots_);
        return std::max<std::int64_t>(1, chip / std::max<std::int64_t>(1, mine));
    };

    // From item j on (its block and wave given), how many items run in a wave of the same kind: a loop of
    // blocks within j's wave, a loop of waves among the waves of the same scale (every block of a full wave
    // is this head's), a loop inside a block anywhere.
    auto same_context_items = [&](std::int64_t block, std::int64_t wave, std::int64_t limit) {
        if (shape.wave_step != 0) {
            const std::int64_t full_waves = std::min(grid_, blocks_per_head_) / slots_, w = wave - wave_base_;
            if (shape.wave_step < 0 || w < 0 || w >= full_waves) return std::int64_t{1};
            return std::min(limit, (full_waves - 1 - w) / shape.wave_step + 1);
        }
        if (shape.block_step != 0) {
            if (shape.block_step < 0) return std::int64_t{1};
            const std::int64_t last_block = (wave - wave_base_ + 1) * slots_ - 1;
            return std::min(limit, (last_block - block) / shape.block_step + 1);
        }
        return limit;
    };
    // From item j on, how many items find moving tile i of `t` in the same class as item j found it: the
    // tile's state follows one run's law (TileStates), so every comparison classify makes is an affine
    // function of the item, and each changes sign at most once.
    auto alike_tile_items = [&](const LoopTiles::Tracked& t, std::size_t i, std::int64_t j, L2Clock start, std::int64_t wave,
                                std::int64_t block, L2Clock advance, std::int64_t limit) {
        const std::int64_t index = t.moving[i] + j * t.shift;
        const TileStates::Piece piece = tiles_of(t).piece_at(index);
        const std::int64_t inside = t.shift > 0 ? (piece.end - 1 - index) / t.shift + 1 : (index - piece.first) / -t.shift + 1;
        if (piece.untouched) return std::min(limit, inside);  // never fetched, whatever the item
        if (piece.run == nullptr || t.shift % piece.run->period != 0) return std::int64_t{1};
        limit = std::min(limit, inside);
        const std::int64_t periods = t.shift / piece.run->period;  // per item
        const Entry e = piece.run->at(index);
        const L2Clock tile_clock = piece.run->step.clock * periods;
        const L2Clock age = start - e.clock, age_step = advance - tile_clock;
        limit = first_change_positive(-e.clock, -tile_clock, limit);  // never fetched
        limit = first_change_zero(e.wave - wave, piece.run->step.wave * periods - shape.wave_step, limit);
        limit = first_change_zero(e.block() - block, piece.run->step.block * periods - shape.block_step, limit);
        limit = first_change_positive(age - capacity_, age_step, limit);            // evicted before the item
        limit = first_change_positive(age + advance - capacity_, age_step, limit);  // or during it
        return limit;
    };

    // The recurring tiles' states relative to the item that just ended: runs of TileStates stay runs (whole
    // periods of them), tiles stored one by one are listed.
    auto recurring_states = [&](const TileStates& states, const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges,
                                std::vector<LoopScratch::RelRun>& out) {
        out.clear();
        auto rel_of = [&](const Entry& e) {
            return e.clock < 0 ? Rel{0, 0, 0, false, e.dirty()}
                               : Rel{static_cast<std::int64_t>(e.clock - clock_), e.wave - wave_, e.block() - block_, true, e.dirty()};
        };
        for (const auto& [first, end] : ranges)
            for (std::int64_t x = first; x < end;) {
                const TileStates::Piece piece = states.piece_at(x);
                const std::int64_t stop = std::min(piece.end, end);
                const TileStates::Run* run = piece.run;
                if (run && stop - x >= 2 * run->period &&
                    std::all_of(run->base.begin(), run->base.end(), [](const Entry& e) { return e.clock >= 0; })) {
                    const std::int64_t whole = (stop - x) / run->period * run->period;
                    LoopScratch::RelRun& r = out.emplace_back(LoopScratch::RelRun{x, x + whole, {}, run->step});
                    for (std::int64_t i = 0; i < run->period; ++i) r.base.push_back(rel_of(run->at(x + i)));
                    x += whole;
                    continue;
                }
                for (; x < stop; ++x) {  // one by one, joined to the list before where it ends here
                    if (out.empty() || !out.back().one_by_one() || out.back().end != x) out.push_back({x, x, {}, {}});
                    out.back().base.push_back(rel_of(states.get(x)));
                    ++out.back().end;
                }
            }
    };

    // Two items' records: the one before and the one running.
    Item* records = scratch.records;
    Item* last = nullptr;
    Item* cur_record = &records[0];
    std::int64_t k = 0;
    while (k < n) {
        Item& cur = *cur_record;
        cur.k = k;
        cur.ctx.clock_start = clock_;
        const L2Clock inserted0 = kernel_inserted_, scaled0 = kernel_inserted_scaled_;
        const std::vector<Dram> dram0 = dram_;
        cur.moving_pre.resize(tiles.tracked.size());
        for (std::size_t ti = 0; ti < tiles.tracked.size(); ++ti) {
            const auto& t = tiles.tracked[ti];
            auto& pre = cur.moving_pre[ti];
            pre.clear();
            for (std::size_t i = 0; i < t.moving.size(); ++i) pre.push_back(tile_at(t, i, k));
        }
        // Streamed reads are classed against the block that reads them, known once the item ran
        // (begin_block): keep each region's reader now, class it after.
        std::vector<std::vector<std::int64_t>> streamed_reader;
        std::vector<bool> box_unread;
        for (const auto& t : tiles.streamed) {
            auto& readers = streamed_reader.emplace_back();
            for (const WaveReads::Key& key : t.moving) readers.push_back(wave_reads_.reader(moved_key(key, t.step, k)).value_or(kNoRead));
            box_unread.push_back(t.boxed && !wave_reads_.may_hold(t.id, box_at(t, k)));
        }
        const std::int64_t wave_before = wave_reads_.wave();

        run_item(k);

        cur.ctx.clock_end = clock_;
        cur.ctx.wave_end = wave_;
        cur.ctx.block_end = block_;
        cur.ctx.scale = scale_;
        cur.ctx.inserted = kernel_inserted_ - inserted0;
        cur.ctx.inserted_scaled = kernel_inserted_scaled_ - scaled0;
        cur.dram = dram_;
        for (std::size_t i = 0; i < cur.dram.size(); ++i) {
            const Dram before = i < dram0.size() ? dram0[i] : Dram{};
            cur.dram[i].read -= before.read;
            cur.dram[i].write -= before.write;
        }
        const L2Clock advance = cur.ctx.clock_end - cur.ctx.clock_start;
        cur.recurring.resize(tiles.tracked.size());
        cur.moving_post.resize(tiles.tracked.size());
        cur.moving_class.resize(tiles.tracked.size());
        for (std::size_t ti = 0; ti < tiles.tracked.size(); ++ti) {
            const auto& t = tiles.tracked[ti];
            const TileStates& states = tiles_of(t);
            recurring_states(states, t.recurring, cur.recurring[ti]);
            auto& post = cur.moving_post[ti];
            auto& cls = cur.moving_class[ti];
            post.clear();
            cls.clear();
            for (std::size_t i = 0; i < t.moving.size(); ++i) {
                post.push_back(tile_at(t, i, k));
                cls.push_back(classify(cur.moving_pre[ti][i], cur.ctx.clock_start, wave_, block_, advance));
            }
        }
        cur.streamed_recurring.clear();
        cur.streamed_class.clear();
        cur.streamed_unread.clear();
        for (std::size_t si = 0; si < tiles.streamed.size(); ++si) {
            const auto& t = tiles.streamed[si];
            cur.streamed_unread.push_back(t.boxed && (wave_before != wave_ || box_unread[si]));
            auto& rec = cur.streamed_recurring.emplace_back();
            for (const WaveReads::Key& key : t.recurring) {
                const std::optional<std::int64_t> reader = wave_reads_.wave() == wave_ ? wave_reads_.reader(key) : std::nullopt;
                const bool kept = reader && *reader != block_ && shape.wave_step == 0 &&
                                  (shape.block_step == 0 || (shape.block_step > 0 && *reader < block_));
                rec.push_back(!reader ? RecurringReader{} : kept ? RecurringReader{*reader, true} : RecurringReader{*reader - block_, false});
            }
            auto& cls = cur.streamed_class.emplace_back();
            for (std::size_t i = 0; i < t.moving.size(); ++i) {
                const std::int64_t reader = wave_before != wave_ ? kNoRead : streamed_reader[si][i];
                cls.push_back(reader == kNoRead ? StreamedPre::absent
                              : reader == block_ ? StreamedPre::same_block
                                                 : StreamedPre::other_block);
            }
        }
        ++k;

        // The item before this one and this one left the recurring tiles alike: the items after it find
        // them as this one did. Count those whose moving tiles are also as this one found its own.
        // Only two items in a row, passed from one to the next the same way (within one wave, or a wave
        // each), show what the next finds: after a wave boundary the one before saw other tiles.
        const bool steady = last && last->k + 1 == cur.k && (shape.wave_step != 0 || last->ctx.wave_end == cur.ctx.wave_end) &&
                            last->recurring == cur.recurring && last->streamed_recurring == cur.streamed_recurring &&
                            last->ctx.scale == cur.ctx.scale;
        if (steady) {
            // Per streamed tensor: did the item find all its moving regions unread, and did anything but this
            // loop record the tensor in this wave?
            std::vector<bool> streamed_fresh, streamed_recorded_before, streamed_far;
            for (std::size_t si = 0; si < tiles.streamed.size(); ++si) {
                const auto& cls = cur.streamed_class[si];
                streamed_fresh.push_back(std::all_of(cls.begin(), cls.end(), [](StreamedPre c) { return c == StreamedPre::absent; }));
                streamed_recorded_before.push_back(wave_reads_.recorded_before(tiles.streamed[si].id, loop_stamp + 1));
                // Where the later items' regions start, from item k's on: does any record start there?
                const auto& t = tiles.streamed[si];
                WaveReads::Box later;
                const std::int64_t step[3] = {t.step.head, t.step.rows, t.step.cols};
                for (std::size_t i = 0; i < t.moving.size(); ++i) {
                    const std::int64_t at[3] = {t.moving[i].head, t.moving[i].row0, t.moving[i].col0};
                    for (int c = 0; c < 3; ++c) {
                        const std::int64_t a = at[c] + k * step[c], b = at[c] + (n - 1) * step[c];
                        const std::int64_t lo = std::min(a, b), hi = std::max(a, b);
                        later.lo[c] = i == 0 ? lo : std::min(later.lo[c], lo);
                        later.hi[c] = i == 0 ? hi : std::max(later.hi[c], hi);
                    }
                }
                streamed_far.push_back(!t.moving.empty() && !wave_reads_.may_hold(t.id, later));
            }
            // Items whose streamed reads are each looked up in the record are checked one at a time.
            bool streamed_one_by_one = false;
            for (std::size_t si = 0; si < tiles.streamed.size(); ++si)
                streamed_one_by_one = streamed_one_by_one || tiles.streamed[si].boxed || shape.wave_step != 0 ||
                                      !(streamed_fresh[si] && (cur.ctx.wave_end != wave_reads_.wave() || !streamed_recorded_before[si] ||
                                                               streamed_far[si]));
            // Inside a block (its block and wave fixed), a look-up's answer holds for as many items as the record
            // says (WaveReads::same_reader_items): a second pass over what the first pass read is one family.
            bool lookups_span = streamed_one_by_one && shape.wave_step == 0 && shape.block_step == 0;
            for (const auto& t : tiles.streamed) lookups_span = lookups_span && !t.boxed;
            std::int64_t m = 0;
            for (std::int64_t j = k, span = 1; j < n; j += span) {
                std::int64_t lookup_span = n - j;  // items from j whose look-ups answer as j's
                const std::int64_t t = j - cur.k;
                const L2Clock start = cur.ctx.clock_start + advance * t;
                const std::int64_t block = cur.ctx.block_end + shape.block_step * t;
                // Loops of whole waves move by waves; a loop of blocks stays alike within its wave only.
                const std::int64_t wave = shape.wave_step != 0   ? cur.ctx.wave_end + shape.wave_step * t
                                          : shape.block_step != 0 ? wave_base_ + block / slots_
                                                                  : cur.ctx.wave_end;
                bool alike = shape.wave_step != 0 ? scale_of_wave(wave) == cur.ctx.scale : wave == cur.ctx.wave_end;
                for (std::size_t ti = 0; alike && ti < tiles.tracked.size(); ++ti)
                    for (std::size_t i = 0; alike && i < tiles.tracked[ti].moving.size(); ++i) {
                        const Pre c = cur.moving_class[ti][i];
                        alike = c != Pre::unknown && classify(tile_at(tiles.tracked[ti], i, j), start, wave, block, advance) == c;
                    }
                for (std::size_t si = 0; alike && si < tiles.streamed.size(); ++si) {
                    if (tiles.streamed[si].boxed) {  // none of its regions recorded, as none of the item's were
                        alike = cur.streamed_unread[si] &&
                                (wave != wave_reads_.wave() || !wave_reads_.may_hold(tiles.streamed[si].id, box_at(tiles.streamed[si], j)));
                        continue;
                    }
                    // Regions nobody but this loop recorded, or none recorded near the rest of the loop's,
                    // are absent for all: no look-up needed.
                    if (streamed_fresh[si] && (wave != wave_reads_.wave() || !streamed_recorded_before[si] || streamed_far[si])) continue;
                    const Step& step = tiles.streamed[si].step;
                    for (std::size_t i = 0; alike && i < tiles.streamed[si].moving.size(); ++i) {
                        const WaveReads::Key key = moved_key(tiles.streamed[si].moving[i], step, j);
                        alike = streamed_lookup(key, wave, block) == cur.streamed_class[si][i];
                        if (alike && lookups_span)
                            lookup_span = wave_reads_.same_reader_items(key, {step.head, step.rows, step.cols}, lookup_span);
                    }
                }
                if (!alike) break;
                // How many items from j on are sure to be found alike as j was: the wave's or its scale's
                // stretch, and where each moving tile's state and the item's clock, wave and block keep
                // every comparison of classify the same.
                span = !streamed_one_by_one ? same_context_items(block, wave, n - j)
                       : lookups_span       ? std::min(lookup_span, same_context_items(block, wave, n - j))
                                            : 1;
                for (std::size_t ti = 0; span > 1 && ti < tiles.tracked.size(); ++ti)
                    for (std::size_t i = 0; span > 1 && i < tiles.tracked[ti].moving.size(); ++i)
                        span = alike_tile_items(tiles.tracked[ti], i, j, start, wave, block, advance, span);
                m += span;
            }
            // A loop of whole waves carries over all but the last such wave, which runs: rule 1's record
            // then holds that wave's streamed reads as they were made.
            if (shape.wave_step != 0 && tiles.streamed_reads) m = std::max<std::int64_t>(0, m - 1);
            if (m > 0) {
                // Carry over items k .. k+m-1: each does what item cur.k did, shifted.
                for (std::size_t i = 0; i < cur.dram.size(); ++i) {
                    if (i >= dram_.size()) dram_.resize(i + 1);
                    dram_[i].read += m * cur.dram[i].read;
                    dram_[i].write += m * cur.dram[i].write;
                }
                clock_ = cur.ctx.clock_end + advance * m;
                kernel_inserted_ += cur.ctx.inserted * m;
                kernel_inserted_scaled_ += cur.ctx.inserted_scaled * m;
                wave_ = cur.ctx.wave_end + shape.wave_step * m;
                block_ = cur.ctx.block_end + shape.block_step * m;
                for (std::size_t ti = 0; ti < tiles.tracked.size(); ++ti) {
                    const auto& t = tiles.tracked[ti];
                    TileStates& states = tiles_of(t);
                    for (const LoopScratch::RelRun& run : cur.recurring[ti]) {
                        std::vector<Entry> base;
                        for (const Rel& r : run.base)
                            base.push_back(r.touched ? Entry{clock_ + r.clock, wave_ + r.wave, block_ + r.block, r.dirty} : Entry{-1, -1, -1, r.dirty});
                        if (run.one_by_one())
                            for (std::size_t i = 0; i < base.size(); ++i) states.set(run.first + static_cast<std::int64_t>(i), base[i]);
                        else {
                            const std::int64_t periods = (run.end - run.first) / static_cast<std::int64_t>(base.size());
                            states.set_run(run.first, periods, std::move(base), run.step);
                        }
                    }
                    carry_moving_tiles(tiles, ti, cur.moving_post[ti], cur.k, m, {advance, shape.wave_step, shape.block_step});
                }
                // (A loop of whole waves leaves the record to the wave it runs last: carried waves are over.)
                if (!tiles.streamed.empty() && shape.wave_step == 0 && blocks_per_head_ != 1) {
                    // Within the wave, rule 1's record gets what the carried items read: the recurring
                    // regions' reader as the last item left it (a kept one stays), and each moving read's
                    // regions of the carried items as a family read by their items' blocks (a read another
                    // block had read, shared, leaves the record as it was).
                    for (std::size_t si = 0; si < tiles.streamed.size(); ++si) {
                        const auto& t = tiles.streamed[si];
                        for (std::size_t i = 0; i < t.recurring.size(); ++i)
                            if (const RecurringReader r = cur.streamed_recurring[si][i]; r.block != kNoRead && !r.kept)
                                wave_reads_.record(t.recurring[i], block_ + r.block);
                        for (const auto& read : t.reads) {
                            std::vector<std::size_t> recorded;  // this read's regions the item recorded
                            for (std::size_t i = read.begin; i < read.end; ++i)
                                if (cur.streamed_class[si][i] != StreamedPre::other_block) recorded.push_back(i);
                            if (recorded.empty() && !t.boxed) continue;
                            std::vector<std::pair<std::int64_t, WaveReads::Move>> dims{{m, {t.step.head, t.step.rows, t.step.cols}}};
                            dims.insert(dims.end(), read.inner.begin(), read.inner.end());
                            const std::int64_t first_block = cur.ctx.block_end + shape.block_step;
                            if ((t.boxed || recorded.size() == read.end - read.begin) &&
                                wave_reads_.record_family(moved_key(read.base, t.step, cur.k + 1), dims, first_block, shape.block_step))
                                continue;
                            if (t.boxed) {  // every region of the carried items, one by one
                                std::vector<WaveReads::Key> keys{read.base};
                                for (const auto& [count, move] : read.inner) {
                                    const std::size_t before = keys.size();
                                    for (std::int64_t i = 1; i < count; ++i)
                                        for (std::size_t e = 0; e < before; ++e)
                                            keys.push_back(moved_key(keys[e], {move.head, move.rows, move.cols}, i));
                                }
                                for (std::int64_t s = 1; s <= m; ++s)
                                    for (const WaveReads::Key& key : keys)
                                        wave_reads_.record(moved_key(key, t.step, cur.k + s), cur.ctx.block_end + shape.block_step * s);
                                continue;
                            }
                            for (std::int64_t s = 1; s <= m; ++s)
                                for (const std::size_t i : recorded)
                                    wave_reads_.record(moved_key(t.moving[i], t.step, cur.k + s), cur.ctx.block_end + shape.block_step * s);
                        }
                    }
                }
                carried_over_ += m;
                k += m;
            }
        }
        last = &cur;
        cur_record = last == &records[0] ? &records[1] : &records[0];
    }
}

// Items k0 + 1 .. k0 + m leave their moving tiles as item k0 left its own, advanced once per item. Where
// each item's tiles are `shift` consecutive ones, the items' tiles are one stretch without gaps: one run.
void L2Model::carry_moving_tiles(const LoopTiles& tiles, std::size_t tensor, const std::vector<Entry>& post, std::int64_t k0,
                                 std::int64_t m, const TileStates::Advance& per_item) {
    const LoopTiles::Tracked& t = tiles.tracked[tensor];
    if (t.moving.empty() || m <= 0) return;
    TileStates& states = tensors_[static_cast<std::size_t>(t.id)].tiles;
    const std::int64_t width = t.shift > 0 ? t.shift : -t.shift;
    if (static_cast<std::int64_t>(t.moving.size()) == width && t.moving.back() - t.moving.front() + 1 == width) {
        // Ascending tiles: item k0 + 1 first when the items move up the grid, item k0 + m first when down.
        const bool up = t.shift > 0;
        const std::int64_t first_item = up ? 1 : m;
        std::vector<Entry> base;
        base.reserve(post.size());
        for (const Entry& e : post) base.push_back(TileStates::advanced(e, per_item, first_item));
        const TileStates::Advance step = up ? per_item : TileStates::Advance{-per_item.clock, -per_item.wave, -per_item.block};
        states.set_run(t.moving.front() + (k0 + first_item) * t.shift, m, std::move(base), step);
        return;
    }
    for (std::int64_t s = 1; s <= m; ++s)
        for (std::size_t i = 0; i < t.moving.size(); ++i) states.set(t.moving[i] + (k0 + s) * t.shift, TileStates::advanced(post[i], per_item, s));
}

}  // namespace fasim
