// TileStates keeps the L2 model's tile states one by one and as runs (a base and a step per period): under
// any mix of single writes and runs written over each other, every tile reads back what a plain array
// of states given the same writes holds, and piece_at describes each tile truly.
#include <catch2/catch.hpp>

#include <random>

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

}  // namespace
}  // namespace fasim
