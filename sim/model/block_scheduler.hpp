// The GPU's block scheduler as the runtime model sees it: greedy list scheduling. Every block of a
// kernel goes, in launch order (head-major: each head runs the same run-length encoded list of blocks),
// to the slot (SMs x resident blocks per SM) that frees first, ties to the lowest slot index; slot s
// belongs to SM s % SMs. That gives waves, the tail and idle SMs.
#pragma once

#include <cstdint>
#include <vector>

#include "common/repeated_stretches.hpp"
#include "model/block_terms.hpp"

namespace fasim {

struct ScheduledBlock {
    std::int64_t block = 0;  // launch position (head-major)
    int sm = 0;
    int slot = 0;            // which of the SM's resident-block slots
    double start_s = 0, end_s = 0;
};

// One entry of a head's blocks: `count` blocks in a row, each taking `duration` seconds on its slot and
// adding `terms` to its SM's.
struct TimedBlocks {
    BlockTerms terms;
    double duration = 0;
    std::int64_t count = 0;
};

struct BlockSchedule {
    double makespan_s = 0;
    // How far the greedy's makespan may lie from makespan_s: 0 where every block was scheduled; where the
    // blocks past a budget were spread evenly over the slots instead (schedule_blocks), half the width of
    // the interval that list scheduling's bound leaves.
    double makespan_bound_s = 0;
    double block_seconds = 0;  // the durations of all blocks, summed
    BlockTerms busiest;        // the terms of the SM whose summed terms take longest (duration(1))
    std::vector<ScheduledBlock> timeline;  // the first blocks, in launch order
};

// The slot operations (a block placed alone, or every slot settled) the scheduler spends before it may spread
// the rest of a kernel's blocks evenly (see schedule_blocks).
inline constexpr std::int64_t kExactSlotOperations = std::int64_t{1} << 16;

// `repeats`: stretches of `head` that run several times in a row, in order, apart (none: each entry once).
// Exact up to `exact_operations` slot operations. Past them, where the longest block times the slots is at
// most 10^-4 of all blocks' durations, the blocks not yet scheduled are spread evenly over the slots (each
// SM gets its slots' share of their terms), and the makespan is the middle of what list scheduling allows
// from the slots' free times f_s with work W left: between max(max f, (sum f + W) / slots) and that plus the
// longest block (Graham's bound). So it is off by at most 1/20,000 of itself (makespan_bound_s says how
// much), where the exact greedy would step block by block through millions of rows that never fall into a
// cycle (a row kernel's rows whose last block is ragged and whose alignment changes row by row).
BlockSchedule schedule_blocks(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count, int slots_per_sm,
                              std::size_t timeline_blocks, const std::vector<RepeatedStretch>& repeats = {},
                              std::int64_t exact_operations = kExactSlotOperations);

}  // namespace fasim
