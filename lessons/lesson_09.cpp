// Lesson 09: the simulator against a real GPU. Reads committed measurements
// (cuda/results/*.json, written by fa-validate) and compares them with what the
// current simulator predicts; shows predictions alone when nothing was measured;
// with --run, runs cuda-check and fa-validate on this machine's GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "gpu/gpu_catalog.hpp"
#include "model/kernel_setup.hpp"
#include "report/units.hpp"

#ifndef FASIM_SOURCE_DIR
#define FASIM_SOURCE_DIR "."
#endif
#ifndef FASIM_BINARY_DIR
#define FASIM_BINARY_DIR "build"
#endif

using namespace fasim;
using namespace fasim::lessons;
namespace fs = std::filesystem;

namespace {

// The CUDA kernels of cuda/ are the catalog's rows of this repository (kernels/kernel_catalog.hpp);
// the simulator models each as fa-validate does (model/kernel_setup.hpp).

struct Measurement {
    std::string file, gpu, preset, driver, date;
    std::string algo;
    AttentionProblem problem;
    MeasuredLaunch launch;  // the kernel's tiles, Q splits and registers as the run recorded them
    double measured_s = 0, predicted_then_s = 0;
};

// Reads every *.json in dir and its subfolders (one per run, as cuda/results/ keeps them), sorted by
// path. Unreadable files and entries are listed in `skipped`.
std::vector<Measurement> read_results(const fs::path& dir, std::vector<std::string>& files, std::vector<std::string>& skipped) {
    std::vector<Measurement> out;
    if (!fs::is_directory(dir)) return out;
    std::vector<fs::path> paths;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    for (const auto& path : paths) {
        const std::string name = fs::relative(path, dir).string();  // e.g. 2026-11-22-h200/validate_fp32.json
        nlohmann::json doc;
        try {
            std::ifstream f(path);
            doc = nlohmann::json::parse(f);
        } catch (const std::exception& e) {
            skipped.push_back(name + ": not valid JSON");
            continue;
        }
        if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
            skipped.push_back(name + ": no \"results\" array");
            continue;
        }
        files.push_back(name);
        // A key may be null (e.g. gpu_preset in predictions made with a GPU file): absent, then.
        const auto text = [&doc](const char* key, const std::string& absent) {
            const auto it = doc.find(key);
            return it != doc.end() && it->is_string() ? it->get<std::string>() : absent;
        };
        const std::string gpu = text("gpu", "?");
        std::string preset = text("gpu_preset", "");
        if (preset.empty()) preset = preset_for_device(gpu);
        int bad = 0;
        for (const auto& r : doc["results"]) {
            try {
                if (!r.is_object() || r.contains("error") || !r.contains("measured_s")) {
                    ++bad;
                    continue;
                }
                Measurement m;
                m.file = name;
                m.gpu = gpu;
                m.preset = preset;
                m.driver = text("driver", "?");
                m.date = text("date", "?");
                m.algo = r.at("algo").get<std::string>();
                AttentionProblem& p = m.problem;
                p.N = r.at("N").get<std::int64_t>();
                p.Nk = r.value("Nk", p.N);
                p.d = r.at("d").get<std::int64_t>();
                p.dtype = parse_dtype(r.at("dtype").get<std::string>()).value();
                p.causal = r.value("causal", false);
                p.batch = r.value("batch", doc.value("batch", std::int64_t{1}));
                p.heads = r.value("heads", doc.value("heads", std::int64_t{1}));
                m.launch = measured_launch(r);
                m.measured_s = r.at("measured_s").get<double>();
                m.predicted_then_s = r.value("predicted_s", 0.0);
                if (!find_kernel(m.algo) || m.measured_s <= 0) {
                    ++bad;
                    continue;
                }
                out.push_back(m);
            } catch (const std::exception&) {
                ++bad;
            }
        }
        if (bad)
            skipped.push_back(name + ": " + std::to_string(bad) +
                              (bad == 1 ? " entry" : " entries") + " without a usable measurement");
    }
    return out;
}

