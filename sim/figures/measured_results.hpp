// Measured kernel timings for the predicted-vs-measured figure, as `fa-validate`
// writes them (cuda/results/*/validate_*.json, schema_version 1):
//
//   {"schema_version": 1, "gpu": "NVIDIA H200", "gpu_preset": "H200",
//    "command": "...", "driver": "...", "date": "...",           (optional, shown in the caption)
//    "results": [{"algo": "standard_tiled", "sim_algo": "standard", "N": 4096, "Nk": 4096,
//                 "d": 64, "dtype": "fp16", "causal": false, "batch": 2, "heads": 8,
//                 "measured_s": 1.2e-4, "predicted_s": 1.1e-4, ...},
//                {"algo": "fa1", ..., "error": "..."},             (a run that failed: left out)
//                ...]}
//
// "algo" names the kernel (any text); "sim_algo" the simulator algorithm it is compared
// with (standard, tiled, fa1, fa2) and may be left out when "algo" is one of those.
// "Nk" defaults to N. Every problem is reported as a fasim::UsageError naming the file,
// the field (e.g. results[3].measured_s), the bad value, what is allowed and a fix.
// Unknown keys are ignored, so later writers may add fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "model/kernel_setup.hpp"

namespace fasim::figures {

inline constexpr int kMeasuredSchemaVersion = 1;

struct MeasuredRecord {
    std::string kernel;   // the file's "algo": which kernel was measured, e.g. "standard_cublas"
    const Algorithm* algo = nullptr;  // the simulator algorithm its prediction comes from ("sim_algo")
    std::int64_t N = 0, Nk = 0, d = 0;
    DType dtype = DType::fp16;
    bool causal = false;
    std::int64_t batch = 1, heads = 1;
    MeasuredLaunch launch;  // the main kernel's tiles, Q splits and registers ("launches"), 0 when not recorded
    double measured_s = 0;
    std::int64_t kv_heads = 0;  // K/V heads ("kv_heads", grouped-query attention); 0: as many as heads
    // As recorded in the file (the simulator of the day of the run); none where it recorded null (a
    // configuration that simulator could not predict).
    std::optional<double> predicted_s;
};

struct MeasuredResults {
    std::string origin;  // the file it came from
    std::string gpu;
    std::string gpu_preset;             // the simulator preset the predictions used (may be empty)
    std::string command, driver, date;  // empty when the file has none
    std::vector<MeasuredRecord> results;
    std::vector<std::string> failed;    // entries with an "error" (the run failed): "fa1 N=4096 d=64 fp32: ..."
    std::vector<std::string> skipped;   // entries with "skipped" (not run, e.g. too large for the card's memory)
};

// Parses and validates the text of a measured-results file; `origin` names it in errors.
MeasuredResults parse_measured_results(const std::string& text, const std::string& origin);
// Reads and validates a file (UsageError if it cannot be read).
MeasuredResults read_measured_results(const std::string& path);

}  // namespace fasim::figures
