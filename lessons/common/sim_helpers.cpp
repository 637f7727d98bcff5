#include "common/sim_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "common/text.hpp"
#include "exec/problem_inputs.hpp"
#include "exec/trace_printer.hpp"
#include "inputs.hpp"
#include "model/simulation.hpp"
#include "precision.hpp"

namespace fasim::lessons {

namespace {

// Records declarations only; launches nothing.
class DeclarationsOnly final : public Executor {
public:
    void launch(const KernelDesc&, const BlockBody&) override {}
};

}  // namespace

AttentionProblem make_problem(std::int64_t batch, std::int64_t heads, std::int64_t N, std::int64_t d, DType dtype,
                              bool causal) {
    AttentionProblem p;
    p.batch = batch;
    p.heads = heads;
    p.N = p.Nk = N;
    p.d = d;
    p.dtype = dtype;
    p.causal = causal;
    return p;
}

AlgorithmResult sim(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& t) {
    return simulate(algo, p, gpu, t);
}

TileRequest tiles(std::int64_t Br, std::int64_t Bc) {
    TileRequest t;
    t.Br = Br;
    t.Bc = Bc;
    return t;
}

const KernelRecord& kernel(const AlgorithmResult& r, const std::string& name) {
    for (const auto& k : r.kernels)
        if (k.desc.name == name) return k;
    throw std::logic_error("no kernel " + name + " in " + std::string(r.algo->id));
}

const KernelTiming& timing(const AlgorithmResult& r, const std::string& name) {
    for (const auto& t : r.timing)
        if (t.name == name) return t;
    throw std::logic_error("no kernel timing " + name + " in " + std::string(r.algo->id));
}

const KernelRecord& main_kernel(const AlgorithmResult& r) { return r.kernels.back(); }
const KernelTiming& main_timing(const AlgorithmResult& r) { return r.timing.back(); }

Count both_of(const LevelTraffic& t, std::string_view n) { return read_of(t, n) + write_of(t, n); }

std::vector<std::string> tensor_names(std::initializer_list<const LevelTraffic*> levels) {
    std::vector<std::string> names;
    for (const LevelTraffic* level : levels)
        for (const TensorBytes& t : level->tensors)
            if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
    return names;
}

Count footprint_bytes(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    validate(p);
    const TileConfig cfg = choose_tiles(algo, p, gpu, req);
    DeclarationsOnly x;
    run_algorithm(algo, x, p, cfg);
    Count bytes = 0;
    for (const GlobalTensor& t : x.tensors()) bytes += Count(t.bytes_per_head()) * t.heads;
    return bytes;
}

std::string bound_kind(const std::string& bound) {
    for (const char* m : {"DRAM", "L2", "shared-memory"})
        if (bound.find(m) != std::string::npos) return "memory";
    return "compute";
}

GpuSpec with_shared_memory(const GpuSpec& gpu, double factor) {
    GpuSpec g = gpu;
    g.smem_per_block_bytes = static_cast<std::int64_t>(static_cast<double>(gpu.smem_per_block_bytes) * factor);
    g.smem_per_sm_bytes = static_cast<std::int64_t>(static_cast<double>(gpu.smem_per_sm_bytes) * factor);
    g.name = gpu.name + " with " + num(factor, 3) + "x shared memory";
    return g;
}

namespace {

// Prints every step, and copies what the program stores into the tensors named in `keep`.
class KeepingPrinter final : public Observer {
public:
    KeepingPrinter(std::ostream& out, const std::vector<std::string>& keep, std::map<std::string, std::vector<reference::Matrix>>& kept)
        : printer_(out, 4, 4), keep_(keep), kept_(kept) {}
    void on_step(const fasim::Step& step) override {
        printer_.on_step(step);
        if (step.kind != StepKind::store || !step.region || !step.values) return;
        const Region& r = *step.region;
        const GlobalTensor& t = *r.tensor;
        if (std::find(keep_.begin(), keep_.end(), t.name) == keep_.end()) return;
        auto& heads = kept_[t.name];
        if (heads.empty())
            heads.assign(static_cast<std::size_t>(t.heads),
                         reference::Matrix::Constant(t.rows, t.cols, std::numeric_limits<double>::quiet_NaN()));
        // A row statistic is held on chip as a column and stored as a row.
        const reference::MatrixF& v = *step.values;
        const bool column = t.row_statistic && v.rows() == r.ncols;
        for (std::int64_t i = 0; i < r.nrows; ++i)
            for (std::int64_t c = 0; c < r.ncols; ++c) {
                const double x = column ? v(c, i) : v(i, c);
                double& dst = heads[static_cast<std::size_t>(r.head)](r.row0 + i, r.col0 + c);
                dst = step.store_mode == StoreMode::overwrite || std::isnan(dst) ? x : dst + x;
            }
    }

private:
    TracePrinter printer_;
    const std::vector<std::string>& keep_;
    std::map<std::string, std::vector<reference::Matrix>>& kept_;
};

}  // namespace

TracedRun traced_run(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileConfig& cfg,
                     std::uint64_t seed, const std::vector<std::string>& keep) {
    TracedRun t;
    ProblemInputs in = random_inputs(p, seed);
    t.Q = std::move(in.Q);
    t.K = std::move(in.K);  // per batch·K/V head
    t.V = std::move(in.V);
    std::ostringstream text;
    KeepingPrinter printer(text, keep, t.kept);
    t.run = run_functional(algo, p, gpu, cfg, t.Q, t.K, t.V, &printer);
    t.trace = fit_lines(text.str());
    return t;
}

bool TracedBackward::pass() const {
    return std::all_of(checks.begin(), checks.end(), [](const reference::GradientChecks& c) { return c.pass(); });
}

TracedBackward traced_backward(const Algorithm& forward, const AttentionProblem& p, const GpuSpec& gpu,
                               const TileConfig& forward_tiles, const TileConfig& backward_tiles, std::uint64_t seed) {
    std::vector<reference::Matrix> Q, K, V, dO;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        const std::uint64_t s = seed + static_cast<std::uint64_t>(h);
        auto in = reference::random_qkv(p.N, p.Nk, p.d, s, p.dtype);
        Q.push_back(in.Q);
        K.push_back(in.K);
        V.push_back(in.V);
        dO.push_back(reference::round_matrix(reference::random_normal(p.N, p.d, s + 7919), p.dtype));
    }
    TracedBackward t;
    std::ostringstream text;
    TracePrinter printer(text, 4, 4);
    t.run = run_functional_backward(forward, backward_program(forward), p, gpu, forward_tiles, backward_tiles, Q, K, V, dO,
                                    &printer);
    t.trace = fit_lines(text.str());
    reference::AttentionOptions options;
    options.causal = p.causal;
    for (std::size_t h = 0; h < Q.size(); ++h)
        t.checks.push_back(reference::check_gradients({t.run.dQ[h], t.run.dK[h], t.run.dV[h]}, Q[h], K[h], V[h], dO[h], options,
                                                      p.dtype));
    return t;
}

}  // namespace fasim::lessons

#include <map>
#include <memory>

namespace fasim::lessons {

const AlgorithmResult& sim_cached(const Algorithm& forward, PassSelection pass, const AttentionProblem& p, const GpuSpec& gpu,
                                  const TileRequest& t) {
    static std::map<std::string, std::unique_ptr<AlgorithmResult>> cache;
    const std::string key = std::string(forward.id) + "|" + pass_name(pass) + "|" + p.describe() + "|" + std::to_string(p.batch) +
                            "|" + gpu.name + "|" + std::to_string(gpu.smem_per_block_bytes) + "|" + std::to_string(t.Br.value_or(0)) +
                            "|" + std::to_string(t.Bc.value_or(0)) + "|" + (t.matmul == MatmulMode::naive ? "naive" : "tiled") +
                            "|" + std::to_string(t.kv_splits);
    auto& slot = cache[key];
    if (!slot) slot = std::make_unique<AlgorithmResult>(simulate(forward, pass, p, gpu, t));
    return *slot;
}

const AlgorithmResult& sim_cached(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& t) {
    return sim_cached(algo, PassSelection::fwd, p, gpu, t);
}

}  // namespace fasim::lessons
