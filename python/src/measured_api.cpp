#include "measured_api.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <pybind11/stl.h>

#include "common/errors.hpp"
#include "figures/measurements.hpp"
#include "json_values.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace fasim::python {

namespace {

using figures::Measurement;

py::dict load(const std::string& path) {
    figures::MeasurementSet set;
    {
        py::gil_scoped_release unlocked;  // a few MB of JSON
        set = figures::read_measurements(path);
    }
    py::list ms;
    for (const Measurement& m : set.measurements) ms.append(to_python(nlohmann::json(figures::measurement_json(m))));
    const figures::NotCompared& n = set.not_compared;
    const py::dict not_compared("files_without_results"_a = n.files_without_results, "files"_a = n.files,
                                "failed"_a = n.failed, "not_run"_a = n.not_run, "no_time"_a = n.no_time,
                                "outside_catalog"_a = n.outside_catalog, "unreadable"_a = n.unreadable,
                                "outside_kernels"_a = std::vector<std::string>(n.outside_kernels.begin(), n.outside_kernels.end()));
    return py::dict("path"_a = set.path, "files"_a = set.files, "skipped"_a = set.skipped, "not_compared"_a = not_compared,
                    "measurements"_a = ms);
}

// Dicts (as load gives them, or written by hand) to measurements, through their JSON text.
std::vector<Measurement> measurements_of(const py::list& items) {
    const py::object dumps = py::module_::import("json").attr("dumps");
    std::vector<Measurement> ms;
    ms.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::string where = "measurements[" + std::to_string(i) + "]";
        if (!py::isinstance<py::dict>(items[i]))
            throw usage_error(where + " is not a dict", "a measurement: a dict as fasim.measured.load gives them",
                              "pass load()[\"measurements\"] or dicts with their keys");
        ms.push_back(figures::measurement_from_json(nlohmann::json::parse(dumps(items[i]).cast<std::string>()), where));
    }
    return ms;
}

// The work runs on other threads; this one (holding the GIL between waits) calls progress(done, total)
// about 5 times a second and once at the end, and stops the work when progress raises or Ctrl-C is pressed.
py::list predict(const py::list& items, const py::object& progress) {
    struct Stopped {};
    const std::vector<Measurement> ms = measurements_of(items);
    std::vector<std::optional<double>> t;
    std::exception_ptr failure;
    std::mutex mutex;
    std::condition_variable finished_cv;
    bool finished = false;
    std::atomic<bool> stop{false};
    std::atomic<std::size_t> done{0}, total{0};
    std::thread work([&] {
        try {
            t = figures::predict_measurements(ms, [&](std::size_t d, std::size_t n) {
                if (stop) throw Stopped{};
                done = d;
                total = n;
            });
        } catch (const Stopped&) {
        } catch (...) {
            failure = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mutex);
        finished = true;
        finished_cv.notify_all();
    });
    auto halt = [&] {
        stop = true;
        py::gil_scoped_release unlocked;
        work.join();
    };
    for (;;) {
        {
            py::gil_scoped_release unlocked;
            std::unique_lock<std::mutex> lock(mutex);
            finished_cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return finished; });
            if (finished) break;
        }
        if (PyErr_CheckSignals() != 0) {  // Ctrl-C (KeyboardInterrupt) in a notebook or a terminal
            py::error_already_set e;
            halt();
            throw e;
        }
        if (!progress.is_none() && total > 0) {
            try {
                progress(done.load(), total.load());
            } catch (py::error_already_set&) {
                halt();
                throw;
            }
        }
    }
    {
        py::gil_scoped_release unlocked;
        work.join();
    }
    if (failure) std::rethrow_exception(failure);
    if (!progress.is_none() && total > 0) progress(total.load(), total.load());
    py::list out;
    for (const auto& v : t) out.append(v ? py::object(py::float_(*v)) : py::object(py::none()));
    return out;
}

py::dict tools_dict(const figures::CudaTools& t) {
    auto path = [](const std::string& p) { return p.empty() ? py::object(py::none()) : py::object(py::str(p)); };
    return py::dict("folder"_a = t.folder, "cuda_check"_a = path(t.cuda_check), "fa_validate"_a = path(t.fa_validate),
                    "gpu_present"_a = t.gpu_present, "ready"_a = t.ready());
}

}  // namespace

void bind_measured_api(py::module_& parent) {
    py::module_ m = parent.def_submodule("measured", "Measured kernel timings beside the simulator (fasim.measured).");
    m.def("load", &load, "path"_a,
          "Reads a folder of fa-validate result files (every *.json under it) or one file: {'path', 'files', 'skipped', "
          "'measurements'}.");
    m.def("predict", &predict, "measurements"_a, "progress"_a = py::none(),
          "Today's simulator's time for each measurement dict (None where it has no model for it), as fa-validate "
          "predicts it; each distinct configuration once, on all cores.");
    m.def("default_dir", &figures::default_measurements_dir, "The folder load() reads when given none.");
    m.def("set_default_dir", &figures::set_default_measurements_dir, "dir"_a,
          "Sets the folder load() (and lesson 09 in this module) read when given none.");
    m.def("default_cuda_bin", &figures::default_cuda_bin, "This build's cuda/ folder (where scripts/build.sh puts the CUDA tools).");
    m.def(
        "cuda_tools",
        [](const std::string& folder) {
            figures::CudaTools t;
            {
                py::gil_scoped_release unlocked;  // runs nvidia-smi -L
                t = figures::find_cuda_tools(folder);
            }
            return tools_dict(t);
        },
        "folder"_a, "cuda-check and fa-validate in folder (or its validate/ and harness/) and whether nvidia-smi lists a GPU.");
    m.def(
        "measure",
        [](const std::string& folder, const std::string& dtype, std::int64_t batch, std::int64_t heads) {
            AttentionProblem p;
            const auto t = parse_dtype(dtype);
            if (!t) throw usage_error("dtype '" + dtype + "' is not supported", "fp32, fp16 or bf16", "e.g. dtype='fp32'");
            p.dtype = *t;
            p.batch = batch;
            p.heads = heads;
            validate(p);
            figures::GridRun r;
            {
                py::gil_scoped_release unlocked;  // the tools run for a minute or more
                r = figures::measure_small_grid(figures::find_cuda_tools(folder), p, true);
            }
            return py::dict("cuda_check_exit"_a = r.cuda_check_exit, "fa_validate_exit"_a = r.fa_validate_exit,
                            "results_file"_a = r.results_file, "output"_a = r.output);
        },
        "folder"_a, "dtype"_a, "batch"_a, "heads"_a,
        "Runs cuda-check --small and fa-validate on a small grid (lesson 09's --run) with the tools in folder.");
}

}  // namespace fasim::python
