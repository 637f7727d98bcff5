#include "exec/functional_executor.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fasim {

using reference::MatrixF;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// A map's name in a trace: the function's, except that a product with a number scales the tile and
// one with a per-row value rescales its rows.
std::string_view map_step_name(Fn fn, std::span<const Arg> args) {
    if (fn == Fn::mul) {
        for (const Arg& a : args) {
            if (!a.tile) return "scale";
            if (a.broadcast == Broadcast::rows) return "rescale";
        }
    }
    return fn_info(fn).name;
}

// Hands out tile handles and counts nothing: the inner block for heads other than
// the one the counting executor simulates.
class NullBlock final : public Block {
public:
    Tile alloc(std::int64_t r, std::int64_t c, Space s, Fill, std::string_view) override { return Tile(this, 0, r, c, 4, s); }
    Tile alloc_statistic(std::int64_t r, Space s, Fill, std::string_view) override { return Tile(this, 0, r, 1, 4, s, true); }
    Tile load(const Region& g, Space s, std::string_view) override {
        return g.tensor->row_statistic ? Tile(this, 0, g.ncols, 1, g.tensor->elem_bytes, s, true)
                                       : Tile(this, 0, g.nrows, g.ncols, g.tensor->elem_bytes, s);
    }
    void store(const Tile&, const Region&, StoreMode) override {}
    Tile stage(const Tile& X, Space to, std::int64_t e, std::string_view) override {
        return Tile(this, 0, X.rows(), X.cols(), e, to, X.statistic());
    }
    void matmul(Tile&, const Tile&, const Tile&, const Product&) override {}
    void mask(Tile&, const MaskSpec&) override {}
    Tile reduce_rows(Reduce, const Tile& X, std::string_view, double) override {
        return Tile(this, 0, X.rows(), 1, 4, Space::Registers, true);
    }
    using Block::map;
    void map(Tile&, Fn, std::span<const Arg>) override {}
    void round_to_storage(Tile&) override {}
    void reduce_across_warps(Tile&, Reduce) override {}
    void barrier() override {}
    void release(int) override {}
};

// A load or store outside its tensor is a bug in the tile program (a ragged last tile read as a full
// one, a head index past the last): said as such, instead of reading or writing past the matrix.
void check_bounds(const char* op, const Region& r) {
    const GlobalTensor& t = *r.tensor;
    if (r.head >= 0 && r.head < t.heads && r.row0 >= 0 && r.nrows >= 0 && r.row0 + r.nrows <= t.rows && r.col0 >= 0 &&
        r.ncols >= 0 && r.col0 + r.ncols <= t.cols)
        return;
    throw std::logic_error(std::string(op) + " of " + t.name + " head " + std::to_string(r.head) + " rows " +
                           std::to_string(r.row0) + ".." + std::to_string(r.row0 + r.nrows - 1) + " cols " +
                           std::to_string(r.col0) + ".." + std::to_string(r.col0 + r.ncols - 1) + " is outside the tensor (" +
                           std::to_string(t.heads) + " heads of " + std::to_string(t.rows) + " x " + std::to_string(t.cols) + ")");
}

}  // namespace

// A thread block with real numbers. Each operation goes to the inner (counting)
// block first, then is computed here on the tiles' values.
class FunctionalBlock final : public Block {
public:
    FunctionalBlock(FunctionalExecutor& x, Block& inner, const KernelDesc& kernel, std::int64_t head, std::int64_t index)
        : x_(x), inner_(inner), kernel_(kernel), head_(head), index_(index) {}

    Tile alloc(std::int64_t rows, std::int64_t cols, Space space, Fill fill, std::string_view label) override {
        Tile t = make(inner_.alloc(rows, cols, space, fill, label), label);
        data(t).setConstant(fill == Fill::Zero ? 0.0f : kNegInf);
        notify(StepKind::alloc, t, {});
        return t;
    }

    Tile alloc_statistic(std::int64_t rows, Space space, Fill fill, std::string_view label) override {
        Tile t = make(inner_.alloc_statistic(rows, space, fill, label), label);
        data(t).setConstant(fill == Fill::Zero ? 0.0f : kNegInf);
        notify(StepKind::alloc, t, {});
        return t;
    }

