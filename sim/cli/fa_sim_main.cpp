// fa-sim: the command-line front end of the simulator.
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <iostream>
#include <utility>
#include <unistd.h>

#include "cli/cli_options.hpp"
#include "cli/version.hpp"
#include "common/errors.hpp"
#include "common/output.hpp"
#include "exec/functional_executor.hpp"
#include "exec/problem_inputs.hpp"
#include "exec/trace_printer.hpp"
#include "figures/figures.hpp"
#include "figures/progress.hpp"
#include "gpu/gpu_catalog.hpp"
#include "attention_backward.hpp"
#include "inputs.hpp"
#include "precision.hpp"
#include "model/sweep.hpp"
#include "report/report.hpp"
#include "report/units.hpp"

namespace {

using namespace fasim;

void list_gpus() {
    for (const GpuSpec& g : gpu_presets()) {
        std::cout << g.name << (g.name == default_gpu_name() ? " (default)" : "") << "\n  " << g.description << "\n  "
                  << g.sm_count << " SMs, " << units::capacity(static_cast<double>(g.smem_per_block_bytes))
                  << " shared memory per block, " << units::capacity(static_cast<double>(g.l2_bytes)) << " L2, "
                  << units::capacity(static_cast<double>(g.hbm_bytes)) << " HBM at "
                  << units::rate(g.effective_hbm_bandwidth(), "B/s") << ", " << units::rate(g.matmul_flops(DType::fp16), "FLOP/s")
                  << " fp16 tensor\n";
        for (const auto& [field, source] : g.sources) std::cout << "    " << field << ": " << source << '\n';
        std::cout << '\n';
    }
}

// One line per registered algorithm: its id (what --algo takes), then its title.
void list_algos() {
    std::size_t width = 0;
    for (const Algorithm* a : algorithms()) width = std::max(width, a->id.size());
    for (const Algorithm* a : algorithms()) std::cout << a->id << std::string(width + 2 - a->id.size(), ' ') << a->title << '\n';
}

// The kernel catalog, a few lines per kernel.
void list_kernels() {
    for (const KernelVariant& k : kernel_catalog()) {
        std::string dims;
        for (int d : k.head_dims) {
            if (d <= 0) continue;
            if (!dims.empty()) dims += '/';
            dims += std::to_string(d);
        }
        std::cout << k.name << " (" << k.algorithm << "): " << k.what << "\n  " << products_name(k.products)
                  << (k.fp32_on_cuda_cores ? " (fp32 on the CUDA cores)" : "") << "; tiles: " << tile_rule_name(k.tiles)
                  << "; " << (k.fp32 ? "fp32, fp16, bf16" : "fp16, bf16") << "; d " << dims << "; sm_"
                  << k.min_compute_capability << "+\n  " << k.source << (k.in_repository ? "" : " (not built here)") << "\n";
    }
}

// --trace: the tile program on real numbers, every step printed, then the answer
// checked against exact attention in float64.
int trace(const CliOptions& o) {
    const AttentionProblem& p = o.problem;
    const Algorithm& algo = *o.algos.front();
    // Unless told otherwise, two tiles per sequence, so the online-softmax updates show.
    TileRequest request = o.tiles;
    const bool default_tiles = !request.Br && !request.Bc && algo.tunable_tiles;
    if (default_tiles) request.Br = request.Bc = std::max<std::int64_t>(1, (std::max(p.N, p.Nk) + 1) / 2);
    const TileConfig tiles = choose_tiles(algo, p, o.gpu, request);
    const ProblemInputs in = random_inputs(p, o.seed);
    std::cout << "fa-sim trace: " << algo.title << "\n" << p.describe() << ", Br=" << tiles.Br << ", Bc=" << tiles.Bc
              << (tiles.q_splits > 1 ? ", q_splits=" + std::to_string(tiles.q_splits) : "")
              << (tiles.kv_splits > 1 ? ", kv_splits=" + std::to_string(tiles.kv_splits) : "")
              << (default_tiles ? " (--trace default: two tiles per sequence; --Br/--Bc to change)" : "")
              << "\nQ, K, V ~ N(0,1), seed " << o.seed << "; values shown for the first 4 rows\n\n";
    TracePrinter printer(std::cout);
    const FunctionalRun run = run_functional(algo, p, o.gpu, tiles, in.Q, in.K, in.V, &printer);
    reference::AttentionOptions options;
    options.causal = p.causal;
    std::cout << '\n';
    bool all_pass = true;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        const auto hh = static_cast<std::size_t>(h);
        const auto check = reference::check_tolerance(run.O[hh], in.Q[hh], in.K_of(p, h), in.V_of(p, h), options, p.dtype);
        all_pass &= check.pass;
        std::cout << "head " << h << ": max |O - O_exact| = " << check.error << " (allowed " << check.bound << ", naive "
                  << dtype_name(p.dtype) << " attention: ";
        if (check.naive_overflow) std::cout << "overflows";
        else std::cout << check.naive_error;
        std::cout << ") -> " << (check.pass ? "equals exact attention" : "DIFFERS from exact attention") << '\n';
        // Logits beyond what the dtype stores: S held in the dtype (standard attention, the naive yardstick)
        // becomes inf and O NaN, as on a GPU. Said, not hidden (docs: reference/TOLERANCES.md).
        const double largest = reference::max_abs_logit(in.Q[hh], in.K_of(p, h), options);
        if (largest >= reference::overflow_threshold(p.dtype))
            std::cout << "warning: head " << h << ": |scale*q.k| reaches " << largest << ", beyond what " << dtype_name(p.dtype)
                      << " stores: a stored S overflows to inf and O becomes NaN (standard attention does that, as an "
                      << dtype_name(p.dtype) << " GPU kernel would; tiled, FA1 and FA2 keep S in fp32)\n";
    }
    return all_pass ? 0 : 1;
}

