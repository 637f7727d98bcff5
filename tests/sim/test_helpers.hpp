#pragma once

#include "gpu/gpu_catalog.hpp"
#include "model/simulation.hpp"

namespace fasim::test {

inline AttentionProblem problem(std::int64_t N, std::int64_t d = 64, std::int64_t BH = 16, DType t = DType::fp16,
                                bool causal = false, std::int64_t Nk = -1) {
    AttentionProblem p;
    p.batch = 1;
    p.heads = BH;
    p.N = N;
    p.Nk = Nk < 0 ? N : Nk;
    p.d = d;
    p.dtype = t;
    p.causal = causal;
    return p;
}

inline const GpuSpec& a100() {
    static const GpuSpec g = find_gpu_preset("A100-SXM4-40GB");
    return g;
}

}  // namespace fasim::test