    Tile load(const Region& r, Space to, std::string_view label) override {
        check_bounds("load", r);
        Tile t = make(inner_.load(r, to, label), label);
        const MatrixF& g = x_.global_[static_cast<std::size_t>(r.tensor->id)][static_cast<std::size_t>(r.head)];
        const MatrixF block = g.block(r.row0, r.col0, r.nrows, r.ncols);
        data(t) = r.tensor->row_statistic ? MatrixF(block.transpose()) : block;
        notify(StepKind::load, t, {}, &r);
        return t;
    }

    void store(const Tile& t, const Region& r, StoreMode mode) override {
        check_bounds("store", r);
        inner_.store(inner(t), r, mode);
        MatrixF& g = x_.global_[static_cast<std::size_t>(r.tensor->id)][static_cast<std::size_t>(r.head)];
        MatrixF v = r.tensor->row_statistic ? MatrixF(data(t).transpose()) : data(t);
        if (mode != StoreMode::overwrite) v += g.block(r.row0, r.col0, r.nrows, r.ncols);
        if (r.tensor->elem_bytes == 2) v = reference::round_matrix(v, x_.problem_.dtype);  // storage rounding
        g.block(r.row0, r.col0, r.nrows, r.ncols) = v;
        if (x_.observer_) {
            Step step{StepKind::store, &kernel_, head_, index_, slot(t).label, {}, &r, &slot(t).values};
            step.store_mode = mode;
            x_.observer_->on_step(step);
        }
    }

    Tile stage(const Tile& X, Space to, std::int64_t elem_bytes, std::string_view label) override {
        Tile t = make(inner_.stage(inner(X), to, elem_bytes, label), label);
        data(t) = data(X);
        notify(StepKind::stage, t, {X});
        return t;
    }

    void matmul(Tile& C, const Tile& A, const Tile& B, const Product& how) override {
        inner_.matmul(inner(C), inner(A), inner(B), how);
        const MatrixF a = how.transpose_a ? MatrixF(data(A).transpose()) : data(A);
        const MatrixF product = how.transpose_b ? MatrixF(a * data(B).transpose()) : MatrixF(a * data(B));
        if (how.accumulate) data(C) += product;
        else data(C) = product;
        if (x_.observer_) {
            Step step{StepKind::matmul, &kernel_, head_, index_, slot(C).label, {slot(A).label, slot(B).label}, nullptr,
                      &slot(C).values, how.accumulate, how.transpose_b};
            step.transpose_a = how.transpose_a;
            x_.observer_->on_step(step);
        }
    }

    void mask(Tile& S, const MaskSpec& m) override {
        inner_.mask(inner(S), m);
        MatrixF& s = data(S);
        for (Eigen::Index i = 0; i < s.rows(); ++i)
            for (Eigen::Index j = 0; j < s.cols(); ++j) {
                const std::int64_t q = m.q0 + i, k = m.k0 + j;
                if (q >= m.N || k >= m.Nk || (m.causal && k > q + (m.Nk - m.N))) s(i, j) = kNegInf;
            }
        notify(StepKind::mask, S, {});
    }

    Tile reduce_rows(Reduce kind, const Tile& X, std::string_view label, double scale) override {
        Tile t = make(inner_.reduce_rows(kind, inner(X), label, scale), label);
        if (kind == Reduce::Max) data(t) = (data(X) * static_cast<float>(scale)).rowwise().maxCoeff();
        else data(t) = data(X).rowwise().sum();
        notify(StepKind::reduce_rows, t, {X}, nullptr, kind == Reduce::Max ? "rowmax" : "rowsum");
        return t;
    }