// --trace --pass bwd: the forward on real numbers (not printed), then the backward's every step, then
// dQ, dK and dV checked against the float64 backward.
int trace_backward(const CliOptions& o) {
    const AttentionProblem& p = o.problem;
    const Algorithm& forward = *o.algos.front();
    const Algorithm& backward = backward_program(forward);
    TileRequest request = o.tiles;
    const bool default_tiles = !request.Br && !request.Bc && backward.tunable_tiles;
    if (default_tiles) request.Br = request.Bc = std::max<std::int64_t>(1, (std::max(p.N, p.Nk) + 1) / 2);
    const TileConfig fwd_tiles = choose_tiles(forward, p, o.gpu, request);
    const TileConfig bwd_tiles = choose_tiles(backward, p, o.gpu, request);
    // Q and dO per query head, K and V per K/V head (the draws of head h come from seed + h, as before K/V
    // heads existed).
    const ProblemInputs in = random_inputs(p, o.seed);
    std::vector<reference::Matrix> dO;
    std::vector<std::int64_t> kv_head_of;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        const auto seed = o.seed + static_cast<std::uint64_t>(h);
        dO.push_back(reference::round_matrix(reference::random_normal(p.N, p.d, seed + 7919), p.dtype));
        kv_head_of.push_back(p.kv_head_of(h));
    }
    std::cout << "fa-sim trace: " << backward.title << "\n" << p.describe() << ", Br=" << bwd_tiles.Br << ", Bc=" << bwd_tiles.Bc
              << (default_tiles ? " (--trace default: two tiles per sequence; --Br/--Bc to change)" : "")
              << "\nQ, K, V, dO ~ N(0,1), seed " << o.seed << "; the forward ran first (not shown); values shown for the "
              << "first 4 rows\n\n";
    TracePrinter printer(std::cout);
    const BackwardRun run = run_functional_backward(forward, backward, p, o.gpu, fwd_tiles, bwd_tiles, in.Q, in.K, in.V, dO, &printer);
    reference::AttentionOptions options;
    options.causal = p.causal;
    std::cout << '\n';
    const reference::GroupedGradientChecks checks =
        reference::check_grouped_gradients(run.dQ, run.dK, run.dV, in.Q, in.K, in.V, dO, kv_head_of, options, p.dtype);
    auto print = [&](const char* name, const std::vector<reference::GradientCheck>& each, const char* head) {
        for (std::size_t h = 0; h < each.size(); ++h) {
            const reference::GradientCheck& check = each[h];
            std::cout << head << ' ' << h << ": max |" << name << " - " << name << "_exact| = " << check.error << " (allowed "
                      << check.bound << ", naive " << dtype_name(p.dtype) << " backward: " << check.naive_error << ") -> "
                      << (check.pass ? "equals the exact gradient" : "DIFFERS from the exact gradient") << '\n';
        }
    };
    // dK and dV belong to K/V heads: with grouped heads each is the sum over its group of query heads.
    const char* kv_head = p.grouped() ? "K/V head" : "head";
    print("dQ", checks.dQ, "head");
    print("dK", checks.dK, kv_head);
    print("dV", checks.dV, kv_head);
    const bool all_pass = checks.pass();
    return all_pass ? 0 : 1;
}

