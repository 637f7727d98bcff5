#include "tile_api.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "algorithms/causal.hpp"
#include "algorithms/flash_steps.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace fasim::python {

namespace {

// ---- lifetimes ----------------------------------------------------------------------------------------
//
// C++ tile programs cannot keep a tile past its block (the Tile dies with the body's scope) nor use the
// executor after the program returns. Python can: any object may outlive the call that made it. So the
// Python objects hold sessions: an executor session lives for one call of the program, a block session
// for one call of the block body. When a block body returns (or raises), every tile Python still holds is
// released into the block while it exists, and its session is marked ended; from then on using the tile
// raises TileError instead of touching freed memory.

struct ExecutorSession {
    Executor* x = nullptr;
    bool alive = true;
    bool in_launch = false;
    std::string program;  // the Python function's name, for messages
    // The tensors Python holds, by id, at stable addresses: the executors keep pointers to them (regions)
    // for the rest of the run, as they keep pointers to a C++ program's local GlobalTensors.
    std::map<TensorId, std::shared_ptr<GlobalTensor>> tensors;
};

struct PyTile;

struct BlockSession {
    Block* block = nullptr;
    bool alive = true;
    std::shared_ptr<ExecutorSession> exec;
    std::string kernel;
    std::int64_t head = 0, index = 0;
    std::unordered_set<PyTile*> tiles;  // the tiles of this block Python holds

    std::string where() const {
        return "block " + std::to_string(index) + " of head " + std::to_string(head) + " of kernel '" + kernel + "'";
    }
};

std::string space_name(Space s) { return s == Space::Shared ? "Shared" : "Registers"; }

struct PyTile {
    std::optional<Tile> tile;
    std::shared_ptr<BlockSession> session;
    std::string label;
    std::int64_t rows = 0, cols = 0;
    Space space = Space::Registers;

    PyTile(Tile t, std::shared_ptr<BlockSession> s, std::string_view l)
        : session(std::move(s)), label(l), rows(t.rows()), cols(t.cols()), space(t.space()) {
        tile.emplace(std::move(t));
        session->tiles.insert(this);
    }
    PyTile(const PyTile&) = delete;
    PyTile& operator=(const PyTile&) = delete;
    // Erased first; then `tile`, if still held, is released into its block, which is running (a tile of
    // an ended block was released when the block ended).
    ~PyTile() { session->tiles.erase(this); }

    std::string name() const { return "tile '" + label + "' (" + std::to_string(rows) + "x" + std::to_string(cols) + ")"; }

    const Tile& get() const {
        if (!session->alive || !tile)
            throw TileError(name() + " was made by " + session->where() +
                            ", which has ended: a tile lives only while the block body that made it runs (as a C++ Tile "
                            "dies with its scope). Store what a later block needs to a global tensor with b.store() and "
                            "load it there; do not keep tiles in globals, lists or closures");
        return *tile;
    }
    Tile& get() { return const_cast<Tile&>(std::as_const(*this).get()); }
};

// Sweeps a block's tiles when its body returns or raises, while the block still exists.
struct BlockEnd {
    std::shared_ptr<BlockSession> s;
    explicit BlockEnd(std::shared_ptr<BlockSession> session) : s(std::move(session)) {}
    BlockEnd(const BlockEnd&) = delete;
    BlockEnd& operator=(const BlockEnd&) = delete;
    ~BlockEnd() {
        const std::vector<PyTile*> held(s->tiles.begin(), s->tiles.end());
        for (PyTile* t : held) t->tile.reset();  // Tile's destructor releases it into the block
        s->alive = false;
    }
};

std::string bad(const std::string& what, const std::string& fix) { return what + ". Fix: " + fix; }

// ---- the Python-facing objects ---------------------------------------------------------------------------

struct PyRegion {
    std::shared_ptr<GlobalTensor> tensor;
    std::int64_t head = 0, row0 = 0, nrows = 0, col0 = 0, ncols = 0;
    std::string text() const {
        const auto span = [](std::int64_t a, std::int64_t n) { return std::to_string(a) + ":" + std::to_string(a + n); };
        return tensor->name + "[head " + std::to_string(head) + "][" + span(row0, nrows) + ", " + span(col0, ncols) + "]";
    }
};

struct PyView {
    std::shared_ptr<GlobalTensor> tensor;
    std::int64_t head = 0;
    PyRegion rows(std::int64_t row0, std::int64_t nrows) const { return {tensor, head, row0, nrows, 0, tensor->cols}; }
    PyRegion tile(std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols) const {
        return {tensor, head, row0, nrows, col0, ncols};
    }
};

// One operand of Block.map: per_row(t), per_col(t) (a tile or a number passes as itself).
struct PyArg {
    py::object tile;  // a PyTile
    Broadcast broadcast = Broadcast::none;
};

struct PyExecutor {
    std::shared_ptr<ExecutorSession> s;

