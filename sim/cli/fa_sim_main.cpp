// fa-sim: the command-line front end of the simulator.
#include <cstdio>
#include <iostream>
#include <unistd.h>

#include "cli/cli_options.hpp"
#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"
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

int run(int argc, char** argv) {
    const CliOptions o = parse_cli(argc, argv);
    if (o.help) {
        std::cout << o.help_text;
        return 0;
    }
    if (o.list_gpus) {
        list_gpus();
        return 0;
    }
    ReportStyle style;
    style.unicode = isatty(fileno(stdout)) != 0;

    auto run_all = [&](const AttentionProblem& p) {
        std::vector<AlgorithmResult> rs;
        for (Algo a : o.algos) rs.push_back(simulate(a, p, o.gpu, o.tiles, o.model));
        return rs;
    };

    if (!o.sweep_n.empty()) {
        SweepRequest req{o.algos, o.problem, o.sweep_n, o.tiles, o.model, 0};
        const auto by_n = run_sweep(req, o.gpu);
        if (o.json) std::cout << sweep_json(by_n, o.gpu).dump(2) << '\n';
        else if (o.csv) {
            std::cout << csv_header() << '\n';
            for (const auto& rs : by_n)
                for (const auto& r : rs) std::cout << csv_row(r) << '\n';
        } else print_sweep(std::cout, by_n, o.gpu, style);
        return 0;
    }

    const std::vector<AlgorithmResult> rs = run_all(o.problem);
    if (o.json) std::cout << report_json(rs, o.gpu).dump(2) << '\n';
    else if (o.csv) {
        std::cout << csv_header() << '\n';
        for (const auto& r : rs) std::cout << csv_row(r) << '\n';
    } else if (rs.size() == 1) print_report(std::cout, rs.front(), o.gpu, style);
    else print_comparison(std::cout, rs, o.gpu, style);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const fasim::UsageError& e) {
        std::cerr << "fa-sim: error: " << e.what() << '\n';
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "fa-sim: internal error: " << e.what() << " (please report this with the command line)\n";
        return 1;
    }
}
