// The figures `fa-sim --plot DIR` writes, each built from simulator results:
//
//   traffic_vs_n            HBM traffic (papers' sense) and DRAM bytes vs N, log-log,
//                           with the closed-form asymptotes and where standard
//                           attention stops fitting in HBM
//   tensor_bars             bytes per tensor (Q K V O S P m l LSE) at the chosen N
//   roofline                the GPU's roofline with each algorithm placed on it
//   block_size_sweep_hbm    FA1/FA2 HBM traffic vs block size (FlashAttention Fig. 2, middle)
//   block_size_sweep_time   FA1/FA2 predicted runtime vs block size
//   occupancy_timeline_fa1  which SM runs which thread block when (idle SMs = empty rows)
//   occupancy_timeline_fa2
//   decode_time_vs_context  a decode step (one query row) of the chosen problem: FA2's and
//                           FlashDecoding's predicted time vs the K/V cache length Nk,
//                           beside K and V read once at the HBM bandwidth
//   decode_sm_busy_vs_context  the share of SM time their main kernels keep busy
//   predicted_vs_measured   only with a measured-results file (measured_results.hpp)
//
// With --pass bwd or fwd+bwd (FigureRequest::pass) the figures that make sense for training instead
// (figures.cpp, 8.), named with the pass (_bwd, _fwd_bwd): traffic_vs_n and tensor_bars of the
// passes run, held_memory_vs_n (what the forward keeps for the backward: quadratic in N for standard
// attention, linear for flash) and flops_vs_n (matmul FLOPs, and of them those recomputed).
//
// Every figure function returns a Figure: the plot::Chart plus a copy of what was
// plotted, so tests (and notebooks) can check the numbers without parsing SVG.
// Titles, axis labels and captions are generated from the data and the request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "figures/measured_results.hpp"
#include "gpu/gpu_spec.hpp"
#include "model/runtime_model.hpp"
#include "model/simulation.hpp"
#include "plot/chart.hpp"
#include "problem/attention_problem.hpp"

namespace fasim::figures {

// 512, 1024, ..., 65536.
std::vector<std::int64_t> default_sweep_n();

struct FigureRequest {
    FigureRequest();  // A100-SXM4-40GB, the default problem, all four algorithms