    Executor& x() const {
        if (!s->alive)
            throw TileError("the executor of a run of " + s->program +
                            "() was used after that run ended: use x only inside the program it is passed to");
        return *s->x;
    }
    std::shared_ptr<GlobalTensor> held(const GlobalTensor& declared) {
        auto& slot = s->tensors[declared.id];
        if (!slot) slot = std::make_shared<GlobalTensor>(declared);
        return slot;
    }
    std::shared_ptr<GlobalTensor> declare(const GlobalTensor& t) {
        Executor& ex = x();
        if (s->in_launch)
            throw TileError(bad("x.declare('" + t.name + "') inside a kernel's block body",
                                "declare every tensor before the x.launch() that uses it, as C++ programs do"));
        if (t.name.empty()) throw py::value_error(bad("a tensor with an empty name", "name it as the papers do: 'Q', 'dO', 'LSE'"));
        if (t.heads < 1 || t.rows < 1 || t.cols < 1 || t.region_rows < 1 || t.region_cols < 1)
            throw py::value_error(bad("tensor '" + t.name + "' declared with heads=" + std::to_string(t.heads) + ", rows=" +
                                          std::to_string(t.rows) + ", cols=" + std::to_string(t.cols) + ", region " +
                                          std::to_string(t.region_rows) + "x" + std::to_string(t.region_cols),
                                      "every size is at least 1"));
        if (t.elem_bytes != 2 && t.elem_bytes != 4)
            throw py::value_error(bad("tensor '" + t.name + "' declared with elem_bytes=" + std::to_string(t.elem_bytes),
                                      "elements are 2 bytes (p.elem_bytes() for fp16/bf16) or 4 (fp32)"));
        GlobalTensor copy = t;
        copy.id = -1;
        return held(ex.declare(copy));
    }
    py::list tensors() {
        py::list out;
        for (const GlobalTensor& t : x().tensors()) out.append(held(t));
        return out;
    }
    void launch(const KernelDesc& k, const py::function& body);
};

struct PyBlock {
    std::shared_ptr<BlockSession> s;

    Block& b() const {
        if (!s->alive)
            throw TileError("the block object of " + s->where() +
                            " was used after that block ended: use b only inside the body it is passed to");
        return *s->block;
    }
    // A tile of this block, live.
    Tile& tile(PyTile& t) const {
        (void)b();
        Tile& held = t.get();
        if (t.session != s)
            throw TileError(t.name() + " belongs to " + t.session->where() + ", not to " + s->where());
        return held;
    }
    py::object wrap(Tile t, std::string_view label) const {
        return py::cast(std::make_unique<PyTile>(std::move(t), s, label));
    }
    // The executor's own GlobalTensor of a region, checked: declared in this run, and the region inside it.
    Region region(const PyRegion& r, const char* op) const {
        const GlobalTensor& t = *r.tensor;
        if (t.id < 0)
            throw TileError(bad(std::string(op) + " of tensor '" + t.name + "', which was never declared",
                                "declare it with x.declare(GlobalTensor(...)) (or fused_tensors) before the kernel"));
        const auto it = s->exec->tensors.find(t.id);
        if (it == s->exec->tensors.end() || it->second != r.tensor)
            throw TileError(bad(std::string(op) + " of tensor '" + t.name + "' declared by another run of the program",
                                "declare tensors inside the program, at every run, and use those"));
        if (r.head < 0 || r.head >= t.heads || r.row0 < 0 || r.nrows < 1 || r.row0 + r.nrows > t.rows || r.col0 < 0 ||
            r.ncols < 1 || r.col0 + r.ncols > t.cols)
            throw py::index_error(bad(std::string(op) + " of " + r.text() + " is outside the tensor (" + std::to_string(t.heads) +
                                          " heads of " + std::to_string(t.rows) + " x " + std::to_string(t.cols) + ")",
                                      "a ragged last tile has min(B, N - start) rows; heads are 0.." + std::to_string(t.heads - 1)));
        return Region{it->second.get(), r.head, r.row0, r.nrows, r.col0, r.ncols};
    }
    static void check_size(const char* op, std::int64_t rows, std::int64_t cols) {
        constexpr std::int64_t kMax = std::int64_t{1} << 16;
        if (rows < 1 || cols < 1 || rows > kMax || cols > kMax || rows * cols > (std::int64_t{1} << 24))
            throw py::value_error(bad(std::string(op) + " of a " + std::to_string(rows) + "x" + std::to_string(cols) + " tile",
                                      "a tile has 1.." + std::to_string(kMax) + " rows and columns (a block's tile, not a tensor)"));
    }

