// Lesson 09: the simulator against a real GPU. Reads committed measurements
// (cuda/results/*.json, written by fa-validate and torch_sdpa.py) and compares them with what the
// current simulator predicts; shows predictions alone when nothing was measured; with --run, runs
// cuda-check and fa-validate on this machine's GPU. The reading, predicting and measuring are
// sim/figures/measurements.hpp, which the Python module's fasim.measured runs too (this lesson's
// notebook): the two cannot disagree. Steps 5 and 6 teach the kernel ladder (docs/kernel-ladder.md)
// from its committed H200 runs: what each rung bought, beside PyTorch's backends, and the model's view.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "figures/measurements.hpp"
#include "figures/progress.hpp"
#include "gpu/gpu_catalog.hpp"
#include "kernels/kernel_catalog.hpp"
#include "model/kernel_setup.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;
namespace fs = std::filesystem;
using figures::Measurement;
using figures::MeasurementSet;

namespace {

std::string signed_percent(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.0f%%", v);
    return buf;
}

// Today's prediction of every measurement, with a progress bar on stderr when it is a terminal (nothing
// in pipes, files or the tests; a quick run prints nothing).
std::vector<std::optional<double>> predict_with_progress(const std::vector<Measurement>& ms) {
    std::optional<figures::Progress> bar;
    std::size_t shown = 0;
    auto out = figures::predict_measurements(ms, [&](std::size_t done, std::size_t total) {
        if (!bar) bar.emplace("lesson-09: predicting configurations", static_cast<std::int64_t>(total),
                              ::isatty(STDERR_FILENO) != 0);
        bar->tick(static_cast<std::int64_t>(done - shown));
        shown = done;
    });
    return out;
}

// "1,234 entries of 21 result files (...), and 7 files without a "results" array (...)".
std::string not_compared_text(const figures::NotCompared& n) {
    std::vector<std::string> why;
    if (n.failed) why.push_back(grouped(n.failed) + (n.failed == 1 ? " failed run" : " failed runs"));
    if (n.not_run) why.push_back(grouped(n.not_run) + " not run (too large for the card)");
    if (n.no_time) why.push_back(grouped(n.no_time) + " without a measured time (predictions recorded before a run)");
    if (n.outside_catalog) {
        std::string names;
        for (const auto& k : n.outside_kernels) names += (names.empty() ? "" : ", ") + k;
        why.push_back(grouped(n.outside_catalog) + " of kernels fa-sim does not model (" + names + ")");
    }
    if (n.unreadable) why.push_back(grouped(n.unreadable) + " missing a field");
    std::string s;
    if (n.entries()) {
        s = grouped(n.entries()) + (n.entries() == 1 ? " entry" : " entries") + " of " + grouped(n.files) +
            (n.files == 1 ? " result file" : " result files") + " (";
        for (std::size_t i = 0; i < why.size(); ++i) s += (i ? "; " : "") + why[i];
        s += ")";
    }
    if (n.files_without_results) {
        if (!s.empty()) s += ", and ";
        s += grouped(n.files_without_results) + (n.files_without_results == 1 ? " file" : " files") +
             " without a \"results\" array (calibrations, GPU files)";
    }
    return s;
}

// ---- The kernel ladder (steps 5 and 6, docs/kernel-ladder.md) ----

// Per head dim, the run of the results folder that timed the ladder's kernels as they are now (cuda/results/README.md:
// run -e at d = 64, run -c at d = 128). Each timed every rung and PyTorch's flash and cuDNN backends together, on one
// NVIDIA H200, so every comparison is made within one run.
const std::vector<std::pair<int, std::string>> kLadderRuns = {{64, "2026-11-26-h200-ladder-e"},
                                                              {128, "2026-11-26-h200-ladder-c"}};
const std::vector<std::string> kRungs = {"fa2", "fa2_tc", "fa2_tc_tuned", "fa2_wgmma"};
const std::vector<std::string> kBackends = {"torch_flash", "torch_cudnn"};
// The card's fa-calibrate file, measured on an H200 the same day (the ceilings of the second prediction).
const std::string kCalibratedGpu = "2026-11-26-h200/calibrated-gpu.json";

// One N of one head dim: fp16, no causal mask.
struct LadderPoint {
    int d = 0;
    std::int64_t N = 0, batch = 0, heads = 0;
    double flops = 0;                        // 4·N²·d per head, times batch × heads
    std::map<std::string, double> seconds;   // each rung and PyTorch backend: its median time
    std::vector<Measurement> rungs;          // the rungs' fa-validate entries (with their launches), kRungs' order
};

struct Ladder {
    std::string missing;                     // why it could not be read (empty: read)
    std::string gpu, driver, date;
    std::vector<LadderPoint> points;         // by d (kLadderRuns' order), then N
};

// Reads the ladder's two runs under `dir`: every N for which the run has both ladder_fp16_dD_NN.json (fa-validate)
// and ladder_torch_dD_NN.json (torch_sdpa.py).
Ladder read_ladder(const std::string& dir) {
    Ladder l;
    for (const auto& [d, run] : kLadderRuns) {
        const fs::path folder = fs::path(dir) / run;
        const std::string prefix = "ladder_fp16_d" + std::to_string(d) + "_N";
        std::vector<std::int64_t> ns;
        std::error_code ec;
        if (fs::is_directory(folder, ec))
            for (const auto& e : fs::directory_iterator(folder, ec)) {
                const std::string f = e.path().filename().string();
                if (f.rfind(prefix, 0) == 0 && f.size() > prefix.size() && std::isdigit(static_cast<unsigned char>(f[prefix.size()])) &&
                    e.path().extension() == ".json")
                    ns.push_back(std::stoll(f.substr(prefix.size())));
            }
        std::sort(ns.begin(), ns.end());
        if (ns.empty()) {
            l.missing = (folder / (prefix + "*.json")).string() + " does not exist";
            return l;
        }
        for (const std::int64_t N : ns) {
            const std::string tag = "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json";
            const fs::path fp16 = folder / ("ladder_fp16" + tag), torch = folder / ("ladder_torch" + tag);
            if (!fs::is_regular_file(torch, ec)) {
                l.missing = torch.string() + " does not exist";
                return l;
            }
            LadderPoint pt;
            pt.d = d;
            pt.N = N;
            for (const fs::path& path : {fp16, torch}) {
                try {
                    std::ifstream in(path);
                    const nlohmann::json doc = nlohmann::json::parse(in);
                    if (path == fp16) {
                        l.gpu = doc.value("gpu", "?");
                        l.driver = doc.value("driver", "?");
                        l.date = doc.value("date", "?");
                    }
                    for (const auto& r : doc.at("results"))
                        if (r.contains("measured_s") && r.at("dtype") == "fp16" && !r.at("causal").get<bool>() &&
                            r.at("N").get<std::int64_t>() == N && r.at("d").get<int>() == d) {
                            pt.seconds[r.at("algo").get<std::string>()] = r.at("measured_s").get<double>();
                            pt.batch = r.at("batch").get<std::int64_t>();
                            pt.heads = r.at("heads").get<std::int64_t>();
                        }
                } catch (const std::exception&) {
                    l.missing = path.string() + " is not a result file that can be read";
                    return l;
                }
            }
            const std::vector<Measurement> entries = figures::read_measurements(fp16.string()).measurements;
            for (const auto& k : kRungs)
                for (const Measurement& m : entries)
                    if (m.kernel == k && !m.problem.causal && m.problem.dtype == DType::fp16) pt.rungs.push_back(m);
            for (const auto& k : kRungs)
                if (!pt.seconds.count(k)) l.missing = fp16.string() + " has no fp16 non-causal time of " + k;
            for (const auto& k : kBackends)
                if (!pt.seconds.count(k)) l.missing = torch.string() + " has no fp16 non-causal time of " + k;
            if (l.missing.empty() && pt.rungs.size() != kRungs.size())
                l.missing = fp16.string() + " does not hold one fp16 non-causal entry per rung";
            if (!l.missing.empty()) return l;
            const auto x = [](std::int64_t v) { return static_cast<double>(v); };
            pt.flops = 4.0 * x(pt.N) * x(pt.N) * x(pt.d) * x(pt.batch) * x(pt.heads);
            l.points.push_back(std::move(pt));
        }
    }
    return l;
}

// "lo–hi" of values with `decimals` decimals; one value where both ends print the same ("-": none).
std::string range_text(const std::vector<double>& v, int decimals, const std::string& unit = "") {
    if (v.empty()) return "-";
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const std::string a = fixed(*lo, decimals), b = fixed(*hi, decimals);
    return (a == b ? a : a + "–" + b) + unit;
}

// Signed percentages as "-19 to -8%" (one value where both ends print the same; "-": none).
std::string error_range(const std::vector<double>& v) {
    if (v.empty()) return "-";
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    char a[32], b[32];
    std::snprintf(a, sizeof a, "%+.0f", *lo);
    std::snprintf(b, sizeof b, "%+.0f", *hi);
    return (std::string(a) == b ? std::string(a) : std::string(a) + " to " + b) + "%";
}

// The TFLOP/s of a rung or backend at each N of head dim d, in N order.
std::vector<double> ladder_tflops(const Ladder& l, int d, const std::string& k) {
    std::vector<double> v;
    for (const LadderPoint& p : l.points)
        if (p.d == d) v.push_back(p.flops / p.seconds.at(k) / 1e12);
    return v;
}

// time of `a` / time of `b` at each N of head dim d.
std::vector<double> ladder_ratios(const Ladder& l, int d, const std::string& a, const std::string& b) {
    std::vector<double> v;
    for (const LadderPoint& p : l.points)
        if (p.d == d) v.push_back(p.seconds.at(a) / p.seconds.at(b));
    return v;
}

std::string ladder_label(const std::string& k) {
    static const std::map<std::string, std::string> labels = {
        {"fa2", "fa2 (CUDA cores)"},         {"fa2_tc", "fa2_tc (mma.sync)"},   {"fa2_tc_tuned", "fa2_tc_tuned (mma.sync)"},
        {"fa2_wgmma", "fa2_wgmma (Hopper)"}, {"torch_flash", "PyTorch flash"}, {"torch_cudnn", "PyTorch cuDNN"}};
    return labels.at(k);
}

std::string ladder_missing_text(const std::string& dir, const std::string& why) {
    return "The kernel ladder's runs are not in " + dir + " (" + why + "): nothing measured to show here. This step reads "
           "cuda/results/ (the lesson's default --results; the notebook's copy of it).";
}

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(9, "simulator_vs_real_gpu", "The simulator against a real GPU",
             "A model is only as good as its agreement with the machine. The CUDA kernels in cuda/ "
             "implement the same algorithms as the simulator's tile programs; fa-validate runs them, "
             "checks their output against the float64 reference, times them and puts the simulator's "
             "prediction beside every timing. This lesson reads the measurements committed to "
             "cuda/results/ and compares them with what the simulator predicts today. Where nothing has "
             "been measured it says so and shows predictions only: a number nobody measured is never "
             "presented as measured.");
    L.problem_options(make_problem(2, 8, 4096, 64, DType::fp32), kN | kD | kHeads | kBatch | kDtype);
    std::string& results_dir = L.string_option("--results", figures::default_measurements_dir(),
                                               "folder (or file) of fa-validate result files");
    std::string& cuda_bin = L.string_option("--cuda-bin", figures::default_cuda_bin(),
                                            "folder holding the built cuda-check and fa-validate");
    bool& run_tools = L.flag_option("--run", "run cuda-check and a small fa-validate grid on this machine's GPU (if any)");
    std::int64_t& max_rows = L.int_option("--rows", 24, 1, 100000, "measurements listed in step 2");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();

