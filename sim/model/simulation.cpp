#include "model/simulation.hpp"

#include <algorithm>

#include "common/errors.hpp"
#include "exec/counting_executor.hpp"
#include "exec/shared_grids.hpp"
#include "model/kernel_setup.hpp"

namespace fasim {

std::int64_t visible_pairs(const AttentionProblem& p) {
    if (!p.causal) return p.N * p.Nk;
    // Query row i (0-based) sees keys 0 .. i + (Nk - N), bottom-right aligned: min(Nk, N) rows see
    // a = max(1, Nk - N + 1), a + 1, ..., Nk keys (the rows above them, when N > Nk, see none).
    const std::int64_t a = std::max<std::int64_t>(1, p.Nk - p.N + 1);
    return (a + p.Nk) * (p.Nk - a + 1) / 2;
}

double AlgorithmResult::arithmetic_intensity() const {
    const double bytes = static_cast<double>(hbm.total());
    return bytes > 0 ? to_double(matmul_flops + nonmatmul_flops) / bytes : 0;
}

const KernelTiming& AlgorithmResult::longest_kernel() const {
    return *std::max_element(timing.begin(), timing.end(),
                             [](const KernelTiming& a, const KernelTiming& b) { return a.total_s < b.total_s; });
}

double AlgorithmResult::achieved_flops() const { return time_s > 0 ? static_cast<double>(matmul_flops) / time_s : 0; }

const char* pass_name(PassSelection p) {
    switch (p) {
        case PassSelection::fwd: return "fwd";
        case PassSelection::bwd: return "bwd";
        case PassSelection::fwd_bwd: return "fwd+bwd";
    }
    return "?";
}

namespace {

// Declares, launches nothing.
class DeclarationsOnly final : public Executor {
public:
    void launch(const KernelDesc&, const BlockBody&) override {}
};

// The request as simulate() hands it to a program: S where the kernels keep it, and fa-sim's CUDA-core
// kernels' tiles by their launchers' rule.
TileConfig tiles_for(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& request,
                     const ModelOptions& options) {
    TileRequest req = request;
    req.scores = options.tensor_cores ? Space::Registers : Space::Shared;  // fa-sim's CUDA-core kernels stage S/P
    if (!options.tensor_cores) apply_cuda_core_tile_rule(algo, p, gpu, req);  // and pick tiles by their launchers' rule
    return choose_tiles(algo, p, gpu, req);
}

// Runs the programs, in order, on one counting executor, and totals and times their kernels.
AlgorithmResult run_programs(const std::vector<std::pair<const Algorithm*, TileConfig>>& programs, const AttentionProblem& p,
                             const GpuSpec& gpu, const ModelOptions& requested, std::size_t timeline_blocks) {
    // Programs whose products take fp32 operands (PyTorch's math backend) run them on the CUDA cores.
    ModelOptions options = requested;
    for (const auto& [algo, tiles] : programs)
        if (algo->fp32_products) options.tensor_cores = false;
    AlgorithmResult r;
    r.algo = programs.back().first;
    r.problem = p;
    r.gpu_name = gpu.name;
    r.tiles = programs.back().second;
    ExecutionModel executions = fasim_kernel_executions(p, r.tiles);
    if (options.flash_instruction != MatrixInstruction::mma_sync)
        executions = [base = std::move(executions), instruction = options.flash_instruction](const KernelDesc& k) {
            KernelExecution e = base(k);
            if (e.instruction == MatrixInstruction::mma_sync) e.instruction = instruction;
            return e;
        };
    {
        CountingExecutor counter(gpu, r.tiles.registers_per_thread, std::move(executions), r.tiles.launched_smem_bytes,
                                 options.count_every_block ? CountPath::by_block : CountPath::by_class);
        if (p.grouped()) counter.share_kv_heads(p.batch_kv_heads());
        if (programs.size() > 1) counter.use_grids(shared_grids(programs, p));
        for (const auto& [algo, tiles] : programs) run_algorithm(*algo, counter, p, tiles);
        r.kernels = counter.take_kernels();
        // A tensor's bytes per head fit 64 bits (S: N·Nk·4 = 2^50 at N = Nk = 2^24); times the heads they may not.
        for (const GlobalTensor& t : counter.tensors()) r.global_bytes += Count(t.bytes_per_head()) * t.heads;
    }  // the executor goes before the kernels are timed: its L2 model's tile states are tens of MB at N = 2^24
    r.fits_in_hbm = r.global_bytes <= gpu.hbm_bytes;

    for (const KernelRecord& k : r.kernels) {
        r.timing.push_back(time_kernel(k, gpu, p.dtype, options, timeline_blocks));
        r.hbm += k.hbm;
        r.l2 += k.l2;
        r.dram += k.dram;
        r.smem_read += k.smem_read;
        r.smem_write += k.smem_write;
        r.matmul_flops += k.matmul_flops;
        r.recomputed_matmul_flops += k.recomputed_matmul_flops;
        r.nonmatmul_flops += k.nonmatmul_flops;
        r.sfu_ops += k.sfu_ops;
        r.barriers += k.barriers;
        r.time_s += r.timing.back().total_s;
    }
    // The FLOPs the papers count for each pass, per visible (query, key) pair and head dimension: 4 for
    // the forward (Q Kᵀ and P V), 10 for the backward (2.5 times the forward: S recomputed, dV, dP, dQ, dK).
    std::int64_t per_pair = 0;
    for (const auto& [algo, tiles] : programs) per_pair += algo->pass == Pass::forward ? 4 : 10;
    r.ideal_matmul_flops = Count(per_pair) * p.batch_heads() * p.d * visible_pairs(p);
    return r;
}

}  // namespace

std::vector<GlobalTensor> declared_tensors(const Algorithm& algo, const AttentionProblem& p, const TileConfig& tiles) {
    DeclarationsOnly x;
    run_algorithm(algo, x, p, tiles);
    return x.tensors();
}

AlgorithmResult simulate(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& request,
                         const ModelOptions& options, std::size_t timeline_blocks) {
    validate(p);
    return run_programs({{&algo, tiles_for(algo, p, gpu, request, options)}}, p, gpu, options, timeline_blocks);
}

const Algorithm& backward_program(const Algorithm& forward) {
    if (const Algorithm* b = backward_of(forward)) return *b;
    std::string with;
    for (const Algorithm* a : algorithms(Pass::backward)) with += (with.empty() ? "" : ", ") + std::string(a->family);
    throw usage_error(std::string(forward.id) + " has no backward pass in fa-sim", "the backward is simulated for " + with,
                      "use --algo " + with.substr(0, with.find(',')) + ", or drop --pass");
}

AlgorithmResult simulate(const Algorithm& forward, PassSelection pass, const AttentionProblem& p, const GpuSpec& gpu,
                         const TileRequest& request, const ModelOptions& options, std::size_t timeline_blocks) {
    if (pass == PassSelection::fwd) return simulate(forward, p, gpu, request, options, timeline_blocks);
    validate(p);
    const Algorithm& backward = backward_program(forward);
    const TileConfig fwd_tiles = tiles_for(forward, p, gpu, request, options);
    const TileConfig bwd_tiles = tiles_for(backward, p, gpu, request, options);
    std::vector<std::pair<const Algorithm*, TileConfig>> programs;
    if (pass == PassSelection::fwd_bwd) programs.emplace_back(&forward, fwd_tiles);
    programs.emplace_back(&backward, bwd_tiles);
    AlgorithmResult r = run_programs(programs, p, gpu, options, timeline_blocks);
    r.pass = pass;
    if (pass == PassSelection::fwd_bwd) {
        r.forward = &forward;
        r.forward_tiles = fwd_tiles;
    }
    // Held between the passes: what the forward declares and the backward reads, besides Q, K, V and O.
    const std::vector<GlobalTensor> saved = declared_tensors(forward, p, fwd_tiles);
    for (const GlobalTensor& t : declared_tensors(backward, p, bwd_tiles)) {
        if (t.name == "Q" || t.name == "K" || t.name == "V" || t.name == "O") continue;
        const bool from_forward = std::any_of(saved.begin(), saved.end(), [&](const GlobalTensor& s) { return s.name == t.name; });
        if (from_forward && read_of(r.hbm, t.name) > 0) r.held_between_passes_bytes += Count(t.bytes_per_head()) * t.heads;
    }
    return r;
}

}  // namespace fasim
