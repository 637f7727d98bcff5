#include "figures/measurements.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"
#include "kernels/kernel_catalog.hpp"
#include "model/simulation.hpp"

#ifndef FASIM_SOURCE_DIR
#define FASIM_SOURCE_DIR "."
#endif
#ifndef FASIM_BINARY_DIR
#define FASIM_BINARY_DIR "build"
#endif

namespace fasim::figures {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Result files nest 5 levels; anything deeper than this is not one (and is refused before it is walked).
constexpr int kMaxJsonDepth = 64;

std::string plural(std::int64_t n, const std::string& one, const std::string& many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Why entries of one file were not compared, in words.
std::string entries_text(const NotCompared& c) {
    std::vector<std::string> parts;
    if (c.failed) parts.push_back(plural(c.failed, "failed run", "failed runs"));
    if (c.not_run) parts.push_back(std::to_string(c.not_run) + " not run");
    if (c.no_time) parts.push_back(std::to_string(c.no_time) + " without a measured time");
    if (c.outside_catalog) {
        std::string names;
        for (const auto& k : c.outside_kernels) names += (names.empty() ? "" : ", ") + k;
        parts.push_back(std::to_string(c.outside_catalog) + " of kernels outside fa-sim's catalog (" + names + ")");
    }
    if (c.unreadable) parts.push_back(std::to_string(c.unreadable) + " unreadable");
    std::string s = plural(c.entries(), "entry", "entries") + " not compared: ";
    for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
    return s;
}

// A string member, absent when missing or not a string (gpu_preset is null in predictions made with a GPU file).
std::string text_of(const json& obj, const char* key, const std::string& absent) {
    const auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : absent;
}

std::int64_t integer_of(const json& obj, const char* key, std::int64_t absent) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return absent;
    return it->get<std::int64_t>();  // type_error for a value that is not a number: the entry is unreadable
}

void read_file(const fs::path& path, const std::string& name, MeasurementSet& set) {
    json doc;
    try {
        std::ifstream f(path);
        const json::parser_callback_t limit_depth = [](int depth, json::parse_event_t event, json&) {
            if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) && depth >= kMaxJsonDepth)
                throw std::runtime_error("nested too deep");
            return true;
        };
        doc = json::parse(f, limit_depth);
    } catch (const std::exception&) {
        set.skipped.push_back(name + ": not valid JSON");
        ++set.not_compared.files_without_results;
        return;
    }
    if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
        set.skipped.push_back(name + ": no \"results\" array");
        ++set.not_compared.files_without_results;
        return;
    }
    set.files.push_back(name);
    const std::string gpu = text_of(doc, "gpu", "?");
    std::string preset = text_of(doc, "gpu_preset", "");
    if (preset.empty() && gpu != "?") preset = preset_for_device(gpu);
    NotCompared bad;
    for (const json& r : doc["results"]) {
        if (!r.is_object()) {
            ++bad.unreadable;
            continue;
        }
        if (r.contains("error")) {
            ++bad.failed;
            continue;
        }
        if (r.contains("skipped")) {
            ++bad.not_run;
            continue;
        }
        const auto t = r.find("measured_s");
        if (t == r.end() || !t->is_number() || !std::isfinite(t->get<double>()) || !(t->get<double>() > 0)) {
            ++bad.no_time;
            continue;
        }
        try {
            Measurement m;
            m.file = name;
            m.gpu = gpu;
            m.preset = preset;
            m.driver = text_of(doc, "driver", "?");
            m.date = text_of(doc, "date", "?");
            m.kernel = r.at("algo").get<std::string>();
            if (!find_kernel(m.kernel)) {
                ++bad.outside_catalog;
                bad.outside_kernels.insert(m.kernel);
                continue;
            }
            AttentionProblem& p = m.problem;
            p.N = r.at("N").get<std::int64_t>();
            p.Nk = integer_of(r, "Nk", p.N);
            p.d = r.at("d").get<std::int64_t>();
            const auto dt = parse_dtype(r.at("dtype").get<std::string>());
            if (!dt) throw std::runtime_error("dtype");
            p.dtype = *dt;
            p.causal = r.value("causal", false);
            p.batch = integer_of(r, "batch", integer_of(doc, "batch", 1));
            p.heads = integer_of(r, "heads", integer_of(doc, "heads", 1));
            p.kv_heads = integer_of(r, "kv_heads", 0);
            if (p.kv_heads == p.heads) p.kv_heads = 0;  // multi-head attention, as the simulator writes it
            m.launch = measured_launch(r);
            m.measured_s = t->get<double>();
            if (const auto pred = r.find("predicted_s"); pred != r.end() && pred->is_number())
                m.predicted_then_s = pred->get<double>();
            set.measurements.push_back(std::move(m));
        } catch (const std::exception&) {
            ++bad.unreadable;
        }
    }
    if (bad.entries()) {
        set.skipped.push_back(name + ": " + entries_text(bad));
        NotCompared& all = set.not_compared;
        ++all.files;
        all.failed += bad.failed;
        all.not_run += bad.not_run;
        all.no_time += bad.no_time;
        all.outside_catalog += bad.outside_catalog;
        all.unreadable += bad.unreadable;
        all.outside_kernels.insert(bad.outside_kernels.begin(), bad.outside_kernels.end());
    }
}

