// The Python module fasim._fasim (re-exported by the package fasim, python/fasim/__init__.py): the
// simulator's core library for notebooks and scripts. Documentation: python/README.md.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "arguments.hpp"
#include "arrays.hpp"
#include "common/errors.hpp"
#include "course_api.hpp"
#include "functional_api.hpp"
#include "lessons_api.hpp"
#include "measured_api.hpp"
#include "gpu/gpu_catalog.hpp"
#include "inputs.hpp"
#include "json_values.hpp"
#include "report/report.hpp"
#include "simulation_api.hpp"
#include "tile_api.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using namespace fasim;
using namespace fasim::python;

namespace {

using OptInt = std::optional<std::int64_t>;

ProblemArgs problem_args(std::int64_t N, OptInt Nk, std::int64_t d, std::int64_t heads, OptInt kv_heads, std::int64_t batch,
                         const std::string& dtype, bool causal) {
    return ProblemArgs{N, Nk, d, heads, kv_heads, batch, dtype, causal};
}

TileArgs tile_args(OptInt Br, OptInt Bc, OptInt q_splits, OptInt kv_splits, OptInt registers, const std::string& matmul,
                   bool cuda_cores, const std::string& dq = "atomic") {
    return TileArgs{Br, Bc, q_splits, kv_splits, registers, matmul, cuda_cores, dq};
}

const char* kSimulateDoc = R"(Simulate attention on a GPU model: what fa-sim --json prints.

algo: an id ('fa2'; fasim.algorithms() lists them; None: 'fa2'), a backward id ('fa2_bwd'), a list of ids, or
'all'. kernel: a kernel of the catalog instead ('fa2_tc'; fasim.kernels() lists them), modelled as fa-sim
--kernel models it: its algorithm, tiles, products and registers (Br, Bc, q_splits, kv_splits and
registers given too are what a run recorded).
The problem: N (queries), Nk (keys; None: N), d, heads, kv_heads (None: heads; a divisor of heads for
grouped-query attention), batch, dtype ('fp32', 'fp16', 'bf16'), causal. gpu: a preset name
(fasim.gpus()), a fasim.Gpu, or None (A100-SXM4-40GB). pass_: None ('fwd', or 'bwd' for a backward id),
'fwd', 'bwd' or 'fwd+bwd'. Tiles and kernels as fa-sim's options: Br, Bc, q_splits (fa1), kv_splits
(flash_decoding), registers, matmul ('tiled', 'naive', 'library'), cuda_cores, dq ('atomic' or 'separate':
how fa2's backward sums dQ, fa-sim --dq).

Returns, for one algorithm, its entry of fa-sim --json's "algorithms" with "schema_version", "gpu" and
"problem" added; for a list or 'all', the whole fa-sim --json document (docs/output-schema.md).
Raises fasim.UsageError (a ValueError) with fa-sim's one-line message for a bad value.)";

const char* kSweepDoc = R"(Simulate over N (Nk with it, for self-attention) or over Nk alone: fa-sim --json --sweep.

sweep(algo, parameter='N', values=[512, 1024, ...], **the problem, tiles and gpu as simulate())
returns {"schema_version", "gpu", "sweep": {"parameter", "values"}, "runs": [{"problem", "algorithms"}]}.)";

const char* kRunDoc = R"(Run an algorithm's tile program on your numbers (the functional executor).

Q: [batch, heads, N, d]; K, V: [batch, kv_heads, Nk, d] with kv_heads dividing heads (grouped-query
attention for standard, tiled, fa1, fa2 and flash_decoding). Any float arrays; they are rounded to dtype first (as
storing them in it would) and must be finite. The arithmetic is fp32, the stores in dtype, as on a GPU.

Returns {"O": float64 [batch, heads, N, d], "lse": float64 [batch, heads, N] (None for standard attention,
which keeps none), "algo", "problem", "gpu", "tiles", and what the run moved and computed, in fa-sim's
JSON keys: "hbm", "l2", "dram" ({"read_bytes", "write_bytes", "by_tensor"}), "smem", "flops",
"barriers", "kernels"}.

program: a tile program of your own, program(x, p, cfg) (fasim.tile), run in place of algo's with algo's
tiles (what the grader runs: fasim.course).)";

const char* kRunBackwardDoc = R"(Run an algorithm's forward, then its backward, on your numbers.

