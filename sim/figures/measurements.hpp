// Committed kernel timings beside today's simulator, as lesson 09 and the Python module's
// fasim.measured compare them (one implementation, so the notebook and the lesson cannot disagree).
//
// read_measurements reads a folder of fa-validate / torch_sdpa.py result files (every *.json under
// it, as cuda/results/ keeps one folder per run) or one such file, leniently: a file without a
// "results" array, an entry that failed ("error"), was not run ("skipped"), holds no measured time
// (predictions recorded before a run) or names a kernel outside the catalog is listed as not
// compared, with why, and the rest is read. (measured_results.hpp is the strict reader of one file
// for the figure.) predict_measurements predicts each measurement as fa-validate does
// (model/kernel_setup.hpp, with the launch the run recorded), each distinct configuration once, on
// all cores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/kernel_setup.hpp"
#include "problem/attention_problem.hpp"

namespace fasim::figures {

// One timed kernel of a result file.
struct Measurement {
    std::string file;    // relative to the folder read, e.g. "2026-11-22-h200/validate_fp32.json"
    std::string gpu;     // the file's "gpu" ("?" when absent)
    std::string preset;  // the file's "gpu_preset", else the preset matching gpu, else empty (not predicted)
    std::string driver, date;  // "?" when absent
    std::string kernel;  // the entry's "algo": a kernel of the catalog (kernels/kernel_catalog.hpp)
    AttentionProblem problem;  // N, Nk, d, dtype, causal, batch, heads, kv_heads
    MeasuredLaunch launch;     // what the run recorded of the kernel's launch
    double measured_s = 0;
    std::optional<double> predicted_then_s;  // the file's "predicted_s" (the simulator of the run's day), if any
};

// What was not compared, counted over the files read.
struct NotCompared {
    std::int64_t files_without_results = 0;  // not JSON, or no "results" array (calibrations, GPU files)
    std::int64_t files = 0;                  // result files with entries not compared
    std::int64_t failed = 0;                 // entries with an "error": the run failed
    std::int64_t not_run = 0;                // entries marked "skipped" (e.g. too large for the card)
    std::int64_t no_time = 0;                // entries without a measured time (predictions recorded before a run)
    std::int64_t outside_catalog = 0;        // entries of kernels fa-sim does not model
    std::int64_t unreadable = 0;             // entries missing a field the comparison needs
    std::set<std::string> outside_kernels;   // the names of those kernels
    std::int64_t entries() const { return failed + not_run + no_time + outside_catalog + unreadable; }
};

struct MeasurementSet {
    std::string path;                        // the folder or file read
    std::vector<std::string> files;          // result files read (those with a "results" array), sorted
    std::vector<std::string> skipped;        // "FILE: why" for each file, or part of a file, not compared
    NotCompared not_compared;                // the same, counted
    std::vector<Measurement> measurements;   // in file order, then entry order
};

// A folder (every *.json under it, sorted by path) or one file. A path that does not exist gives an
// empty set (the caller says so); a file that is not JSON is listed in `skipped`.
MeasurementSet read_measurements(const std::string& path);

// One measurement as a dict's JSON (fasim.measured's keys: the result file's names), and back. The
// reverse takes "algo", "N", "d", "dtype" and "measured_s" and a "gpu_preset" (or a "gpu" that names
// a preset); the rest defaults as in a result file. UsageError naming the key for a bad value.
nlohmann::ordered_json measurement_json(const Measurement& m);
Measurement measurement_from_json(const nlohmann::json& j, const std::string& where);

// The current simulator's time for each measurement (none where it has no preset or the kernel's model
// does not apply: the reason is not kept). Each distinct configuration is simulated once; the work is
// spread over the cores. `progress(done, total)` is called (from one thread at a time) as configurations
// finish; an exception it throws stops the work and is rethrown here once every thread has stopped.
std::vector<std::optional<double>> predict_measurements(const std::vector<Measurement>& ms,
                                                        const std::function<void(std::size_t, std::size_t)>& progress = {});

// Where the committed measurements are read from when no folder is given: the folder set below (the
// Python module sets its packaged copy of cuda/results/), else this build's source tree's cuda/results.
std::string default_measurements_dir();
void set_default_measurements_dir(const std::string& dir);

// ---- Measuring here: the CUDA tools of a build and a GPU ----

struct CudaTools {
    std::string folder;                    // where they were looked for
    std::string cuda_check, fa_validate;   // paths; empty when not built there
    bool gpu_present = false;              // nvidia-smi -L lists a GPU
    bool ready() const { return !cuda_check.empty() && !fa_validate.empty() && gpu_present; }
};

// This build's cuda/ folder (where scripts/build.sh puts the tools when nvcc exists).
std::string default_cuda_bin();
// Looks for cuda-check and fa-validate in `folder` and its validate/ and harness/ subfolders.
CudaTools find_cuda_tools(const std::string& folder);

struct GridRun {
    int cuda_check_exit = -1, fa_validate_exit = -1;
    std::string results_file;  // fa-validate's output (a temporary folder)
    std::string output;        // what the tools printed, when captured
};

// Runs cuda-check --small and fa-validate over N 1024 and 4096 at d 64, non-causal, in p's dtype, batch and
// heads (lesson 09's --run). With `capture`, their output is returned instead of going to this
// process's terminal. Needs tools.ready().
GridRun measure_small_grid(const CudaTools& tools, const AttentionProblem& p, bool capture);

}  // namespace fasim::figures