        L.step({"how", "How the simulator is checked",
                R"(Every algorithm exists twice: as a tile program the simulator counts
(sim/algorithms/) and as CUDA kernels (cuda/kernels/). Two programs connect
them:

- cuda-check runs each kernel on random inputs and compares its output with
  exact float64 attention (the tolerance rule of reference/TOLERANCES.md).
- fa-validate times each kernel (warm-up runs, CUDA events, the median of
  several runs, L2 flushed between them), predicts the same configuration
  with the simulator, and writes both to a JSON file; with --ncu it also
  reads DRAM, L2 and shared-memory bytes from Nsight Compute.

Result files are committed to cuda/results/ with the GPU, driver, date and
exact command. fa-sim's first kernels compute on CUDA cores (no tensor cores),
so their predictions use fa-sim's --cuda-cores model; fa1_tc and fa2_tc are
FA1 and FA2 on the tensor cores (fp16 and bf16), and the cuBLAS variant of
standard attention uses tensor cores for fp16 and bf16, modelled with the large
tiles cuBLAS uses (--matmul library).)",
                [&](Ctx& c) {
                    const figures::CudaTools tools = figures::find_cuda_tools(cuda_bin);
                    c.out << "On this machine:\n";
                    c.out << "  cuda-check   " << (tools.cuda_check.empty() ? "not built" : "built") << '\n';
                    c.out << "  fa-validate  " << (tools.fa_validate.empty() ? "not built" : "built") << '\n';
                    c.out << "  GPU          " << (tools.gpu_present ? "present (nvidia-smi lists one)" : "none found (nvidia-smi)")
                          << "\n\n";
                    c.out << "To measure, on a machine with an NVIDIA GPU and the CUDA toolkit:\n\n"
                          << "    scripts/build.sh                       (builds cuda/ when nvcc exists)\n"
                          << "    build/cuda/cuda-check --small\n"
                          << "    build/cuda/validate/fa-validate --out cuda/results/GPU-DATE.json\n"
                          << "    build/lessons/lesson-09                (compares them)\n\n";
                    print_para(c.out, std::string("Or let this lesson run a small grid: lesson-09 --run") +
                                          (tools.ready() ? " (possible here)." : " (needs both tools and a GPU)."));
                    c.results["cuda_check_built"] = !tools.cuda_check.empty();
                    c.results["fa_validate_built"] = !tools.fa_validate.empty();
                    c.results["gpu_present"] = tools.gpu_present;
                },
                "",
                R"PY(CUDA_BIN = None  # a build's cuda/ folder with cuda-check and fa-validate (None: the module's build's; the lesson's --cuda-bin)
tools = fasim.measured.cuda_tools(CUDA_BIN)
print("On this machine:")
print("  cuda-check  ", "built" if tools["cuda_check"] else "not built")
print("  fa-validate ", "built" if tools["fa_validate"] else "not built")
print("  GPU         ", "present (nvidia-smi lists one)" if tools["gpu_present"] else "none found (nvidia-smi)")
print("""
To measure, on a machine with an NVIDIA GPU and the CUDA toolkit, in a clone of fa-sim:

    scripts/build.sh                       (builds cuda/ when nvcc exists)
    build/cuda/cuda-check --small
    build/cuda/validate/fa-validate --out cuda/results/GPU-DATE.json
""")
print("Then read the file here with fasim.measured.load(PATH) (step 2), or set CUDA_BIN to that build/cuda and RUN = True "
      "in step 4" + (" (possible here)." if tools["ready"] else " (needs both tools and a GPU)."))
RESULTS["how"] = dict(cuda_check_built=tools["cuda_check"] is not None, fa_validate_built=tools["fa_validate"] is not None,
                      gpu_present=tools["gpu_present"]))PY"});

