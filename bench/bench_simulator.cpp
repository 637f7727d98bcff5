// Speed of the counting simulator (issue targets: one configuration in under
// 10 ms of process time; all four algorithms over N = 512..65536 in under 1 s).
// Prints a table; bench/run.sh records it with the machine and date.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <vector>

#include "exec/functional_executor.hpp"
#include "gpu/gpu_catalog.hpp"
#include "inputs.hpp"
#include "model/simulation.hpp"
#include "model/sweep.hpp"

using namespace fasim;

namespace {

struct Sample {
    double cpu_s, wall_s;
};

Sample measure(const std::function<void()>& f) {
    const std::clock_t c0 = std::clock();
    const auto w0 = std::chrono::steady_clock::now();
    f();
    const auto w1 = std::chrono::steady_clock::now();
    return {static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC, std::chrono::duration<double>(w1 - w0).count()};
}

Sample median(std::vector<Sample> v) {
    auto mid = [&](auto key) {
        std::sort(v.begin(), v.end(), [&](const Sample& a, const Sample& b) { return key(a) < key(b); });
        return key(v[v.size() / 2]);
    };
    return {mid([](const Sample& s) { return s.cpu_s; }), mid([](const Sample& s) { return s.wall_s; })};
}

}  // namespace

int main() {
    const GpuSpec gpu = find_gpu_preset(default_gpu_name());
    AttentionProblem p;  // defaults: B=1 H=16 N=4096 d=64 fp16
    std::printf("%-52s %12s %12s %10s\n", "case", "cpu (ms)", "wall (ms)", "target");

    for (const Algorithm* a : algorithms(Pass::forward)) {
        std::vector<Sample> s;
        for (int i = 0; i < 21; ++i) s.push_back(measure([&] { simulate(*a, p, gpu); }));
        const Sample m = median(s);
        std::printf("one configuration: %-8s N=4096 (median of 21)     %12.2f %12.2f %10s\n", std::string(a->id).c_str(),
                    m.cpu_s * 1e3, m.wall_s * 1e3, a->id == "fa2" ? "< 10 ms" : "");
    }

    SweepRequest req;
    req.algos = algorithms(Pass::forward);
    req.base = p;
    for (std::int64_t n = 512; n <= 65536; n *= 2) req.ns.push_back(n);
    for (unsigned threads : {1u, 0u}) {
        req.threads = threads;
        std::vector<Sample> s;
        for (int i = 0; i < 5; ++i) s.push_back(measure([&] { run_sweep(req, gpu); }));
        const Sample m = median(s);
        std::printf("sweep: %zu algorithms x N=512..65536, %s   %12.1f %12.1f %10s\n", req.algos.size(),
                    threads == 1 ? "1 thread (median of 5) " : "all cores (median of 5)", m.cpu_s * 1e3, m.wall_s * 1e3,
                    threads == 0 ? "< 1000 ms" : "");
    }

    // Functional mode (issue target: fa2 at N=4096, d=64, one head in under 2 s).
    {
        AttentionProblem one = p;
        one.heads = 1;
        const auto in = reference::random_qkv(one.N, one.Nk, one.d, 1, one.dtype);
        const Algorithm& fa2 = algorithm("fa2");
        const TileConfig tiles = choose_tiles(fa2, one, gpu, {});
        std::vector<Sample> s;
        for (int i = 0; i < 3; ++i) s.push_back(measure([&] { run_functional(fa2, one, gpu, tiles, {in.Q}, {in.K}, {in.V}); }));
        const Sample m = median(s);
        std::printf("functional: fa2 N=4096 d=64 fp16, one head (median of 3) %9.1f %12.1f %10s\n", m.cpu_s * 1e3,
                    m.wall_s * 1e3, "< 2000 ms");
    }
    return 0;
}
