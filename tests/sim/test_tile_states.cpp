// TileStates keeps the L2 model's tile states one by one and as runs (a base and a step per period): under
// any mix of single writes and runs written over each other, every tile reads back what a plain array
// of states given the same writes holds, and piece_at describes each tile truly.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "machine/l2_model.hpp"
#include "machine/tile_states.hpp"

namespace fasim {
namespace {

TEST_CASE("TileStates reads back what a plain array holds after single writes and overlapping runs", "[l2][tile_states]") {
    std::mt19937_64 rng(20261128);
    auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    auto random_state = [&] { return TileState{pick(0, 1 << 20), pick(0, 50), pick(0, 500), pick(0, 1) == 1}; };
    std::int64_t runs_seen = 0, untouched_seen = 0;
    for (int trial = 0; trial < 200; ++trial) {
        const std::int64_t size = pick(1, 5000);  // pages of 1024 tiles: some never allocated
        TileStates states;
        states.reset(size);
        std::vector<TileState> plain(static_cast<std::size_t>(size));
        const std::int64_t ops = pick(1, 60);
        for (std::int64_t op = 0; op < ops; ++op) {
            if (pick(0, 2) == 0) {  // one tile, written through at()
                const std::int64_t i = pick(0, size - 1);
                const TileState s = random_state();
                states.at(i) = s;
                plain[static_cast<std::size_t>(i)] = s;
                continue;
            }
            const std::int64_t period = pick(1, 6), periods = pick(1, 40), first = pick(0, size - 1);
            if (first + period * periods > size) continue;
            std::vector<TileState> base;
            for (std::int64_t r = 0; r < period; ++r) base.push_back(random_state());
            const TileStates::Advance step{pick(-1000, 1000), pick(-2, 2), pick(-5, 5)};
            for (std::int64_t q = 0; q < periods; ++q)
                for (std::int64_t r = 0; r < period; ++r)
                    plain[static_cast<std::size_t>(first + q * period + r)] = TileStates::advanced(base[static_cast<std::size_t>(r)], step, q);
            states.set_run(first, periods, std::move(base), step);
        }
        for (std::int64_t i = 0; i < size; ++i) {
            INFO("trial " << trial << ", tile " << i << " of " << size);
            REQUIRE(states.get(i) == plain[static_cast<std::size_t>(i)]);
            const TileStates::Piece piece = states.piece_at(i);
            REQUIRE(piece.first <= i);
            REQUIRE(i < piece.end);
            if (piece.run) {
                ++runs_seen;
                REQUIRE(piece.run->at(i) == plain[static_cast<std::size_t>(i)]);
            }
            if (piece.untouched) {
                ++untouched_seen;
                REQUIRE(plain[static_cast<std::size_t>(i)] == TileState{});
            }
        }
    }
    CHECK(runs_seen > 10000);
    CHECK(untouched_seen > 10000);
}

TEST_CASE("TileStates frees a page only when every tile of it may be forgotten (L2Model::forget_old_tiles)", "[l2][tile_states]") {
    TileStates states;
    states.reset(3 * 1024 + 10);
    // Page 0: tiles touched at clocks 0..1023, all old. Page 1: old but one recent tile. Page 2: one old tile.
    for (std::int64_t i = 0; i < 1024; ++i) states.at(i) = TileState{i, 1, i, i % 2 == 0};
    for (std::int64_t i = 1024; i < 2048; ++i) states.at(i) = TileState{i, 1, i, false};
    states.at(1500) = TileState{1'000'000, 7, 1500, true};
    states.at(2100) = TileState{5, 2, 2100, false};
    // A run over part of page 2 keeps its states whatever happens to the page's own slots.
    states.set_run(3000, 10, {TileState{900'000, 6, 3000, false}}, {1, 0, 1});
    REQUIRE(states.pages_held() == 3);
    const std::size_t freed = states.forget_pages([](const TileState& s) { return s.clock < 100'000; });
    CHECK(freed == 2);  // pages 0 and 2 (page 2's slots under the run hold never-touched states)
    CHECK(states.pages_held() == 1);
    CHECK(states.get(5) == TileState{});
    CHECK(states.get(2100) == TileState{});
    CHECK(states.get(1024) == TileState(1024, 1, 1024, false));  // page 1 kept whole
    CHECK(states.get(1500) == TileState(1'000'000, 7, 1500, true));
    CHECK(states.get(3004) == TileState(900'004, 6, 3004, false));  // the run's
    // Freed pages read as never touched: piece_at says so.
    CHECK(states.piece_at(10).untouched);
}

TEST_CASE("TileStates::piece_at finds never-touched tiles up to 1024 pages either way, and no further than a page "
          "written since", "[l2][tile_states]") {
    // A loop checks its items' tiles one by one and carries over as many items as the stretch around each
    // tile allows (machine/l2_loops.cpp): a wave of 1296 blocks' tiles, untouched, needs more than the few
    // pages piece_at once looked at. The stretch it found is kept until a page is allocated or freed.
    constexpr std::int64_t page = 1024;
    TileStates states;
    states.reset(3000 * page + 7);
    TileStates::Piece p = states.piece_at(1500 * page + 3);
    CHECK(p.untouched);
    CHECK(p.first == (1500 - 1024) * page);
    CHECK(p.end == (1500 + 1 + 1024) * page);
    CHECK(states.piece_at(5).first == 0);
    CHECK(states.piece_at(3000 * page + 6).end == 3000 * page + 7);
    states.at(1600 * page + 5) = TileState{10, 1, 2, false};  // page 1600 allocated: the stretch ends before it
    p = states.piece_at(1500 * page + 3);
    CHECK(p.end == 1600 * page);
    CHECK_FALSE(states.piece_at(1600 * page + 5).untouched);
    CHECK(states.piece_at(1601 * page).first == 1601 * page);
    CHECK(states.forget_pages([](const TileState&) { return true; }) == 1);  // freed: the stretch goes on again
    CHECK(states.piece_at(1500 * page + 3).end == (1500 + 1 + 1024) * page);
    // Writes and look-ups interleaved at random: an untouched piece never holds a tile written since.
    std::mt19937_64 rng(20261201);
    auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    std::vector<std::int64_t> written;
    for (int op = 0; op < 2000; ++op) {
        if (pick(0, 3) == 0) {
            written.push_back(pick(0, states.size() - 1));
            states.at(written.back()) = TileState{op, 1, op, false};
            continue;
        }
        const std::int64_t i = pick(0, states.size() - 1);
        p = states.piece_at(i);
        REQUIRE(p.first <= i);
        REQUIRE(i < p.end);
        if (p.untouched)
            for (const std::int64_t w : written) REQUIRE((w < p.first || w >= p.end));
    }
}

// A kernel of one block per head (FA1's) runs its whole head in one block, in one wave: a tile that block
// touched an L2's worth of bytes ago can be read by no other block as a concurrent hit, so it is as good
// as never touched, and the L2 model frees its page (at N = 2^20 FA1's forward and backward at d = 128, on
// one-row tiles, held 241 MB of them, 96 MB since). Two passes over 2^20 one-row tiles give the same
// bytes as when the block shares its head with another (nothing freed), holding a few pages, not 1024.
TEST_CASE("L2Model frees a lone block's tiles an L2's worth of bytes old, and counts the same bytes", "[l2][tile_states]") {
    const GlobalTensor t{"T", 1, 1 << 20, 64, 2, 1, 64, false, 0};  // 128-byte rows, one per tile
    auto run = [&](std::int64_t blocks_per_head, std::size_t& most_pages) {
        L2Model l2(64 * 1024);
        l2.begin_kernel(1, blocks_per_head, blocks_per_head);
        l2.begin_block(0);
        std::vector<std::int64_t> dram;
        most_pages = 0;
        for (int pass = 0; pass < 2; ++pass) {
            std::int64_t bytes = 0;
            for (std::int64_t r = 0; r < t.rows; ++r) {
                bytes += l2.read({&t, 0, r, 1, 0, t.cols});
                most_pages = std::max(most_pages, l2.tile_pages_held());
            }
            dram.push_back(bytes);
        }
        std::int64_t last_rows = 0;  // the last 256 rows (32 KiB) are still resident
        for (std::int64_t r = t.rows - 256; r < t.rows; ++r) last_rows += l2.read({&t, 0, r, 1, 0, t.cols});
        dram.push_back(last_rows);
        return dram;
    };
    std::size_t lone_pages = 0, shared_pages = 0;
    const std::vector<std::int64_t> lone = run(1, lone_pages), shared = run(2, shared_pages);
    CHECK(lone == std::vector<std::int64_t>{std::int64_t{1} << 27, std::int64_t{1} << 27, 0});
    CHECK(lone == shared);
    CHECK(shared_pages == 1024);
    CHECK(lone_pages <= 260);
}

}  // namespace
}  // namespace fasim