Q, K, V as run() (K and V may have fewer heads than Q, grouped-query attention: dK and dV then have K's
shape, each the sum over its group's query heads); dO, the output's gradient, has Q's shape. algo: 'standard', 'fa1' or 'fa2' (or 'fa2_bwd'). Returns {"dQ", "dK", "dV" (float64, the
shapes of Q, K, V), "algo", "programs", "problem", "gpu", "tiles" (the backward's), "forward_tiles", and
the backward's traffic and FLOPs as run()}. program: your backward tile program (fasim.tile), run after
algo's own forward in place of its backward.)";

const char* kTraceDoc = R"(Every step of a tile program on your numbers, as fa-sim --trace prints them.

trace(algo, Q, K, V) follows the forward; pass_='bwd' (or algo='fa2_bwd') with dO the backward. Arrays
as run(); small problems only (batch*heads*N*Nk <= 65536). Without Br/Bc, tunable algorithms take two
tiles per sequence, as fa-sim --trace does, so the online softmax's updates show.

Returns a list of dicts, one per step: "kind" ('kernel', 'block', 'alloc', 'load', 'store', 'stage',
'matmul', 'mask', 'map', 'reduce', 'round', 'warps', 'barrier'), "kernel", "head" and "block" (None for
'kernel'), "op" (map, reduce: the function), "result" (the tile's label, e.g. 'Q_i'), "operands" (labels),
"region" (load, store: {"tensor", "head", "rows", "cols", "text"}), "values" (float32 array of the
result tile after the step, or None); 'kernel' adds "role" and "grid", 'matmul' "accumulate",
"transpose_a", "transpose_b", 'store' "mode", 'map' "numbers". program: your tile program (fasim.tile),
traced in place of algo's (the backward's with pass_='bwd').)";

}  // namespace

