// The largest problem the command line accepts (N = Nk = 2^20, batch*heads = 1024, d = 256) must not
// overflow any 64-bit counter (issue 25, item 8). Simulating it takes minutes per algorithm (measured
// on this project's CI-class machine: FA2 188 s, FA1 243 s at fp16; standard and tiled longer), so the
// test simulates N = 2^12 with the same B*H, d, dtype and default tiles and bounds every counter at
// 2^20 from it:
//   - every traffic, FLOP and instruction counter is a sum of non-negative terms, each at most
//     quadratic in N (pairs of tiles, rows, tiles), so c(256 N) <= 256^2 c(N) up to the ragged last
//     tile (measured against the full runs: at most 1.0002 x, FA1's O_acc writes);
//   - DRAM bytes follow the L2 model, not a polynomial (fewer hits at larger N), but never exceed the
//     L2 traffic that reaches the slices, so they are bounded by their L2 counter's bound.
// The bound, times kMargin, must stay below 2^63. The smallest margins measured (2026-11-25):
// standard attention with --matmul naive 1.45x (its L2 reads), FA1 fwd+bwd 1.80x (lane FLOPs, the
// mma shapes' padded products), FA2 fwd+bwd 2.29x; the forward passes with default options 4.1x
// (FA1's lane FLOPs) or more. The full runs of FA2 and FA1 at 2^20 (fp16, d = 256) gave 1.15e18 and
// 2.24e18 as their largest counters, inside these bounds. Tiles far below the defaults are not
// covered: --Br 1 --Bc 1 at this size would reach ~1e20 lane FLOPs (a simulation of 1e15 tile steps
// that never finishes); 128-bit counters are for the long-context issue.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "algorithms/algorithm.hpp"
#include "gpu/gpu_catalog.hpp"
#include "model/simulation.hpp"
#include "report/report.hpp"

using namespace fasim;

namespace {

void collect(const nlohmann::json& j, const std::string& path, std::map<std::string, double>& out) {
    if (j.is_object())
        for (const auto& [k, v] : j.items()) collect(v, path + "." + k, out);
    else if (j.is_array())
        for (std::size_t i = 0; i < j.size(); ++i) collect(j[i], path + "[" + std::to_string(i) + "]", out);
    else if (j.is_number_integer())
        out[path] = static_cast<double>(j.get<std::int64_t>());
}

constexpr double kMargin = 1.25;

}  // namespace

TEST_CASE("no 64-bit counter overflows at the largest accepted problem (default tiles)", "[limits]") {
    constexpr std::int64_t kSmall = ProblemLimits::max_seq / 256;
    constexpr double kScale = 256.0 * 256.0;
    const GpuSpec gpu = find_gpu_preset(default_gpu_name());
    struct Case {
        const char* algo;
        PassSelection pass;
        bool cuda_cores;
        MatmulMode matmul;
    };
    const Case cases[] = {
        {"standard", PassSelection::fwd, false, MatmulMode::tiled},
        {"standard", PassSelection::fwd_bwd, false, MatmulMode::tiled},
        {"standard", PassSelection::fwd, false, MatmulMode::naive},
        {"standard", PassSelection::fwd, false, MatmulMode::library},
        {"tiled", PassSelection::fwd, false, MatmulMode::tiled},
        {"tiled", PassSelection::fwd, true, MatmulMode::tiled},
        {"fa1", PassSelection::fwd, false, MatmulMode::tiled},
        {"fa1", PassSelection::fwd_bwd, false, MatmulMode::tiled},
        {"fa1", PassSelection::fwd, true, MatmulMode::tiled},
        {"fa2", PassSelection::fwd, false, MatmulMode::tiled},
        {"fa2", PassSelection::fwd_bwd, false, MatmulMode::tiled},
        {"fa2", PassSelection::fwd, true, MatmulMode::tiled},
    };
    for (const Case& c : cases)
        for (const DType dtype : {DType::fp32, DType::fp16, DType::bf16}) {
            AttentionProblem p;
            p.N = p.Nk = kSmall;
            p.batch = 1;
            p.heads = ProblemLimits::max_batch_heads;
            p.d = 256;
            p.dtype = dtype;
            TileRequest tiles;
            tiles.matmul = c.matmul;
            ModelOptions model;
            model.tensor_cores = !c.cuda_cores;
            CAPTURE(c.algo, pass_name(c.pass), dtype_name(dtype), c.cuda_cores, static_cast<int>(c.matmul));
            const AlgorithmResult r = simulate(algorithm(c.algo), c.pass, p, gpu, tiles, model);
            std::map<std::string, double> counters;
            collect(report_json({r}, gpu), "", counters);
            REQUIRE(counters.size() > 20);
            double worst = 0;
            std::string worst_key;
            for (const auto& [key, value] : counters) {
                std::string from = key;
                if (const auto at = from.find(".dram."); at != std::string::npos) from.replace(at, 6, ".l2.");
                const auto it = counters.find(from);
                const double bound = kScale * (it != counters.end() ? std::max(it->second, value) : value);
                if (bound > worst) {
                    worst = bound;
                    worst_key = key;
                }
            }
            CAPTURE(worst_key, worst);
            CHECK(worst * kMargin < 0x1p63);
        }
}

TEST_CASE("the closed forms at the largest accepted problem fit in 64 bits", "[limits]") {
    // What the papers' formulas give at N = Nk = 2^20, B*H = 1024, d = 256, fp32, computed in long double
    // from each algorithm's closed form at 2^12 (every term at most quadratic in N): HBM bytes and matmul FLOPs.
    const GpuSpec gpu = find_gpu_preset(default_gpu_name());
    for (const char* id : {"standard", "tiled", "fa1", "fa2"}) {
        const Algorithm& a = algorithm(id);
        REQUIRE(a.closed_form != nullptr);
        AttentionProblem p;
        p.N = p.Nk = ProblemLimits::max_seq / 256;
        p.heads = ProblemLimits::max_batch_heads;
        p.d = 256;
        p.dtype = DType::fp32;
        const AlgorithmResult r = simulate(a, p, gpu);
        const ClosedForm f = a.closed_form(p, r.tiles);
        CAPTURE(id);
        if (f.hbm) CHECK(static_cast<long double>(to_double(f.hbm->total())) * 65536 * kMargin < 0x1p63L);
        if (f.matmul_flops) CHECK(static_cast<long double>(to_double(*f.matmul_flops)) * 65536 * kMargin < 0x1p63L);
        // The ideal matmul FLOPs at 2^20 exactly: 4 B H d N Nk = 2^60 forward.
        CHECK(4.0L * ProblemLimits::max_batch_heads * 256 * static_cast<long double>(ProblemLimits::max_seq) *
                  ProblemLimits::max_seq ==
              0x1p60L);
    }
}
