// WaveReads, rule 1's record of which block of a wave read each region of a streamed tensor: its reader
// answers as a plain list of every recorded read would, and may_hold never says "no region starts in
// this box" where one does, yet tells the blocks of a wave apart (a carried loop needs that answer to
// skip looking up each of its items' regions: a block's 2^19 k-steps over P at N = 2^24), and
// same_reader_items vouches for a stretch of regions only where reader would answer alike for each.
#include <catch2/catch.hpp>

#include <random>

#include "machine/wave_reads.hpp"

namespace fasim {
namespace {

bool starts_inside(const WaveReads::Key& k, const WaveReads::Box& b) {
    const std::int64_t at[3] = {k.head, k.row0, k.col0};
    for (int c = 0; c < 3; ++c)
        if (at[c] < b.lo[c] || at[c] > b.hi[c]) return false;
    return true;
}

TEST_CASE("WaveReads answers as a list of every read, and may_hold never misses a recorded region", "[l2][wave_reads]") {
    std::mt19937_64 rng(20261128);
    auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    std::int64_t boxes_with_regions = 0, boxes_without = 0, spans = 0;
    for (int trial = 0; trial < 300; ++trial) {
        WaveReads reads;
        reads.start_wave(trial);
        std::vector<std::pair<WaveReads::Key, std::int64_t>> plain;  // every read in order, with its block
        auto key = [&](std::int64_t head, std::int64_t row, std::int64_t col) { return WaveReads::Key{0, head, row, 16, col, 32}; };
        const int records = static_cast<int>(pick(1, 400));  // past kSingleSpans blocks now and then
        for (int r = 0; r < records; ++r) {
            const std::int64_t block = pick(0, 300);
            if (pick(0, 5) == 0) {  // a family: a row band's k-steps, read by one block each
                const WaveReads::Key base = key(pick(0, 1), pick(0, 40) * 16, pick(0, 40) * 32);
                const std::int64_t blocks = pick(1, 4), steps = pick(1, 30);
                const std::vector<std::pair<std::int64_t, WaveReads::Move>> dims{{blocks, {0, 16, 0}}, {steps, {0, 0, 32}}};
                const std::int64_t block_step = pick(0, 2);
                REQUIRE(reads.record_family(base, dims, block, block_step));
                for (std::int64_t i = 0; i < blocks; ++i)
                    for (std::int64_t s = 0; s < steps; ++s)
                        plain.emplace_back(key(base.head, base.row0 + 16 * i, base.col0 + 32 * s), block + i * block_step);
                continue;
            }
            const WaveReads::Key k = key(pick(0, 1), pick(0, 60) * 16, pick(0, 60) * 32);
            reads.record(k, block);
            plain.emplace_back(k, block);
        }
        // The reader of a region is the block of its latest read.
        for (int q = 0; q < 50; ++q) {
            const WaveReads::Key k = key(pick(0, 1), pick(0, 60) * 16, pick(0, 60) * 32);
            std::optional<std::int64_t> expected;
            for (const auto& [r, block] : plain)
                if (r == k) expected = block;
            CHECK(reads.reader(k) == expected);
        }
        // same_reader_items vouches only for regions whose reader is the first one's (a loop carries its items
        // over on that answer), and finds runs of them in families.
        for (int q = 0; q < 50; ++q) {
            const WaveReads::Key k = pick(0, 1) == 0 ? plain[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(plain.size()) - 1))].first
                                                     : key(pick(0, 1), pick(0, 60) * 16, pick(0, 60) * 32);
            const WaveReads::Move step = pick(0, 1) == 0 ? WaveReads::Move{0, 0, 32} : WaveReads::Move{0, 16, 0};
            const std::int64_t limit = pick(1, 40);
            const std::int64_t items = reads.same_reader_items(k, step, limit);
            REQUIRE(items >= 1);
            REQUIRE(items <= limit);
            spans += items > 1;
            for (std::int64_t j = 1; j < items; ++j)
                CHECK(reads.reader(key(k.head, k.row0 + j * step.rows, k.col0 + j * step.cols)) == reads.reader(k));
        }
        // may_hold is false only where no recorded region starts in the box.
        for (int q = 0; q < 50; ++q) {
            WaveReads::Box box;
            for (int c = 0; c < 3; ++c) {
                const std::int64_t scale = c == 0 ? 1 : c == 1 ? 16 : 32, a = pick(0, 70) * scale, b = pick(0, 70) * scale;
                box.lo[c] = std::min(a, b) / (c == 0 ? 35 : 1);
                box.hi[c] = std::max(a, b) / (c == 0 ? 35 : 1);
            }
            bool any = false;
            for (const auto& [r, block] : plain) any = any || starts_inside(r, box);
            (any ? boxes_with_regions : boxes_without) += 1;
            if (any) CHECK(reads.may_hold(0, box));
        }
    }
    CHECK(boxes_with_regions > 1000);
    CHECK(boxes_without > 1000);
    CHECK(spans > 500);
}

TEST_CASE("WaveReads tells apart the row bands the blocks of a wave read, however wide each band's reads spread",
          "[l2][wave_reads]") {
    // Blocks 0 and 1 of a wave read their own row band of P one region at a time: the first two k-steps and
    // the ragged last (as the counting executor plays them); block 2 has read its first two. Block 2's band
    // from its third k-step on holds no recorded region, though one box over all of them (rows 0-128, every
    // column) would cover it.
    WaveReads reads;
    reads.start_wave(7);
    const std::int64_t last_col = (std::int64_t{1} << 24) - 32;
    for (const std::int64_t block : {0, 1, 2})
        for (const std::int64_t col : {std::int64_t{0}, std::int64_t{32}, last_col})
            if (block < 2 || col < last_col) reads.record({0, 0, 64 * block, 64, col, 32}, block);
    WaveReads::Box band2;
    band2.lo[0] = band2.hi[0] = 0;
    band2.lo[1] = band2.hi[1] = 128;
    band2.lo[2] = 64;
    band2.hi[2] = last_col;
    CHECK_FALSE(reads.may_hold(0, band2));
    WaveReads::Box band1 = band2;
    band1.lo[1] = band1.hi[1] = 64;
    CHECK(reads.may_hold(0, band1));  // block 1's ragged last k-step starts there
}

}  // namespace
}  // namespace fasim