    using Block::map;
    void map(Tile& out, Fn fn, std::span<const Arg> args) override {
        std::vector<Arg> inner_args;
        for (const Arg& a : args) inner_args.push_back(a.tile ? Arg(inner(*a.tile), a.broadcast) : Arg(a.scalar));
        inner_.map(inner(out), fn, inner_args);
        // Each operand's value at (i, j), broadcast as asked.
        auto value = [&](std::size_t n, Eigen::Index i, Eigen::Index j) -> float {
            if (n >= args.size()) return 0.0f;
            const Arg& a = args[n];
            if (!a.tile) return static_cast<float>(a.scalar);
            const MatrixF& v = data(*a.tile);
            return a.broadcast == Broadcast::rows ? v(i, 0) : a.broadcast == Broadcast::cols ? v(0, j) : v(i, j);
        };
        MatrixF result(out.rows(), out.cols());
        for (Eigen::Index i = 0; i < result.rows(); ++i)
            for (Eigen::Index j = 0; j < result.cols(); ++j) result(i, j) = apply(fn, value(0, i, j), value(1, i, j), value(2, i, j));
        data(out) = std::move(result);
        if (!x_.observer_) return;
        // The trace lists what a tile updated in place was combined with, and every input of a row statistic.
        Step step{StepKind::map, &kernel_, head_, index_, slot(out).label, {}, nullptr, &slot(out).values};
        for (const Arg& a : args) {
            if (!a.tile) step.numbers.push_back(a.scalar);
            else if (a.tile != &out || out.statistic()) step.operands.push_back(slot(*a.tile).label);
        }
        step.op = map_step_name(fn, args);
        x_.observer_->on_step(step);
    }

    void round_to_storage(Tile& X) override {
        inner_.round_to_storage(inner(X));
        if (x_.problem_.dtype != DType::fp32) data(X) = reference::round_matrix(data(X), x_.problem_.dtype);
        notify(StepKind::round_to_storage, X, {});
    }

    // The values already hold the whole block's result; the split across warps is
    // accounting (shared-memory traffic, barriers), done by the inner block.
    void reduce_across_warps(Tile& X, Reduce kind) override {
        inner_.reduce_across_warps(inner(X), kind);
        notify(StepKind::reduce_across_warps, X, {});
    }

    void barrier() override {
        inner_.barrier();
        if (x_.observer_) x_.observer_->on_step(Step{StepKind::barrier, &kernel_, head_, index_, {}, {}, nullptr, nullptr});
    }

    void release(int id) override {
        Slot& s = slots_[static_cast<std::size_t>(id)];
        s.inner = Tile();
        s.values.resize(0, 0);
        free_.push_back(id);
    }

    void rename(const Tile& t, std::string_view label) override { slot(t).label = std::string(label); }

private:
    struct Slot {
        Tile inner;
        MatrixF values;
        std::string label;
    };

    Tile make(Tile inner_tile, std::string_view label) {
        int id;
        if (!free_.empty()) {
            id = free_.back();
            free_.pop_back();
        } else {
            id = static_cast<int>(slots_.size());
            slots_.emplace_back();
        }
        Slot& s = slots_[static_cast<std::size_t>(id)];
        Tile t(this, id, inner_tile.rows(), inner_tile.cols(), inner_tile.elem_bytes(), inner_tile.space(), inner_tile.statistic());
        s.values.resize(inner_tile.rows(), inner_tile.cols());
        s.label = label;
        s.inner = std::move(inner_tile);
        return t;
    }
    Slot& slot(const Tile& t) { return slots_[static_cast<std::size_t>(t.id())]; }
    Tile& inner(const Tile& t) { return slot(t).inner; }
    MatrixF& data(const Tile& t) { return slot(t).values; }

    void notify(StepKind kind, const Tile& result, std::initializer_list<std::reference_wrapper<const Tile>> operands,
                const Region* region = nullptr, std::string_view op = {}) {
        if (!x_.observer_) return;
        Step step{kind, &kernel_, head_, index_, slot(result).label, {}, region, &slot(result).values};
        step.op = op;
        for (const Tile& o : operands) step.operands.push_back(slot(o).label);
        x_.observer_->on_step(step);
    }

    FunctionalExecutor& x_;
    Block& inner_;
    const KernelDesc& kernel_;
    std::int64_t head_, index_;
    std::vector<Slot> slots_;
    std::vector<int> free_;
};

FunctionalExecutor::FunctionalExecutor(const GpuSpec& gpu, const AttentionProblem& problem, FunctionalInputs inputs,
                                       ExecutionModel execution)
    : problem_(problem), counter_(gpu, 0, std::move(execution), 0, CountPath::by_block), inputs_(std::move(inputs)) {
    if (problem.grouped()) counter_.share_kv_heads(problem.batch_kv_heads());
}

