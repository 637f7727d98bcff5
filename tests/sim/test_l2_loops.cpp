// L2Model::loop carries alike items over only when they would repeat exactly what the last one did: on
// random loops of accesses (tiles that recur in every item and tiles that move, several tensors, reads
// and writes, small and large caches so that reuse distances straddle the capacity, loops of blocks and
// loops inside a block, shared reads of streamed tensors, tiles moving up or down, the same loop run again
// over the tiles an earlier loop left in runs) it leaves the same DRAM bytes and the same L2 state as
// running every item through read() and write().
#include <catch2/catch.hpp>

#include <random>
#include <sstream>

#include "machine/l2_model.hpp"

namespace fasim {
namespace {

struct Access {
    const GlobalTensor* tensor;
    std::int64_t row0, col0, nrows, ncols;
    bool write;
    std::int64_t step_rows, step_cols;      // per item of the loop
    std::int64_t inner_count, inner_rows;   // a loop inside the item (count, step down the rows)
};

// Plays item k of the loop: begin_block when the loop's items are blocks, then every access.
void play_item(L2Model& l2, const std::vector<Access>& accesses, std::int64_t k, std::int64_t first_block, bool blocks) {
    if (blocks) l2.begin_block(first_block + k);
    for (const Access& a : accesses)
        for (std::int64_t i = 0; i < a.inner_count; ++i) {
            const Region r{a.tensor, 0, a.row0 + k * a.step_rows + i * a.inner_rows, a.nrows, a.col0 + k * a.step_cols, a.ncols};
            if (a.write) l2.write(r);
            else l2.read(r);
        }
}

L2Model::LoopShape shape_of(const std::vector<Access>& accesses, std::int64_t count, bool blocks) {
    L2Model::LoopShape s;
    s.count = count;
    s.block_step = blocks ? 1 : 0;
    for (const Access& a : accesses) {
        L2Model::ItemAccess ia;
        ia.region = {a.tensor, 0, a.row0, a.nrows, a.col0, a.ncols};
        ia.write = a.write;
        ia.step = {0, a.step_rows, a.step_cols};
        if (a.inner_count > 1) ia.inner.push_back({a.inner_count, {0, a.inner_rows, 0}});
        s.accesses.push_back(ia);
    }
    return s;
}

// Runs `count` items of the accesses from block `first`: as a loop (L2Model::loop), or item by item.
void play_loop(L2Model& l2, const std::vector<Access>& accesses, std::int64_t count, std::int64_t first, bool blocks, bool by_loop) {
    if (!blocks) l2.begin_block(first);
    if (by_loop) l2.loop(shape_of(accesses, count, blocks), [&](std::int64_t k) { play_item(l2, accesses, k, first, blocks); });
    else
        for (std::int64_t k = 0; k < count; ++k) play_item(l2, accesses, k, first, blocks);
}

// What the model holds afterwards, seen through one more read of every tile of every tensor.
std::vector<std::int64_t> probe(L2Model& l2, const std::vector<GlobalTensor>& tensors) {
    std::vector<std::int64_t> dram;
    l2.begin_kernel(1, 1, 1);
    l2.begin_block(0);
    for (const GlobalTensor& t : tensors)
        if (t.name != "S")  // streamed: nothing is kept of it but this wave's reads
            for (std::int64_t r = 0; r < t.rows; r += t.region_rows) dram.push_back(l2.read({&t, 0, r, t.region_rows, 0, t.cols}));
    return dram;
}

// The DRAM bytes by tensor so far, then what probe() finds.
std::vector<std::int64_t> outcome(L2Model& l2, const std::vector<GlobalTensor>& tensors) {
    std::vector<std::int64_t> out;
    for (const auto& d : l2.dram_by_tensor()) {
        out.push_back(d.read);
        out.push_back(d.write);
    }
    const std::vector<std::int64_t> after = probe(l2, tensors);
    out.insert(out.end(), after.begin(), after.end());
    return out;
}

TEST_CASE("L2Model::loop gives the bytes and the state of running every item (random loops)", "[l2][counting]") {
    std::mt19937_64 rng(2026);
    auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    std::int64_t carried = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        // Tensors of 16..64 tiles of 1 KiB; the last is huge and finely gridded: untracked, streamed.
        std::vector<GlobalTensor> tensors;
        const char* const names[] = {"T0", "T1", "T2", "T3"};
        for (int t = 0; t < 4; ++t) tensors.push_back({names[t], 1, 64 * pick(16, 64), 128, 4, 64, 128, false, t});
        tensors.push_back({"S", 1, 1 << 20, 1024, 4, 1, 32, false, 4});
        // Either a few tiles, or about what a pass of the loop touches (a later pass then finds the tiles of the
        // one before on the edge of eviction).
        const std::int64_t capacity = 1024 * (pick(0, 1) ? pick(8, 200) : pick(512, 4096));
        const bool blocks = pick(0, 1) == 1;
        const std::int64_t count = pick(16, 60), slots = pick(1, 8), first_block = blocks ? pick(0, 3) * slots : 0;
        // The loop again, one to two more times: in the same block, or in the next blocks.
        const std::int64_t passes = pick(1, 3);
        const bool next_blocks = pick(0, 1) == 1;
        const std::int64_t last_block = first_block + passes * count;
        // Other heads' blocks share the waves when this head's are fewer than the grid's (begin_block's scale).
        const std::int64_t grid = 1000, head_blocks = pick(0, 1) ? grid : pick(last_block, 2 * last_block);
        std::vector<Access> accesses;
        const int n_accesses = static_cast<int>(pick(1, 4));
        for (int a = 0; a < n_accesses; ++a) {
            const GlobalTensor& t = tensors[static_cast<std::size_t>(pick(0, 3))];
            const bool moving = pick(0, 2) > 0;
            const std::int64_t inner = pick(0, 3) == 0 ? pick(2, 4) : 1;
            const bool down = moving && pick(0, 2) == 0;  // the items move up the tensor, from its end
            const std::int64_t step = moving ? (down ? -64 : 64) * inner : 0;
            const std::int64_t tiles = t.rows / 64;
            if (moving && (count + 1) * inner > tiles) continue;  // the items' tiles must fit the tensor
            const std::int64_t start = down ? 64 * (count - 1) * inner : moving ? 0 : 64 * pick(0, tiles - inner);
            accesses.push_back({&t, start, 0, 64, 128, pick(0, 3) == 0, step, 0, inner, 64});
        }
        if (pick(0, 3) == 0)  // a streamed read that moves, and one that every item makes
            accesses.push_back({&tensors[4], 0, 32 * pick(0, 3), 1, 32, false, 1, 0, 1, 0});
        if (pick(0, 3) == 0) accesses.push_back({&tensors[4], 7, 64, 1, 32, false, 0, 0, 1, 0});
        if (accesses.empty()) continue;
        // A pass may touch more per item than the pass before or less (1 to 8 rows of a T3 tile that every item
        // reads first, 0.5 to 4 KiB): its clock then advances faster or slower than the pass that left the tiles,
        // and their ages change from item to item.
        std::vector<std::vector<Access>> pass_accesses(static_cast<std::size_t>(passes), accesses);
        for (std::size_t p = 0; p < pass_accesses.size(); ++p)
            if (pick(0, 1)) pass_accesses[p].insert(pass_accesses[p].begin(), {&tensors[3], 0, 0, pick(1, 8), 128, false, 0, 0, 1, 0});

        auto run = [&](bool by_loop) {
            L2Model l2(capacity);
            // A first pass leaves some tiles resident, some dirty, some of another block of this wave.
            l2.begin_kernel(slots, grid, head_blocks);
            for (std::int64_t b = 0; b < first_block; ++b) {
                l2.begin_block(b);
                for (const GlobalTensor& t : tensors)
                    if (t.name != "S" && pick(0, 1)) l2.write({&t, 0, 64 * pick(0, t.rows / 64 - 1), 64, 0, 128});
            }
            for (std::int64_t p = 0; p < passes; ++p) {
                const std::int64_t first = first_block + (next_blocks ? p * (blocks ? count : 1) : 0);
                play_loop(l2, pass_accesses[static_cast<std::size_t>(p)], count, first, blocks, by_loop);
            }
            const std::vector<std::int64_t> out = outcome(l2, tensors);
            carried += by_loop ? l2.items_carried_over() : 0;
            return out;
        };
        const std::uint64_t seed = rng();
        rng.seed(seed);
        const std::vector<std::int64_t> by_item = run(false);
        rng.seed(seed);
        const std::vector<std::int64_t> by_loop = run(true);
        std::ostringstream what;
        what << "trial " << trial << ": capacity " << capacity << (blocks ? ", items are blocks from " : ", items in block ")
             << first_block << " of waves of " << slots << ", " << count << " items, " << passes << " passes"
             << (next_blocks ? " in the next blocks" : " in the same blocks") << ":";
        for (const Access& a : accesses)
            what << "\n  " << (a.write ? "write " : "read ") << a.tensor->name << " rows " << a.row0 << "+" << a.nrows << " cols "
                 << a.col0 << "+" << a.ncols << " step " << a.step_rows << "," << a.step_cols << " inner " << a.inner_count << "x" << a.inner_rows;
        std::size_t first_difference = 0;
        while (first_difference < by_item.size() && first_difference < by_loop.size() && by_item[first_difference] == by_loop[first_difference])
            ++first_difference;
        what << "\n  first difference at " << first_difference << " (the first " << 2 * 5 << " are DRAM bytes by tensor)";
        INFO(what.str());
        CHECK(by_item == by_loop);
    }
    CHECK(carried > 1000);  // the loops were carried over, not only run
}

TEST_CASE("L2Model::loop over column bands of a tile grid (K's two halves at d = 64) gives the bytes and the state of "
          "running every item",
          "[l2][counting]") {
    // Tensors of 32 x 32 tiles, four to a row: an access of 64 rows and some of the columns touches a run of tiles in
    // each of two grid rows, and a loop inside the item moving it down touches runs with gaps between them. Where
    // two such accesses fill each other's gaps (K's column halves in standard attention's S = Q K^T) the loop keeps
    // them as one range of tiles; where they do not, tile by tile. Either way the same result as every item run.
    std::mt19937_64 rng(1924);
    auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    std::int64_t carried = 0;
    for (int trial = 0; trial < 1500; ++trial) {
        std::vector<GlobalTensor> tensors;
        const char* const names[] = {"T0", "T1", "T2"};
        for (int t = 0; t < 3; ++t) tensors.push_back({names[t], 1, 64 * pick(24, 64), 128, 4, 32, 32, false, t});
        const std::int64_t capacity = 4096 * (pick(0, 1) ? pick(8, 200) : pick(512, 2048));
        const bool blocks = pick(0, 1) == 1;
        const std::int64_t count = pick(8, 40), slots = pick(1, 8);
        std::vector<Access> accesses;
        for (int a = 0, n = static_cast<int>(pick(1, 3)); a < n; ++a) {
            const GlobalTensor& t = tensors[static_cast<std::size_t>(pick(0, 2))];
            const std::int64_t nrows = 32 * pick(1, 2), ncols = 32 * pick(1, 3), col0 = 32 * pick(0, (128 - ncols) / 32);
            // A loop inside the item: down by the region's height (runs continue), by one grid row, or none.
            const std::int64_t inner = pick(0, 2) == 0 ? 1 : pick(2, 6);
            const std::int64_t inner_rows = pick(0, 1) ? nrows : 32;
            if (inner * inner_rows + nrows > t.rows) continue;
            const std::int64_t row0 = 32 * pick(0, (t.rows - inner * inner_rows - nrows) / 32);
            const bool write = pick(0, 4) == 0;
            accesses.push_back({&t, row0, col0, nrows, ncols, write, 0, 0, inner, inner_rows});
            // Often the other columns of the same rows too, so that the two fill each other's gaps.
            if (ncols < 128 && pick(0, 1))
                accesses.push_back({&t, row0, col0 == 0 ? ncols : 0, nrows, col0 == 0 ? 128 - ncols : col0, write, 0, 0, inner, inner_rows});
        }
        // Each item's own tile of another tensor, so that items differ.
        accesses.push_back({&tensors[2], 0, 0, 32, 128, pick(0, 1) == 0, 32, 0, 1, 0});
        if (count * 32 > tensors[2].rows) continue;
        auto run = [&](bool by_loop) {
            L2Model l2(capacity);
            l2.begin_kernel(slots, 1000, 1000);
            for (std::int64_t p = 0; p < 2; ++p) play_loop(l2, accesses, count, p * count, blocks, by_loop);
            carried += by_loop ? l2.items_carried_over() : 0;
            return outcome(l2, tensors);
        };
        std::ostringstream what;
        what << "trial " << trial << ": capacity " << capacity << ", " << count << " items" << (blocks ? " (blocks)" : "") << ":";
        for (const Access& a : accesses)
            what << "\n  " << (a.write ? "write " : "read ") << a.tensor->name << " rows " << a.row0 << "+" << a.nrows << " cols "
                 << a.col0 << "+" << a.ncols << " step " << a.step_rows << " inner " << a.inner_count << "x" << a.inner_rows;
        INFO(what.str());
        CHECK(run(false) == run(true));
    }
    CHECK(carried > 1000);
}

TEST_CASE("A loop over the tiles an earlier loop left as one run stops carrying over exactly where their class changes",
          "[l2][counting]") {
    // Tiles of 1 KiB. Each pass reads `extra` rows of B (128 bytes each) that every item reads, then tile k of
    // A, moving down or up the tensor; the second pass reads another amount of B per item than the first, so
    // the ages it finds A's tiles at change from item to item and cross the capacity somewhere in the loop;
    // it runs in the same block, the next block of the wave, or the next wave (A's tiles then shared by a
    // concurrent block, or not). Either pass's items are blocks or the iterations of one block's loop.
    GlobalTensor a{"A", 1, 8 * 48, 32, 4, 8, 32, false, 0}, b{"B", 1, 16, 32, 4, 1, 32, false, 1};
    const std::vector<GlobalTensor> tensors{a, b};
    const std::int64_t count = 40, slots = 4;
    std::int64_t trials = 0, carried = 0;
    for (std::int64_t capacity = 4096; capacity <= 80 * 1024; capacity += 3 * 1024)
        for (const std::int64_t extra1 : {0, 3, 8})
            for (const std::int64_t extra2 : {0, 2, 5, 9})
                for (const bool down : {false, true})
                    for (const bool write : {false, true})
                        for (const int kinds : {0, 1, 2, 3})  // each pass's items blocks, or a block's loop
                            for (const std::int64_t later : {std::int64_t{0}, std::int64_t{1}, slots}) {
                                auto pass = [&](std::int64_t extra) {
                                    std::vector<Access> accesses;
                                    if (extra > 0) accesses.push_back({&tensors[1], 0, 0, extra, 32, false, 0, 0, 1, 0});
                                    accesses.push_back({&tensors[0], down ? 8 * (count - 1) : 0, 0, 8, 32, write, down ? -8 : 8, 0, 1, 8});
                                    return accesses;
                                };
                                const std::vector<Access> passes[2] = {pass(extra1), pass(extra2)};
                                auto run = [&](bool by_loop) {
                                    L2Model l2(capacity);
                                    l2.begin_kernel(slots, 1000, 1000);
                                    for (int p = 0; p < 2; ++p) {
                                        const bool blocks = (kinds >> p & 1) != 0;
                                        const std::int64_t first = p == 0 ? 0 : (kinds & 1) != 0 ? count - 1 + later : later;
                                        play_loop(l2, passes[p], count, first, blocks, by_loop);
                                    }
                                    const std::vector<std::int64_t> out = outcome(l2, tensors);
                                    carried += by_loop ? l2.items_carried_over() : 0;
                                    return out;
                                };
                                INFO("capacity " << capacity << ", B rows per item " << extra1 << " then " << extra2 << (down ? ", up" : ", down")
                                                 << (write ? ", writes" : ", reads") << ", blocks as items in pass 1/2: " << (kinds & 1) << "/"
                                                 << (kinds >> 1 & 1)
                                                 << ", second pass " << later << " blocks on");
                                CHECK(run(false) == run(true));
                                ++trials;
                            }
    CHECK(carried > trials * count / 2);  // most items were carried over, not run
}

}  // namespace
}  // namespace fasim
