// The simulations behind the figures: the N sweep, the chosen problem, the block-size
// sweep, and the closed forms drawn next to the simulated traffic.
#include <algorithm>
#include <cmath>

#include "common/errors.hpp"
#include "figures/figures.hpp"
#include "figures/progress.hpp"
#include "gpu/gpu_catalog.hpp"
#include "model/sweep.hpp"

namespace fasim::figures {

std::vector<std::int64_t> default_sweep_n() {
    std::vector<std::int64_t> n;
    for (std::int64_t v = 512; v <= 65536; v *= 2) n.push_back(v);
    return n;
}

FigureRequest::FigureRequest()
    : gpu(find_gpu_preset(default_gpu_name())),
      algos(training_algorithms()),
      sweep_n(default_sweep_n()) {}

AttentionProblem problem_at(const AttentionProblem& p, std::int64_t n) {
    AttentionProblem q = p;
    if (q.Nk == q.N) q.Nk = n;
    q.N = n;
    return q;
}

bool over_budget(const Algorithm& algo, const AttentionProblem& p, const TileConfig& tiles) {
    return algo.tile_step_budget > 0 && algo.tile_steps(p, tiles) > algo.tile_step_budget;
}

NSweep run_n_sweep(const FigureRequest& req, Progress* progress) {
    NSweep s;
    s.n = req.sweep_n.empty() ? default_sweep_n() : req.sweep_n;  // ascending, each N once
    std::sort(s.n.begin(), s.n.end());
    s.n.erase(std::unique(s.n.begin(), s.n.end()), s.n.end());
    s.algos = req.algos;
    s.by_algo.assign(s.algos.size(), {});
    s.over_budget.assign(s.algos.size(), {});

    // Which N each algorithm can afford (tile choice does not depend on N; checked per N anyway).
    std::vector<std::vector<std::int64_t>> ns(s.algos.size());
    for (std::size_t a = 0; a < s.algos.size(); ++a) {
        for (std::int64_t n : s.n) {
            const AttentionProblem p = problem_at(req.problem, n);
            validate(p);
            // The programs the pass runs: the forward, its backward, or both.
            bool over = false;
            if (req.pass != PassSelection::bwd)
                over = over_budget(*s.algos[a], p, choose_tiles(*s.algos[a], p, req.gpu, req.tiles));
            if (req.pass != PassSelection::fwd) {
                const Algorithm& b = backward_program(*s.algos[a]);
                over = over || over_budget(b, p, choose_tiles(b, p, req.gpu, req.tiles));
            }
            if (over) {
                s.over_budget[a].push_back(n);
                if (progress) progress->tick();
            } else {
                ns[a].push_back(n);
            }
        }
    }
    // The simulator's own parallel sweep (results in order, whatever the schedule): one call
    // for all algorithms when they share the same N, else one per algorithm.
    auto sweep = [&](const std::vector<const Algorithm*>& algos, const std::vector<std::int64_t>& n) {
        SweepRequest sr;
        sr.algos = algos;
        sr.base = req.problem;
        sr.ns = n;
        sr.tiles = req.tiles;
        sr.model = req.model;
        sr.pass = req.pass;
        return run_sweep(sr, req.gpu, [progress] {
            if (progress) progress->tick();
        });
    };
    if (std::all_of(ns.begin(), ns.end(), [&](const auto& v) { return v == ns.front(); })) {
        auto by_n = sweep(s.algos, ns.front());
        for (std::size_t a = 0; a < s.algos.size(); ++a)
            for (auto& row : by_n) s.by_algo[a].push_back(std::move(row[a]));
    } else {
        for (std::size_t a = 0; a < s.algos.size(); ++a)
            for (auto& row : sweep({s.algos[a]}, ns[a])) s.by_algo[a].push_back(std::move(row[0]));
    }
    return s;
}

std::vector<AlgorithmResult> run_chosen(const FigureRequest& req) {
    std::vector<AlgorithmResult> rs;
    for (const Algorithm* a : req.algos)
        rs.push_back(simulate(*a, req.pass, req.problem, req.gpu, req.tiles, req.model, req.timeline_blocks));
    return rs;
}

BlockSizeSweep run_block_size_sweep(const FigureRequest& req) {
    BlockSizeSweep s;
    for (const Algorithm* a : req.algos)
        if (a->tile_sweep != TileSweep::none) s.algos.push_back(a);
    for (const Algorithm* algo : s.algos) {
        const Algorithm& a = *algo;
        const std::int64_t fixed_br =
            a.tile_sweep == TileSweep::bc_only
                ? choose_tiles(a, req.problem, req.gpu, TileRequest{req.tiles.Br, std::nullopt, req.tiles.matmul}).Br
                : 0;
        s.fixed_br.push_back(fixed_br);
        std::vector<BlockSizePoint> pts;
        std::vector<std::int64_t> skipped, over;
        for (std::int64_t b : kBlockSizes) {
            TileRequest t;
            t.matmul = req.tiles.matmul;
            t.Bc = b;
            t.Br = a.tile_sweep == TileSweep::bc_only ? fixed_br : b;
            TileConfig tiles;
            try {
                tiles = choose_tiles(a, req.problem, req.gpu, t);
            } catch (const UsageError&) {
                skipped.push_back(b);  // does not fit in shared memory: the caption says so
                continue;
            }
            if (over_budget(a, req.problem, tiles)) {
                over.push_back(b);
                continue;
            }
            pts.push_back({b, simulate(a, req.problem, req.gpu, t, req.model)});
        }
        s.points.push_back(std::move(pts));
        s.skipped.push_back(std::move(skipped));
        s.over_budget.push_back(std::move(over));
    }
    return s;
}

AttentionProblem decode_problem(const AttentionProblem& p) {
    AttentionProblem q = p;
    if (q.N >= q.Nk) {
        q.N = 1;
        q.causal = false;
    }
    return q;
}

std::vector<std::int64_t> default_sweep_context() {
    std::vector<std::int64_t> nk;
    for (std::int64_t v = 1024; v <= 262144; v *= 2) nk.push_back(v);
    return nk;
}

ContextSweep run_context_sweep(const FigureRequest& req, Progress* progress) {
    ContextSweep s;
    s.problem = decode_problem(req.problem);
    s.nk = default_sweep_context();
    s.algos = {&algorithm("fa2"), &algorithm("flash_decoding")};
    SweepRequest sr;
    sr.algos = s.algos;
    sr.base = s.problem;
    sr.ns = s.nk;
    sr.model = req.model;
    sr.parameter = SweepParameter::Nk;
    auto by_nk = run_sweep(sr, req.gpu, [progress] {
        if (progress) progress->tick();
    });
    s.by_algo.assign(s.algos.size(), {});
    for (auto& row : by_nk)
        for (std::size_t a = 0; a < s.algos.size(); ++a) s.by_algo[a].push_back(std::move(row[a]));
    return s;
}

std::optional<double> standard_hbm_limit_n(const NSweep& sweep, const GpuSpec& gpu) {
    for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
        if (!sweep.algos[a]->baseline) continue;
        const auto& row = sweep.by_algo[a];
        for (std::size_t i = 1; i < row.size(); ++i) {
            if (!(row[i - 1].fits_in_hbm && !row[i].fits_in_hbm)) continue;
            // log-log interpolation: exact for a power law, close for a·N² + b·N.
            const double n0 = static_cast<double>(row[i - 1].problem.N), n1 = static_cast<double>(row[i].problem.N);
            const double b0 = static_cast<double>(row[i - 1].global_bytes), b1 = static_cast<double>(row[i].global_bytes);
            const double cap = static_cast<double>(gpu.hbm_bytes);
            const double slope = std::log(b1 / b0) / std::log(n1 / n0);
            const double n = n0 * std::pow(cap / b0, 1 / slope);
            return std::clamp(n, n0, n1);
        }
    }
    return std::nullopt;
}

}  // namespace fasim::figures
