// The cycles one step of a probe takes, from each warp's clock64 span over `steps` steps (the attention-step and
// backward-step probes): the mean over warps, and the fastest and slowest warp's.
#pragma once

#include <algorithm>
#include <vector>

namespace fasim::bench {

struct StepCycles {
    double mean = 0, min = 0, max = 0;
};

inline StepCycles step_cycles(const std::vector<long long>& warp_cycles, int steps) {
    StepCycles c;
    if (warp_cycles.empty() || steps <= 0) return c;
    double sum = 0;
    for (const long long w : warp_cycles) sum += static_cast<double>(w);
    const auto [lo, hi] = std::minmax_element(warp_cycles.begin(), warp_cycles.end());
    c.mean = sum / static_cast<double>(warp_cycles.size()) / steps;
    c.min = static_cast<double>(*lo) / steps;
    c.max = static_cast<double>(*hi) / steps;
    return c;
}

}  // namespace fasim::bench
