// L2Model::loop carries alike items over only when they would repeat exactly what the last one did: on
// random loops of accesses (tiles that recur in every item and tiles that move, several tensors, reads
// and writes, small and large caches so that reuse distances straddle the capacity, loops of blocks and
// loops inside a block, shared reads of streamed tensors) it leaves the same DRAM bytes and the same L2
// state as running every item through read() and write().
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
        const std::int64_t capacity = 1024 * pick(8, 200);
        const bool blocks = pick(0, 1) == 1;
        const std::int64_t count = pick(16, 60), slots = pick(1, 8), first_block = blocks ? pick(0, 3) * slots : 0;
        // Other heads' blocks share the waves when this head's are fewer than the grid's (begin_block's scale).
        const std::int64_t grid = 1000, head_blocks = pick(0, 1) ? grid : pick(first_block + count, 2 * (first_block + count));
        std::vector<Access> accesses;
        const int n_accesses = static_cast<int>(pick(1, 4));
        for (int a = 0; a < n_accesses; ++a) {
            const GlobalTensor& t = tensors[static_cast<std::size_t>(pick(0, 3))];
            const bool moving = pick(0, 2) > 0;
            const std::int64_t inner = pick(0, 3) == 0 ? pick(2, 4) : 1;
            const std::int64_t step = moving ? 64 * inner : 0;
            const std::int64_t tiles = t.rows / 64;
            if (moving && (count + 1) * inner > tiles) continue;  // the items' tiles must fit the tensor
            const std::int64_t start = moving ? 0 : 64 * pick(0, tiles - inner);
            accesses.push_back({&t, start, 0, 64, 128, pick(0, 3) == 0, step, 0, inner, 64});
        }
        if (pick(0, 3) == 0)  // a streamed read that moves, and one that every item makes
            accesses.push_back({&tensors[4], 0, 32 * pick(0, 3), 1, 32, false, 1, 0, 1, 0});
        if (pick(0, 3) == 0) accesses.push_back({&tensors[4], 7, 64, 1, 32, false, 0, 0, 1, 0});
        if (accesses.empty()) continue;

        auto run = [&](bool by_loop) {
            L2Model l2(capacity);
            // A first pass leaves some tiles resident, some dirty, some of another block of this wave.
            l2.begin_kernel(slots, grid, head_blocks);
            for (std::int64_t b = 0; b < first_block; ++b) {
                l2.begin_block(b);
                for (const GlobalTensor& t : tensors)
                    if (t.name != "S" && pick(0, 1)) l2.write({&t, 0, 64 * pick(0, t.rows / 64 - 1), 64, 0, 128});
            }
            if (!blocks) l2.begin_block(first_block);
            if (by_loop) l2.loop(shape_of(accesses, count, blocks), [&](std::int64_t k) { play_item(l2, accesses, k, first_block, blocks); });
            else
                for (std::int64_t k = 0; k < count; ++k) play_item(l2, accesses, k, first_block, blocks);
            std::vector<std::int64_t> out;
            for (const auto& d : l2.dram_by_tensor()) {
                out.push_back(d.read);
                out.push_back(d.write);
            }
            const std::vector<std::int64_t> after = probe(l2, tensors);
            out.insert(out.end(), after.begin(), after.end());
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
             << first_block << " of waves of " << slots << ", " << count << " items:";
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

}  // namespace
}  // namespace fasim