// One configuration as a map key: everything the prediction depends on.
std::string configuration_key(const Measurement& m) {
    const AttentionProblem& p = m.problem;
    const MeasuredLaunch& l = m.launch;
    std::string k = m.preset + '|' + m.kernel + '|' + p.describe();
    for (const std::int64_t v : {p.batch, p.heads, p.kv_heads, p.N, p.Nk, p.d, l.Br, l.Bc, l.q_splits,
                                 static_cast<std::int64_t>(l.registers_per_thread), static_cast<std::int64_t>(l.warps),
                                 l.smem_bytes, l.kv_splits, static_cast<std::int64_t>(l.one_address_per_tile)})
        k += ',' + std::to_string(v);
    return k;
}

std::string& default_dir_override() {
    static std::string dir;
    return dir;
}

bool executable(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// Runs a command; with `capture`, appends what it printed (stdout and stderr) to `output`. The exit status.
int run_command(const std::string& command, bool capture, std::string& output) {
    if (!capture) {
        const int rc = std::system(command.c_str());
        return rc == -1 ? -1 : WEXITSTATUS(rc);
    }
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return -1;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
    const int rc = ::pclose(pipe);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

std::string lower_case(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string shell_quoted(const std::string& s) {
    std::string q = "'";
    for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

}  // namespace

MeasurementSet read_measurements(const std::string& path) {
    MeasurementSet set;
    set.path = path;
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
        read_file(path, fs::path(path).filename().string(), set);
        return set;
    }
    if (!fs::is_directory(path, ec)) return set;
    std::vector<fs::path> paths;
    for (const auto& e : fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec))
        if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) read_file(p, fs::relative(p, path).string(), set);
    return set;
}

nlohmann::ordered_json measurement_json(const Measurement& m) {
    const AttentionProblem& p = m.problem;
    const MeasuredLaunch& l = m.launch;
    nlohmann::ordered_json j;
    j["file"] = m.file;
    j["gpu"] = m.gpu;
    j["gpu_preset"] = m.preset.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(m.preset);
    j["driver"] = m.driver;
    j["date"] = m.date;
    j["algo"] = m.kernel;
    j["N"] = p.N;
    j["Nk"] = p.Nk;
    j["d"] = p.d;
    j["dtype"] = dtype_name(p.dtype);
    j["causal"] = p.causal;
    j["batch"] = p.batch;
    j["heads"] = p.heads;
    j["kv_heads"] = p.kv_head_count();
    j["launch"] = {{"Br", l.Br},         {"Bc", l.Bc},
                   {"q_splits", l.q_splits}, {"kv_splits", l.kv_splits},
                   {"warps", l.warps},   {"registers_per_thread", l.registers_per_thread},
                   {"smem_bytes", l.smem_bytes},
                   {"tile_addresses", l.one_address_per_tile ? "one_per_tile" : "per_chunk"}};
    j["measured_s"] = m.measured_s;
    j["predicted_s"] = m.predicted_then_s ? nlohmann::ordered_json(*m.predicted_then_s) : nlohmann::ordered_json(nullptr);
    return j;
}

