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
      algos(std::begin(kAllAlgos), std::end(kAllAlgos)),
      sweep_n(default_sweep_n()) {}

AttentionProblem problem_at(const AttentionProblem& p, std::int64_t n) {
    AttentionProblem q = p;
    if (q.Nk == q.N) q.Nk = n;
    q.N = n;
    return q;
}

std::int64_t tile_steps(Algo algo, const AttentionProblem& p, const TileConfig& t) {
    const std::int64_t BH = p.batch_heads();
    switch (algo) {
        case Algo::standard: {
            // Naive GEMMs load every operand element per thread: about 50 times the work of a
            // tiled 64x64 output tile per 16x16 one (measured with the counting executor).
            const std::int64_t tiles = BH * ceil_div(p.N, t.gemm_m) * ceil_div(p.Nk, t.gemm_n);
            return t.matmul == MatmulMode::naive ? 50 * tiles : tiles;
        }
        case Algo::tiled: return 2 * BH * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);
        case Algo::fa1:
        case Algo::fa2: return BH * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);
    }
    return 0;
}

// About 2-3 s of simulation per point on a laptop core. The defaults (A100, B·H=16, d=64,
// fp16) stay below: at N=65536 standard takes 16.8M steps, FA1 3.3M, FA2 4.2M.
std::int64_t tile_step_budget(Algo algo) {
    switch (algo) {
        case Algo::standard: return 64'000'000;
        case Algo::fa1: return 4'000'000;
        case Algo::tiled:
        case Algo::fa2: break;
    }
    return 100'000'000;
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
            const TileConfig t = choose_tiles(s.algos[a], p, req.gpu, req.tiles);
            if (tile_steps(s.algos[a], p, t) > tile_step_budget(s.algos[a])) {
                s.over_budget[a].push_back(n);
                if (progress) progress->tick();
            } else {
                ns[a].push_back(n);
            }
        }
    }
    // The simulator's own parallel sweep (results in order, whatever the schedule): one call
    // for all algorithms when they share the same N, else one per algorithm.
    auto sweep = [&](const std::vector<Algo>& algos, const std::vector<std::int64_t>& n) {
        SweepRequest sr;
        sr.algos = algos;
        sr.base = req.problem;
        sr.ns = n;
        sr.tiles = req.tiles;
        sr.model = req.model;
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
    for (Algo a : req.algos) rs.push_back(simulate(a, req.problem, req.gpu, req.tiles, req.model, req.timeline_blocks));
    return rs;
}

BlockSizeSweep run_block_size_sweep(const FigureRequest& req) {
    BlockSizeSweep s;
    for (Algo a : req.algos)
        if (a == Algo::fa1 || a == Algo::fa2) s.algos.push_back(a);
    s.fa1_br = choose_tiles(Algo::fa1, req.problem, req.gpu, TileRequest{req.tiles.Br, std::nullopt, req.tiles.matmul}).Br;
    for (Algo a : s.algos) {
        std::vector<BlockSizePoint> pts;
        std::vector<std::int64_t> skipped, over;
        for (std::int64_t b : kBlockSizes) {
            TileRequest t;
            t.matmul = req.tiles.matmul;
            t.Bc = b;
            t.Br = a == Algo::fa1 ? s.fa1_br : b;
            TileConfig tiles;
            try {
                tiles = choose_tiles(a, req.problem, req.gpu, t);
            } catch (const UsageError&) {
                skipped.push_back(b);  // does not fit in shared memory: the caption says so
                continue;
            }
            if (tile_steps(a, req.problem, tiles) > tile_step_budget(a)) {
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

std::optional<double> closed_form_hbm_bytes(Algo algo, const AttentionProblem& p, const TileConfig& tiles) {
    const double N = static_cast<double>(p.N), Nk = static_cast<double>(p.Nk), d = static_cast<double>(p.d);
    const double e = static_cast<double>(p.elem_bytes()), BH = static_cast<double>(p.batch_heads());
    switch (algo) {
        case Algo::standard: return 4 * N * Nk * e * BH;
        case Algo::fa1: return (Nk / static_cast<double>(tiles.Bc)) * (N * d * e + 2 * N * d * 4 + 4 * N * 4) * BH;
        case Algo::fa2: return 2 * N * Nk * d * e * BH / static_cast<double>(tiles.Br);
        case Algo::tiled: break;
    }
    return std::nullopt;
}

std::string closed_form_text(Algo algo, const AttentionProblem& p, const TileConfig& tiles) {
    const std::string nk = p.Nk == p.N ? "N" : "Nk";
    const std::string nnk = p.Nk == p.N ? "N\u00B2" : "N\u00B7Nk";
    switch (algo) {
        case Algo::standard:
            return "standard 4\u00B7" + nnk + "\u00B7e\u00B7B\u00B7H (S and P each written and read once)";
        case Algo::fa1:
            return "FA1 (" + nk + "/Bc)\u00B7N\u00B7(d\u00B7e + 8d + 16)\u00B7B\u00B7H with Bc=" + std::to_string(tiles.Bc) +
                   (tiles.M_elements > 0 && tiles.Bc == ceil_div(tiles.M_elements, 4 * p.d) ? " = \u2308M/4d\u2309" : "") +
                   " (Q read, fp32 running O read and written, fp32 m and \u2113 read and written once per K/V block: "
                   "\u221D N\u00B2d\u00B2/M)";
        case Algo::fa2:
            return "FA2 2\u00B7" + nnk + "\u00B7d\u00B7e\u00B7B\u00B7H/Br with Br=" + std::to_string(tiles.Br) +
                   " (K and V read once per Q block)";
        case Algo::tiled: break;
    }
    return {};
}

std::optional<double> standard_hbm_limit_n(const NSweep& sweep, const GpuSpec& gpu) {
    for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
        if (sweep.algos[a] != Algo::standard) continue;
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
