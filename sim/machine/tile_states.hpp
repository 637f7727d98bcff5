// The L2 model's state of every tile of one tensor's tracking grid (machine/l2_model.hpp).
//
// Tiles are stored one by one, in pages allocated when a tile of theirs is first set (a tile never set is
// in the state TileState{}, never touched). A loop the L2 model carries over (machine/l2_loops.cpp) leaves its
// items' tiles in states that advance by a fixed amount per item: item s's tile is item 1's tile moved
// by s - 1 steps of the clock, the wave and the block. Such a stretch is kept as one run, a base and a
// step, however many items it spans, so that carrying a loop over costs the same for 10 items as for
// 10^6, and a later loop can ask where the states stop following one law (piece_at) instead of reading
// them one by one. Runs never overlap; a tile a run covers is the run's, whatever its own slot holds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace fasim {

// The L2's clock counts bytes touched chip-wide, which passes 2^63 at the problem limits.
__extension__ typedef __int128 L2Clock;

// 32 bytes: the dirty bit shares a word with the block (with a bool of its own the 16-byte-aligned clock would
// pad the state to 48 bytes, a third more for every tracked tile: 57 MB at N = 2^24 in the causal backward).
struct TileState {
    L2Clock clock = -1;      // chip-wide insertion clock at last use; -1: never touched
    std::int64_t wave = -1;  // global wave index of last use

    TileState() = default;
    TileState(L2Clock clock_at, std::int64_t wave_at, std::int64_t block_at, bool is_dirty)
        : clock(clock_at), wave(wave_at), block_dirty_(pack(block_at, is_dirty)) {}
    std::int64_t block() const { return block_dirty_ >> 1; }  // block position (within its kernel) of last use
    bool dirty() const { return (block_dirty_ & 1) != 0; }
    void set_block(std::int64_t b) { block_dirty_ = pack(b, dirty()); }
    void set_dirty(bool d) { block_dirty_ = pack(block(), d); }
    bool operator==(const TileState&) const = default;

private:
    static std::int64_t pack(std::int64_t b, bool d) { return b * 2 + (d ? 1 : 0); }
    std::int64_t block_dirty_ = -2;  // block -1 (never touched), clean
};
static_assert(sizeof(TileState) == 32);

class TileStates {
public:
    // How a run's states advance from one period to the next.
    struct Advance {
        L2Clock clock = 0;
        std::int64_t wave = 0, block = 0;
        bool operator==(const Advance&) const = default;
    };
    static TileState advanced(TileState s, const Advance& step, std::int64_t times);
    // Tiles [first, end): tile first + q * period + r is base[r] advanced by q steps.
    struct Run {
        std::int64_t first = 0, end = 0, period = 1;
        std::vector<TileState> base;
        Advance step;
        TileState at(std::int64_t index) const;
    };
    // The longest stretch around a tile whose states come from one place: one run, tiles never touched
    // (untouched: all TileState{}), or tiles stored one by one (run == nullptr) between two runs.
    struct Piece {
        std::int64_t first = 0, end = 0;
        const Run* run = nullptr;
        bool untouched = false;
    };

    void reset(std::int64_t tiles);
    std::int64_t size() const { return size_; }

    TileState get(std::int64_t index) const;
    // The tile's state, stored on its own from now on (a run covering it is cut around it).
    TileState& at(std::int64_t index);
    void set(std::int64_t index, const TileState& state) { at(index) = state; }
    // The tiles around `index` that at() would hand out as they are: stored one by one, in index's page, no
    // run over any of them. [first, end) with a pointer to tile `first` (index's page allocated, as at()
    // would), or first == end where a run covers `index`. An access over many tiles (a 128-row Q tile on a
    // grid of one row: 128 tiles) looks its runs up once, not per tile.
    struct Stored {
        std::int64_t first = 0, end = 0;
        TileState* tiles = nullptr;
    };
    Stored stored_around(std::int64_t index);
    // Tiles first + q * period + r for q < periods, r < period become base[r] advanced by q steps.
    void set_run(std::int64_t first, std::int64_t periods, std::vector<TileState> base, const Advance& step);
    Piece piece_at(std::int64_t index) const;

    std::size_t runs() const { return runs_.size(); }
    // Pages of tiles stored one by one (32 KiB each).
    std::size_t pages_held() const { return pages_held_; }
    // Frees every page whose tiles are each never touched or `forgettable` (a state no later use can tell
    // from never touched): its tiles read TileState{} from then on. Returns the pages freed.
    template <class Forgettable>
    std::size_t forget_pages(Forgettable&& forgettable) {
        std::size_t freed = 0;
        for (std::unique_ptr<Page>& page : pages_) {
            if (!page || !std::all_of(page->begin(), page->end(), [&](const TileState& s) { return s.clock < 0 || forgettable(s); }))
                continue;
            page.reset();
            ++freed;
        }
        pages_held_ -= freed;
        if (freed > 0) forget_unallocated();
        return freed;
    }

private:
    // Stores run `it`'s tiles [from, to) one by one.
    void store(const Run& run, std::int64_t from, std::int64_t to);
    // Cuts the runs at `index`: afterwards no run spans both index - 1 and index.
    void cut(std::int64_t index);

    static constexpr std::int64_t kPageTiles = 1024;
    using Page = std::array<TileState, kPageTiles>;
    std::int64_t size_ = 0;
    std::vector<std::unique_ptr<Page>> pages_;  // null: every tile of the page never touched
    std::size_t pages_held_ = 0;
    std::map<std::int64_t, Run> runs_;          // by first tile
    TileState& stored(std::int64_t index);
    // The stretch get() found last: tiles [first, end) of one run, or between runs (run == nullptr). Loops
    // walk a tensor's tiles in order, and a look-up in runs_ costs more than the state it finds. Forgotten
    // whenever runs_ changes, and not copied (it points into this object's runs_).
    struct Found {
        std::int64_t first = 0, end = 0;
        const Run* run = nullptr;
        Found() = default;
        Found(const Found&) noexcept {}
        Found& operator=(const Found&) noexcept {
            *this = Found{};
            return *this;
        }
        Found& operator=(Found&&) noexcept = default;
        void set(std::int64_t f, std::int64_t e, const Run* r) { first = f, end = e, run = r; }
    };
    mutable Found found_;
    void forget_found() { found_.set(0, 0, nullptr); }
    // The stretch of pages never allocated that piece_at found last, in tiles: [first, second).
    mutable std::pair<std::int64_t, std::int64_t> unallocated_{0, 0};
    void forget_unallocated() { unallocated_ = {0, 0}; }
};

}  // namespace fasim