        L.step({"measured", "Committed measurements against today's simulator",
                R"(Each line is one configuration from a result file: the median measured
time, the prediction recorded in the file when it was measured, and the
prediction of the simulator as it is now (the model may have changed since),
made as fa-validate makes it: the kernel of the catalog, with the tiles, splits
and registers the run recorded. error = (predicted − measured) / measured. The
files come from cuda/results/ (the Python module carries a copy of them, so the
notebook needs no clone; --results, or RESULTS_DIR in the notebook, reads
others). Predicting the two thousand-odd configurations takes a few seconds per
core; a line counts them.)",
                [&](Ctx& c) {
                    const MeasurementSet set = figures::read_measurements(results_dir);
                    const std::vector<Measurement>& ms = set.measurements;
                    c.results["files"] = set.files;
                    if (ms.empty()) {
                        const bool there = fs::exists(results_dir);
                        print_para(c.out, "No measurements: " + std::string(there ? "" : "the folder ") + results_dir +
                                              (there ? " holds no fa-validate result file" : " does not exist") +
                                              " yet. Nothing measured is shown; step 3 shows the simulator's predictions "
                                              "alone. Measure with step 1's commands.");
                        for (const auto& s : set.skipped) print_para(c.out, "skipped " + s, "  ", "    ");
                        c.results["measurements"] = 0;
                        c.results["skipped"] = set.skipped;
                        return;
                    }
                    const std::vector<std::optional<double>> now = predict_with_progress(ms);
                    Table t({"kernel", "N", "d", "dtype", "causal", "measured", "then", "now", "error"}, "lrrlrrrrr");
                    std::map<std::string, std::vector<double>> errors;
                    Json rows = Json::array();
                    for (std::size_t i = 0; i < ms.size(); ++i) {
                        const Measurement& m = ms[i];
                        const double err = now[i] ? 100.0 * (*now[i] - m.measured_s) / m.measured_s : 0;
                        if (now[i]) errors[m.kernel].push_back(std::fabs(err));
                        if (static_cast<std::int64_t>(i) < max_rows)
                            t.row({m.kernel, grouped(m.problem.N), std::to_string(m.problem.d), dtype_name(m.problem.dtype),
                                   m.problem.causal ? "yes" : "no", units::seconds(m.measured_s),
                                   m.predicted_then_s ? units::seconds(*m.predicted_then_s) : "-",
                                   now[i] ? units::seconds(*now[i]) : "-", now[i] ? signed_percent(err) : "-"});
                        Json j{{"file", m.file},
                               {"algo", m.kernel},
                               {"N", m.problem.N},
                               {"Nk", m.problem.Nk},
                               {"d", m.problem.d},
                               {"dtype", dtype_name(m.problem.dtype)},
                               {"causal", m.problem.causal},
                               {"batch", m.problem.batch},
                               {"heads", m.problem.heads},
                               {"kv_heads", m.problem.kv_head_count()},
                               {"measured_s", m.measured_s}};
                        if (m.predicted_then_s) j["predicted_then_s"] = *m.predicted_then_s;
                        if (now[i]) j["predicted_now_s"] = *now[i];
                        rows.push_back(j);
                    }
                    t.print(c.out);
                    const std::int64_t n = static_cast<std::int64_t>(ms.size());
                    if (n > max_rows) c.out << "  ... " << grouped(n - max_rows) << " more (--rows)\n";
                    c.out << "\nMedian |error| of today's prediction, per kernel:\n\n";
                    Json med = Json::object();
                    Table mt({"kernel", "median |error|", "configurations"}, "lrr");
                    for (auto& [algo, v] : errors) {
                        std::sort(v.begin(), v.end());
                        const double mdn = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
                        mt.row({algo, fixed(mdn, 0) + "%", grouped(static_cast<std::int64_t>(v.size()))});
                        med[algo] = mdn;
                    }
                    mt.print(c.out);
                    const std::int64_t unpredicted = static_cast<std::int64_t>(std::count(now.begin(), now.end(), std::nullopt));
                    if (unpredicted)
                        print_para(c.out, "\n" + grouped(unpredicted) + " of the measurements have no prediction today (\"now\" " +
                                              "shows -): a problem beyond the simulator's limits (batch × heads above 65,536), "
                                              "or one the kernel's model does not take (grouped K/V heads for a kernel "
                                              "without them, no tile that fits).");

                    // Where the measurements come from: one line per run folder (the files are in --json).
                    struct Run {
                        std::int64_t files = 0, measurements = 0;
                        std::vector<std::string> dates, presets;
                    };
                    std::map<std::string, Run> runs;
                    std::vector<std::string> devices;  // "NVIDIA H200, driver 580.159.04, predicted with H200"
                    auto add = [](std::vector<std::string>& v, const std::string& x) {
                        if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
                    };
                    auto folder_of = [](const std::string& f) {
                        const auto slash = f.find('/');
                        return slash == std::string::npos ? std::string(".") : f.substr(0, slash);
                    };
                    for (const auto& f : set.files)
                        if (std::any_of(ms.begin(), ms.end(), [&](const Measurement& m) { return m.file == f; })) ++runs[folder_of(f)].files;
                    for (const auto& m : ms) {
                        Run& r = runs[folder_of(m.file)];
                        ++r.measurements;
                        add(r.dates, m.date);
                        add(r.presets, m.preset.empty() ? "none" : m.preset);
                        add(devices, m.gpu + ", driver " + m.driver + (m.preset.empty() ? ", no matching preset" : ", predicted with " + m.preset));
                    }
                    auto joined = [](const std::vector<std::string>& v) {
                        std::string s;
                        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
                        return s;
                    };
                    c.out << '\n';
                    print_para(c.out, "The measurements come from " + grouped(static_cast<std::int64_t>(runs.size())) +
                                          (runs.size() == 1 ? " run" : " runs") + " (folders of result files; --json lists every file):");
                    c.out << '\n';
                    Table rt({"run", "files", "entries", "date", "predicted with"}, "lrrll");
                    for (const auto& [folder, r] : runs)
                        rt.row({folder, grouped(r.files), grouped(r.measurements), joined(r.dates), joined(r.presets)});
                    rt.print(c.out);
                    c.out << '\n';
                    for (const auto& d : devices) print_para(c.out, d, "  ", "    ");
                    if (const std::string skipped = not_compared_text(set.not_compared); !skipped.empty()) {
                        c.out << '\n';
                        print_para(c.out, "Not compared: " + skipped + ". --json lists each file under \"skipped\".");
                    }
                    c.results["measurements"] = ms.size();
                    c.results["rows"] = rows;
                    c.results["median_abs_error_percent"] = med;
                    c.results["skipped"] = set.skipped;
                },
                "",
                R"PY(RESULTS_DIR = None  # a folder or file of fa-validate results (None: the copy of cuda/results/ packaged with fasim; the lesson's --results)
ROWS = 24  # measurements listed (the lesson's --rows)
data = fasim.measured.load(RESULTS_DIR)
ms = data["measurements"]
RESULTS["measured"] = dict(files=data["files"])
if not ms:
    import os
    there = os.path.exists(data["path"])
    print(f"No measurements: {'' if there else 'the folder '}{data['path']}"
          f"{' holds no fa-validate result file' if there else ' does not exist'} yet. Nothing measured is shown; "
          "step 3 shows the simulator's predictions alone. Measure with step 1's commands.")
    for s in data["skipped"]:
        print("  skipped", s)
    RESULTS["measured"].update(measurements=0, skipped=data["skipped"])
else:
    now = fasim.measured.predict(ms, progress=True)  # today's simulator, as fa-validate predicts: one time (or None) each
    error = [None if t is None else 100.0 * (t - m["measured_s"]) / m["measured_s"] for m, t in zip(ms, now)]
    def secs(t):
        return "-" if t is None else quantity(t, "s")
    print()
    table(["kernel", "N", "d", "dtype", "causal", "measured", "then", "now", "error"],
          [[m["algo"], m["N"], m["d"], m["dtype"], "yes" if m["causal"] else "no", secs(m["measured_s"]),
            secs(m["predicted_s"]), secs(t), "-" if e is None else f"{e:+.0f}%"]
           for m, t, e in list(zip(ms, now, error))[:ROWS]])
    if len(ms) > ROWS:
        print(f"  ... {len(ms) - ROWS:,} more (ROWS)")

    by_kernel = {}
    for m, e in zip(ms, error):
        if e is not None:
            by_kernel.setdefault(m["algo"], []).append(abs(e))
    median = {k: float(np.median(v)) for k, v in sorted(by_kernel.items())}
    print("\nMedian |error| of today's prediction, per kernel:\n")
    table(["kernel", "median |error|", "configurations"], [[k, f"{median[k]:.0f}%", len(v)] for k, v in sorted(by_kernel.items())])
    if None in now:
        print(f"\n{now.count(None):,} of the measurements have no prediction today (\"now\" shows -): a problem beyond the "
              "simulator's limits (batch × heads above 65,536), or one the kernel's model does not take (grouped K/V heads "
              "for a kernel without them, no tile that fits).")

    # Where they come from: one line per run (the folder of its result files).
    runs = {}
    for m in ms:
        r = runs.setdefault(m["file"].split("/")[0] if "/" in m["file"] else ".", dict(files=set(), n=0, dates=[], presets=[]))
        r["files"].add(m["file"])
        r["n"] += 1
        for key, value in (("dates", m["date"]), ("presets", m["gpu_preset"] or "none")):
            if value not in r[key]:
                r[key].append(value)
    print(f"\nThe measurements come from {len(runs)} runs (folders of result files; data['files'] lists every file):\n")
    table(["run", "files", "entries", "date", "predicted with"],
          [[name, len(r["files"]), r["n"], ", ".join(r["dates"]), ", ".join(r["presets"])] for name, r in sorted(runs.items())])
    print()
    for device in dict.fromkeys(f"{m['gpu']}, driver {m['driver']}, "
                                + (f"predicted with {m['gpu_preset']}" if m["gpu_preset"] else "no matching preset") for m in ms):
        print(" ", device)
    n = data["not_compared"]
    if data["skipped"]:
        print(f"\nNot compared: {n['failed'] + n['not_run'] + n['no_time'] + n['outside_catalog'] + n['unreadable']:,} entries "
              f"of {n['files']} result files ({n['failed']} failed runs, {n['not_run']} not run, {n['no_time']:,} without a "
              f"measured time, {n['outside_catalog']} of kernels fa-sim does not model: {', '.join(n['outside_kernels'])}), "
              f"and {n['files_without_results']} files without a \"results\" array. data['skipped'] says which, and why.")

    rows = []
    for m, t in zip(ms, now):
        row = {k: m[k] for k in ("file", "algo", "N", "Nk", "d", "dtype", "causal", "batch", "heads", "kv_heads", "measured_s")}
        if m["predicted_s"] is not None:
            row["predicted_then_s"] = m["predicted_s"]
        if t is not None:
            row["predicted_now_s"] = t
        rows.append(row)
    RESULTS["measured"].update(measurements=len(ms), rows=rows, median_abs_error_percent=median, skipped=data["skipped"])

    # The same comparison as a picture: today's prediction against the measured time, per kernel family.
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.5, 5))
    catalog = {k["name"]: k for k in fasim.kernels()}
    def family(kernel):  # the algorithm a kernel implements, fa-sim's own CUDA kernels apart from PyTorch's
        k = catalog[kernel]
        return k["algorithm"] + ("" if k["in_repository"] else " (PyTorch)")
    for i, name in enumerate(sorted({family(m["algo"]) for m in ms})):
        pts = [(m["measured_s"], t) for m, t in zip(ms, now) if t is not None and family(m["algo"]) == name]
        if pts:
            ax.scatter(*zip(*pts), s=8, alpha=0.6, label=name, color=plt.cm.tab20.colors[i % 20])
    lo, hi = min(m["measured_s"] for m in ms), max(m["measured_s"] for m in ms)
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="prediction = measurement")
    ax.set(xscale="log", yscale="log", xlabel="measured (s)", ylabel="predicted today (s)",
           title="Committed measurements against today's simulator")
    ax.legend(fontsize=7)
    plt.show())PY"});

        L.step({"predicted", "What the simulator predicts for this problem",
                R"(The simulator's predictions for the CUDA kernel families of the forward pass
on the chosen GPU and problem (by default fa-validate's batch and head count,
fp32), each modelled as fa-validate models it (fa-sim --kernel NAME). These
are predictions, not measurements. (The backward's kernels are lesson 10's
subject.))",
                [&](Ctx& c) {
                    c.out << p.describe() << " on " << gpu.name << "\n\n";
                    Table t({"kernel", "predicted", "bound by"}, "lrl");
                    Json rows = Json::array();
                    for (const KernelVariant& k : kernel_catalog()) {
                        if (!k.in_repository || !k.forward_kernel.empty()) continue;
                        const std::string f(k.name);
                        if (p.dtype == DType::fp32 && !k.fp32) {
                            t.row({f, "-", "no fp32 kernel (fp16/bf16 only)"});
                            continue;
                        }
                        if (!k.has_head_dim(static_cast<int>(p.d))) {
                            t.row({f, "-", "no kernel for d=" + std::to_string(p.d)});
                            continue;
                        }
                        if (gpu.compute_capability > 0 && gpu.compute_capability < k.min_compute_capability) {
                            t.row({f, "-", "needs compute capability " + std::to_string(k.min_compute_capability / 10) + "." +
                                               std::to_string(k.min_compute_capability % 10)});
                            continue;
                        }
                        try {
                            const KernelSetup s = kernel_setup(k, p, gpu);
                            const AlgorithmResult r = simulate(*s.algorithm, p, gpu, s.tiles, s.options);
                            std::string bound = r.longest_kernel().name + ": " + r.longest_kernel().bound;
                            if (display_width(bound) > 50) bound = bound.substr(0, bound.find(" ("));
                            if (display_width(bound) > 50) bound = bound.substr(0, bound.find(", "));
                            t.row({f, units::seconds(r.time_s), bound});
                            rows.push_back({{"algo", f}, {"predicted_s", r.time_s}, {"bound", r.longest_kernel().bound}});
                        } catch (const UsageError& e) {
                            t.row({f, "-", "does not fit"});
                        }
                    }
                    t.print(c.out);
                    c.results["predictions"] = rows;
                },
                "",
                R"PY(g = fasim.gpu(GPU)
problem = dict(PROBLEM, Nk=PROBLEM["N"], kv_heads=PROBLEM["heads"], causal=False)
print(describe(problem), "on", g["name"], "\n")
lines, predictions = [], []
for k in fasim.kernels():  # the catalog: fa-sim's CUDA kernels and PyTorch's
    if not k["in_repository"] or k["forward_kernel"]:  # PyTorch's kernels, and backward kernels
        continue
    if PROBLEM["dtype"] == "fp32" and "fp32" not in k["dtypes"]:
        lines.append([k["name"], "-", "no fp32 kernel (fp16/bf16 only)"])
    elif PROBLEM["d"] not in k["head_dims"]:
        lines.append([k["name"], "-", f"no kernel for d={PROBLEM['d']}"])
    elif g["compute_capability"] < k["min_compute_capability"]:
        lines.append([k["name"], "-", f"needs compute capability {k['min_compute_capability'] // 10}.{k['min_compute_capability'] % 10}"])
    else:
        try:
            r = fasim.simulate(kernel=k["name"], gpu=GPU, **PROBLEM)  # = fa-sim --kernel NAME: its tiles, products, registers
        except fasim.UsageError:
            lines.append([k["name"], "-", "does not fit"])
            continue
        longest = max(r["kernels"], key=lambda x: x["time"]["predicted_s"])
        bound = longest["name"] + ": " + longest["time"]["bound"]
        if len(bound) > 50:
            bound = bound.split(" (")[0]
        if len(bound) > 50:
            bound = bound.split(", ")[0]
        lines.append([k["name"], quantity(r["time"]["predicted_s"], "s"), bound])
        predictions.append(dict(algo=k["name"], predicted_s=r["time"]["predicted_s"], bound=longest["time"]["bound"]))
table(["kernel", "predicted", "bound by"], lines)
RESULTS["predicted"] = dict(predictions=predictions))PY"});

        L.step({"run", "Measuring here",
                R"(With --run (in the notebook: RUN = True), and when this machine has an NVIDIA
GPU and the two tools are built, the lesson runs cuda-check --small and then
fa-validate on a small grid (N 1024 and 4096, d 64, non-causal, the chosen
dtype), writes the results to a temporary file and compares them with today's
simulator as in step 2. To keep them, rerun fa-validate with --out
cuda/results/NAME.json.)",
                [&](Ctx& c) {
                    const figures::CudaTools tools = figures::find_cuda_tools(cuda_bin);
                    c.results["ran"] = false;
                    if (!run_tools) {
                        c.out << (tools.ready() ? "Not run (pass --run to run it here).\n" : "Not run: no GPU or tools here.\n");
                        return;
                    }
                    if (!tools.ready()) {
                        print_para(c.out, "--run: nothing to run here. It needs cuda-check and fa-validate built under " +
                                              cuda_bin + " and a GPU that nvidia-smi lists.");
                        return;
                    }
                    std::cout.flush();
                    const figures::GridRun run = figures::measure_small_grid(tools, p, false);  // the tools print to the terminal
                    c.out << "cuda-check exit " << run.cuda_check_exit << ", fa-validate exit " << run.fa_validate_exit << '\n';
                    const MeasurementSet here = figures::read_measurements(run.results_file);
                    const auto now = figures::predict_measurements(here.measurements);
                    Table t({"kernel", "N", "measured", "predicted now", "error"}, "lrrrr");
                    for (std::size_t i = 0; i < here.measurements.size(); ++i) {
                        const Measurement& m = here.measurements[i];
                        t.row({m.kernel, grouped(m.problem.N), units::seconds(m.measured_s), now[i] ? units::seconds(*now[i]) : "-",
                               now[i] ? signed_percent(100.0 * (*now[i] - m.measured_s) / m.measured_s) : "-"});
                    }
                    t.print(c.out);
                    c.out << "Results: " << run.results_file << '\n';
                    c.results["ran"] = true;
                },
                "",
                R"PY(RUN = False  # True: run cuda-check and fa-validate on this machine's GPU (the lesson's --run; a minute or more)
tools = fasim.measured.cuda_tools(CUDA_BIN)
RESULTS["run"] = dict(ran=False)
if not RUN:
    print("Not run (set RUN = True to run it here)." if tools["ready"] else "Not run: no GPU or tools here.")
elif not tools["ready"]:
    print(f"RUN: nothing to run here. It needs cuda-check and fa-validate built under {tools['folder']} "
          "and a GPU that nvidia-smi lists.")
else:
    run = fasim.measured.measure(CUDA_BIN, dtype=PROBLEM["dtype"], batch=PROBLEM["batch"], heads=PROBLEM["heads"])
    print(run["output"][-2000:])  # the end of what the tools printed
    print(f"cuda-check exit {run['cuda_check_exit']}, fa-validate exit {run['fa_validate_exit']}")
    here = fasim.measured.load(run["results_file"])["measurements"]
    now = fasim.measured.predict(here)
    table(["kernel", "N", "measured", "predicted now", "error"],
          [[m["algo"], m["N"], quantity(m["measured_s"], "s"), "-" if t is None else quantity(t, "s"),
            "-" if t is None else f"{100 * (t - m['measured_s']) / m['measured_s']:+.0f}%"] for m, t in zip(here, now)])
    print("Results:", run["results_file"])
    RESULTS["run"]["ran"] = True)PY"});

        L.step({"ladder", "The kernel ladder: what each step bought",
                R"(cuda/kernels/ holds a ladder of FlashAttention-2 forward kernels, one file per
rung. Every rung computes the same attention, passes the same cuda-check, and
changes one thing over the rung below (docs/kernel-ladder.md):

- fa2: FA2 on the CUDA cores. Every multiply-add of Q·Kᵀ and P·V is an FFMA
  that a lane issues after loading its operands from shared memory itself:
  instruction issue and the shared-memory pipe bind long before the FP32 peak.
- fa2_tc: both products on the tensor cores (mma.sync). One warp instruction
  does a 16×8×16 product on operands held in registers, and S and P never
  leave the registers (P is the A operand of P·V).
- fa2_tc_tuned: the same instruction with FlashAttention-2's own tiles, 128
  query rows per block and 32 per warp. Every K or V fragment a warp loads
  now feeds two mma, each warp has two independent chains of them to hide
  their latency, and K and V are both double-buffered.
- fa2_wgmma: Hopper's own instructions. mma.sync reaches only part of the
  tensor cores' dense rate (step 6 prints how much); wgmma multiplies 64-row
  tiles that it reads from shared memory by descriptor, TMA copies whole
  tiles, and a producer warpgroup and two consumer warpgroups overlap the
  copies, the products and one another's softmax.

The tables are what one H200 measured in the FA2 paper's setting (fp16, no
causal mask; the line above each table gives its heads and tokens), with
PyTorch's FlashAttention-2 (its flash backend) and its cuDNN backend timed in
the same run: a comparison is only made within one run. TFLOP/s counts
4·N²·d FLOPs per head. Compare the two head dims in the last two steps: the
products' work per score grows with d and the softmax's does not, so at d = 64
the same faster products buy less.)",
                [&](Ctx& c) {
                    const Ladder lad = read_ladder(results_dir);
                    c.results["found"] = lad.missing.empty();
                    if (!lad.missing.empty()) {
                        print_para(c.out, ladder_missing_text(results_dir, lad.missing));
                        return;
                    }
                    print_para(c.out, "Measured on an " + lad.gpu + " (driver " + lad.driver + "), " + lad.date +
                                          ": fp16, no causal mask; TFLOP/s = 4·N²·d FLOPs per head × batch × heads / "
                                          "the median time.");
                    Json runs = Json::object(), rows = Json::array();
                    for (const auto& [d, run] : kLadderRuns) {
                        runs[std::to_string(d)] = run;
                        std::vector<const LadderPoint*> pts;
                        for (const LadderPoint& lp : lad.points)
                            if (lp.d == d) pts.push_back(&lp);
                        c.out << '\n';
                        print_para(c.out, "d = " + std::to_string(d) + ", " + grouped(pts[0]->heads) + " heads, batch × N = " +
                                              grouped(pts[0]->batch * pts[0]->N) + " tokens (cuda/results/" + run + "):");
                        c.out << '\n';
                        std::vector<std::string> head{"TFLOP/s at N ="};
                        for (const LadderPoint* lp : pts) head.push_back(grouped(lp->N));
                        Table t(head, "l" + std::string(pts.size(), 'r'));
                        std::vector<std::string> kernels = kRungs;
                        kernels.insert(kernels.end(), kBackends.begin(), kBackends.end());
                        for (const std::string& k : kernels) {
                            std::vector<std::string> cells{ladder_label(k)};
                            for (const double v : ladder_tflops(lad, d, k)) cells.push_back(num(v, 3));
                            t.row(cells);
                        }
                        t.print(c.out);
                        for (const LadderPoint* lp : pts) {
                            Json seconds = Json::object(), tflops = Json::object();
                            for (const std::string& k : kernels) {
                                seconds[k] = lp->seconds.at(k);
                                tflops[k] = lp->flops / lp->seconds.at(k) / 1e12;
                            }
                            rows.push_back({{"d", d}, {"N", lp->N}, {"batch", lp->batch}, {"heads", lp->heads}, {"flops", lp->flops},
                                            {"measured_s", seconds}, {"tflops", tflops}});
                        }
                    }

                    c.out << '\n';
                    print_para(c.out, "What each step bought: the time of the rung below over the rung's, at every N "
                                      "of the tables:");
                    c.out << '\n';
                    std::vector<std::string> head{"step"};
                    for (const auto& [d, run] : kLadderRuns) head.push_back("d = " + std::to_string(d));
                    Table st(head, "l" + std::string(kLadderRuns.size(), 'r'));
                    Json speedups = Json::array();
                    std::vector<std::pair<std::string, std::string>> steps;
                    for (std::size_t i = 1; i < kRungs.size(); ++i) steps.emplace_back(kRungs[i - 1], kRungs[i]);
                    steps.emplace_back(kRungs.front(), kRungs.back());
                    for (const auto& [from, to] : steps) {
                        std::vector<std::string> cells{from + " → " + to + (from == kRungs.front() && to == kRungs.back() ? " (all)" : "")};
                        for (const auto& [d, run] : kLadderRuns) {
                            const std::vector<double> r = ladder_ratios(lad, d, from, to);
                            cells.push_back(range_text(r, 2, "×"));
                            speedups.push_back({{"from", from}, {"to", to}, {"d", d}, {"by_N", r}});
                        }
                        st.row(cells);
                    }
                    st.print(c.out);

                    c.out << '\n';
                    print_para(c.out, "Against PyTorch in the same run: PyTorch's time over the rung's (above 1, the "
                                      "rung is the faster):");
                    c.out << '\n';
                    head = {"rung", "against"};
                    for (const auto& [d, run] : kLadderRuns) head.push_back("d = " + std::to_string(d));
                    Table pt(head, "ll" + std::string(kLadderRuns.size(), 'r'));
                    Json against = Json::array();
                    for (const auto& [rung, backend] : std::vector<std::pair<std::string, std::string>>{
                             {"fa2_tc_tuned", "torch_flash"}, {"fa2_wgmma", "torch_cudnn"}}) {
                        std::vector<std::string> cells{rung, ladder_label(backend)};
                        for (const auto& [d, run] : kLadderRuns) {
                            const std::vector<double> r = ladder_ratios(lad, d, backend, rung);
                            cells.push_back(range_text(r, 2));
                            against.push_back({{"rung", rung}, {"against", backend}, {"d", d}, {"by_N", r}});
                        }
                        pt.row(cells);
                    }
                    pt.print(c.out);
                    c.results["gpu"] = lad.gpu;
                    c.results["date"] = lad.date;
                    c.results["runs"] = runs;
                    c.results["rows"] = rows;
                    c.results["speedups"] = speedups;
                    c.results["against_pytorch"] = against;
                },
                "",
                R"PY(import json, os