Measurement measurement_from_json(const json& j, const std::string& where) {
    auto fail = [&](const std::string& key, const std::string& problem, const std::string& allowed, const std::string& fix) {
        throw usage_error(where + "[\"" + key + "\"] " + problem, allowed, fix);
    };
    if (!j.is_object())
        throw usage_error(where + " is not a dict", "a measurement: a dict as fasim.measured.load gives them",
                          "pass one of load()[\"measurements\"]");
    auto text = [&](const char* key, bool required) -> std::string {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) {
            if (required) fail(key, "is missing", std::string("a measurement needs \"") + key + "\"", "add it");
            return {};
        }
        if (!it->is_string()) fail(key, "is not a string", "a string", "quote it");
        return it->get<std::string>();
    };
    auto integer = [&](const char* key, std::int64_t absent, std::int64_t lo, std::int64_t hi) -> std::int64_t {
        const auto it = j.find(key);
        if (it == j.end() || it->is_null()) {
            if (absent < 0) fail(key, "is missing", std::string("a measurement needs \"") + key + "\"", "add it");
            return absent;
        }
        if (!it->is_number_integer() || it->get<std::int64_t>() < lo || it->get<std::int64_t>() > hi)
            fail(key, "= " + it->dump() + " is out of range",
                 std::string("\"") + key + "\" must be a whole number in " + std::to_string(lo) + ".." + std::to_string(hi),
                 "pass a whole number in range");
        return it->get<std::int64_t>();
    };
    Measurement m;
    m.file = text("file", false);
    m.gpu = text("gpu", false);
    m.preset = text("gpu_preset", false);
    if (m.preset.empty() && !m.gpu.empty()) {
        for (const std::string& name : gpu_preset_names())
            if (lower_case(name) == lower_case(m.gpu)) m.preset = name;
        if (m.preset.empty()) m.preset = preset_for_device(m.gpu);
    }
    if (m.preset.empty())
        fail("gpu_preset", "is missing (and \"gpu\" names no preset)", "the preset the prediction runs on (fasim.gpus())",
             "add \"gpu_preset\", e.g. \"H100-SXM\"");
    m.preset = find_gpu_preset(m.preset).name;  // an unknown name: UsageError listing the presets
    m.driver = text("driver", false);
    m.date = text("date", false);
    m.kernel = text("algo", true);
    if (!find_kernel(m.kernel))
        fail("algo", "= '" + m.kernel + "' is not in the kernel catalog", "one of " + kernel_names(),
             "name a kernel of fasim.kernels()");
    AttentionProblem& p = m.problem;
    p.N = integer("N", -1, 1, ProblemLimits::max_seq);
    p.Nk = integer("Nk", p.N, 1, ProblemLimits::max_seq);
    p.d = integer("d", -1, 1, 1024);
    const std::string dt = text("dtype", true);
    const auto t = parse_dtype(dt);
    if (!t) fail("dtype", "= '" + dt + "' is not a dtype", "fp32, fp16 or bf16", "use one of those");
    p.dtype = *t;
    if (const auto c = j.find("causal"); c != j.end() && !c->is_null()) {
        if (!c->is_boolean()) fail("causal", "is not a bool", "True or False", "pass a bool");
        p.causal = c->get<bool>();
    } else {
        p.causal = false;
    }
    p.batch = integer("batch", 1, 1, ProblemLimits::max_batch);
    p.heads = integer("heads", 1, 1, ProblemLimits::max_heads);
    p.kv_heads = integer("kv_heads", 0, 0, p.heads);
    if (p.kv_heads == p.heads) p.kv_heads = 0;  // (the problem is not validated: one the simulator refuses predicts None)
    if (const auto l = j.find("launch"); l != j.end() && !l->is_null()) {
        if (!l->is_object()) fail("launch", "is not a dict", "the launch's Br, Bc, ... as load() gives them", "pass a dict or None");
        const std::string inner = where + "[\"launch\"]";
        auto get = [&](const char* key, std::int64_t hi) -> std::int64_t {
            const auto it = l->find(key);
            if (it == l->end() || it->is_null()) return 0;
            if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > hi)
                throw usage_error(inner + "[\"" + key + "\"] = " + it->dump() + " is out of range",
                                  std::string("a whole number in 0..") + std::to_string(hi), "pass 0 when not recorded");
            return it->get<std::int64_t>();
        };
        m.launch.Br = get("Br", 4096);
        m.launch.Bc = get("Bc", 4096);
        m.launch.q_splits = get("q_splits", ProblemLimits::max_seq);
        m.launch.kv_splits = get("kv_splits", ProblemLimits::max_seq);
        m.launch.warps = static_cast<int>(get("warps", 32));
        m.launch.registers_per_thread = static_cast<int>(get("registers_per_thread", 255));
        m.launch.smem_bytes = get("smem_bytes", 4194304);
        if (const auto it = l->find("tile_addresses"); it != l->end() && !it->is_null()) {
            if (!it->is_string() || (*it != "one_per_tile" && *it != "per_chunk"))
                throw usage_error(inner + "[\"tile_addresses\"] = " + it->dump() + " is not a way to copy tiles",
                                  "\"one_per_tile\" or \"per_chunk\"", "pass one of them, or None for per_chunk");
            m.launch.one_address_per_tile = *it == "one_per_tile";
        }
    }
    if (const auto it = j.find("measured_s"); it != j.end() && !it->is_null()) {
        if (!it->is_number() || !std::isfinite(it->get<double>()) || !(it->get<double>() > 0))
            fail("measured_s", "= " + it->dump() + " is not a positive number of seconds", "a time in seconds, e.g. 1.25e-4",
                 "pass the measured time");
        m.measured_s = it->get<double>();
    }
    if (const auto it = j.find("predicted_s"); it != j.end() && it->is_number()) m.predicted_then_s = it->get<double>();
    return m;
}

