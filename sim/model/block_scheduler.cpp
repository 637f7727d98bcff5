#include "model/block_scheduler.hpp"

#include <algorithm>
#include <functional>
#include <queue>

namespace fasim {

BlockSchedule schedule_blocks(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count, int slots_per_sm,
                              std::size_t timeline_blocks) {
    BlockSchedule out;
    const std::int64_t slots = static_cast<std::int64_t>(sm_count) * slots_per_sm;
    if (head.size() == 1) {
        // All blocks alike: whole waves.
        const TimedBlocks& b = head.front();
        const double dur = b.duration;
        const std::int64_t grid = heads * b.count;
        const std::int64_t waves = (grid + slots - 1) / slots;
        out.makespan_s = static_cast<double>(waves) * dur;
        out.block_seconds = static_cast<double>(grid) * dur;
        out.busiest = b.terms.scaled(static_cast<double>((grid + sm_count - 1) / sm_count));
        for (std::int64_t k = 0; k < std::min<std::int64_t>(grid, static_cast<std::int64_t>(timeline_blocks)); ++k) {
            const std::int64_t s = k % slots, w = k / slots;
            out.timeline.push_back({k, static_cast<int>(s % sm_count), static_cast<int>(s / sm_count),
                                    static_cast<double>(w) * dur, static_cast<double>(w + 1) * dur});
        }
        return out;
    }
    using Slot = std::pair<double, std::int64_t>;  // (free at, slot index)
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_slots;
    for (std::int64_t s = 0; s < slots; ++s) free_slots.push({0.0, s});
    std::vector<BlockTerms> sm_terms(static_cast<std::size_t>(sm_count));
    std::int64_t position = 0;
    for (std::int64_t h = 0; h < heads; ++h) {
        for (const TimedBlocks& b : head) {
            for (std::int64_t c = 0; c < b.count; ++c, ++position) {
                auto [at, s] = free_slots.top();
                free_slots.pop();
                const double end = at + b.duration;
                out.makespan_s = std::max(out.makespan_s, end);
                out.block_seconds += b.duration;
                sm_terms[static_cast<std::size_t>(s % sm_count)] += b.terms;
                if (out.timeline.size() < timeline_blocks)
                    out.timeline.push_back({position, static_cast<int>(s % sm_count), static_cast<int>(s / sm_count), at, end});
                free_slots.push({end, s});
            }
        }
    }
    out.busiest = *std::max_element(sm_terms.begin(), sm_terms.end(),
                                    [](const BlockTerms& a, const BlockTerms& b) { return a.duration(1) < b.duration(1); });
    return out;
}

}  // namespace fasim