FunctionalExecutor::~FunctionalExecutor() = default;

void FunctionalExecutor::on_declare(const GlobalTensor& t) {
    if (counter_.declare(t).id != t.id) throw std::logic_error("functional executor: tensor ids out of step");
    std::vector<MatrixF>& g = global_.emplace_back();
    const auto input = inputs_.find(t.name);
    if (input == inputs_.end()) {
        // Poisoned with NaN: an element the program forgets to write shows up in every check.
        g.assign(static_cast<std::size_t>(t.heads), MatrixF::Constant(t.rows, t.cols, std::numeric_limits<float>::quiet_NaN()));
        return;
    }
    // Global memory is flat: the inputs' rows, head after head, are laid out as the program declares the
    // tensor (FlashDecoding declares one-row Q heads of a group as the rows of one head).
    std::int64_t input_rows = 0;
    for (std::size_t h = 0; h < input->second.size(); ++h) {
        const reference::Matrix& m = input->second[h];
        for (Eigen::Index i = 0; i < m.rows(); ++i)  // NaN and inf would spread through every product: refused
            for (Eigen::Index j = 0; j < m.cols(); ++j)
                if (!std::isfinite(m(i, j)))
                    throw std::invalid_argument("functional executor: input " + t.name + " of head " + std::to_string(h) +
                                                " holds " + std::to_string(m(i, j)) + " at (" + std::to_string(i) + ", " +
                                                std::to_string(j) + "); inputs must be finite numbers");
        if (m.cols() != t.cols)
            throw std::invalid_argument("functional executor: input " + t.name + " has " + std::to_string(m.cols()) +
                                        " columns; the program declares " + std::to_string(t.cols));
        input_rows += m.rows();
    }
    if (input_rows != t.heads * t.rows)
        throw std::invalid_argument("functional executor: input " + t.name + " holds " + std::to_string(input_rows) +
                                    " rows in " + std::to_string(input->second.size()) + " matrices; the program declares " +
                                    std::to_string(t.heads) + " heads of " + std::to_string(t.rows) + " rows");
    g.assign(static_cast<std::size_t>(t.heads), MatrixF(t.rows, t.cols));
    std::int64_t row = 0;
    for (const reference::Matrix& m : input->second)
        for (Eigen::Index i = 0; i < m.rows(); ++i, ++row)
            g[static_cast<std::size_t>(row / t.rows)].row(row % t.rows) = m.row(i).cast<float>();
}

void FunctionalExecutor::launch(const KernelDesc& kernel, const BlockBody& body) {
    if (observer_) observer_->on_step(Step{StepKind::kernel_begin, &kernel, 0, 0, {}, {}, nullptr, nullptr});
    auto run_block = [&](Block& inner, std::int64_t head, std::int64_t index) {
        if (observer_) observer_->on_step(Step{StepKind::block_begin, &kernel, head, index, {}, {}, nullptr, nullptr});
        FunctionalBlock block(*this, inner, kernel, head, index);
        body(block, head, index);
    };
    // Head 0 (a grouped problem's heads of K/V head 0) through the counting executor (it counts and scales
    // to all heads) ...
    counter_.launch(kernel, [&](Block& counting, std::int64_t head, std::int64_t index) { run_block(counting, head, index); });
    // ... the other heads only compute.
    NullBlock null;
    for (std::int64_t h = counter_.heads_simulated(kernel); h < kernel.heads; ++h)
        for (std::int64_t i = 0; i < kernel.blocks_per_head; ++i) run_block(null, h, i);
}

bool FunctionalExecutor::has_tensor(std::string_view name) const {
    for (const GlobalTensor& t : tensors())
        if (t.name == name) return true;
    return false;
}

const MatrixF& FunctionalExecutor::tensor(std::string_view name, std::int64_t head) const {
    for (const GlobalTensor& t : tensors())
        if (t.name == name) return global_[static_cast<std::size_t>(t.id)].at(static_cast<std::size_t>(head));
    throw std::invalid_argument("functional executor: the program declared no tensor " + std::string(name));
}