std::vector<std::optional<double>> predict_measurements(const std::vector<Measurement>& ms,
                                                        const std::function<void(std::size_t, std::size_t)>& progress) {
    // The distinct configurations, in first-seen order, and which one each measurement is.
    std::map<std::string, std::size_t> index;
    std::vector<const Measurement*> distinct;
    std::vector<std::size_t> of(ms.size());
    for (std::size_t i = 0; i < ms.size(); ++i) {
        const auto [it, added] = index.emplace(configuration_key(ms[i]), distinct.size());
        if (added) distinct.push_back(&ms[i]);
        of[i] = it->second;
    }
    // The presets, looked up once (not from the worker threads).
    std::map<std::string, std::optional<GpuSpec>> gpus;
    for (const Measurement* m : distinct)
        if (!m->preset.empty() && !gpus.count(m->preset)) {
            try {
                gpus.emplace(m->preset, find_gpu_preset(m->preset));
            } catch (const std::exception&) {
                gpus.emplace(m->preset, std::nullopt);
            }
        }
    std::vector<std::optional<double>> times(distinct.size());
    std::atomic<std::size_t> next{0};
    std::mutex mutex;  // guards done, failure and progress
    std::size_t done = 0;
    std::exception_ptr failure;
    auto worker = [&] {
        for (std::size_t i = next++; i < distinct.size(); i = next++) {
            const Measurement& m = *distinct[i];
            const auto g = m.preset.empty() ? gpus.end() : gpus.find(m.preset);
            if (g != gpus.end() && g->second) {
                try {
                    const KernelSetup s = kernel_setup(*find_kernel(m.kernel), m.problem, *g->second, m.launch);
                    times[i] = simulate(*s.algorithm, m.problem, *g->second, s.tiles, s.options).time_s;
                } catch (const std::exception&) {  // the kernel's model does not apply (no tile fits, grouped heads, ...)
                }
            }
            std::lock_guard<std::mutex> lock(mutex);
            ++done;
            if (progress && !failure) {
                try {
                    progress(done, distinct.size());
                } catch (...) {  // the caller's progress stopped the work: raised once all threads are done
                    failure = std::current_exception();
                    next = distinct.size();
                }
            }
        }
    };
    const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, std::max<std::size_t>(1, distinct.size()));
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
    std::vector<std::optional<double>> out(ms.size());
    for (std::size_t i = 0; i < ms.size(); ++i) out[i] = times[of[i]];
    return out;
}

std::string default_measurements_dir() {
    const std::string& set = default_dir_override();
    return set.empty() ? std::string(FASIM_SOURCE_DIR) + "/cuda/results" : set;
}

void set_default_measurements_dir(const std::string& dir) { default_dir_override() = dir; }

std::string default_cuda_bin() { return std::string(FASIM_BINARY_DIR) + "/cuda"; }

CudaTools find_cuda_tools(const std::string& folder) {
    CudaTools t;
    t.folder = folder;
    const fs::path bin = folder;
    auto find = [&](const std::string& name) -> std::string {
        for (const fs::path& p : {bin / name, bin / "validate" / name, bin / "harness" / name})
            if (executable(p)) return p.string();
        return {};
    };
    t.cuda_check = find("cuda-check");
    t.fa_validate = find("fa-validate");
    t.gpu_present = std::system("nvidia-smi -L >/dev/null 2>&1") == 0;
    return t;
}

GridRun measure_small_grid(const CudaTools& tools, const AttentionProblem& p, bool capture) {
    if (!tools.ready())
        throw usage_error("measuring needs cuda-check and fa-validate built under " + tools.folder + " and a GPU that nvidia-smi lists",
                          "a machine with an NVIDIA GPU and the CUDA toolkit", "build the CUDA tools there (scripts/build.sh)");
    GridRun r;
    const fs::path out = fs::temp_directory_path() / ("fa-sim-measured-" + std::to_string(::getpid()));
    fs::create_directories(out);
    r.results_file = (out / "here.json").string();
    r.cuda_check_exit = run_command(shell_quoted(tools.cuda_check) + " --small --quiet", capture, r.output);
    r.fa_validate_exit = run_command(shell_quoted(tools.fa_validate) + " --N 1024,4096 --d 64 --causal off --dtype " +
                                         dtype_name(p.dtype) + " --batch " + std::to_string(p.batch) + " --heads " +
                                         std::to_string(p.heads) + " --out " + shell_quoted(r.results_file),
                                     capture, r.output);
    return r;
}

}  // namespace fasim::figures