# Per head dim, the run that timed the ladder's kernels as they are now (cuda/results/README.md). Each run timed every
# rung and PyTorch's flash and cuDNN backends together on one H200: comparisons are made within a run.
LADDER = {64: "2026-11-26-h200-ladder-e", 128: "2026-11-26-h200-ladder-c"}
RUNGS = ["fa2", "fa2_tc", "fa2_tc_tuned", "fa2_wgmma"]
BACKENDS = ["torch_flash", "torch_cudnn"]
LABELS = {"fa2": "fa2 (CUDA cores)", "fa2_tc": "fa2_tc (mma.sync)", "fa2_tc_tuned": "fa2_tc_tuned (mma.sync)",
          "fa2_wgmma": "fa2_wgmma (Hopper)", "torch_flash": "PyTorch flash", "torch_cudnn": "PyTorch cuDNN"}
LADDER_DIR = fasim.measured.default_dir() if RESULTS_DIR is None else str(RESULTS_DIR)  # the folder step 2 read


def read_ladder(root):
    """The ladder's fp16, non-causal times under root, per head dim and N: (ladder, None), or (None, why not)."""
    ladder = dict(points=[])
    for d, run in LADDER.items():
        folder, prefix = os.path.join(root, run), f"ladder_fp16_d{d}_N"
        names = os.listdir(folder) if os.path.isdir(folder) else []
        ns = sorted(int(f[len(prefix):-5]) for f in names if f.startswith(prefix) and f.endswith(".json") and f[len(prefix):-5].isdigit())
        if not ns:
            return None, os.path.join(folder, prefix + "*.json") + " does not exist"
        for N in ns:
            fp16, torch = (os.path.join(folder, f"ladder_{kind}_d{d}_N{N}.json") for kind in ("fp16", "torch"))
            if not os.path.isfile(torch):
                return None, torch + " does not exist"
            point = dict(d=d, N=N, seconds={})
            for path in (fp16, torch):  # fa-validate's file (the rungs), torch_sdpa.py's (PyTorch's backends)
                with open(path) as f:
                    doc = json.load(f)
                if path == fp16:
                    ladder.update(gpu=doc.get("gpu", "?"), driver=doc.get("driver", "?"), date=doc.get("date", "?"))
                for r in doc["results"]:
                    if "measured_s" in r and r["dtype"] == "fp16" and not r["causal"] and r["N"] == N and r["d"] == d:
                        point["seconds"][r["algo"]] = r["measured_s"]
                        point.update(batch=r["batch"], heads=r["heads"])
            entries = fasim.measured.load(fp16)["measurements"]  # the rungs with the launches the run recorded (step 6)
            point["rungs"] = [m for k in RUNGS for m in entries if m["algo"] == k and not m["causal"] and m["dtype"] == "fp16"]
            missing = [k for k in RUNGS + BACKENDS if k not in point["seconds"]]
            if missing or len(point["rungs"]) != len(RUNGS):
                return None, f"{fp16} or {torch} has no fp16 non-causal time of {', '.join(missing) or 'every rung'}"
            point["flops"] = 4.0 * N * N * d * point["batch"] * point["heads"]  # 4·N²·d per head
            ladder["points"].append(point)
    return ladder, None