// The current simulator's predicted time for a measurement (as fa-validate makes it). Result files
// repeat configurations (a grid rerun after a change), so each distinct one is simulated once.
std::optional<double> predict_now(const Measurement& m) {
    if (m.preset.empty()) return std::nullopt;
    static std::map<std::string, std::optional<double>> cache;
    const MeasuredLaunch& l = m.launch;
    const std::string key = m.preset + '|' + m.algo + '|' + m.problem.describe() + '|' + std::to_string(l.Br) + ',' +
                            std::to_string(l.Bc) + ',' + std::to_string(l.q_splits) + ',' + std::to_string(l.registers_per_thread) +
                            ',' + std::to_string(l.warps) + ',' + std::to_string(l.smem_bytes) + ',' + std::to_string(l.kv_splits);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
    std::optional<double> t;
    try {
        const GpuSpec gpu = find_gpu_preset(m.preset);
        const KernelSetup s = kernel_setup(*find_kernel(m.algo), m.problem, gpu, m.launch);
        t = simulate(*s.algorithm, m.problem, gpu, s.tiles, s.options).time_s;
    } catch (const std::exception&) {
        t = std::nullopt;
    }
    cache.emplace(key, t);
    return t;
}

// Progress on stderr while step 2 predicts its measurements, only when stderr is a terminal
// (nothing in pipes, files or the tests); the line is erased when done.
class Progress {
public:
    Progress() : on_(::isatty(STDERR_FILENO) != 0) {}
    void reading(const std::string& dir) {
        if (on_) std::cerr << "\rlesson-09: reading the result files in " << dir << "..." << std::flush;
    }
    void predicting(std::size_t done, std::size_t total) {
        if (!on_ || (done % 50 != 0 && done != total)) return;
        std::cerr << "\r\033[Klesson-09: predicting measurement " << done << " of " << total << "..." << std::flush;
    }
    ~Progress() {
        if (on_) std::cerr << "\r\033[K" << std::flush;
    }

private:
    bool on_;
};

bool executable(const fs::path& p) { return fs::is_regular_file(p) && ::access(p.c_str(), X_OK) == 0; }

// A CUDA tool in the build's cuda/ folder or one of its subfolders (fa-validate is in
// cuda/validate/); empty if it is not built.
fs::path find_tool(const fs::path& bin, const std::string& name) {
    for (const fs::path& p : {bin / name, bin / "validate" / name, bin / "harness" / name})
        if (executable(p)) return p;
    return {};
}

bool gpu_present() { return std::system("nvidia-smi -L >/dev/null 2>&1") == 0; }