    GpuSpec gpu;
    AttentionProblem problem;              // the user's chosen N, B, H, d, dtype, causal
    TileRequest tiles;
    ModelOptions model;
    std::vector<const Algorithm*> algos;   // in the order given (forward programs; `pass` picks their passes)
    PassSelection pass = PassSelection::fwd;  // --pass: bwd or fwd+bwd draws the training figures
    std::vector<std::int64_t> sweep_n;     // traffic_vs_n's x values (default_sweep_n())
    std::optional<std::string> measured_path;  // fa-validate's JSON; figure 6 only when given and present
    bool progress = false;                 // progress bars on stderr (enable only when stderr is a terminal)
    bool png = true;                       // also write PNGs where an SVG-to-PNG converter is installed
    std::size_t timeline_blocks = 4096;    // thread blocks drawn in the occupancy timelines (at most)
};

// One x/y series as it was handed to the chart; series[K] is data-series="K" in the SVG.
struct SeriesData {
    std::string name;
    std::vector<double> x, y;
    bool reference = false;  // a closed form or roofline, not simulator output
};

struct Figure {
    std::string name;  // file stem: <name>.svg / <name>.png
    plot::Chart chart;
    std::vector<SeriesData> series;
    plot::StackedBars bars;         // tensor_bars
    plot::Timeline timeline;        // occupancy timelines
    std::vector<std::string> notes; // what was left out (the caption says it too), for the caller
};

// ---- data ------------------------------------------------------------------------

// The problem with N (and Nk, when the user's Nk equals N) set to n.
AttentionProblem problem_at(const AttentionProblem& p, std::int64_t n);

class Progress;

// Whether one simulation is more work than a figure spends on a point: each algorithm says how
// many tile steps its simulation walks (Algorithm::tile_steps: one Q tile meeting one K/V tile; for
// standard attention, one output tile of S, weighted 50 for naive GEMMs) and the most a figure
// spends (Algorithm::tile_step_budget). The counting executor's time and memory grow with the
// steps; FA1 with tiny tiles (Bc=1 where nothing larger fits, e.g. a T4 with d >= 128) costs about
// 1 µs and 150 B per step, so a sweep to N=65536 would take minutes and gigabytes. Points over the
// budget are left out of the figures and named in their captions.
bool over_budget(const Algorithm& algo, const AttentionProblem& p, const TileConfig& tiles);

struct NSweep {
    std::vector<std::int64_t> n;                          // every N asked for, ascending
    std::vector<const Algorithm*> algos;
    std::vector<std::vector<AlgorithmResult>> by_algo;    // [algo][k], ascending N (r.problem.N)
    std::vector<std::vector<std::int64_t>> over_budget;   // [algo]: N left out (tile_step_budget)
};
NSweep run_n_sweep(const FigureRequest& req, Progress* progress = nullptr);

// Every requested algorithm at the chosen problem, with timelines recorded.
std::vector<AlgorithmResult> run_chosen(const FigureRequest& req);

struct BlockSizePoint {
    std::int64_t block = 0;  // Bc (TileSweep::bc_only, Br fixed) or Br = Bc (TileSweep::square)
    AlgorithmResult result;
};
struct BlockSizeSweep {
    std::vector<const Algorithm*> algos;                 // those requested whose tiles sweep (Algorithm::tile_sweep)
    std::vector<std::vector<BlockSizePoint>> points;     // [algo][size that fits]
    std::vector<std::vector<std::int64_t>> skipped;      // [algo][size that does not fit in shared memory]
    std::vector<std::vector<std::int64_t>> over_budget;  // [algo][size over tile_step_budget]
    std::vector<std::int64_t> fixed_br;                  // [algo]: Br of a bc_only sweep (its default), else 0
};
inline constexpr std::int64_t kBlockSizes[] = {16, 32, 64, 128, 256};
BlockSizeSweep run_block_size_sweep(const FigureRequest& req);

// A decode step of the chosen problem: its B, H, K/V heads, d, dtype with one query row (N = 1), or
// the problem itself when it is already decode-shaped (N < Nk); causal is dropped for N = 1 (one row
// sees its whole cache).
AttentionProblem decode_problem(const AttentionProblem& p);
// 1024, 2048, ..., 262144.
std::vector<std::int64_t> default_sweep_context();
struct ContextSweep {
    AttentionProblem problem;                          // the decode step; Nk varies
    std::vector<std::int64_t> nk;                      // ascending
    std::vector<const Algorithm*> algos;               // FA2 without a split, then FlashDecoding
    std::vector<std::vector<AlgorithmResult>> by_algo; // [algo][k]
};
ContextSweep run_context_sweep(const FigureRequest& req, Progress* progress = nullptr);

// N at which standard attention's global tensors (S, P, Q, K, V, O) stop fitting in
// HBM, interpolated between the sweep points that bracket it; nullopt if they fit
// (or do not fit) over the whole sweep, or standard is not in the sweep.
std::optional<double> standard_hbm_limit_n(const NSweep& sweep, const GpuSpec& gpu);

// ---- the figures ------------------------------------------------------------------

Figure traffic_vs_n(const FigureRequest& req, const NSweep& sweep);
Figure tensor_bars(const FigureRequest& req, const std::vector<AlgorithmResult>& at_n);
Figure roofline(const FigureRequest& req, const std::vector<AlgorithmResult>& at_n);
// Two figures: [0] HBM traffic (block_size_sweep_hbm), [1] runtime (block_size_sweep_time).
std::vector<Figure> block_size_sweep(const FigureRequest& req, const BlockSizeSweep& sweep);
// `r` must have been simulated with timeline_blocks > 0 (run_chosen does).
Figure occupancy_timeline(const FigureRequest& req, const AlgorithmResult& r);
Figure predicted_vs_measured(const FigureRequest& req, const MeasuredResults& measured);
// Two figures: [0] predicted time (decode_time_vs_context), [1] SM busy share (decode_sm_busy_vs_context).
std::vector<Figure> decode_vs_context(const FigureRequest& req, const ContextSweep& sweep);

// The training figures (req.pass bwd or fwd+bwd), from a sweep and the chosen problem run with that
// pass: traffic_vs_n, tensor_bars, held_memory_vs_n, flops_vs_n, each name ending in pass_suffix().
std::string pass_suffix(PassSelection pass);  // "", "_bwd", "_fwd_bwd"
Figure held_memory_vs_n(const FigureRequest& req, const NSweep& sweep);
Figure flops_vs_n(const FigureRequest& req, const NSweep& sweep);
std::vector<Figure> training_figures(const FigureRequest& req, const NSweep& sweep, const std::vector<AlgorithmResult>& at_n);

// All figures for the request (running each simulation once). `notes` receives
// one line per figure left out and why (e.g. no measured-results file).
std::vector<Figure> make_figures(const FigureRequest& req, std::vector<std::string>* notes = nullptr);

// Writes every figure as DIR/<name>.svg (atomically) and DIR/<name>.png where an
// SVG-to-PNG converter is installed; returns the paths written, in figure order.
// A missing or unwritable DIR is the plot library's UsageError. `notes` as above,
// plus one line when no PNG converter was found.
std::vector<std::string> write_figures(const std::string& dir, const FigureRequest& req,
                                       std::vector<std::string>* notes = nullptr);

}  // namespace fasim::figures