def tflops(d, k):
    return [p["flops"] / p["seconds"][k] / 1e12 for p in ladder["points"] if p["d"] == d]


def ratios(d, a, b):  # time of a / time of b, at each N
    return [p["seconds"][a] / p["seconds"][b] for p in ladder["points"] if p["d"] == d]


def span(values, decimals, unit=""):  # "lo–hi" ("-": none)
    if not values:
        return "-"
    lo, hi = f"{min(values):.{decimals}f}", f"{max(values):.{decimals}f}"
    return (lo if lo == hi else f"{lo}–{hi}") + unit


ladder, why_not = read_ladder(LADDER_DIR)
RESULTS["ladder"] = dict(found=ladder is not None)
if ladder is None:
    print(f"The kernel ladder's runs are not in {LADDER_DIR} ({why_not}): nothing measured to show here. This step reads "
          "cuda/results/ (the lesson's default --results; the notebook's copy of it).")
else:
    print(f"Measured on an {ladder['gpu']} (driver {ladder['driver']}), {ladder['date']}: fp16, no causal mask; "
          "TFLOP/s = 4·N²·d FLOPs per head × batch × heads / the median time.")
    rows = []
    for d, run in LADDER.items():
        pts = [p for p in ladder["points"] if p["d"] == d]
        print(f"\nd = {d}, {pts[0]['heads']:,} heads, batch × N = {pts[0]['batch'] * pts[0]['N']:,} tokens (cuda/results/{run}):\n")
        table(["TFLOP/s at N ="] + [f"{p['N']:,}" for p in pts], [[LABELS[k]] + [f"{v:.3g}" for v in tflops(d, k)] for k in RUNGS + BACKENDS])
        rows += [dict(d=d, N=p["N"], batch=p["batch"], heads=p["heads"], flops=p["flops"],
                      measured_s={k: p["seconds"][k] for k in RUNGS + BACKENDS},
                      tflops={k: p["flops"] / p["seconds"][k] / 1e12 for k in RUNGS + BACKENDS}) for p in pts]

    print("\nWhat each step bought: the time of the rung below over the rung's, at every N of the tables:\n")
    steps = list(zip(RUNGS, RUNGS[1:])) + [(RUNGS[0], RUNGS[-1])]
    speedups = [dict(**{"from": a}, to=b, d=d, by_N=ratios(d, a, b)) for a, b in steps for d in LADDER]
    table(["step"] + [f"d = {d}" for d in LADDER],
          [[f"{a} → {b}" + (" (all)" if (a, b) == (RUNGS[0], RUNGS[-1]) else "")] + [span(ratios(d, a, b), 2, "×") for d in LADDER]
           for a, b in steps])

    print("\nAgainst PyTorch in the same run: PyTorch's time over the rung's (above 1, the rung is the faster):\n")
    pairs = [("fa2_tc_tuned", "torch_flash"), ("fa2_wgmma", "torch_cudnn")]
    table(["rung", "against"] + [f"d = {d}" for d in LADDER],
          [[rung, LABELS[backend]] + [span(ratios(d, backend, rung), 2) for d in LADDER] for rung, backend in pairs])
    RESULTS["ladder"].update(gpu=ladder["gpu"], date=ladder["date"], runs={str(d): run for d, run in LADDER.items()}, rows=rows,
                             speedups=speedups,
                             against_pytorch=[dict(rung=rung, against=backend, d=d, by_N=ratios(d, backend, rung))
                                              for rung, backend in pairs for d in LADDER]))PY"});

        L.step({"ladder_model", "The ladder against fa-sim's model",
                R"(fa-sim models every rung from ceilings that microbenchmarks measured, never
from the rung's own timings (fa-sim --kernel NAME; fasim.simulate(kernel=NAME)):
fa2 by its FFMAs, its shared-memory wavefronts and a lone warp's issue rate;
the mma.sync rungs by the instructions their warps issue, at the rate FA2's
step reaches when timed alone on the card (a probe; it saturates at a few
warps per scheduler); fa2_wgmma by its products at the dense rate a
library GEMM reaches on the card, with each consumer warpgroup's softmax
hidden behind the other's products (the time is the larger of the two, not
their sum).

Each measurement of step 5 is predicted here as step 2 predicts it (the launch
the run recorded, on the run's GPU preset), and a second time with the card's
own fa-calibrate file (cuda/results/2026-11-26-h200/calibrated-gpu.json,
measured on an H200 the same day), whose ceilings are not the preset's.

Where it misses, and why (cuda/results/README.md and docs/kernel-ladder.md
hold the measurements behind each cause):

- fa2_wgmma is predicted too fast: the model runs its products at the library
  GEMM's rate with the softmax fully hidden, and the rung reaches only part of
  that rate. The higher ceiling of the calibrated file makes the miss larger,
  not smaller: the gap is in the kernel, not in the ceiling. Nothing was
  fitted to close it; a profile of the rung is the next step.
- fa2 at d = 64 in fp16 is predicted slow: the share of cycles in which its
  lone warp issues was read from the fp32 kernel, and the fp16 kernel issues
  more often (8-byte operand loads, fewer shared-memory wavefronts).
- fa2_tc at d = 128 was predicted about 20% fast while the model took each
  warp to be ready in a fixed share of cycles, independently of the others:
  three warps per scheduler then issue in 43% of cycles, where the step alone
  issues in 37% (the tensor pipe and the exponentials' unit saturate). With
  the step's measured rate it is 5-8% fast on this run. The kernel as it is
  today (since 2026-11-30 it copies each tile from one address, 9-12% faster)
  is still predicted 15-19% fast: it issues 16% less than its step alone,
  waiting at its three barriers per K/V tile, which the model leaves out.)",
                [&](Ctx& c) {
                    const Ladder lad = read_ladder(results_dir);
                    c.results["found"] = lad.missing.empty();
                    if (!lad.missing.empty()) {
                        print_para(c.out, ladder_missing_text(results_dir, lad.missing));
                        return;
                    }
                    std::vector<Measurement> ms;
                    for (const LadderPoint& lp : lad.points) ms.insert(ms.end(), lp.rungs.begin(), lp.rungs.end());
                    const std::vector<std::optional<double>> preset_s = figures::predict_measurements(ms);
                    const std::string preset_name = ms.front().preset;
                    const GpuSpec preset = find_gpu_preset(preset_name);
                    const fs::path cal_path = fs::path(results_dir) / kCalibratedGpu;
                    std::optional<GpuSpec> cal;
                    std::error_code ec;
                    if (fs::is_regular_file(cal_path, ec)) cal = load_gpu_file(cal_path.string());
                    auto model = [](const Measurement& m, const GpuSpec& g) {
                        const KernelSetup s = kernel_setup(*find_kernel(m.kernel), m.problem, g, m.launch);
                        return simulate(*s.algorithm, m.problem, g, s.tiles, s.options);
                    };

                    Json rows = Json::array();
                    // error (%) per rung and d, with the preset and the calibrated file
                    std::map<std::pair<std::string, int>, std::vector<double>> err, cal_err, measured, predicted;
                    for (std::size_t i = 0; i < ms.size(); ++i) {
                        const Measurement& m = ms[i];
                        const int d = static_cast<int>(m.problem.d);
                        const auto x = [](std::int64_t v) { return static_cast<double>(v); };
                        const double flops = 4.0 * x(m.problem.N) * x(m.problem.N) * x(m.problem.d) * x(m.problem.batch) * x(m.problem.heads);
                        Json row{{"d", d}, {"N", m.problem.N}, {"algo", m.kernel}, {"measured_s", m.measured_s}};
                        measured[{m.kernel, d}].push_back(flops / m.measured_s / 1e12);
                        if (preset_s[i]) {
                            const double e = 100.0 * (*preset_s[i] - m.measured_s) / m.measured_s;
                            row["predicted_s"] = *preset_s[i];
                            row["error_percent"] = e;
                            err[{m.kernel, d}].push_back(e);
                            predicted[{m.kernel, d}].push_back(flops / *preset_s[i] / 1e12);
                        }
                        if (cal) {
                            const double t = model(m, *cal).time_s;
                            const double e = 100.0 * (t - m.measured_s) / m.measured_s;
                            row["calibrated_predicted_s"] = t;
                            row["calibrated_error_percent"] = e;
                            cal_err[{m.kernel, d}].push_back(e);
                        }
                        rows.push_back(row);
                    }
                    print_para(c.out, "TFLOP/s over the N of step 5 (measured, and predicted with the " + preset_name +
                                          " preset); error = (predicted − measured time) / measured time, below zero "
                                          "where the model is too fast; calibrated: the error with the fa-calibrate file" +
                                          (cal ? "." : " (not found here: " + cal_path.string() + ")."));
                    c.out << '\n';
                    Table t({"rung", "d", "measured", "predicted", "error", "calibrated"}, "lrrrrr");
                    for (const std::string& k : kRungs)
                        for (const auto& [d, run] : kLadderRuns) {
                            const std::pair<std::string, int> key{k, d};
                            t.row({k, std::to_string(d), range_text(measured[key], 0),
                                   predicted.count(key) ? range_text(predicted[key], 0) : "-",
                                   err.count(key) ? error_range(err[key]) : "-", cal_err.count(key) ? error_range(cal_err[key]) : "-"});
                        }
                    t.print(c.out);

                    // What the model finds binding, at the longest N of each head dim.
                    c.out << '\n';
                    print_para(c.out, "What the model finds binding at the longest N (the " + preset_name + " preset):");
                    c.out << '\n';
                    Json bounds = Json::array();
                    for (const auto& [d, run] : kLadderRuns) {
                        const LadderPoint* last = nullptr;
                        for (const LadderPoint& lp : lad.points)
                            if (lp.d == d) last = &lp;
                        for (const Measurement& m : last->rungs) {
                            const std::string bound = model(m, preset).longest_kernel().bound;
                            print_para(c.out, m.kernel + ", d = " + std::to_string(d) + ", N = " + grouped(m.problem.N) + ": " + bound,
                                       "  ", "      ");
                            bounds.push_back({{"algo", m.kernel}, {"d", d}, {"N", m.problem.N}, {"bound", bound}});
                        }
                    }

                    // The Hopper rung: how far from the rate the model gives its products.
                    const double dense = preset.matmul_flops(DType::fp16), mma = preset.mma_sync_flops(DType::fp16);
                    Json rates{{"preset_dense_flops", dense},
                               {"preset_mma_sync_flops", mma},
                               {"datasheet_dense_flops", preset.tensor_fp16_flops}};
                    if (cal) rates["calibrated_dense_flops"] = cal->matmul_flops(DType::fp16);
                    const int top = kLadderRuns.back().first;
                    const std::vector<double> wg = measured[{"fa2_wgmma", top}];
                    std::vector<double> share_preset, share_cal;
                    for (const double v : wg) {
                        share_preset.push_back(1e12 * v / dense);
                        if (cal) share_cal.push_back(1e12 * v / cal->matmul_flops(DType::fp16));
                    }
                    std::vector<double> all_err, all_cal;
                    for (const auto& [d, run] : kLadderRuns) {
                        const auto& e = err[{"fa2_wgmma", d}];
                        all_err.insert(all_err.end(), e.begin(), e.end());
                        if (cal) all_cal.insert(all_cal.end(), cal_err[{"fa2_wgmma", d}].begin(), cal_err[{"fa2_wgmma", d}].end());
                    }
                    c.out << '\n';
                    print_para(c.out,
                               "mma.sync's peak on the " + preset_name + " is " + num(mma / 1e12, 3) + " TFLOP/s, " +
                                   percent(mma / preset.tensor_fp16_flops, 0) + " of the datasheet's dense fp16 rate (" +
                                   num(preset.tensor_fp16_flops / 1e12, 3) +
                                   "): the ceiling of the two mma.sync rungs. The model gives fa2_wgmma's products the "
                                   "dense rate a library GEMM reaches: " + num(dense / 1e12, 3) + " TFLOP/s in the preset" +
                                   (cal ? ", " + num(cal->matmul_flops(DType::fp16) / 1e12, 3) + " in the fa-calibrate file" : "") +
                                   ". At d = " + std::to_string(top) + " the rung reaches " + range_text(share_preset, 2) +
                                   " of the preset's rate" + (cal ? " and " + range_text(share_cal, 2) + " of the calibrated one" : "") +
                                   "; its predicted time is off by " + error_range(all_err) + " with the preset" +
                                   (cal ? " and " + error_range(all_cal) + " with the calibrated file" : "") + ", at every N and d.");
                    std::vector<std::string> others;
                    for (const std::string& k : kRungs)
                        for (const auto& [d, run] : kLadderRuns) {
                            const auto& e = err[{k, d}];
                            if (k != "fa2_wgmma" && !e.empty() &&
                                std::any_of(e.begin(), e.end(), [](double x) { return std::fabs(x) > 15; }))
                                others.push_back(k + " at d = " + std::to_string(d) + " (" + error_range(e) + ")");
                        }
                    std::string list;
                    for (std::size_t i = 0; i < others.size(); ++i)
                        list += (i == 0 ? "" : i + 1 == others.size() ? " and " : ", ") + others[i];
                    c.out << '\n';
                    print_para(c.out, others.empty() ? "Every other rung is predicted within 15% at every N."
                                                     : "Beyond 15% elsewhere, with the preset: " + list + ".");
                    c.results["gpu_preset"] = preset_name;
                    c.results["calibrated_gpu_file"] = cal ? Json(kCalibratedGpu) : Json(nullptr);
                    c.results["rates"] = rates;
                    c.results["rows"] = rows;
                    c.results["bounds"] = bounds;
                    c.results["wgmma_share_of_dense"] = {{"d", top}, {"preset", share_preset}, {"calibrated", share_cal}};
                },
                "",
                R"PY(import json, os

RESULTS["ladder_model"] = dict(found=ladder is not None)  # ladder: step 5's (read_ladder)
if ladder is None:
    print(f"The kernel ladder's runs are not in {LADDER_DIR} ({why_not}): nothing measured to show here. This step reads "
          "cuda/results/ (the lesson's default --results; the notebook's copy of it).")
else:
    ms = [m for p in ladder["points"] for m in p["rungs"]]
    preset_s = fasim.measured.predict(ms)  # as step 2: the launch the run recorded, the run's preset
    preset_name = ms[0]["gpu_preset"]
    preset = fasim.gpu(preset_name)
    CALIBRATED = "2026-11-26-h200/calibrated-gpu.json"  # the card's fa-calibrate file, in the results folder
    cal_path = os.path.join(LADDER_DIR, CALIBRATED)
    cal = fasim.load_gpu_file(cal_path) if os.path.isfile(cal_path) else None

    def model(m, gpu):  # = fa-sim --kernel NAME with the launch the run recorded
        launch = m["launch"]
        return fasim.simulate(kernel=m["algo"], gpu=gpu, N=m["N"], Nk=m["Nk"], d=m["d"], batch=m["batch"], heads=m["heads"],
                              dtype=m["dtype"], causal=m["causal"], Br=launch["Br"] or None, Bc=launch["Bc"] or None,
                              q_splits=launch["q_splits"] or None, registers=launch["registers_per_thread"] or None)

    rows, err, cal_err, measured, predicted = [], {}, {}, {}, {}
    for m, t in zip(ms, preset_s):
        key, flops = (m["algo"], m["d"]), 4.0 * m["N"] * m["N"] * m["d"] * m["batch"] * m["heads"]
        row = dict(d=m["d"], N=m["N"], algo=m["algo"], measured_s=m["measured_s"])
        measured.setdefault(key, []).append(flops / m["measured_s"] / 1e12)
        if t is not None:
            row.update(predicted_s=t, error_percent=100.0 * (t - m["measured_s"]) / m["measured_s"])
            err.setdefault(key, []).append(row["error_percent"])
            predicted.setdefault(key, []).append(flops / t / 1e12)
        if cal is not None:
            tc = model(m, cal)["time"]["predicted_s"]
            row.update(calibrated_predicted_s=tc, calibrated_error_percent=100.0 * (tc - m["measured_s"]) / m["measured_s"])
            cal_err.setdefault(key, []).append(row["calibrated_error_percent"])
        rows.append(row)

    def errors(values):  # "-19 to -8%" ("-": none)
        if not values:
            return "-"
        lo, hi = f"{min(values):+.0f}", f"{max(values):+.0f}"
        return (lo if lo == hi else f"{lo} to {hi}") + "%"

    print(f"TFLOP/s over the N of step 5 (measured, and predicted with the {preset_name} preset); error = (predicted − "
          "measured time) / measured time, below zero where the model is too fast; calibrated: the error with the "
          "fa-calibrate file" + ("." if cal is not None else f" (not found here: {cal_path})."))
    print()
    table(["rung", "d", "measured", "predicted", "error", "calibrated"],
          [[k, str(d), span(measured[(k, d)], 0), span(predicted[(k, d)], 0) if (k, d) in predicted else "-",
            errors(err[(k, d)]) if (k, d) in err else "-", errors(cal_err[(k, d)]) if (k, d) in cal_err else "-"]
           for k in RUNGS for d in LADDER])

    print(f"\nWhat the model finds binding at the longest N (the {preset_name} preset):\n")
    bounds = []
    for d in LADDER:
        last = [p for p in ladder["points"] if p["d"] == d][-1]
        for m in last["rungs"]:
            r = model(m, preset_name)
            bound = max(r["kernels"], key=lambda x: x["time"]["predicted_s"])["time"]["bound"]
            print(f"  {m['algo']}, d = {d}, N = {m['N']:,}: {bound}")
            bounds.append(dict(algo=m["algo"], d=d, N=m["N"], bound=bound))

    # The Hopper rung: how far from the rate the model gives its products.
    def dense_rate(spec):  # the rate a library GEMM reaches: measured, else the datasheet's
        return spec.get("measured", {}).get("tensor_fp16_flops_per_s") or spec["tensor_fp16_flops_per_s"]
    dense = dense_rate(preset)
    mma = preset.get("measured", {}).get("mma_sync_fp16_flops_per_s") or preset["model"]["mma_sync_peak_fraction"] * preset["tensor_fp16_flops_per_s"]
    rates = dict(preset_dense_flops=dense, preset_mma_sync_flops=mma, datasheet_dense_flops=preset["tensor_fp16_flops_per_s"])
    if cal is not None:
        with open(cal_path) as f:
            rates["calibrated_dense_flops"] = dense_rate(json.load(f))
    top = list(LADDER)[-1]
    share_preset = [1e12 * v / dense for v in measured[("fa2_wgmma", top)]]
    share_cal = [1e12 * v / rates["calibrated_dense_flops"] for v in measured[("fa2_wgmma", top)]] if cal is not None else []
    all_err = [e for d in LADDER for e in err.get(("fa2_wgmma", d), [])]
    all_cal = [e for d in LADDER for e in cal_err.get(("fa2_wgmma", d), [])]
    print(f"\nmma.sync's peak on the {preset_name} is {mma / 1e12:.3g} TFLOP/s, {100 * mma / preset['tensor_fp16_flops_per_s']:.0f}% "
          f"of the datasheet's dense fp16 rate ({preset['tensor_fp16_flops_per_s'] / 1e12:.3g}): the ceiling of the two mma.sync "
          f"rungs. The model gives fa2_wgmma's products the dense rate a library GEMM reaches: {dense / 1e12:.3g} TFLOP/s in "
          "the preset" + (f", {rates['calibrated_dense_flops'] / 1e12:.3g} in the fa-calibrate file" if cal is not None else "")
          + f". At d = {top} the rung reaches {span(share_preset, 2)} of the preset's rate"
          + (f" and {span(share_cal, 2)} of the calibrated one" if cal is not None else "")
          + f"; its predicted time is off by {errors(all_err)} with the preset"
          + (f" and {errors(all_cal)} with the calibrated file" if cal is not None else "") + ", at every N and d.")
    others = [f"{k} at d = {d} ({errors(err[(k, d)])})" for k in RUNGS for d in LADDER
              if k != "fa2_wgmma" and err.get((k, d)) and any(abs(e) > 15 for e in err[(k, d)])]
    print("\n" + ("Every other rung is predicted within 15% at every N." if not others else
                  "Beyond 15% elsewhere, with the preset: " + (", ".join(others[:-1]) + " and " + others[-1] if len(others) > 1 else others[0]) + "."))
    RESULTS["ladder_model"].update(gpu_preset=preset_name, calibrated_gpu_file=CALIBRATED if cal is not None else None, rates=rates,
                                   rows=rows, bounds=bounds, wgmma_share_of_dense=dict(d=top, preset=share_preset, calibrated=share_cal)))PY"});

        L.exercise({"fa2_predicted",
                    "What does the simulator predict for fa-sim's own FA2 kernel (CUDA cores, no tensor cores) at B=2, "
                    "H=8, N=4096, d=64, fp32 on " + gpu.name + ", in milliseconds?",
                    Exercise::Kind::number, 0.02, {}, "ms",
                    [gpu] {
                        ModelOptions m;
                        m.tensor_cores = false;
                        return 1e3 * simulate(algorithm("fa2"), make_problem(2, 8, 4096, 64, DType::fp32), gpu, {}, m).time_s;
                    },
                    {}, "fa-sim --algo fa2 --batch 2 --heads 8 --dtype fp32 --cuda-cores prints it; step 3 too."});
        L.exercise({"naive_bound",
                    "Standard attention with naive GEMMs at B=2, H=8, N=4096, d=64, fp32 on " + gpu.name + ": is its "
                    "slowest kernel memory-bound or compute-bound according to the simulator?",
                    Exercise::Kind::choice, 0, {"memory", "compute"}, "", {},
                    [gpu] {
                        ModelOptions m;
                        m.tensor_cores = false;
                        TileRequest req;
                        req.matmul = MatmulMode::naive;
                        return bound_kind(simulate(algorithm("standard"), make_problem(2, 8, 4096, 64, DType::fp32), gpu, req, m)
                                              .longest_kernel().bound);
                    },
                    "step 3's standard_naive line names what bounds it; L2 and DRAM bandwidth are memory."});
        L.exercise({"tc_speedup",
                    "As the H200 measured it (step 5), how many times faster is FA2 with its products on the tensor "
                    "cores (fa2_tc) than on the CUDA cores (fa2) at d=128, N=16384, fp16, no causal mask? "
                    "(fa2's time / fa2_tc's time; a measurement, the same for every --gpu)",
                    Exercise::Kind::number, 0.02, {}, "ratio",
                    [&results_dir] {
                        const Ladder lad = read_ladder(results_dir);
                        if (!lad.missing.empty())
                            throw usage_error("the kernel ladder's runs are not in " + results_dir + " (" + lad.missing + ")",
                                              "tc_speedup is graded with the committed runs of cuda/results/",
                                              "leave --results at its default, or point it at a copy of cuda/results/");
                        for (const LadderPoint& lp : lad.points)
                            if (lp.d == 128 && lp.N == 16384) return lp.seconds.at("fa2") / lp.seconds.at("fa2_tc");
                        throw usage_error("the kernel ladder's runs in " + results_dir + " hold no d=128, N=16384 timing",
                                          "tc_speedup is graded with the committed runs of cuda/results/",
                                          "leave --results at its default");
                    },
                    {}, "both rungs do the same FLOPs, so the ratio of their times is the inverse of the ratio of "
                        "their TFLOP/s: read both in step 5's d = 128 table, at N = 16,384."});
    });
}
