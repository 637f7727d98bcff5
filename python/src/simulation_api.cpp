#include "simulation_api.hpp"

#include "common/errors.hpp"
#include <cctype>

#include "gpu/gpu_catalog.hpp"
#include "kernels/kernel_catalog.hpp"
#include "model/kernel_setup.hpp"
#include "json_values.hpp"
#include "model/sweep.hpp"
#include "report/report.hpp"

namespace py = pybind11;

namespace fasim::python {

namespace {

std::string lowered(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// kernel='fa2_tc': the catalog row's algorithm, tiles, products and registers, as fa-sim --kernel NAME
// (model/kernel_setup.hpp); Br, Bc, q_splits, kv_splits and registers given as well are what a run recorded.
void apply_kernel(const std::string& name, const py::handle& algo, const AttentionProblem& p, const GpuSpec& g,
                  const TileArgs& tiles, const std::optional<std::string>& pass, Selection& s, TileRequest& request,
                  ModelOptions& options) {
    const KernelVariant* k = find_kernel(lowered(name));
    if (!k)
        throw usage_error("kernel='" + name + "' is not in the kernel catalog", "one of " + kernel_names(),
                          "e.g. kernel='fa2_tc' (fasim.kernels() lists them)");
    if (!algo.is_none() && !(py::isinstance<py::str>(algo) && lowered(algo.cast<std::string>()) == k->algorithm))
        throw usage_error("kernel='" + name + "' implements " + std::string(k->algorithm) + ", not algo=" +
                              py::repr(algo).cast<std::string>(),
                          "a kernel picks its own algorithm", "drop algo");
    if (tiles.cuda_cores || tiles.matmul != "tiled")
        throw usage_error("kernel='" + name + "' was combined with " + (tiles.cuda_cores ? "cuda_cores" : "matmul"),
                          "the kernel decides how it multiplies matrices (" + std::string(products_name(k->products)) + ")",
                          std::string("drop ") + (tiles.cuda_cores ? "cuda_cores" : "matmul"));
    if (pass && *pass != "fwd")
        throw usage_error("kernel='" + name + "' with pass_='" + *pass + "'", "a kernel of the catalog is one pass",
                          "name the backward's kernel (e.g. kernel='fa2_bwd'), or drop pass_");
    if (const std::string why = k->unsupported(p.dtype, static_cast<int>(p.d), "kernel"); !why.empty()) throw UsageError(why);
    if (g.compute_capability > 0 && g.compute_capability < k->min_compute_capability)
        throw usage_error("kernel='" + name + "' needs compute capability " + std::to_string(k->min_compute_capability / 10) + "." +
                              std::to_string(k->min_compute_capability % 10) + " or higher",
                          g.name + " is " + std::to_string(g.compute_capability / 10) + "." + std::to_string(g.compute_capability % 10),
                          "pick a newer gpu, or kernel='" + std::string(k->algorithm) + "' (its CUDA-core kernel)");
    const MeasuredLaunch given{.Br = tiles.Br.value_or(0),
                               .Bc = tiles.Bc.value_or(0),
                               .q_splits = tiles.q_splits.value_or(0),
                               .registers_per_thread = static_cast<int>(tiles.registers.value_or(0)),
                               .kv_splits = tiles.kv_splits.value_or(0)};
    const KernelSetup ks = kernel_setup(*k, p, g, given);
    s = Selection{};
    s.algos = {ks.algorithm};
    options = ks.options;
    TileRequest t = ks.tiles;
    if (request.Br || request.Bc) {  // the caller's tiles, even one of the two
        if (request.Br) t.Br = request.Br;
        if (request.Bc) t.Bc = request.Bc;
        t.tile_source.clear();
    }
    if (request.q_splits) t.q_splits = request.q_splits;
    if (request.registers_per_thread) t.registers_source.clear();
    request = t;
}

}  // namespace

py::object simulate(const py::handle& algo, const ProblemArgs& problem, const TileArgs& tiles, const py::handle& gpu,
                    const std::optional<std::string>& pass, const std::optional<std::string>& kernel) {
    const AttentionProblem p = make_problem(problem);
    const GpuSpec g = gpu_arg(gpu);
    Selection s;
    TileRequest request = make_tile_request(tiles);
    ModelOptions options = make_model_options(tiles);
    if (kernel) {
        apply_kernel(*kernel, algo, p, g, tiles, pass, s, request, options);
    } else {
        s = select_algorithms(algo.is_none() ? py::str("fa2") : algo, pass, p);
        check_dq(request, s);
    }
    nlohmann::json doc;
    {
        py::gil_scoped_release unlocked;
        std::vector<AlgorithmResult> rs;
        for (const Algorithm* a : s.algos) rs.push_back(fasim::simulate(*a, s.pass, p, g, request, options));
        doc = report_json(rs, g);
    }
    if (s.several) return to_python(doc);
    nlohmann::json one = doc["algorithms"].at(0);
    one["schema_version"] = doc["schema_version"];
    one["gpu"] = doc["gpu"];
    one["problem"] = doc["problem"];
    return to_python(one);
}

py::object sweep(const py::handle& algo, const std::string& parameter, const std::optional<std::vector<std::int64_t>>& values,
                 const ProblemArgs& problem, const TileArgs& tiles, const py::handle& gpu, const std::optional<std::string>& pass) {
    if (parameter != "N" && parameter != "Nk")
        throw usage_error("parameter='" + parameter + "' cannot be swept",
                          "'N' (the query length, and the key length with it) or 'Nk' (the key length alone)",
                          "e.g. parameter='N', values=[512, 1024, 2048]");
    if (!values || values->empty())
        throw usage_error("sweep() was given no values", "values is a list of " + parameter + " values, 1..16777216",
                          "e.g. values=[512, 1024, 2048, 4096]");
    for (std::int64_t v : *values)
        if (v < 1 || v > ProblemLimits::max_seq)
            throw usage_error("values contains " + std::to_string(v), parameter + " must be 1..16777216", "drop or fix that value");
    SweepRequest req;
    req.parameter = parameter == "Nk" ? SweepParameter::Nk : SweepParameter::N;
    req.base = make_problem(problem);
    const GpuSpec g = gpu_arg(gpu);
    const Selection s = select_algorithms(algo, pass, req.base, req.parameter == SweepParameter::Nk);
    req.algos = s.algos;
    req.pass = s.pass;
    req.ns = *values;
    req.tiles = make_tile_request(tiles);
    check_dq(req.tiles, s);
    req.model = make_model_options(tiles);
    nlohmann::json doc;
    {
        py::gil_scoped_release unlocked;
        doc = sweep_json(run_sweep(req, g), g, req.parameter);
    }
    return to_python(doc);
}

py::object algorithms_list() { return to_python(catalog_json()["algorithms"]); }
py::object kernels_list() { return to_python(catalog_json()["kernels"]); }

py::object gpu_dict(const py::handle& gpu) { return to_python(nlohmann::json::parse(gpu_spec_to_json(gpu_arg(gpu)))); }

GpuSpec gpu_from_dict(const py::handle& spec) {
    if (!py::isinstance<py::dict>(spec))
        throw usage_error("gpu_from_dict() was given " + std::string(Py_TYPE(spec.ptr())->tp_name),
                          "it takes a dict with the keys of a GPU file (docs/gpu-file.md)",
                          "start from fasim.gpu('A100-SXM4-40GB'), change what differs, and pass that");
    std::string text;
    try {
        text = py::module_::import("json").attr("dumps")(spec).cast<std::string>();
    } catch (py::error_already_set& e) {
        throw usage_error("the GPU dict is not JSON (" + std::string(e.what()) + ")", "its values are numbers, strings and dicts",
                          "start from fasim.gpu('A100-SXM4-40GB')");
    }
    return parse_gpu_json(text, "the dict given to gpu_from_dict");
}

}  // namespace fasim::python
