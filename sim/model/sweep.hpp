// Many simulations at once: a sweep over N for several algorithms. Each run is
// independent, so they share the machine's cores; results come back in order.
#pragma once

#include <functional>
#include <vector>

#include "model/simulation.hpp"

namespace fasim {

// What a sweep varies: the query length N (and Nk with it, for self-attention), or the key length Nk
// alone (a decoding step against a growing K/V cache).
enum class SweepParameter : std::uint8_t { N, Nk };
const char* sweep_parameter_name(SweepParameter s);             // "N", "Nk"
std::int64_t sweep_value(const AttentionProblem& p, SweepParameter s);  // p.N or p.Nk

struct SweepRequest {
    std::vector<const Algorithm*> algos;
    AttentionProblem base;          // the parameter (and Nk with N, for self-attention) replaced per point
    std::vector<std::int64_t> ns;   // the parameter's values
    TileRequest tiles;
    ModelOptions model;
    unsigned threads = 0;           // 0: one per hardware thread
    PassSelection pass = PassSelection::fwd;
    SweepParameter parameter = SweepParameter::N;
};

// results[i][k]: ns[i] with algos[k]. on_done (if set) is called once per finished run.
std::vector<std::vector<AlgorithmResult>> run_sweep(const SweepRequest& req, const GpuSpec& gpu,
                                                    const std::function<void()>& on_done = {});

}  // namespace fasim
