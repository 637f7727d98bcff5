#include "exec/functional_executor.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fasim {

using reference::MatrixF;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Hands out tile handles and counts nothing: the inner block for heads other than
// the one the counting executor simulates.
class NullBlock final : public Block {
public:
    Tile alloc(std::int64_t r, std::int64_t c, Space s, Fill, std::string_view) override { return Tile(this, 0, r, c, 4, s); }
    Tile load(const Region& g, Space s, std::string_view) override {
        return g.tensor->row_statistic ? Tile(this, 0, g.ncols, 1, g.tensor->elem_bytes, s)
                                       : Tile(this, 0, g.nrows, g.ncols, g.tensor->elem_bytes, s);
    }
    void store(const Tile&, const Region&) override {}
    void matmul(Tile&, const Tile&, const Tile&, bool, bool, Split) override {}
    void mask(Tile&, const MaskSpec&) override {}
    Tile row_max(const Tile& S, double, std::string_view) override { return Tile(this, 0, S.rows(), 1, 4, Space::Registers); }
    Tile row_sum(const Tile& P, std::string_view) override { return Tile(this, 0, P.rows(), 1, 4, Space::Registers); }
    void exp_rows(Tile&, double, const Tile&) override {}
    void multiply(Tile&, double) override {}
    void scale_rows(Tile&, const Tile&) override {}
    void divide_rows(Tile&, const Tile&) override {}
    void add(Tile&, const Tile&) override {}
    void vec_max(Tile&, const Tile&, const Tile&) override {}
    void vec_exp_diff(Tile&, const Tile&, const Tile&) override {}
    void vec_mul(Tile&, const Tile&, const Tile&) override {}
    void vec_mul_add(Tile&, const Tile&, const Tile&, const Tile&) override {}
    void vec_lse(Tile&, const Tile&, const Tile&) override {}
    void round_to_storage(Tile&) override {}
    void reduce_across_warps(Tile&, Reduce) override {}
    void barrier() override {}
    void release(int) override {}
};

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

    Tile load(const Region& r, Space to, std::string_view label) override {
        Tile t = make(inner_.load(r, to, label), label);
        const MatrixF& g = x_.global_[static_cast<std::size_t>(r.tensor->id)][static_cast<std::size_t>(r.head)];
        const MatrixF block = g.block(r.row0, r.col0, r.nrows, r.ncols);
        data(t) = r.tensor->row_statistic ? MatrixF(block.transpose()) : block;
        notify(StepKind::load, t, {}, &r);
        return t;
    }

    void store(const Tile& t, const Region& r) override {
        inner_.store(inner(t), r);
        MatrixF& g = x_.global_[static_cast<std::size_t>(r.tensor->id)][static_cast<std::size_t>(r.head)];
        MatrixF v = r.tensor->row_statistic ? MatrixF(data(t).transpose()) : data(t);
        if (r.tensor->elem_bytes == 2) v = reference::round_matrix(v, x_.problem_.dtype);  // storage rounding
        g.block(r.row0, r.col0, r.nrows, r.ncols) = v;
        notify(StepKind::store, t, {}, &r);
    }

    void matmul(Tile& C, const Tile& A, const Tile& B, bool transpose_b, bool accumulate, Split split) override {
        inner_.matmul(inner(C), inner(A), inner(B), transpose_b, accumulate, split);
        const MatrixF product = transpose_b ? MatrixF(data(A) * data(B).transpose()) : MatrixF(data(A) * data(B));
        if (accumulate) data(C) += product;
        else data(C) = product;
        if (x_.observer_) {
            Step step{StepKind::matmul, &kernel_, head_, index_, slot(C).label, {slot(A).label, slot(B).label}, nullptr,
                      &slot(C).values, accumulate, transpose_b};
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

    Tile row_max(const Tile& S, double scale, std::string_view label) override {
        Tile t = make(inner_.row_max(inner(S), scale, label), label);
        const float sc = static_cast<float>(scale);
        data(t) = (data(S) * sc).rowwise().maxCoeff();
        notify(StepKind::row_max, t, {S});
        return t;
    }

    Tile row_sum(const Tile& P, std::string_view label) override {
        Tile t = make(inner_.row_sum(inner(P), label), label);
        data(t) = data(P).rowwise().sum();
        notify(StepKind::row_sum, t, {P});
        return t;
    }

    void exp_rows(Tile& S, double scale, const Tile& m) override {
        inner_.exp_rows(inner(S), scale, inner(m));
        MatrixF& s = data(S);
        const MatrixF& mv = data(m);
        const float sc = static_cast<float>(scale);
        for (Eigen::Index i = 0; i < s.rows(); ++i) {
            const float mi = mv(i, 0);
            for (Eigen::Index j = 0; j < s.cols(); ++j)  // a row that sees no key (m = -inf) gives 0, not NaN
                s(i, j) = mi == kNegInf ? 0.0f : std::exp(std::fma(sc, s(i, j), -mi));
        }
        notify(StepKind::exp_rows, S, {m});
    }

    void multiply(Tile& X, double s) override {
        inner_.multiply(inner(X), s);
        data(X) *= static_cast<float>(s);
        notify(StepKind::multiply, X, {});
    }

    void scale_rows(Tile& X, const Tile& v) override {
        inner_.scale_rows(inner(X), inner(v));
        data(X) = data(v).col(0).asDiagonal() * data(X);
        notify(StepKind::scale_rows, X, {v});
    }

    void divide_rows(Tile& X, const Tile& v) override {
        inner_.divide_rows(inner(X), inner(v));
        MatrixF& x = data(X);
        const MatrixF& d = data(v);
        for (Eigen::Index i = 0; i < x.rows(); ++i) {
            if (d(i, 0) == 0.0f) x.row(i).setZero();  // no key seen: O row is 0 by convention
            else x.row(i) /= d(i, 0);
        }
        notify(StepKind::divide_rows, X, {v});
    }

    void add(Tile& X, const Tile& Y) override {
        inner_.add(inner(X), inner(Y));
        data(X) += data(Y);
        notify(StepKind::add, X, {Y});
    }

    void vec_max(Tile& out, const Tile& a, const Tile& b) override {
        inner_.vec_max(inner(out), inner(a), inner(b));
        data(out) = data(a).cwiseMax(data(b));
        notify(StepKind::vec_max, out, {a, b});
    }

    void vec_exp_diff(Tile& out, const Tile& a, const Tile& b) override {
        inner_.vec_exp_diff(inner(out), inner(a), inner(b));
        const MatrixF av = data(a), bv = data(b);
        MatrixF& o = data(out);
        for (Eigen::Index i = 0; i < o.rows(); ++i)  // both -inf: nothing seen yet, nothing to rescale
            o(i, 0) = (av(i, 0) == kNegInf && bv(i, 0) == kNegInf) ? 1.0f : std::exp(av(i, 0) - bv(i, 0));
        notify(StepKind::vec_exp_diff, out, {a, b});
    }

    void vec_mul(Tile& out, const Tile& a, const Tile& b) override {
        inner_.vec_mul(inner(out), inner(a), inner(b));
        data(out) = data(a).cwiseProduct(data(b));
        notify(StepKind::vec_mul, out, {a, b});
    }

    void vec_mul_add(Tile& out, const Tile& a, const Tile& x, const Tile& y) override {
        inner_.vec_mul_add(inner(out), inner(a), inner(x), inner(y));
        data(out) = data(a).cwiseProduct(data(x)) + data(y);
        notify(StepKind::vec_mul_add, out, {a, x, y});
    }

    void vec_lse(Tile& out, const Tile& m, const Tile& l) override {
        inner_.vec_lse(inner(out), inner(m), inner(l));
        const MatrixF mv = data(m), lv = data(l);
        MatrixF& o = data(out);
        for (Eigen::Index i = 0; i < o.rows(); ++i) o(i, 0) = lv(i, 0) == 0.0f ? kNegInf : mv(i, 0) + std::log(lv(i, 0));
        notify(StepKind::vec_lse, out, {m, l});
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
        Tile t(this, id, inner_tile.rows(), inner_tile.cols(), inner_tile.elem_bytes(), inner_tile.space());
        s.values.resize(inner_tile.rows(), inner_tile.cols());
        s.label = label;
        s.inner = std::move(inner_tile);
        return t;
    }
    Slot& slot(const Tile& t) { return slots_[static_cast<std::size_t>(t.id())]; }
    Tile& inner(const Tile& t) { return slot(t).inner; }
    MatrixF& data(const Tile& t) { return slot(t).values; }

    void notify(StepKind kind, const Tile& result, std::initializer_list<std::reference_wrapper<const Tile>> operands,
                const Region* region = nullptr) {
        if (!x_.observer_) return;
        Step step{kind, &kernel_, head_, index_, slot(result).label, {}, region, &slot(result).values};
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

FunctionalExecutor::FunctionalExecutor(const GpuSpec& gpu, const AttentionProblem& problem, FunctionalInputs inputs)
    : problem_(problem), counter_(gpu), inputs_(std::move(inputs)) {
    for (const auto& [name, per_head] : inputs_)
        if (static_cast<std::int64_t>(per_head.size()) != problem.batch_heads())
            throw std::invalid_argument("functional executor: input " + name + " has " + std::to_string(per_head.size()) +
                                        " matrices; it needs one per batch*head (" + std::to_string(problem.batch_heads()) + ")");
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
    for (const reference::Matrix& m : input->second) {
        if (m.rows() != t.rows || m.cols() != t.cols)
            throw std::invalid_argument("functional executor: input " + t.name + " is " + std::to_string(m.rows()) + "x" +
                                        std::to_string(m.cols()) + "; the program declares it " + std::to_string(t.rows) +
                                        "x" + std::to_string(t.cols));
        g.push_back(m.cast<float>());
    }
}

void FunctionalExecutor::launch(const KernelDesc& kernel, const BlockBody& body) {
    if (observer_) observer_->on_step(Step{StepKind::kernel_begin, &kernel, 0, 0, {}, {}, nullptr, nullptr});
    auto run_block = [&](Block& inner, std::int64_t head, std::int64_t index) {
        if (observer_) observer_->on_step(Step{StepKind::block_begin, &kernel, head, index, {}, {}, nullptr, nullptr});
        FunctionalBlock block(*this, inner, kernel, head, index);
        body(block, head, index);
    };
    // Head 0 through the counting executor (it counts and scales to all heads) ...
    counter_.launch(kernel, [&](Block& counting, std::int64_t head, std::int64_t index) { run_block(counting, head, index); });
    // ... the other heads only compute.
    NullBlock null;
    for (std::int64_t h = 1; h < kernel.heads; ++h)
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

FunctionalRun run_functional(Algo algo, const AttentionProblem& p, const GpuSpec& gpu, const TileConfig& tiles,
                             const std::vector<reference::Matrix>& Q, const std::vector<reference::Matrix>& K,
                             const std::vector<reference::Matrix>& V, Observer* observer) {
    FunctionalExecutor x(gpu, p, {{"Q", Q}, {"K", K}, {"V", V}});
    x.set_observer(observer);
    run_algorithm(algo, x, p, tiles);
    FunctionalRun r;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        r.O.push_back(x.tensor("O", h).cast<double>());
        if (x.has_tensor("LSE")) {
            r.lse.push_back(x.tensor("LSE", h).row(0).transpose().cast<double>());
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
