#include "arguments.hpp"

#include <algorithm>

#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"

namespace py = pybind11;

namespace fasim::python {

namespace {

std::int64_t at_least_one(const char* name, std::int64_t v, std::int64_t hi, const std::string& fix) {
    if (v < 1 || v > hi)
        throw usage_error(std::string(name) + "=" + std::to_string(v) + " is out of range",
                          std::string(name) + " must be 1.." + std::to_string(hi), fix);
    return v;
}

PassSelection parse_pass(const std::string& pass) {
    if (pass == "fwd") return PassSelection::fwd;
    if (pass == "bwd") return PassSelection::bwd;
    if (pass == "fwd+bwd") return PassSelection::fwd_bwd;
    throw usage_error("pass_='" + pass + "' is not a pass", "choose 'fwd', 'bwd' or 'fwd+bwd'", "e.g. pass_='fwd+bwd'");
}

[[noreturn]] void unknown_algorithm(const std::string& id) {
    throw usage_error("algo='" + id + "' is not an algorithm", "choose " + algorithm_ids(", ") + " or 'all'",
                      "e.g. algo='fa2' (fasim.algorithms() lists them)");
}

}  // namespace

DType dtype_arg(const std::string& dtype) {
    if (auto t = parse_dtype(dtype)) return *t;
    throw usage_error("dtype='" + dtype + "' is not supported", "dtype must be 'fp32', 'fp16' or 'bf16'", "e.g. dtype='fp16'");
}

AttentionProblem make_problem(const ProblemArgs& a) {
    AttentionProblem p;
    p.N = a.N;
    p.Nk = a.Nk.value_or(a.N);
    p.d = a.d;
    p.heads = a.heads;
    p.batch = a.batch;
    p.dtype = dtype_arg(a.dtype);
    p.causal = a.causal;
    if (a.kv_heads) {
        if (*a.kv_heads < 1)
            throw usage_error("kv_heads=" + std::to_string(*a.kv_heads) + " is out of range",
                              "kv_heads must be a divisor of heads", "pass e.g. kv_heads=1 (multi-query), or None");
        p.kv_heads = *a.kv_heads;
    }
    validate(p);
    return p;
}

TileRequest make_tile_request(const TileArgs& a) {
    TileRequest r;
    r.Br = a.Br;
    r.Bc = a.Bc;
    if (a.q_splits)
        r.q_splits = at_least_one("q_splits", *a.q_splits, ProblemLimits::max_seq, "pass 1 up to ceil(N/Br), or None");
    if (a.kv_splits)
        r.kv_splits = at_least_one("kv_splits", *a.kv_splits, ProblemLimits::max_seq,
                                   "pass 1 (no split) up to ceil(Nk/Bc), or None for the heuristic");
    if (a.registers)
        r.registers_per_thread = static_cast<int>(at_least_one(
            "registers", *a.registers, 255, "pass the count ptxas -v prints for the kernel, e.g. registers=128, or None"));
    if (a.matmul == "tiled") r.matmul = MatmulMode::tiled;
    else if (a.matmul == "naive") r.matmul = MatmulMode::naive;
    else if (a.matmul == "library") r.matmul = MatmulMode::library;
    else throw usage_error("matmul='" + a.matmul + "' is not a matmul mode", "choose 'tiled', 'naive' or 'library'", "e.g. matmul='naive'");
    if (a.dq == "atomic") r.dq = DqMode::atomic;
    else if (a.dq == "separate") r.dq = DqMode::separate;
    else throw usage_error("dq='" + a.dq + "' is not a dQ mode", "choose 'atomic' or 'separate'", "e.g. dq='separate'");
    return r;
}

ModelOptions make_model_options(const TileArgs& a) {
    ModelOptions o;
    o.tensor_cores = !a.cuda_cores;
    return o;
}

GpuSpec gpu_arg(const py::handle& gpu) {
    if (gpu.is_none()) return find_gpu_preset(default_gpu_name());
    if (py::isinstance<GpuSpec>(gpu)) return gpu.cast<GpuSpec>();
    if (py::isinstance<py::str>(gpu)) return find_gpu_preset(gpu.cast<std::string>());
    throw usage_error("gpu=" + py::repr(gpu).cast<std::string>() + " is not a GPU",
                      "gpu is a preset name (fasim.gpus()) or a fasim.Gpu", "e.g. gpu='H100-SXM', or gpu=fasim.load_gpu_file(path)");
}

Selection select_algorithms(const py::handle& algo, const std::optional<std::string>& pass, const AttentionProblem& p,
                            bool sweep_of_nk) {
    Selection s;
    const bool pass_given = pass.has_value();
    s.pass = pass_given ? parse_pass(*pass) : PassSelection::fwd;
    if (py::isinstance<py::str>(algo) && algo.cast<std::string>() == "all") {  // as fa-sim --algo all
        s.several = true;
        s.algos = compared_algorithms(Pass::forward);
        if (s.pass != PassSelection::fwd) std::erase_if(s.algos, [](const Algorithm* a) { return backward_of(*a) == nullptr; });
        if (p.grouped()) std::erase_if(s.algos, [](const Algorithm* a) { return !a->grouped_kv; });
        if (p.N >= p.Nk && !sweep_of_nk) std::erase_if(s.algos, [](const Algorithm* a) { return a->decoding; });
        return s;
    }
    std::vector<std::string> ids;
    if (py::isinstance<py::str>(algo)) {
        ids.push_back(algo.cast<std::string>());
    } else if (py::isinstance<py::list>(algo) || py::isinstance<py::tuple>(algo)) {
        s.several = true;
        for (py::handle h : algo) {
            if (!py::isinstance<py::str>(h))
                throw usage_error("algo contains " + py::repr(h).cast<std::string>(), "algo is an id, a list of ids or 'all'",
                                  "e.g. algo=['standard', 'fa2']");
            ids.push_back(h.cast<std::string>());
        }
        if (ids.empty()) throw usage_error("algo=[] names no algorithm", "give at least one id", "e.g. algo=['standard', 'fa2']");
    } else {
        throw usage_error("algo=" + py::repr(algo).cast<std::string>() + " is not an algorithm id",
                          "algo is an id, a list of ids or 'all'", "e.g. algo='fa2'");
    }
    for (const std::string& id : ids) {
        const Algorithm* a = find_algorithm(id);
        if (!a) unknown_algorithm(id);
        if (a->pass == Pass::backward) {  // "fa2_bwd": fa2's backward pass
            if (pass_given && s.pass == PassSelection::fwd)
                throw usage_error("algo='" + id + "' is a backward pass, and pass_='fwd' was given",
                                  id + " runs with pass_='bwd' or 'fwd+bwd'",
                                  "use algo='" + std::string(a->family) + "' with pass_='fwd', or drop pass_");
            if (!pass_given) s.pass = PassSelection::bwd;
            a = &algorithm(a->family);
        }
        s.algos.push_back(a);
    }
    if (s.pass != PassSelection::fwd)
        for (const Algorithm* a : s.algos) (void)backward_program(*a);  // no backward: said now
    return s;
}

void check_dq(const TileRequest& request, const Selection& s) {
    if (request.dq != DqMode::separate) return;
    if (s.pass == PassSelection::fwd)
        throw usage_error("dq='separate' was given for the forward pass", "dq chooses how the backward sums dQ",
                          "pass pass_='bwd' or 'fwd+bwd', or drop dq");
    if (std::none_of(s.algos.begin(), s.algos.end(), [](const Algorithm* a) { return backward_program(*a).dq_modes; }))
        throw usage_error("dq='separate' does not apply to the algorithms given", "only fa2's backward has a dQ choice",
                          "use algo='fa2', or drop dq");
}

const Algorithm& forward_algorithm(const std::string& id) {
    const Algorithm* a = find_algorithm(id);
    if (!a) unknown_algorithm(id);
    return a->pass == Pass::backward ? algorithm(a->family) : *a;
}

}  // namespace fasim::python