// A bare --plot writes into fa-sim-plots, made here when it is missing (a DIR given must exist: a typo
// should not make a tree of folders).
void create_default_plot_dir(const std::string& dir) {
    std::error_code ec;
    if (std::filesystem::create_directory(dir, ec) || !ec) return;  // made now, or there already
    throw usage_error("--plot: the default folder " + dir + " cannot be created (" + ec.message() + ")",
                      "a bare --plot writes into ./" + dir + ", made in the current directory",
                      "run fa-sim from a writable directory, or pass --plot DIR with a directory that exists");
}

int run(int argc, char** argv) {
    const CliOptions o = parse_cli(argc, argv);
    if (o.help) {
        std::cout << o.help_text;
        return 0;
    }
    if (o.version) {
        std::cout << "fa-sim " << version_text() << '\n';
        return 0;
    }
    if (o.list_gpus) {
        list_gpus();
        return 0;
    }
    if (o.list_algos) {
        list_algos();
        return 0;
    }
    if (o.list_kernels) {
        if (o.json) std::cout << json_text(catalog_json(), 2) << '\n';
        else list_kernels();
        return 0;
    }
    if (o.trace) return o.pass == PassSelection::fwd ? trace(o) : trace_backward(o);
    if (o.plot_dir) {
        figures::FigureRequest req;
        req.gpu = o.gpu;
        req.problem = o.problem;
        req.tiles = o.tiles;
        req.model = o.model;
        req.algos = o.algos;
        req.pass = o.pass;
        if (!o.sweep_n.empty()) req.sweep_n = o.sweep_n;
        req.measured_path = o.measured;
        req.progress = isatty(fileno(stderr)) != 0;
        if (o.plot_dir_is_default) {
            if (o.measured) (void)figures::read_measured_results(*o.measured);  // a bad file: no folder left behind
            create_default_plot_dir(*o.plot_dir);
        }
        std::vector<std::string> notes;
        for (const auto& path : figures::write_figures(*o.plot_dir, req, &notes)) std::cout << "wrote " << path << '\n';
        for (const auto& n : notes) std::cerr << escape_control("fa-sim: " + n) << '\n';
        return 0;
    }
    ReportStyle style;
    style.unicode = isatty(fileno(stdout)) != 0;

    auto run_all = [&](const AttentionProblem& p) {
        std::vector<AlgorithmResult> rs;
        for (const Algorithm* a : o.algos) rs.push_back(simulate(*a, o.pass, p, o.gpu, o.tiles, o.model));
        return rs;
    };

    if (!o.sweep_n.empty()) {
        SweepRequest req{o.algos, o.problem, o.sweep_n, o.tiles, o.model, 0, o.pass, o.sweep_parameter};
        // A bar on stderr, only on a terminal and only once the sweep has run for a second.
        figures::Progress progress("sweep", static_cast<std::int64_t>(o.sweep_n.size() * o.algos.size()),
                                   isatty(fileno(stderr)) != 0);
        const auto by_n = run_sweep(req, o.gpu, [&] { progress.tick(); });
        progress.finish();
        if (o.json) std::cout << json_text(sweep_json(by_n, o.gpu, o.sweep_parameter), 2) << '\n';
        else if (o.csv) {
            std::cout << csv_header() << '\n';
            for (const auto& rs : by_n)
                for (const auto& r : rs) std::cout << csv_row(r) << '\n';
        } else print_sweep(std::cout, by_n, o.gpu, style, o.sweep_parameter);
        return 0;
    }

    const std::vector<AlgorithmResult> rs = run_all(o.problem);
    if (o.json) std::cout << json_text(report_json(rs, o.gpu), 2) << '\n';  // counts past 64 bits with every digit
    else if (o.csv) {
        std::cout << csv_header() << '\n';
        for (const auto& r : rs) std::cout << csv_row(r) << '\n';
    } else if (rs.size() == 1) print_report(std::cout, rs.front(), o.gpu, style);
    else print_comparison(std::cout, rs, o.gpu, style);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int rc = 0;
    try {
        rc = run(argc, argv);
    } catch (const fasim::UsageError& e) {
        std::cerr << "fa-sim: error: " << e.what() << '\n';
        rc = 2;
    } catch (const std::exception& e) {
        std::cerr << "fa-sim: internal error: " << fasim::escape_control(e.what())
                  << " (please report this with the command line)\n";
        rc = 1;
    }
    // A report that did not reach its file (a full disk, > /dev/full) is an error, not exit code 0.
    return fasim::finish_stdout("fa-sim", rc);
}
