// KernelRecord::block_work keeps a causal staircase as its first block and the increment
// (exec/block_work.hpp). The runtime model must time the same entries as when the same blocks are added
// one at a time (the by-block path), whatever comes before and after the staircase.
#include <catch2/catch.hpp>

#include <vector>

#include "exec/block_work.hpp"

namespace fasim {
namespace {

BlockWork work(std::int64_t flops, std::int64_t prologue = 0) {
    BlockWork w;
    w.matmul_flops = flops;
    w.l2_bytes = 3 * flops;
    w.thread_instructions = 7 * flops + 1;
    w.prologue_bytes = prologue;
    return w;
}

using Entries = std::vector<BlockWorkList::Entry>;

// What the scheduler is given: the entries visited, and the repeats over them written out.
Entries visited(const BlockWorkList& list) {
    Entries out;
    list.for_each_entry([&](const BlockWork& w, std::int64_t n) { out.emplace_back(w, n); });
    Entries unrolled;
    for_each_repeated(out, list.repeats(), [&](const BlockWorkList::Entry& e) { unrolled.push_back(e); });
    return unrolled;
}

TEST_CASE("A causal staircase's blocks are kept as the first and an increment, timed as added one by one", "[counting]") {
    const BlockWork more = work(16);
    const std::int64_t blocks = 1000;
    // Blocks before and after that equal the staircase's first and last block join them, as they would
    // block by block; a repeated unit before it keeps its place.
    const BlockWork first = work(32, 4096), last = [&] {
        BlockWork w = first;
        add(w, more, blocks - 1);
        return w;
    }();
    for (const bool join_before : {false, true})
        for (const bool join_after : {false, true}) {
            DYNAMIC_SECTION("a block equal to the first before: " << join_before << ", to the last after: " << join_after) {
                BlockWorkList by_block, staircase;
                const Entries unit{{work(1), 2}, {work(2), 1}};
                for (BlockWorkList* l : {&by_block, &staircase}) {
                    l->add_repeated(unit, 6);
                    l->add(join_before ? first : work(5), 3);
                }
                BlockWork w = first;
                for (std::int64_t m = 0; m < blocks; ++m, add(w, more, 1)) by_block.add(w, 1);
                staircase.add_staircase(first, more, blocks);
                for (BlockWorkList* l : {&by_block, &staircase}) {
                    l->add(join_after ? last : work(9), 2);
                    l->add_repeated(unit, 5);
                }
                CHECK(staircase == by_block);
                CHECK(visited(staircase) == visited(by_block));
                CHECK(staircase.size() == by_block.size());
                CHECK(staircase.repeats().size() == 2);
                // Two repeats' units written out once and held once, the entries around, the staircase: a dozen
                // entries held where block by block holds a thousand.
                CHECK(staircase.entries_held() <= 12);
                CHECK(by_block.entries_held() >= blocks);
            }
        }
}

TEST_CASE("A staircase that does not grow is one run of alike blocks", "[counting]") {
    BlockWorkList list;
    list.add_staircase(work(8), BlockWork{}, 50);
    REQUIRE(list.size() == 1);
    CHECK(visited(list) == Entries{{work(8), 50}});
}

}  // namespace
}  // namespace fasim
