// libFuzzer target: fa-sim's command-line parser (parse_cli), and for small problems the simulation
// and the JSON report it leads to. The input is the argument list, one argument per line (at most 64).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/cli_options.hpp"
#include "contract.hpp"
#include "report/report.hpp"

namespace {

std::vector<std::string> split_arguments(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"fa-sim"};
    std::string cur;
    for (std::size_t i = 0; i < size && args.size() <= 64; ++i) {
        if (data[i] == '\n') {
            args.push_back(cur);
            cur.clear();
        } else {
            cur += static_cast<char>(data[i]);
        }
    }
    if (!cur.empty() && args.size() <= 64) args.push_back(cur);
    return args;
}

// Simulate only what runs in milliseconds: the fuzzer should explore inputs, not wait.
bool small(const fasim::CliOptions& o) {
    const auto& p = o.problem;
    return o.sweep_n.empty() && !o.plot_dir && !o.trace && p.N <= 1024 && p.Nk <= 1024 && p.batch_heads() <= 8 &&
           o.tiles.matmul != fasim::MatmulMode::naive;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::string> args = split_arguments(data, size);
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    fasim::fuzz::run_contract([&] {
        const fasim::CliOptions o = fasim::parse_cli(static_cast<int>(argv.size()), argv.data());
        if (o.help || o.version || o.list_gpus || o.list_algos || o.list_kernels || !small(o)) return;
        std::vector<fasim::AlgorithmResult> rs;
        for (const fasim::Algorithm* a : o.algos) {
            rs.push_back(fasim::simulate(*a, o.pass, o.problem, o.gpu, o.tiles, o.model));
            fasim::fuzz::check_finite(rs.back().time_s, std::string(a->id) + " time_s");
            if (!(rs.back().time_s > 0)) fasim::fuzz::violation(std::string(a->id) + " predicted no time");
        }
        fasim::fuzz::check_finite(fasim::report_json(rs, o.gpu), "report");
    });
    return 0;
}
