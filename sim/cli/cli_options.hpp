// fa-sim's command line: parsing and validation, separate from running so tests
// can check every error message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "gpu/gpu_spec.hpp"
#include "kernels/kernel_catalog.hpp"
#include "model/runtime_model.hpp"
#include "model/simulation.hpp"
#include "model/sweep.hpp"
#include "problem/attention_problem.hpp"

namespace fasim {

// Where a bare --plot writes (created when it does not exist; a DIR given must exist).
inline constexpr const char* kDefaultPlotDir = "fa-sim-plots";

struct CliOptions {
    std::vector<const Algorithm*> algos{&algorithm("fa2")};  // forward programs; --pass picks their passes
    PassSelection pass = PassSelection::fwd;
    bool all = false;
    AttentionProblem problem;
    GpuSpec gpu;
    TileRequest tiles;
    ModelOptions model;
    bool json = false, csv = false, list_gpus = false, list_algos = false, list_kernels = false;
    const KernelVariant* kernel = nullptr;  // --kernel: a row of the kernel catalog
    std::vector<std::int64_t> sweep_n;       // --sweep N=a:b or Nk=a:b (powers of two): the values
    SweepParameter sweep_parameter = SweepParameter::N;
    std::optional<std::string> plot_dir;     // --plot [DIR]: write the figures there
    bool plot_dir_is_default = false;        // a bare --plot: kDefaultPlotDir, created when missing
    std::optional<std::string> measured;     // --measured FILE: fa-validate results for the figures
    bool trace = false;                      // run functionally, print every step
    std::uint64_t seed = 1;                  // inputs of functional runs
    bool help = false;
    bool version = false;                    // --version: print version_text() and exit
    std::string help_text;
};

// Parses argv. Throws UsageError (exit code 2) with one line naming the value,
// the allowed range and a fix. Sets help=true (and help_text) for --help.
CliOptions parse_cli(int argc, const char* const* argv);

// "--N" "4096" -> 4096, with the range in the error message.
std::int64_t parse_integer(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi,
                           const std::string& fix);
struct Sweep {
    SweepParameter parameter = SweepParameter::N;
    std::vector<std::int64_t> values;
};
Sweep parse_sweep(const std::string& spec);

}  // namespace fasim