    py::object alloc(std::int64_t rows, std::int64_t cols, Space space, Fill fill, const std::string& label) {
        check_size("alloc", rows, cols);
        return wrap(b().alloc(rows, cols, space, fill, label), label);
    }
    py::object alloc_statistic(std::int64_t rows, Space space, Fill fill, const std::string& label) {
        check_size("alloc_statistic", rows, 1);
        return wrap(b().alloc_statistic(rows, space, fill, label), label);
    }
    py::object load(const PyRegion& from, Space to, const std::string& label) {
        const Region r = region(from, "load");
        return wrap(b().load(r, to, label), label);
    }
    void store(PyTile& t, const PyRegion& to, StoreMode mode) {
        const Region r = region(to, "store");
        Tile& held = tile(t);
        // A row statistic (rows x 1) goes to one row of its tensor; any other tile to a region of its shape.
        const bool as_row = r.tensor->row_statistic;
        const std::int64_t want_rows = as_row ? r.ncols : r.nrows, want_cols = as_row ? r.nrows : r.ncols;
        if (held.rows() != want_rows || held.cols() != want_cols)
            throw py::value_error(bad("store of " + t.name() + " to " + to.text(),
                                      std::string(as_row ? "a row-statistic tensor takes a rows x 1 tile per row of the region: "
                                                         : "the region must have the tile's shape: ") +
                                          std::to_string(want_rows) + "x" + std::to_string(want_cols) + " here"));
        b().store(held, r, mode);
    }
    py::object stage(PyTile& X, Space to, std::int64_t elem_bytes, const std::string& label) {
        if (elem_bytes != 2 && elem_bytes != 4)
            throw py::value_error(bad("stage with elem_bytes=" + std::to_string(elem_bytes), "2 (the storage dtype) or 4 (fp32)"));
        return wrap(b().stage(tile(X), to, elem_bytes, label), label);
    }
    void matmul(PyTile& C, PyTile& A, PyTile& B, const Product& how) {
        Tile &c = tile(C), &a = tile(A), &bb = tile(B);
        const std::int64_t m = how.transpose_a ? a.cols() : a.rows(), k = how.transpose_a ? a.rows() : a.cols();
        const std::int64_t kb = how.transpose_b ? bb.cols() : bb.rows(), n = how.transpose_b ? bb.rows() : bb.cols();
        if (k != kb || c.rows() != m || c.cols() != n) {
            const auto dims = [](std::int64_t r, std::int64_t q) { return std::to_string(r) + "x" + std::to_string(q); };
            throw py::value_error(bad("matmul into " + C.name() + " of " + std::string(how.transpose_a ? "A^T " : "A ") + dims(m, k) +
                                          " (" + A.label + ") and " + (how.transpose_b ? "B^T " : "B ") + dims(kb, n) + " (" +
                                          B.label + ")",
                                      "op(A) is m x k, op(B) k x n and C m x n (transpose_b=True for Q K^T)"));
        }
        b().matmul(c, a, bb, how);
    }
    void map(PyTile& out, Fn fn, const py::sequence& args) {
        Tile& o = tile(out);
        std::vector<Arg> list;
        for (const py::handle& a : args) {
            if (py::isinstance<PyTile>(a)) list.emplace_back(tile(a.cast<PyTile&>()));
            else if (py::isinstance<PyArg>(a)) {
                const PyArg& pa = a.cast<const PyArg&>();
                list.emplace_back(tile(pa.tile.cast<PyTile&>()), pa.broadcast);
            } else if (py::isinstance<py::float_>(a) || py::isinstance<py::int_>(a) || py::hasattr(a, "__float__")) {
                list.emplace_back(a.cast<double>());
            } else {
                throw py::type_error(bad("map " + std::string(fn_info(fn).name) + " got an operand of type " +
                                             std::string(py::str(a.get_type().attr("__name__"))),
                                         "operands are tiles, per_row(tile), per_col(tile) or numbers"));
            }
        }
        try {
            check_map(o, fn, list);
        } catch (const std::logic_error& e) {
            throw py::value_error(e.what());
        }
        b().map(o, fn, std::span<const Arg>(list));
    }
    py::object reduce_rows(Reduce kind, PyTile& X, const std::string& label, double scale) {
        return wrap(b().reduce_rows(kind, tile(X), label, scale), label);
    }
    void mask(PyTile& S, const MaskSpec& spec) { b().mask(tile(S), spec); }
    void round_to_storage(PyTile& X) { b().round_to_storage(tile(X)); }
    void reduce_across_warps(PyTile& X, Reduce kind) { b().reduce_across_warps(tile(X), kind); }
    void barrier() { b().barrier(); }
    void rename(PyTile& t, const std::string& label) {
        b().rename(tile(t), label);
        t.label = label;
    }
};

void PyExecutor::launch(const KernelDesc& k, const py::function& body) {
    Executor& ex = x();
    if (s->in_launch)
        throw TileError(bad("x.launch('" + k.name + "') inside a block body", "launch kernels one after another from the program"));
    if (k.name.empty()) throw py::value_error(bad("a kernel with an empty name", "name it, e.g. 'fa2_forward'"));
    if (k.blocks_per_head < 1 || k.heads < 1 || k.warps < 1 || k.warps > 32)
        throw py::value_error(bad("kernel '" + k.name + "' with blocks_per_head=" + std::to_string(k.blocks_per_head) +
                                      ", heads=" + std::to_string(k.heads) + ", warps=" + std::to_string(k.warps),
                                  "a grid of at least 1 x 1 blocks of 1..32 warps (cfg.warps)"));
    struct InLaunch {
        ExecutorSession& s;
        explicit InLaunch(ExecutorSession& session) : s(session) { s.in_launch = true; }
        ~InLaunch() { s.in_launch = false; }
        InLaunch(const InLaunch&) = delete;
        InLaunch& operator=(const InLaunch&) = delete;
    } in_launch(*s);
    ex.launch(k, [&](Block& block, std::int64_t head, std::int64_t index) {
        auto session = std::make_shared<BlockSession>();
        session->block = &block;
        session->exec = s;
        session->kernel = k.name;
        session->head = head;
        session->index = index;
        const BlockEnd end(session);
        body(PyBlock{session}, head, index);
    });
}

std::string repr_tensor(const GlobalTensor& t) {
    return "GlobalTensor('" + t.name + "', heads=" + std::to_string(t.heads) + ", rows=" + std::to_string(t.rows) + ", cols=" +
           std::to_string(t.cols) + ", elem_bytes=" + std::to_string(t.elem_bytes) + (t.row_statistic ? ", row_statistic" : "") +
           (t.id >= 0 ? ", id=" + std::to_string(t.id) : ", not declared") + ")";
}

const char* kTileDoc = R"(The tile API of fa-sim's tile programs, in Python (python/README.md, docs/assignments/).

A tile program is a function program(x, p, cfg), written as its C++ twin (course/starter/*.cpp):
x is the Executor (x.declare, x.launch), p the AttentionProblem, cfg the TileConfig. A kernel's body
body(b, head, index) gets the Block b, whose methods move tiles between global tensors and the chip
and compute on them. Tiles live only while their block's body runs: a tile used after its block
ended raises TileError.)";

}  // namespace

PythonProgramFn python_program(py::object program) {
    auto fn = std::make_shared<py::object>(std::move(program));
    std::string name = "program";
    if (py::hasattr(*fn, "__name__")) name = py::str(fn->attr("__name__"));
    return [fn, name](Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
        py::gil_scoped_acquire gil;
        auto session = std::make_shared<ExecutorSession>();
        session->x = &x;
        session->program = name;
        struct End {
            std::shared_ptr<ExecutorSession> s;
            ~End() { s->alive = false; }
        } end{session};
        (*fn)(PyExecutor{session}, p, cfg);
    };
}

namespace {
// Algorithm::program is a plain function pointer: the Python program is reached through this one.
thread_local const PythonProgramFn* current_program = nullptr;
void run_current(Executor& x, const AttentionProblem& p, const TileConfig& cfg) { (*current_program)(x, p, cfg); }
}  // namespace

SubstitutedProgram::SubstitutedProgram(const Algorithm& reference, py::object program)
    : program_(python_program(std::move(program))), previous_(current_program), algorithm_(reference) {
    algorithm_.program = run_current;
    current_program = &program_;
}

SubstitutedProgram::~SubstitutedProgram() { current_program = previous_; }

void bind_tile_api(py::module_& parent) {
    py::module_ m = parent.def_submodule("tile", kTileDoc);
    py::register_exception<TileError>(m, "TileError", PyExc_RuntimeError).attr("__module__") = "fasim.tile";

    py::enum_<Space>(m, "Space", "Where a tile lives on chip.").value("Shared", Space::Shared).value("Registers", Space::Registers);
    py::enum_<Fill>(m, "Fill", "What alloc fills a tile with.").value("Zero", Fill::Zero).value("NegInf", Fill::NegInf);
    py::enum_<Reduce>(m, "Reduce", "reduce_rows and reduce_across_warps: a max or a sum.")
        .value("Max", Reduce::Max)
        .value("Sum", Reduce::Sum);
    py::enum_<Split>(m, "Split", "How a block's warps divide a product C = A·B: rows of C, columns of C, or the inner sum.")
        .value("Rows", Split::Rows)
        .value("Cols", Split::Cols)
        .value("Inner", Split::Inner);
    py::enum_<StoreMode>(m, "StoreMode", "How a store meets global memory: overwrite, add (read, add, write), or atomic adds.")
        .value("overwrite", StoreMode::overwrite)
        .value("accumulate", StoreMode::accumulate)
        .value("atomic_add", StoreMode::atomic_add);
    py::enum_<Fn>(m, "Fn", "Element-wise functions of Block.map (sim/tile/elementwise.hpp).")
        .value("add", Fn::add, "x + y")
        .value("sub", Fn::sub, "x - y")
        .value("mul", Fn::mul, "x * y")
        .value("fma", Fn::fma, "x * y + z")
        .value("max", Fn::max, "max(x, y)")
        .value("div", Fn::div, "x / y (0 where y = 0)")
        .value("exp_shifted", Fn::exp_shifted, "exp(y * x - z) (0 where z = -inf)")
        .value("exp_diff", Fn::exp_diff, "exp(x - y) (1 where both are -inf)")
        .value("lse", Fn::lse, "x + log(y) (-inf where y = 0)")
        .value("seen", Fn::seen, "1 where x > -inf, else 0");

    py::class_<AttentionProblem>(m, "AttentionProblem", "The problem a program runs on (read-only).")
        .def_readonly("batch", &AttentionProblem::batch)
        .def_readonly("heads", &AttentionProblem::heads)
        .def_readonly("kv_heads", &AttentionProblem::kv_heads, "0: as many as heads")
        .def_readonly("N", &AttentionProblem::N, "query rows")
        .def_readonly("Nk", &AttentionProblem::Nk, "keys")
        .def_readonly("d", &AttentionProblem::d)
        .def_readonly("causal", &AttentionProblem::causal)
        .def_property_readonly("dtype", [](const AttentionProblem& p) { return std::string(dtype_name(p.dtype)); })
        .def("batch_heads", &AttentionProblem::batch_heads)
        .def("kv_head_count", &AttentionProblem::kv_head_count)
        .def("group_size", &AttentionProblem::group_size, "query heads per K/V head")
        .def("batch_kv_heads", &AttentionProblem::batch_kv_heads)
        .def("grouped", &AttentionProblem::grouped)
        .def("kv_head_of", &AttentionProblem::kv_head_of, "bh"_a, "The K/V head query head bh reads.")
        .def("elem_bytes", &AttentionProblem::elem_bytes, "bytes per stored element (2 for fp16)")
        .def("softmax_scale", &AttentionProblem::softmax_scale, "1/sqrt(d)")
        .def("describe", &AttentionProblem::describe)
        .def("__repr__", [](const AttentionProblem& p) { return "AttentionProblem(" + p.describe() + ")"; });

    py::class_<TileConfig>(m, "TileConfig", "The tiles a program runs with (read-only).")
        .def_readonly("Br", &TileConfig::Br, "Q-tile rows")
        .def_readonly("Bc", &TileConfig::Bc, "K/V-tile rows")
        .def_readonly("warps", &TileConfig::warps)
        .def_readonly("scores", &TileConfig::scores, "where S_ij lives (Space)")
        .def_readonly("q_splits", &TileConfig::q_splits)
        .def_readonly("kv_splits", &TileConfig::kv_splits, "split-KV decoding: blocks the keys are split over")
        .def_readonly("M_elements", &TileConfig::M_elements)
        .def_readonly("reasons", &TileConfig::reasons)
        .def("__repr__", [](const TileConfig& c) {
            return "TileConfig(Br=" + std::to_string(c.Br) + ", Bc=" + std::to_string(c.Bc) + ", warps=" + std::to_string(c.warps) +
                   ", kv_splits=" + std::to_string(c.kv_splits) + ")";
        });

    py::class_<GlobalTensor, std::shared_ptr<GlobalTensor>>(
        m, "GlobalTensor", "A tensor in global memory, [heads][rows][cols]; x.declare() makes it known to the run.")
        .def(py::init([](const std::string& name, std::int64_t heads, std::int64_t rows, std::int64_t cols, std::int64_t elem_bytes,
                         std::int64_t region_rows, std::int64_t region_cols, bool row_statistic) {
                 return std::make_shared<GlobalTensor>(
                     GlobalTensor{name, heads, rows, cols, elem_bytes, region_rows, region_cols, row_statistic, -1});
             }),
             "name"_a, "heads"_a, "rows"_a, "cols"_a, "elem_bytes"_a, "region_rows"_a = 1, "region_cols"_a = 1,
             "row_statistic"_a = false)
        .def_readonly("name", &GlobalTensor::name)
        .def_readonly("heads", &GlobalTensor::heads)
        .def_readonly("rows", &GlobalTensor::rows)
        .def_readonly("cols", &GlobalTensor::cols)
        .def_readonly("elem_bytes", &GlobalTensor::elem_bytes)
        .def_readonly("region_rows", &GlobalTensor::region_rows)
        .def_readonly("region_cols", &GlobalTensor::region_cols)
        .def_readonly("row_statistic", &GlobalTensor::row_statistic)
        .def_readonly("id", &GlobalTensor::id, "its position in the run's declarations; -1 before x.declare()")
        .def("bytes_per_head", &GlobalTensor::bytes_per_head)
        .def("__repr__", &repr_tensor);

    py::class_<PyRegion>(m, "Region", "Rows [row0, row0+nrows) x cols [col0, col0+ncols) of one head of a tensor.")
        .def_property_readonly("tensor", [](const PyRegion& r) { return r.tensor; })
        .def_readonly("head", &PyRegion::head)
        .def_readonly("row0", &PyRegion::row0)
        .def_readonly("nrows", &PyRegion::nrows)
        .def_readonly("col0", &PyRegion::col0)
        .def_readonly("ncols", &PyRegion::ncols)
        .def("__repr__", [](const PyRegion& r) { return "Region(" + r.text() + ")"; });
    py::class_<PyView>(m, "TensorView", "view(T, head): one head of a tensor; .rows(row0, nrows) or .tile(row0, nrows, col0, ncols).")
        .def("rows", &PyView::rows, "row0"_a, "nrows"_a, "Rows [row0, row0+nrows), every column.")
        .def("tile", &PyView::tile, "row0"_a, "nrows"_a, "col0"_a, "ncols"_a);
    m.def(
        "view", [](const std::shared_ptr<GlobalTensor>& t, std::int64_t head) { return PyView{t, head}; }, "tensor"_a, "head"_a,
        "One head of a tensor, to cut regions from: view(K, kv_head).rows(k0, cols).");

    py::class_<KernelDesc>(m, "KernelDesc", "One kernel launch: blocks_per_head blocks for each of heads heads.")
        .def(py::init([](const std::string& name, const std::string& role, std::int64_t blocks_per_head, std::int64_t heads, int warps) {
                 return KernelDesc{name, role, blocks_per_head, heads, warps};
             }),
             "name"_a, "role"_a, "blocks_per_head"_a, "heads"_a, "warps"_a = 4)
        .def_readonly("name", &KernelDesc::name)
        .def_readonly("role", &KernelDesc::role)
        .def_readonly("blocks_per_head", &KernelDesc::blocks_per_head)
        .def_readonly("heads", &KernelDesc::heads)
        .def_readonly("warps", &KernelDesc::warps)
        .def("grid", &KernelDesc::grid);

    py::class_<MaskSpec>(m, "MaskSpec", "The mask of a tile of S whose top-left element is S[q0][k0].")
        .def(py::init([](std::int64_t q0, std::int64_t k0, std::int64_t N, std::int64_t Nk, bool causal) {
                 return MaskSpec{q0, k0, N, Nk, causal};
             }),
             "q0"_a, "k0"_a, "N"_a, "Nk"_a, "causal"_a = false)
        .def_readonly("q0", &MaskSpec::q0)
        .def_readonly("k0", &MaskSpec::k0)
        .def_readonly("N", &MaskSpec::N)
        .def_readonly("Nk", &MaskSpec::Nk)
        .def_readonly("causal", &MaskSpec::causal);

    py::class_<PyTile>(m, "Tile", "A tile on chip, made by a Block; valid while its block's body runs.")
        .def("rows", [](const PyTile& t) { return t.get().rows(); })
        .def("cols", [](const PyTile& t) { return t.get().cols(); })
        .def("elements", [](const PyTile& t) { return t.get().elements(); })
        .def("elem_bytes", [](const PyTile& t) { return t.get().elem_bytes(); })
        .def("bytes", [](const PyTile& t) { return t.get().bytes(); })
        .def("space", [](const PyTile& t) { return t.get().space(); })
        .def("statistic", [](const PyTile& t) { return t.get().statistic(); }, "A row statistic (rows x 1)?")
        .def_property_readonly("label", [](const PyTile& t) { return t.label; })
        .def_property_readonly("alive", [](const PyTile& t) { return t.session->alive && t.tile.has_value(); },
                               "False once its block has ended")
        .def("__repr__", [](const PyTile& t) {
            return "Tile('" + t.label + "', " + std::to_string(t.rows) + "x" + std::to_string(t.cols) + ", " + space_name(t.space) +
                   (t.session->alive ? "" : ", its block has ended") + ")";
        });

    py::class_<PyArg>(m, "Arg", "An operand of Block.map broadcast along rows (per_row) or columns (per_col).");
    const auto broadcast = [](const py::object& t, Broadcast how) {
        if (!py::isinstance<PyTile>(t))
            throw py::type_error(bad(std::string(how == Broadcast::rows ? "per_row" : "per_col") + " of a " +
                                         std::string(py::str(t.get_type().attr("__name__"))),
                                     "it broadcasts a tile (a rows x 1 statistic for per_row); a number is an operand as it is"));
        return PyArg{t, how};
    };
    m.def(
        "per_row", [broadcast](const py::object& t) { return broadcast(t, Broadcast::rows); }, "tile"_a,
        "v[i] for every element of row i (a rows x 1 tile such as m or l).");
    m.def(
        "per_col", [broadcast](const py::object& t) { return broadcast(t, Broadcast::cols); }, "tile"_a,
        "v[j] for every element of column j (a 1 x cols tile).");

    py::class_<PyBlock>(m, "Block", "One thread block, inside a kernel's body(b, head, index).")
        .def("alloc", &PyBlock::alloc, "rows"_a, "cols"_a, "space"_a, "fill"_a, "label"_a,
             "A new tile, filled with Fill.Zero or Fill.NegInf.")
        .def("alloc_statistic", &PyBlock::alloc_statistic, "rows"_a, "space"_a, "fill"_a, "label"_a,
             "A row statistic, rows x 1 (m, l, alpha, LSE).")
        .def("load", &PyBlock::load, "region"_a, "to"_a, "label"_a, "A tile of a global tensor, on chip.")
        .def("store", &PyBlock::store, "tile"_a, "region"_a, "mode"_a = StoreMode::overwrite, "A tile back to global memory.")
        .def("stage", &PyBlock::stage, "X"_a, "to"_a, "elem_bytes"_a, "label"_a,
             "A copy of X in the other on-chip space, elem_bytes per element.")
        .def(
            "matmul",
            [](PyBlock& b, PyTile& C, PyTile& A, PyTile& B, bool transpose_a, bool transpose_b, bool accumulate, Split split,
               bool recompute) {
                b.matmul(C, A, B, Product{transpose_a, transpose_b, accumulate, split, recompute});
            },
            "C"_a, "A"_a, "B"_a, py::kw_only(), "transpose_a"_a = false, "transpose_b"_a = false, "accumulate"_a = false,
            "split"_a = Split::Rows, "recompute"_a = false, "C (+)= op(A) · op(B), accumulated in fp32.")
        .def("map", &PyBlock::map, "out"_a, "fn"_a, "args"_a,
             "out = fn(*args) element by element; args: tiles, per_row(t), per_col(t), numbers. out may be one of them.")
        .def("reduce_rows", &PyBlock::reduce_rows, "kind"_a, "X"_a, "label"_a, "scale"_a = 1.0,
             "max_j scale·X[i][j] or sum_j X[i][j]: a rows x 1 tile.")
        .def(
            "row_max", [](PyBlock& b, PyTile& X, double scale, const std::string& label) { return b.reduce_rows(Reduce::Max, X, label, scale); },
            "X"_a, "scale"_a, "label"_a, "max_j scale·X[i][j], one value per row.")
        .def(
            "row_sum", [](PyBlock& b, PyTile& X, const std::string& label) { return b.reduce_rows(Reduce::Sum, X, label, 1.0); },
            "X"_a, "label"_a, "sum_j X[i][j], one value per row.")
        .def("mask", &PyBlock::mask, "S"_a, "spec"_a,
             "S[i][j] = -inf where key k0 + j is beyond Nk, or not visible to query q0 + i when causal.")
        .def(
            "mask",
            [](PyBlock& b, PyTile& S, std::int64_t q0, std::int64_t k0, std::int64_t N, std::int64_t Nk, bool causal) {
                b.mask(S, MaskSpec{q0, k0, N, Nk, causal});
            },
            "S"_a, "q0"_a, "k0"_a, "N"_a, "Nk"_a, "causal"_a = false)
        .def("round_to_storage", &PyBlock::round_to_storage, "X"_a, "X rounded to the storage dtype (P before P·V).")
        .def("reduce_across_warps", &PyBlock::reduce_across_warps, "X"_a, "kind"_a, "Split-K exchange between the warps.")
        .def("barrier", &PyBlock::barrier)
        .def("rename", &PyBlock::rename, "tile"_a, "label"_a, "The tile's name in traces from here on.")
        .def_property_readonly("head", [](const PyBlock& b) { return b.s->head; })
        .def_property_readonly("index", [](const PyBlock& b) { return b.s->index; })
        .def("__repr__", [](const PyBlock& b) { return "Block(" + b.s->where() + (b.s->alive ? "" : ", ended") + ")"; });

    py::class_<PyExecutor>(m, "Executor", "What runs a program: x.declare(tensor), x.launch(kernel, body).")
        .def("declare", &PyExecutor::declare, "tensor"_a,
             "Makes a global tensor known to the run and returns it with its id (a name declared before is that tensor).")
        .def(
            "declare",
            [](PyExecutor& x, const std::string& name, std::int64_t heads, std::int64_t rows, std::int64_t cols, std::int64_t elem_bytes,
               std::int64_t region_rows, std::int64_t region_cols, bool row_statistic) {
                return x.declare(GlobalTensor{name, heads, rows, cols, elem_bytes, region_rows, region_cols, row_statistic, -1});
            },
            "name"_a, "heads"_a, "rows"_a, "cols"_a, "elem_bytes"_a, "region_rows"_a = 1, "region_cols"_a = 1,
            "row_statistic"_a = false)
        .def("tensors", &PyExecutor::tensors, "The tensors declared so far, in order.")
        .def("launch", &PyExecutor::launch, "kernel"_a, "body"_a,
             "Runs body(b, head, index) once per block of the kernel's grid (blocks of one head in order, then the next head).");

    py::class_<KvTileRange>(m, "KvTileRange", "K/V tile indices [begin, end).")
        .def_readonly("begin", &KvTileRange::begin)
        .def_readonly("end", &KvTileRange::end)
        .def("__iter__", [](const KvTileRange& r) { return py::iter(py::module_::import("builtins").attr("range")(r.begin, r.end)); })
        .def("__repr__", [](const KvTileRange& r) { return "KvTileRange(" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")"; });

    m.def("ceil_div", &ceil_div, "a"_a, "b"_a, "⌈a / b⌉");
    m.def("last_visible_key", &last_visible_key, "q"_a, "N"_a, "Nk"_a,
          "The last key query row q sees when causal: q + Nk - N (bottom-right aligned; negative: none).");
    m.def("visible_kv_tiles", &visible_kv_tiles, "q0"_a, "rows"_a, "Bc"_a, "N"_a, "Nk"_a, "causal"_a,
          "The K/V tiles some row of a Q tile sees: KvTileRange(begin, end).");
    m.def("tile_crosses_diagonal", &tile_crosses_diagonal, "q0"_a, "k0"_a, "cols"_a, "N"_a, "Nk"_a, "causal"_a,
          "Some key of this tile is beyond the diagonal for the tile's first query row (it needs a mask).");
    m.def("tile_fully_masked", &tile_fully_masked, "q0"_a, "rows"_a, "k0"_a, "N"_a, "Nk"_a, "causal"_a,
          "Every key of this tile is beyond the diagonal for its last query row (skip it).");
    m.def(
        "fused_tensors",
        [](PyExecutor& x, const AttentionProblem& p, std::int64_t Br, std::int64_t Bc) {
            Executor& ex = x.x();
            if (x.s->in_launch)
                throw TileError(bad("fused_tensors() inside a kernel's block body", "declare the tensors before x.launch()"));
            if (Br < 1 || Bc < 1) throw py::value_error(bad("fused_tensors with Br=" + std::to_string(Br) + ", Bc=" + std::to_string(Bc), "cfg.Br and cfg.Bc"));
            const FusedTensors f = fasim::fused_tensors(ex, p, Br, Bc);  // the C++ programs' own declarations
            return py::make_tuple(x.held(f.Q), x.held(f.K), x.held(f.V), x.held(f.O), x.held(f.LSE));
        },
        "x"_a, "p"_a, "Br"_a, "Bc"_a,
        "Declares Q, K, V, O and LSE as the fused algorithms do (sim/algorithms/flash_steps.hpp) and returns them.");
}

}  // namespace fasim::python