std::string signed_percent(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.0f%%", v);
    return buf;
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
    const std::string default_results = std::string(FASIM_SOURCE_DIR) + "/cuda/results";
    const std::string default_bin = std::string(FASIM_BINARY_DIR) + "/cuda";
    std::string& results_dir = L.string_option("--results", default_results, "folder of fa-validate result files");
    std::string& cuda_bin = L.string_option("--cuda-bin", default_bin, "folder holding the built cuda-check and fa-validate");
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
                    const fs::path bin = cuda_bin;
                    const bool check = !find_tool(bin, "cuda-check").empty(), validate = !find_tool(bin, "fa-validate").empty();
                    const bool gpu_here = gpu_present();
                    c.out << "On this machine:\n";
                    c.out << "  cuda-check   " << (check ? "built" : "not built") << '\n';
                    c.out << "  fa-validate  " << (validate ? "built" : "not built") << '\n';
                    c.out << "  GPU          " << (gpu_here ? "present (nvidia-smi lists one)" : "none found (nvidia-smi)") << "\n\n";
                    c.out << "To measure, on a machine with an NVIDIA GPU and the CUDA toolkit:\n\n"
                          << "    scripts/build.sh                       (builds cuda/ when nvcc exists)\n"
                          << "    build/cuda/cuda-check --small\n"
                          << "    build/cuda/validate/fa-validate --out cuda/results/GPU-DATE.json\n"
                          << "    build/lessons/lesson-09                (compares them)\n\n";
                    print_para(c.out, std::string("Or let this lesson run a small grid: lesson-09 --run") +
                                          (check && validate && gpu_here ? " (possible here)." : " (needs both tools and a GPU)."));
                    c.results["cuda_check_built"] = check;
                    c.results["fa_validate_built"] = validate;
                    c.results["gpu_present"] = gpu_here;
                }});

        L.step({"measured", "Committed measurements against today's simulator",
                R"(Each line is one configuration from a result file: the median measured
time, the prediction recorded in the file when it was measured, and the
prediction of the simulator as it is now (the model may have changed since).
error = (predicted − measured) / measured.)",
                [&](Ctx& c) {
                    std::vector<std::string> files, skipped;
                    Progress progress;
                    progress.reading(results_dir);
                    const auto ms = read_results(results_dir, files, skipped);
                    c.results["files"] = files;
                    if (ms.empty()) {
                        print_para(c.out, "No measurements: " + std::string(fs::is_directory(results_dir) ? "" : "the folder ") +
                                              results_dir + (fs::is_directory(results_dir) ? " holds no fa-validate result file" : " does not exist") +
                                              " yet. Nothing measured is shown; step 3 shows the simulator's predictions "
                                              "alone. Measure with step 1's commands.");
                        for (const auto& s : skipped) print_para(c.out, "skipped " + s, "  ", "    ");
                        c.results["measurements"] = 0;
                        return;
                    }
                    Table t({"kernel", "N", "d", "dtype", "causal", "measured", "then", "now", "error"}, "lrrlrrrrr");
                    std::map<std::string, std::vector<double>> errors;
                    Json rows = Json::array();
                    std::int64_t shown = 0;
                    for (const auto& m : ms) {
                        const auto now = predict_now(m);
                        const double err = now ? 100.0 * (*now - m.measured_s) / m.measured_s : 0;
                        if (now) errors[m.algo].push_back(std::fabs(err));
                        if (shown++ < max_rows)
                            t.row({m.algo, grouped(m.problem.N), std::to_string(m.problem.d), dtype_name(m.problem.dtype),
                                   m.problem.causal ? "yes" : "no", units::seconds(m.measured_s),
                                   m.predicted_then_s > 0 ? units::seconds(m.predicted_then_s) : "-",
                                   now ? units::seconds(*now) : "-", now ? signed_percent(err) : "-"});
                        Json j{{"file", m.file}, {"algo", m.algo}, {"N", m.problem.N}, {"d", m.problem.d},
                               {"dtype", dtype_name(m.problem.dtype)}, {"causal", m.problem.causal}, {"measured_s", m.measured_s},
                               {"predicted_then_s", m.predicted_then_s}};
                        if (now) j["predicted_now_s"] = *now;
                        rows.push_back(j);
                        progress.predicting(static_cast<std::size_t>(shown), ms.size());
                    }
                    t.print(c.out);
                    if (shown > max_rows) c.out << "  ... " << shown - max_rows << " more (--rows)\n";
                    c.out << "\nMedian |error| of today's prediction, per kernel:\n\n";
                    Json med;
                    Table mt({"kernel", "median |error|", "configurations"}, "lrr");
                    for (auto& [algo, v] : errors) {
                        std::sort(v.begin(), v.end());
                        const double mdn = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
                        mt.row({algo, fixed(mdn, 0) + "%", grouped(static_cast<std::int64_t>(v.size()))});
                        med[algo] = mdn;
                    }
                    mt.print(c.out);

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
                    for (const auto& f : files) {
                        const auto it = std::find_if(ms.begin(), ms.end(), [&](const Measurement& m) { return m.file == f; });
                        if (it != ms.end()) ++runs[folder_of(f)].files;
                    }
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
                    if (!skipped.empty()) c.out << '\n';
                    for (const auto& s : skipped) print_para(c.out, "skipped " + s, "  ", "    ");
                    c.results["measurements"] = ms.size();
                    c.results["rows"] = rows;
                    c.results["median_abs_error_percent"] = med;
                }});

        L.step({"predicted", "What the simulator predicts for this problem",
                R"(The simulator's predictions for the CUDA kernel families of the forward pass
on the chosen GPU and problem (by default fa-validate's batch and head count,
fp32), modelled as fa-validate models them. These are predictions, not
measurements. (The backward's kernels are lesson 10's subject.))",
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
                }});

        L.step({"run", "Measuring here",
                R"(With --run, and when this machine has an NVIDIA GPU and the two tools are
built, the lesson runs cuda-check --small and then fa-validate on a small
grid (N 1024 and 4096, d 64, non-causal, the chosen dtype), writes the
results to a temporary file and compares them with today's simulator as in
step 2. To keep them, rerun fa-validate with --out cuda/results/NAME.json.)",
                [&](Ctx& c) {
                    const fs::path bin = cuda_bin;
                    const fs::path check_tool = find_tool(bin, "cuda-check"), validate_tool = find_tool(bin, "fa-validate");
                    const bool ready = !check_tool.empty() && !validate_tool.empty() && gpu_present();
                    c.results["ran"] = false;
                    if (!run_tools) {
                        c.out << (ready ? "Not run (pass --run to run it here).\n" : "Not run: no GPU or tools here.\n");
                        return;
                    }
                    if (!ready) {
                        print_para(c.out, "--run: nothing to run here. It needs cuda-check and fa-validate built under " +
                                              bin.string() + " and a GPU that nvidia-smi lists.");
                        return;
                    }
                    const fs::path out = fs::temp_directory_path() / ("fa-sim-lesson09-" + std::to_string(::getpid()));
                    fs::create_directories(out);
                    std::cout.flush();
                    const std::string dtype = dtype_name(p.dtype);
                    const int rc1 = std::system((check_tool.string() + " --small --quiet").c_str());
                    const int rc2 = std::system((validate_tool.string() + " --N 1024,4096 --d 64 --causal off --dtype " + dtype +
                                                 " --batch " + std::to_string(p.batch) + " --heads " + std::to_string(p.heads) +
                                                 " --out " + (out / "here.json").string())
                                                    .c_str());
                    c.out << "cuda-check exit " << WEXITSTATUS(rc1) << ", fa-validate exit " << WEXITSTATUS(rc2) << '\n';
                    std::vector<std::string> files, skipped;
                    const auto ms = read_results(out, files, skipped);
                    Table t({"kernel", "N", "measured", "predicted now", "error"}, "lrrrr");
                    for (const auto& m : ms) {
                        const auto now = predict_now(m);
                        t.row({m.algo, grouped(m.problem.N), units::seconds(m.measured_s), now ? units::seconds(*now) : "-",
                               now ? signed_percent(100.0 * (*now - m.measured_s) / m.measured_s) : "-"});
                    }
                    t.print(c.out);
                    c.out << "Results: " << (out / "here.json").string() << '\n';
                    c.results["ran"] = true;
                },
                R"PY(# On a notebook service with a GPU (e.g. a T4, sm_75): build the CUDA tools and measure.
# Without a GPU or the CUDA toolkit, this cell skips cleanly.
import shutil
have_gpu = shutil.which("nvidia-smi") is not None and subprocess.run(
    ["nvidia-smi", "-L"], capture_output=True).returncode == 0
have_nvcc = shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")
if not (have_gpu and have_nvcc):
    print("No GPU or no CUDA toolkit here: skipping the CUDA build and run.")
else:
    root = _repo_root()
    cap = run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]).split()[0]
    arch = cap.replace(".", "")
    build = root / "build-cuda-notebook"
    env = dict(os.environ, PATH="/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    subprocess.run(["cmake", "-S", str(root), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    "-DFASIM_TESTS=OFF", "-DCMAKE_CUDA_ARCHITECTURES=" + arch], check=True, env=env)
    subprocess.run(["cmake", "--build", str(build), "-j", "2", "--target", "cuda-check",
                    "fa-validate", LESSON], check=True, env=env)
    print(run([build / "lessons" / LESSON, *ARGS, "--cuda-bin", build / "cuda",
               "--run", "--only", "run", "--no-prose"], ok=(0, 1)))
)PY"});

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
