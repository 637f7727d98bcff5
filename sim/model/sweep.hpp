// Many simulations at once: a sweep over N for several algorithms. Each run is
// independent, so they share the machine's cores; results come back in order.
#pragma once

#include <functional>
#include <vector>

#include "model/simulation.hpp"

namespace fasim {

struct SweepRequest {
    std::vector<const Algorithm*> algos;
    AttentionProblem base;          // N (and Nk, for self-attention) replaced per point
    std::vector<std::int64_t> ns;
    TileRequest tiles;
    ModelOptions model;
    unsigned threads = 0;           // 0: one per hardware thread
    PassSelection pass = PassSelection::fwd;
};

// results[i][k]: ns[i] with algos[k]. on_done (if set) is called once per finished run.
std::vector<std::vector<AlgorithmResult>> run_sweep(const SweepRequest& req, const GpuSpec& gpu,
                                                    const std::function<void()>& on_done = {});

}  // namespace fasim