std::vector<MatrixF> FunctionalExecutor::tensor_as(std::string_view name, std::int64_t heads, std::int64_t rows,
                                                    std::int64_t cols) const {
    for (const GlobalTensor& t : tensors()) {
        if (t.name != name) continue;
        if (t.heads * t.rows * t.cols != heads * rows * cols)
            throw std::invalid_argument("functional executor: " + std::string(name) + " holds " +
                                        std::to_string(t.heads * t.rows * t.cols) + " elements, not " +
                                        std::to_string(heads) + "x" + std::to_string(rows) + "x" + std::to_string(cols));
        std::vector<MatrixF> out(static_cast<std::size_t>(heads), MatrixF(rows, cols));
        const std::vector<MatrixF>& stored = global_[static_cast<std::size_t>(t.id)];
        for (std::int64_t k = 0; k < heads * rows * cols; ++k) {  // row-major, head after head, in both layouts
            const std::int64_t from = k / t.cols, to = k / cols;
            out[static_cast<std::size_t>(to / rows)](to % rows, k % cols) =
                stored[static_cast<std::size_t>(from / t.rows)](from % t.rows, k % t.cols);
        }
        return out;
    }
    throw std::invalid_argument("functional executor: the program declared no tensor " + std::string(name));
}

BackwardRun run_functional_backward(const Algorithm& forward, const Algorithm& backward, const AttentionProblem& p,
                                    const GpuSpec& gpu, const TileConfig& forward_tiles, const TileConfig& backward_tiles,
                                    const std::vector<reference::Matrix>& Q, const std::vector<reference::Matrix>& K,
                                    const std::vector<reference::Matrix>& V, const std::vector<reference::Matrix>& dO,
                                    Observer* observer) {
    FunctionalExecutor x(gpu, p, {{"Q", Q}, {"K", K}, {"V", V}, {"dO", dO}}, fasim_kernel_executions(p, backward_tiles));
    run_algorithm(forward, x, p, forward_tiles);
    const std::size_t forward_kernels = x.kernels().size();
    x.set_observer(observer);
    run_algorithm(backward, x, p, backward_tiles);
    BackwardRun r;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) r.dQ.push_back(x.tensor("dQ", h).cast<double>());
    for (std::int64_t h = 0; h < p.batch_kv_heads(); ++h) {  // one per K/V head: a group's sum
        r.dK.push_back(x.tensor("dK", h).cast<double>());
        r.dV.push_back(x.tensor("dV", h).cast<double>());
    }
    r.kernels.assign(x.kernels().begin() + static_cast<std::ptrdiff_t>(forward_kernels), x.kernels().end());
    return r;
}

FunctionalRun run_functional(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileConfig& tiles,
                             const std::vector<reference::Matrix>& Q, const std::vector<reference::Matrix>& K,
                             const std::vector<reference::Matrix>& V, Observer* observer) {
    FunctionalExecutor x(gpu, p, {{"Q", Q}, {"K", K}, {"V", V}}, fasim_kernel_executions(p, tiles));
    x.set_observer(observer);
    run_algorithm(algo, x, p, tiles);
    FunctionalRun r;
    // O and LSE per query head, whatever rows the program's kernels gave them (FlashDecoding packs a group).
    const std::vector<MatrixF> O = x.tensor_as("O", p.batch_heads(), p.N, p.d);
    const std::vector<MatrixF> LSE = x.has_tensor("LSE") ? x.tensor_as("LSE", p.batch_heads(), 1, p.N) : std::vector<MatrixF>{};
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        const auto hh = static_cast<std::size_t>(h);
        r.O.push_back(O[hh].cast<double>());
        if (!LSE.empty()) {
            r.lse.push_back(LSE[hh].row(0).transpose().cast<double>());
        } else if (x.has_tensor("m")) {  // FA1 keeps m and ℓ; LSE = m + log ℓ
            const reference::Vector m = x.tensor("m", h).row(0).transpose().cast<double>();
            const reference::Vector l = x.tensor("l", h).row(0).transpose().cast<double>();
            reference::Vector lse(m.size());
            for (Eigen::Index i = 0; i < m.size(); ++i)
                lse(i) = l(i) == 0 ? -std::numeric_limits<double>::infinity() : m(i) + std::log(l(i));
            r.lse.push_back(lse);
        }
    }
    r.kernels = x.kernels();
    return r;
}

}  // namespace fasim
