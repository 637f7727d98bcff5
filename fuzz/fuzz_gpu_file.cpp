// libFuzzer target: the GPU-file loader (parse_gpu_json, what --gpu-file reads). An accepted file must
// give finite, positive rates, survive a round trip through gpu_spec_to_json, and predict a finite,
// positive time for FA2 and standard attention on a small problem.
#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/algorithm.hpp"
#include "contract.hpp"
#include "gpu/gpu_catalog.hpp"
#include "model/simulation.hpp"
#include "report/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    fasim::fuzz::run_contract([&] {
        const fasim::GpuSpec g = fasim::parse_gpu_json(text, "fuzz.json");
        using fasim::fuzz::check_finite;
        for (const auto& [name, v] :
             {std::pair{"clock_hz", g.clock_hz}, {"hbm_bandwidth", g.effective_hbm_bandwidth()}, {"l2_bandwidth", g.l2_bandwidth},
              {"l2_request_rate", g.l2_request_rate()}, {"smem_bandwidth_per_sm", g.smem_bandwidth_per_sm},
              {"fp32_flops", g.fp32_flops}, {"sfu_ops", g.sfu_ops}, {"launch_overhead_s", g.launch_overhead_s}}) {
            check_finite(v, name);
            if (!(v > 0)) fasim::fuzz::violation(std::string(name) + " is not positive");
        }
        for (fasim::DType t : {fasim::DType::fp32, fasim::DType::fp16, fasim::DType::bf16}) {
            check_finite(g.matmul_flops(t), "matmul_flops");
            check_finite(g.mma_sync_flops(t), "mma_sync_flops");
            if (!(g.matmul_flops(t) > 0) || !(g.mma_sync_flops(t) > 0)) fasim::fuzz::violation("a matmul rate is not positive");
        }
        const fasim::GpuSpec again = fasim::parse_gpu_json(fasim::gpu_spec_to_json(g), "round trip");
        if (fasim::gpu_spec_to_json(again) != fasim::gpu_spec_to_json(g)) fasim::fuzz::violation("the round trip changed the GPU");
        fasim::AttentionProblem p;
        p.N = p.Nk = 512;
        p.heads = 2;
        for (const char* id : {"fa2", "standard"}) {
            const fasim::AlgorithmResult r = fasim::simulate(fasim::algorithm(id), p, g);
            check_finite(r.time_s, std::string(id) + " time_s");
            if (!(r.time_s > 0)) fasim::fuzz::violation(std::string(id) + " predicted no time");
            check_finite(fasim::report_json({r}, g), "report");
        }
    });
    return 0;
}
