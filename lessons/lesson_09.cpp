// Lesson 09: the simulator against a real GPU. Reads committed measurements
// (cuda/results/*.json, written by fa-validate and torch_sdpa.py) and compares them with what the
// current simulator predicts; shows predictions alone when nothing was measured; with --run, runs
// cuda-check and fa-validate on this machine's GPU. The reading, predicting and measuring are
// sim/figures/measurements.hpp, which the Python module's fasim.measured runs too (this lesson's
// notebook): the two cannot disagree.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
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
                                              "shows -): a problem beyond the simulator's limits (batch × heads above 1,024), "
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
                    Table rt({"run", "files", "measurements", "date", "predicted with"}, "lrrll");
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
              "simulator's limits (batch × heads above 1,024), or one the kernel's model does not take (grouped K/V heads "
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
    table(["run", "files", "measurements", "date", "predicted with"],
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
        L.exercise({"speedup",
                    "By what factor does the simulator predict fa-sim's own FA2 kernel to beat its naive standard attention "
                    "(both on CUDA cores) at B=2, H=8, N=4096, d=64, fp32 on " + gpu.name + "? (naive time / FA2 time)",
                    Exercise::Kind::number, 0.02, {}, "ratio",
                    [gpu] {
                        ModelOptions m;
                        m.tensor_cores = false;
                        TileRequest naive;
                        naive.matmul = MatmulMode::naive;
                        const AttentionProblem q = make_problem(2, 8, 4096, 64, DType::fp32);
                        return simulate(algorithm("standard"), q, gpu, naive, m).time_s / simulate(algorithm("fa2"), q, gpu, {}, m).time_s;
                    },
                    {}, "step 3 lists both predictions for this problem (the lesson's defaults); divide them."});
    });
}
