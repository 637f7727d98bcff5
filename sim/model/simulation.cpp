#include "model/simulation.hpp"

#include <algorithm>

#include "exec/counting_executor.hpp"
#include "model/kernel_setup.hpp"

namespace fasim {

std::int64_t visible_pairs(const AttentionProblem& p) {
    if (!p.causal) return p.N * p.Nk;
    std::int64_t pairs = 0;
    for (std::int64_t i = 0; i < p.N; ++i) pairs += std::clamp<std::int64_t>(i + (p.Nk - p.N) + 1, 0, p.Nk);
    return pairs;
}

double AlgorithmResult::arithmetic_intensity() const {
    const double bytes = static_cast<double>(hbm.total());
    return bytes > 0 ? static_cast<double>(matmul_flops + nonmatmul_flops) / bytes : 0;
}

const KernelTiming& AlgorithmResult::longest_kernel() const {
    return *std::max_element(timing.begin(), timing.end(),
                             [](const KernelTiming& a, const KernelTiming& b) { return a.total_s < b.total_s; });
}

double AlgorithmResult::achieved_flops() const { return time_s > 0 ? static_cast<double>(matmul_flops) / time_s : 0; }

AlgorithmResult simulate(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& request,
                         const ModelOptions& options, std::size_t timeline_blocks) {
    validate(p);
    AlgorithmResult r;
    r.algo = &algo;
    r.problem = p;
    r.gpu_name = gpu.name;
    TileRequest req = request;
    req.scores = options.tensor_cores ? Space::Registers : Space::Shared;  // fa-sim's CUDA-core kernels stage S/P
    if (!options.tensor_cores) apply_cuda_core_tile_rule(algo, p, gpu, req);  // and pick tiles by their launchers' rule
    r.tiles = choose_tiles(algo, p, gpu, req);

    CountingExecutor counter(gpu, r.tiles.registers_per_thread, fasim_kernel_executions(p, r.tiles));
    run_algorithm(algo, counter, p, r.tiles);
    r.kernels = counter.kernels();
    for (const GlobalTensor& t : counter.tensors()) r.global_bytes += t.bytes_per_head() * t.heads;
    r.fits_in_hbm = r.global_bytes <= gpu.hbm_bytes;

    for (const KernelRecord& k : r.kernels) {
        r.timing.push_back(time_kernel(k, gpu, p.dtype, options, timeline_blocks));
        r.hbm += k.hbm;
        r.l2 += k.l2;
        r.dram += k.dram;
        r.smem_read += k.smem_read;
        r.smem_write += k.smem_write;
        r.matmul_flops += k.matmul_flops;
        r.nonmatmul_flops += k.nonmatmul_flops;
        r.sfu_ops += k.sfu_ops;
        r.barriers += k.barriers;
        r.time_s += r.timing.back().total_s;
    }
    r.ideal_matmul_flops = 4 * p.batch_heads() * p.d * visible_pairs(p);
    return r;
}

}  // namespace fasim
