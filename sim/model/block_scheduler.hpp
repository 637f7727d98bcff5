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
    double block_seconds = 0;  // the durations of all blocks, summed
    BlockTerms busiest;        // the terms of the SM whose summed terms take longest (duration(1))
    std::vector<ScheduledBlock> timeline;  // the first blocks, in launch order
};

// `repeats`: stretches of `head` that run several times in a row, in order, apart (none: each entry once).
BlockSchedule schedule_blocks(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count, int slots_per_sm,
                              std::size_t timeline_blocks, const std::vector<RepeatedStretch>& repeats = {});

}  // namespace fasim
