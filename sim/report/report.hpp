// fa-sim's outputs: the terminal report, the side-by-side comparison, sweeps,
// and the machine-readable JSON and CSV (schema in docs/output-schema.md).
#pragma once

#include <iosfwd>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/exact_json.hpp"  // counts in JSON: write documents with json_text()
#include "gpu/gpu_spec.hpp"
#include "kernels/kernel_catalog.hpp"
#include "model/simulation.hpp"
#include "model/sweep.hpp"

namespace fasim {

// docs/output-schema.md. 2: counts are exact integers of any size (past 64 bits at the limits), batch·heads
// up to 65536; the keys are version 1's.
inline constexpr int kSchemaVersion = 2;

struct ReportStyle {
    bool unicode = true;  // Unicode bars and symbols; plain ASCII when not a terminal
    int width = 80;
};

void print_report(std::ostream& out, const AlgorithmResult& r, const GpuSpec& gpu, const ReportStyle& style);
void print_comparison(std::ostream& out, const std::vector<AlgorithmResult>& rs, const GpuSpec& gpu,
                      const ReportStyle& style);
void print_sweep(std::ostream& out, const std::vector<std::vector<AlgorithmResult>>& by_n, const GpuSpec& gpu,
                 const ReportStyle& style, SweepParameter parameter = SweepParameter::N);

nlohmann::json gpu_json(const GpuSpec& gpu);
nlohmann::json problem_json(const AttentionProblem& p);
nlohmann::json algorithm_json(const AlgorithmResult& r, const AlgorithmResult* standard);
// One document: {"schema_version", "gpu", "problem", "algorithms": [...]}.
nlohmann::json report_json(const std::vector<AlgorithmResult>& rs, const GpuSpec& gpu);
// {"schema_version", "gpu", "sweep": {"parameter": "N", "values": [...]}, "runs": [report per N]}
nlohmann::json sweep_json(const std::vector<std::vector<AlgorithmResult>>& by_n, const GpuSpec& gpu,
                          SweepParameter parameter = SweepParameter::N);

// {"schema_version", "algorithms": [{"id", "title"}], "kernels": [one object per catalog row]}
// (fa-sim --list-kernels --json; cuda/scripts read it).
nlohmann::json catalog_json();

std::string csv_header();
std::string csv_row(const AlgorithmResult& r);

}  // namespace fasim
