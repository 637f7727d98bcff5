#include "functional_api.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "arguments.hpp"
#include "arrays.hpp"
#include "common/errors.hpp"
#include "exec/functional_executor.hpp"
#include "exec/observer.hpp"
#include "json_values.hpp"
#include "report/report.hpp"
#include "tile_api.hpp"

namespace py = pybind11;

namespace fasim::python {

namespace {

// The functional executor computes every element on the CPU: run() and trace() stop where that would
// take minutes (run) or make a list of steps nobody reads (trace). Both count B·H·N·Nk.
constexpr std::int64_t kRunLimit = std::int64_t{1} << 26;
constexpr std::int64_t kTraceLimit = std::int64_t{1} << 16;

const char* kQLayout = "[batch, heads, N, d]";
const char* kKVLayout = "[batch, kv_heads, Nk, d]";

struct Inputs {
    AttentionProblem problem;
    HeadArrays Q, K, V;
    std::optional<HeadArrays> dO;
};

std::string shape_of(const HeadArrays& a) {
    return "(" + std::to_string(a.batch) + ", " + std::to_string(a.heads) + ", " + std::to_string(a.rows) + ", " +
           std::to_string(a.cols) + ")";
}

// The arrays, checked against each other, and the problem they describe; every array rounded to the dtype.
Inputs read_inputs(const py::handle& Q, const py::handle& K, const py::handle& V, const py::handle& dO, const RunArgs& args,
                   const char* caller, std::int64_t limit) {
    Inputs in;
    in.Q = read_heads(Q, "Q", kQLayout);
    in.K = read_heads(K, "K", kKVLayout);
    in.V = read_heads(V, "V", kKVLayout);
    const HeadArrays &q = in.Q, &k = in.K, &v = in.V;
    if (k.batch != q.batch || k.cols != q.cols)
        throw usage_error("K has shape " + shape_of(k) + " for Q of shape " + shape_of(q),
                          "K must be " + std::string(kKVLayout) + " with Q's batch (" + std::to_string(q.batch) + ") and d (" +
                              std::to_string(q.cols) + ")",
                          "pass K with shape (" + std::to_string(q.batch) + ", kv_heads, Nk, " + std::to_string(q.cols) + ")");
    if (v.batch != k.batch || v.heads != k.heads || v.rows != k.rows || v.cols != k.cols)
        throw usage_error("V has shape " + shape_of(v) + " and K " + shape_of(k), "V must have K's shape " + std::string(kKVLayout),
                          "pass V with shape " + shape_of(k));
    if (q.heads % k.heads != 0)
        throw usage_error("K and V have " + std::to_string(k.heads) + " heads, which does not divide Q's " + std::to_string(q.heads),
                          "kv_heads must divide heads (each K/V head serves heads/kv_heads query heads; 1: multi-query attention)",
                          "pass K and V with a divisor of " + std::to_string(q.heads) + " heads");
    if (!supported_head_dim(q.cols))
        throw usage_error("Q, K and V have head dimension d=" + std::to_string(q.cols) + ", which fa-sim does not support",
                          "d must be one of " + supported_head_dims_text(), "use a supported head dimension (the last axis)");
    AttentionProblem& p = in.problem;
    p.batch = q.batch;
    p.heads = q.heads;
    p.N = q.rows;
    p.Nk = k.rows;
    p.d = q.cols;
    p.kv_heads = k.heads == q.heads ? 0 : k.heads;
    p.dtype = dtype_arg(args.dtype);
    p.causal = args.causal;
    validate(p);
    const std::int64_t size = p.batch_heads() * p.N * p.Nk;
    if (size > limit)
        throw usage_error(std::string(caller) + " on batch*heads*N*Nk = " + std::to_string(size) + " score elements",
                          std::string(caller) + " computes every element on the CPU and takes at most " + std::to_string(limit),
                          limit == kTraceLimit ? "trace a smaller problem (e.g. N = Nk = 8, d = 4, one head), or use fasim.run()"
                                               : "run a smaller problem, or use fasim.simulate() for the traffic of a large one");
    if (!dO.is_none()) {
        in.dO = read_heads(dO, "dO", kQLayout);
        if (in.dO->batch != q.batch || in.dO->heads != q.heads || in.dO->rows != q.rows || in.dO->cols != q.cols)
            throw usage_error("dO has shape " + shape_of(*in.dO) + " and Q " + shape_of(q), "dO must have Q's shape (O's)",
                              "pass dO with shape " + shape_of(q));
        round_to_dtype(*in.dO, "dO", p.dtype);
    }
    round_to_dtype(in.Q, "Q", p.dtype);
    round_to_dtype(in.K, "K", p.dtype);
    round_to_dtype(in.V, "V", p.dtype);
    return in;
}

// Grouped K/V heads only where the algorithm models them (said with the arrays' words, not fa-sim's flags).
void check_grouping(const Algorithm& algo, const Inputs& in) {
    if (!in.problem.grouped() || algo.grouped_kv) return;
    std::string takes;  // as algo= names them: a backward pass by its forward's id
    for (const Algorithm* a : algorithms(algo.pass))
        if (a->grouped_kv) takes += (takes.empty() ? "" : ", ") + std::string(a->family.empty() ? a->id : a->family);
    const std::string group = std::to_string(in.problem.group_size());
    throw usage_error("K and V have " + std::to_string(in.K.heads) + " heads for Q's " + std::to_string(in.Q.heads) +
                          " (grouped-query attention), which " + std::string(algo.id) + " does not model",
                          algo.pass == Pass::backward ? "the algorithms whose backward pass takes grouped K/V heads are " + takes
                                                      : "the algorithms with grouped K/V heads are " + takes,
                          "repeat K and V per query head (numpy.repeat(K, " + group + ", axis=1)), or use algo='fa2'");
}

TileRequest request_of(const RunArgs& args) {
    TileArgs t;
    t.Br = args.Br;
    t.Bc = args.Bc;
    t.q_splits = args.q_splits;
    t.kv_splits = args.kv_splits;
    return make_tile_request(t);
}

nlohmann::json level_json(const LevelTraffic& t) {
    nlohmann::json by_tensor = nlohmann::json::object();
    for (const TensorBytes& b : t.tensors)
        if (b.read != 0 || b.write != 0) by_tensor[b.name] = {{"read_bytes", b.read}, {"write_bytes", b.write}};
    return {{"read_bytes", t.read_bytes()}, {"write_bytes", t.write_bytes()}, {"by_tensor", by_tensor}};
}

nlohmann::json tiles_json(const TileConfig& c) {
    return {{"Br", c.Br},           {"Bc", c.Bc},
            {"M_elements", c.M_elements}, {"q_splits", c.q_splits},
            {"kv_splits", c.kv_splits},   {"smem_bytes_per_block", c.smem_bytes},
            {"reasons", c.reasons}};
}

// What the kernels moved and computed, in the keys of fa-sim's JSON (docs/output-schema.md).
nlohmann::json counts_json(const std::vector<KernelRecord>& kernels) {
    LevelTraffic hbm, l2, dram;
    Count smem_read = 0, smem_write = 0, matmul = 0, nonmatmul = 0, sfu = 0, barriers = 0;
    nlohmann::json per_kernel = nlohmann::json::array();
    for (const KernelRecord& k : kernels) {
        hbm += k.hbm;
        l2 += k.l2;
        dram += k.dram;
        smem_read += k.smem_read;
        smem_write += k.smem_write;
        matmul += k.matmul_flops;
        nonmatmul += k.nonmatmul_flops;
        sfu += k.sfu_ops;
        barriers += k.barriers;
        per_kernel.push_back({{"name", k.desc.name},
                              {"role", k.desc.role},
                              {"grid", k.desc.grid()},
                              {"hbm", level_json(k.hbm)},
                              {"l2", level_json(k.l2)},
                              {"dram", level_json(k.dram)},
                              {"smem", {{"read_bytes", k.smem_read}, {"write_bytes", k.smem_write}}},
                              {"flops", {{"matmul", k.matmul_flops}, {"nonmatmul", k.nonmatmul_flops}, {"sfu_ops", k.sfu_ops}}},
                              {"barriers", k.barriers}});
    }
    return {{"hbm", level_json(hbm)},
            {"l2", level_json(l2)},
            {"dram", level_json(dram)},
            {"smem", {{"read_bytes", smem_read}, {"write_bytes", smem_write}}},
            {"flops", {{"matmul", matmul}, {"nonmatmul", nonmatmul}, {"sfu_ops", sfu}}},
            {"barriers", barriers},
            {"kernels", per_kernel}};
}

py::dict result_dict(const nlohmann::json& doc) { return to_python(doc).cast<py::dict>(); }

// fa-sim --trace's default tiles: two per sequence, so the online softmax's updates show.
TileRequest trace_request(const Algorithm& algo, const AttentionProblem& p, TileRequest request) {
    if (!request.Br && !request.Bc && algo.tunable_tiles) request.Br = request.Bc = std::max<std::int64_t>(1, (std::max(p.N, p.Nk) + 1) / 2);
    return request;
}

// A step as the observer saw it, with copies of what it points to (the executor reuses its memory).
struct RecordedStep {
    StepKind kind{};
    std::string kernel, role;
    std::int64_t grid = 0, head = 0, block = 0;
    std::string result, op;
    std::vector<std::string> operands;
    std::optional<Region> region;
    std::string tensor;  // region's
    bool row_statistic = false;
    std::optional<reference::MatrixF> values;
    bool accumulate = false, transpose_a = false, transpose_b = false;
    StoreMode store_mode = StoreMode::overwrite;
    std::vector<double> numbers;
};

class StepRecorder final : public Observer {
public:
    std::vector<RecordedStep> steps;
    void on_step(const Step& s) override {
        RecordedStep r;
        r.kind = s.kind;
        if (s.kernel) {
            r.kernel = s.kernel->name;
            r.role = s.kernel->role;
            r.grid = s.kernel->grid();
        }
        r.head = s.head;
        r.block = s.block;
        r.result = std::string(s.result);
        r.op = std::string(s.op);
        for (std::string_view o : s.operands) r.operands.emplace_back(o);
        if (s.region) {
            r.region = *s.region;
            r.region->tensor = nullptr;
            r.tensor = s.region->tensor->name;
            r.row_statistic = s.region->tensor->row_statistic;
        }
        if (s.values) r.values = *s.values;
        r.accumulate = s.accumulate;
        r.transpose_a = s.transpose_a;
        r.transpose_b = s.transpose_b;
        r.store_mode = s.store_mode;
        r.numbers = s.numbers;
        steps.push_back(std::move(r));
    }
};

const char* store_mode_name(StoreMode m) {
    switch (m) {
        case StoreMode::overwrite: return "overwrite";
        case StoreMode::accumulate: return "accumulate";
        case StoreMode::atomic_add: return "atomic_add";
    }
    return "?";
}

py::dict step_dict(const RecordedStep& s) {
    py::dict d;
    d["kind"] = step_name(s.kind);
    d["kernel"] = s.kernel;
    const bool in_block = s.kind != StepKind::kernel_begin;
    d["head"] = in_block ? py::object(py::int_(s.head)) : py::object(py::none());
    d["block"] = in_block ? py::object(py::int_(s.block)) : py::object(py::none());
    d["op"] = s.op.empty() ? py::object(py::none()) : py::object(py::str(s.op));
    d["result"] = s.result.empty() ? py::object(py::none()) : py::object(py::str(s.result));
    py::list operands;
    for (const std::string& o : s.operands) operands.append(o);
    d["operands"] = operands;
    if (s.region) {
        const Region& r = *s.region;
        const auto span = [](std::int64_t a, std::int64_t n) { return std::to_string(a) + ":" + std::to_string(a + n); };
        py::dict region;
        region["tensor"] = s.tensor;
        region["head"] = r.head;
        region["rows"] = py::make_tuple(r.row0, r.row0 + r.nrows);
        region["cols"] = py::make_tuple(r.col0, r.col0 + r.ncols);
        region["text"] = s.row_statistic ? s.tensor + "[" + span(r.col0, r.ncols) + "]"
                                         : s.tensor + "[" + span(r.row0, r.nrows) + ", " + span(r.col0, r.ncols) + "]";
        d["region"] = region;
    } else {
        d["region"] = py::none();
    }
    d["values"] = s.values ? to_numpy(*s.values) : py::object(py::none());
    switch (s.kind) {
        case StepKind::kernel_begin:
            d["role"] = s.role;
            d["grid"] = s.grid;
            break;
        case StepKind::matmul:
            d["accumulate"] = s.accumulate;
            d["transpose_a"] = s.transpose_a;
            d["transpose_b"] = s.transpose_b;
            break;
        case StepKind::store: d["mode"] = store_mode_name(s.store_mode); break;
        case StepKind::map: {
            py::list numbers;
            for (double x : s.numbers) numbers.append(x);
            d["numbers"] = numbers;
            break;
        }
        default: break;
    }
    return d;
}

// The algorithm to run: `algo`, or `algo` with a Python tile program in place of its own.
const Algorithm& with_program(const Algorithm& algo, const py::handle& program, std::optional<SubstitutedProgram>& holder) {
    if (program.is_none()) return algo;
    if (!PyCallable_Check(program.ptr()))
        throw usage_error("program is a " + std::string(py::str(program.get_type().attr("__name__"))),
                          "program is a tile program, a function program(x, p, cfg) (fasim.tile)",
                          "pass the function itself, or program=None for " + std::string(algo.id) + "'s own");
    return holder.emplace(algo, py::reinterpret_borrow<py::object>(program)).algorithm();
}

}  // namespace

py::object run(const std::string& algo_id, const py::handle& Q, const py::handle& K, const py::handle& V, const RunArgs& args,
               const py::handle& gpu, const py::handle& program) {
    std::optional<SubstitutedProgram> substituted;
    const Algorithm& algo = with_program(forward_algorithm(algo_id), program, substituted);
    if (algo.id != algo_id)
        throw usage_error("algo='" + algo_id + "' is a backward pass", "run() runs forward passes",
                          "use fasim.run_backward('" + std::string(algo.id) + "', Q, K, V, dO)");
    const Inputs in = read_inputs(Q, K, V, py::none(), args, "run()", kRunLimit);
    check_grouping(algo, in);
    const GpuSpec g = gpu_arg(gpu);
    const AttentionProblem& p = in.problem;
    const TileConfig tiles = choose_tiles(algo, p, g, request_of(args));
    FunctionalRun result;
    {
        py::gil_scoped_release unlocked;
        result = run_functional(algo, p, g, tiles, in.Q.matrices, in.K.matrices, in.V.matrices);  // a program takes the GIL back
    }
    nlohmann::json doc = counts_json(result.kernels);
    doc["algo"] = std::string(algo.id);
    doc["problem"] = problem_json(p);
    doc["gpu"] = g.name;
    doc["tiles"] = tiles_json(tiles);
    py::dict d = result_dict(doc);
    d["O"] = to_numpy(result.O, p.batch, p.heads);
    d["lse"] = result.lse.empty() ? py::object(py::none()) : to_numpy(result.lse, p.batch, p.heads);
    return d;
}

py::object run_backward(const std::string& algo_id, const py::handle& Q, const py::handle& K, const py::handle& V,
                        const py::handle& dO, const RunArgs& args, const py::handle& gpu, const py::handle& program) {
    const Algorithm& forward = forward_algorithm(algo_id);
    std::optional<SubstitutedProgram> substituted;
    const Algorithm& backward = with_program(backward_program(forward), program, substituted);
    if (dO.is_none())
        throw usage_error("run_backward() was given no dO", "dO, the gradient of the output, has Q's shape",
                          "pass dO, e.g. numpy.random.randn(*Q.shape)");
    const Inputs in = read_inputs(Q, K, V, dO, args, "run_backward()", kRunLimit);
    check_grouping(backward, in);
    const GpuSpec g = gpu_arg(gpu);
    const AttentionProblem& p = in.problem;
    const TileRequest request = request_of(args);
    const TileConfig fwd_tiles = choose_tiles(forward, p, g, request);
    const TileConfig bwd_tiles = choose_tiles(backward, p, g, request);
    BackwardRun result;
    {
        py::gil_scoped_release unlocked;
        result = run_functional_backward(forward, backward, p, g, fwd_tiles, bwd_tiles, in.Q.matrices, in.K.matrices,
                                         in.V.matrices, in.dO->matrices);
    }
    nlohmann::json doc = counts_json(result.kernels);
    doc["algo"] = std::string(forward.id);
    doc["programs"] = {std::string(forward.id), std::string(backward.id)};
    doc["problem"] = problem_json(p);
    doc["gpu"] = g.name;
    doc["tiles"] = tiles_json(bwd_tiles);
    doc["forward_tiles"] = tiles_json(fwd_tiles);
    py::dict d = result_dict(doc);
    d["dQ"] = to_numpy(result.dQ, p.batch, p.heads);
    d["dK"] = to_numpy(result.dK, p.batch, p.kv_head_count());  // K's shape: one per K/V head, a group's sum
    d["dV"] = to_numpy(result.dV, p.batch, p.kv_head_count());
    return d;
}

py::object trace(const std::string& algo_id, const py::handle& Q, const py::handle& K, const py::handle& V, const py::handle& dO,
                 const RunArgs& args, const py::handle& gpu, const std::string& pass, const py::handle& program) {
    if (pass != "fwd" && pass != "bwd")
        throw usage_error("pass_='" + pass + "' cannot be traced", "trace() follows 'fwd' or 'bwd'", "e.g. pass_='bwd' (with dO)");
    const Algorithm& forward = forward_algorithm(algo_id);
    const bool backward_pass = pass == "bwd" || forward.id != algo_id;
    if (backward_pass && dO.is_none())
        throw usage_error("trace() of the backward pass was given no dO", "dO, the gradient of the output, has Q's shape",
                          "pass dO=numpy.random.randn(*Q.shape)");
    const py::object none = py::none();
    const Inputs in = read_inputs(Q, K, V, backward_pass ? dO : none, args, "trace()", kTraceLimit);
    const GpuSpec g = gpu_arg(gpu);
    const AttentionProblem& p = in.problem;
    StepRecorder recorder;
    std::optional<SubstitutedProgram> substituted;
    if (!backward_pass) {
        check_grouping(forward, in);
        const TileConfig tiles = choose_tiles(forward, p, g, trace_request(forward, p, request_of(args)));
        const Algorithm& algo = with_program(forward, program, substituted);
        py::gil_scoped_release unlocked;
        (void)run_functional(algo, p, g, tiles, in.Q.matrices, in.K.matrices, in.V.matrices, &recorder);
    } else {
        const Algorithm& backward = with_program(backward_program(forward), program, substituted);
        check_grouping(backward, in);
        const TileRequest request = trace_request(backward, p, request_of(args));
        const TileConfig fwd_tiles = choose_tiles(forward, p, g, request);
        const TileConfig bwd_tiles = choose_tiles(backward, p, g, request);
        py::gil_scoped_release unlocked;
        (void)run_functional_backward(forward, backward, p, g, fwd_tiles, bwd_tiles, in.Q.matrices, in.K.matrices, in.V.matrices,
                                      in.dO->matrices, &recorder);
    }
    py::list steps;
    for (const RecordedStep& s : recorder.steps) steps.append(step_dict(s));
    return steps;
}

}  // namespace fasim::python