PYBIND11_MODULE(_fasim, m) {
    m.doc() = "fa-sim's simulator core: simulate attention on a GPU model, run its tile programs on numbers, trace them.";
    m.attr("__version__") = FASIM_VERSION;
    m.attr("SCHEMA_VERSION") = kSchemaVersion;  // fa-sim --json's (docs/output-schema.md)
    // Named as users import them (fasim.UsageError, fasim.Gpu), not by this compiled submodule.
    py::register_exception<UsageError>(m, "UsageError", PyExc_ValueError).attr("__module__") = "fasim";

    py::class_<GpuSpec>(m, "Gpu", "A GPU description (a preset, a GPU file or a dict); pass it as gpu=.")
        .def_property_readonly("name", [](const GpuSpec& g) { return g.name; })
        .def_property_readonly("description", [](const GpuSpec& g) { return g.description; })
        .def("to_dict", [](const GpuSpec& g) { return gpu_dict(py::cast(g)); }, "The GPU file's object (docs/gpu-file.md).")
        .def("__repr__", [](const GpuSpec& g) { return "fasim.Gpu('" + g.name + "')"; })
        .attr("__module__") = "fasim";

    m.def("algorithms", &algorithms_list,
          "The registered algorithms: [{'id', 'title', 'tunable_tiles', 'q_splits', 'matmul_modes', 'grouped_kv', "
          "'kv_splits', 'decoding'}] (fa-sim --list-kernels --json's \"algorithms\").");
    m.def("kernels", &kernels_list, "The kernel catalog (fa-sim --list-kernels --json's \"kernels\").");
    m.def("gpus", &gpu_preset_names, "The GPU presets' names (the default: A100-SXM4-40GB, the FlashAttention papers' GPU).");
    m.def("gpu", &gpu_dict, "gpu"_a = py::none(),
          "A preset (by name, any case) or a fasim.Gpu as the dict of its GPU file (docs/gpu-file.md).");
    m.def("load_gpu_file", [](const std::string& path) { return load_gpu_file(path); }, "path"_a,
          "Read a GPU file (fa-sim --gpu-file): a fasim.Gpu to pass as gpu=.");
    m.def("gpu_from_dict", &gpu_from_dict, "spec"_a,
          "A fasim.Gpu from a GPU file's dict, e.g. fasim.gpu('A100-SXM4-40GB') with a field changed.");

    m.def(
        "random_normal",
        [](std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
            if (rows < 1 || cols < 1 || rows * cols > (std::int64_t{1} << 26))
                throw usage_error("random_normal(" + std::to_string(rows) + ", " + std::to_string(cols) + ") is out of range",
                                  "rows and cols at least 1, rows x cols at most 2^26",
                                  "e.g. fasim.random_normal(1, 8, seed=9)");
            const py::object a = to_numpy(std::vector<reference::Matrix>{reference::random_normal(rows, cols, seed)}, 1, 1);
            return a.attr("reshape")(rows, cols).attr("copy")();
        },
        "rows"_a, "cols"_a, "seed"_a,
        "rows x cols draws of N(0, 1) as a float64 array: the reference's generator (reference/inputs.hpp), the one the "
        "lessons and tests draw their examples from. The same seed gives the same numbers on every platform.");

    m.def(
        "simulate",
        [](const py::object& algo, std::int64_t N, OptInt Nk, std::int64_t d, std::int64_t heads, OptInt kv_heads,
           std::int64_t batch, const std::string& dtype, bool causal, const py::object& gpu, const std::optional<std::string>& pass,
           OptInt Br, OptInt Bc, OptInt q_splits, OptInt kv_splits, OptInt registers, const std::string& matmul, bool cuda_cores,
           const std::string& dq, const std::optional<std::string>& kernel) {
            return simulate(algo, problem_args(N, Nk, d, heads, kv_heads, batch, dtype, causal),
                            tile_args(Br, Bc, q_splits, kv_splits, registers, matmul, cuda_cores, dq), gpu, pass, kernel);
        },
        kSimulateDoc, "algo"_a = py::none(), "N"_a = 4096, "Nk"_a = py::none(), "d"_a = 64, "heads"_a = 16, "kv_heads"_a = py::none(),
        "batch"_a = 1, "dtype"_a = "fp16", "causal"_a = false, "gpu"_a = py::none(), "pass_"_a = py::none(), "Br"_a = py::none(),
        "Bc"_a = py::none(), "q_splits"_a = py::none(), "kv_splits"_a = py::none(), "registers"_a = py::none(),
        "matmul"_a = "tiled", "cuda_cores"_a = false, "dq"_a = "atomic", "kernel"_a = py::none());

    m.def(
        "sweep",
        [](const py::object& algo, const std::string& parameter, const std::optional<std::vector<std::int64_t>>& values,
           std::int64_t N, OptInt Nk, std::int64_t d, std::int64_t heads, OptInt kv_heads, std::int64_t batch,
           const std::string& dtype, bool causal, const py::object& gpu, const std::optional<std::string>& pass, OptInt Br,
           OptInt Bc, OptInt q_splits, OptInt kv_splits, OptInt registers, const std::string& matmul, bool cuda_cores,
           const std::string& dq) {
            return sweep(algo, parameter, values, problem_args(N, Nk, d, heads, kv_heads, batch, dtype, causal),
                         tile_args(Br, Bc, q_splits, kv_splits, registers, matmul, cuda_cores, dq), gpu, pass);
        },
        kSweepDoc, "algo"_a = "fa2", "parameter"_a = "N", "values"_a = py::none(), "N"_a = 4096, "Nk"_a = py::none(),
        "d"_a = 64, "heads"_a = 16, "kv_heads"_a = py::none(), "batch"_a = 1, "dtype"_a = "fp16", "causal"_a = false,
        "gpu"_a = py::none(), "pass_"_a = py::none(), "Br"_a = py::none(), "Bc"_a = py::none(), "q_splits"_a = py::none(),
        "kv_splits"_a = py::none(), "registers"_a = py::none(), "matmul"_a = "tiled", "cuda_cores"_a = false, "dq"_a = "atomic");

    m.def(
        "run",
        [](const std::string& algo, const py::object& Q, const py::object& K, const py::object& V, bool causal,
           const std::string& dtype, OptInt Br, OptInt Bc, OptInt q_splits, OptInt kv_splits, const py::object& gpu,
           const py::object& program) {
            return run(algo, Q, K, V, RunArgs{causal, dtype, Br, Bc, q_splits, kv_splits}, gpu, program);
        },
        kRunDoc, "algo"_a, "Q"_a, "K"_a, "V"_a, "causal"_a = false, "dtype"_a = "fp16", "Br"_a = py::none(), "Bc"_a = py::none(),
        "q_splits"_a = py::none(), "kv_splits"_a = py::none(), "gpu"_a = py::none(), "program"_a = py::none());

    m.def(
        "run_backward",
        [](const std::string& algo, const py::object& Q, const py::object& K, const py::object& V, const py::object& dO,
           bool causal, const std::string& dtype, OptInt Br, OptInt Bc, const py::object& gpu, const py::object& program) {
            return run_backward(algo, Q, K, V, dO, RunArgs{causal, dtype, Br, Bc, std::nullopt, std::nullopt}, gpu, program);
        },
        kRunBackwardDoc, "algo"_a, "Q"_a, "K"_a, "V"_a, "dO"_a, "causal"_a = false, "dtype"_a = "fp16", "Br"_a = py::none(),
        "Bc"_a = py::none(), "gpu"_a = py::none(), "program"_a = py::none());

    m.def(
        "trace",
        [](const std::string& algo, const py::object& Q, const py::object& K, const py::object& V, const py::object& dO,
           bool causal, const std::string& dtype, OptInt Br, OptInt Bc, OptInt q_splits, OptInt kv_splits, const py::object& gpu,
           const std::string& pass, const py::object& program) {
            return trace(algo, Q, K, V, dO, RunArgs{causal, dtype, Br, Bc, q_splits, kv_splits}, gpu, pass, program);
        },
        kTraceDoc, "algo"_a, "Q"_a, "K"_a, "V"_a, "dO"_a = py::none(), "causal"_a = false, "dtype"_a = "fp16",
        "Br"_a = py::none(), "Bc"_a = py::none(), "q_splits"_a = py::none(), "kv_splits"_a = py::none(), "gpu"_a = py::none(),
        "pass_"_a = "fwd", "program"_a = py::none());

    // For tests: JSON text (fa-sim --json's) as the dicts simulate() returns, through the same conversion, counts
    // beyond 64 bits included (the simulations that reach them take minutes).
    m.def(
        "_json_to_python", [](const std::string& text) { return to_python(parse_json_exact(text)); }, "text"_a,
        "JSON text as fasim.simulate() returns a document: dicts, lists, exact ints of any size (for tests).");

    bind_tile_api(m);    // fasim.tile: tile programs in Python
    bind_course_api(m);  // fasim.course: fa-grade's grader for them
    bind_lessons_api(m); // fasim.lessons: the lessons' exercises, for the notebooks
    bind_measured_api(m); // fasim.measured: the committed measurements beside the simulator (lesson 09)
}
