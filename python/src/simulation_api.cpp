#include "simulation_api.hpp"

#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"
#include "json_values.hpp"
#include "model/sweep.hpp"
#include "report/report.hpp"

namespace py = pybind11;

namespace fasim::python {

py::object simulate(const py::handle& algo, const ProblemArgs& problem, const TileArgs& tiles, const py::handle& gpu,
                    const std::optional<std::string>& pass) {
    const AttentionProblem p = make_problem(problem);
    const GpuSpec g = gpu_arg(gpu);
    const Selection s = select_algorithms(algo, pass, p);
    const TileRequest request = make_tile_request(tiles);
    check_dq(request, s);
    const ModelOptions options = make_model_options(tiles);
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
        throw usage_error("sweep() was given no values", "values is a list of " + parameter + " values, 1..1048576",
                          "e.g. values=[512, 1024, 2048, 4096]");
    for (std::int64_t v : *values)
        if (v < 1 || v > ProblemLimits::max_seq)
            throw usage_error("values contains " + std::to_string(v), parameter + " must be 1..1048576", "drop or fix that value");
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
