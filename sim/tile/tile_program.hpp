// The interface every attention algorithm is written against, once.
//
// A tile program declares its global tensors, then launches kernels. Each kernel
// runs a body once per thread block; the body moves tiles between global memory
// and the block's on-chip memory (shared memory or registers) and computes on
// them with the few operations attention needs. An Executor decides what those
// operations *do*:
//   - the counting executor only counts bytes, FLOPs and barriers (fast; fa-sim),
//   - the functional executor carries real numbers (Eigen) through the same steps,
//   - an Observer sees every step (lesson traces).
// No algorithm's loop nest exists anywhere else.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tile/elementwise.hpp"
#include "tile/tensors.hpp"

namespace fasim {

// Where a tile lives on chip.
enum class Space : std::uint8_t { Shared, Registers };

// How the warps of a block divide a product C = A·B (A: m×k, B: k×n).
//   Rows  each warp owns m/W rows of C   (FA2's split-Q: no exchange needed)
//   Cols  each warp owns n/W columns of C (FA1's split-K for S = Q·Kᵀ: keys split)
//   Inner each warp owns k/W of the sum   (FA1's split-K for P·V: partial O per warp,
//         to be summed with reduce_across_warps)
enum class Split : std::uint8_t { Rows, Cols, Inner };

enum class Fill : std::uint8_t { Zero, NegInf };
enum class Reduce : std::uint8_t { Max, Sum };

class Block;

// A handle to an on-chip tile. Move-only; its storage is released when it dies,
// so the executor can track the shared memory a block holds at its peak.
class Tile {
public:
    Tile() = default;
    Tile(Block* owner, int id, std::int64_t rows, std::int64_t cols, std::int64_t elem_bytes, Space space,
         bool statistic = false)
        : owner_(owner), id_(id), rows_(rows), cols_(cols), elem_bytes_(elem_bytes), space_(space), statistic_(statistic) {}
    Tile(Tile&& o) noexcept { *this = std::move(o); }
    Tile& operator=(Tile&& o) noexcept;
    Tile(const Tile&) = delete;
    Tile& operator=(const Tile&) = delete;
    ~Tile();

    int id() const { return id_; }
    std::int64_t rows() const { return rows_; }
    std::int64_t cols() const { return cols_; }
    std::int64_t elements() const { return rows_ * cols_; }
    std::int64_t elem_bytes() const { return elem_bytes_; }
    std::int64_t bytes() const { return elements() * elem_bytes_; }
    Space space() const { return space_; }
    // A row statistic (m, ℓ, α, LSE): one value per row of a score tile, rows x 1, held by every lane
    // that holds the row (Block::alloc_statistic, Block::reduce_rows, loads of a row-statistic tensor).
    bool statistic() const { return statistic_; }

private:
    Block* owner_ = nullptr;
    int id_ = -1;
    std::int64_t rows_ = 0, cols_ = 0, elem_bytes_ = 0;
    Space space_ = Space::Registers;
    bool statistic_ = false;
};

// The mask a tile of S needs: its top-left element is S[q0][k0]. Elements beyond
// the sequence ends (ragged tiles) and, when causal, above the bottom-right-
// aligned diagonal (key j visible to query i iff j <= i + Nk - N) become -inf.
struct MaskSpec {
    std::int64_t q0 = 0, k0 = 0;
    std::int64_t N = 0, Nk = 0;
    bool causal = false;
};

// One operand of Block::map: a tile of the output's shape, a rows x 1 tile broadcast along every row
// (per_row), a 1 x cols tile broadcast down every column (per_col), or a number.
enum class Broadcast : std::uint8_t { none, rows, cols };
struct Arg {
    const Tile* tile = nullptr;  // nullptr: the number `scalar`
    Broadcast broadcast = Broadcast::none;
    double scalar = 0;
    Arg(const Tile& t) : tile(&t) {}  // NOLINT(google-explicit-constructor): reads like the math
    Arg(double s) : scalar(s) {}      // NOLINT(google-explicit-constructor)
    Arg(const Tile& t, Broadcast b) : tile(&t), broadcast(b) {}
};
inline Arg per_row(const Tile& v) { return {v, Broadcast::rows}; }  // v[i] for every element of row i
inline Arg per_col(const Tile& v) { return {v, Broadcast::cols}; }  // v[j] for every element of column j

// Throws std::logic_error (a bug in the tile program) unless the operands fit the function and the output.
inline void check_map(const Tile& out, Fn fn, std::span<const Arg> args) {
    const FnInfo f = fn_info(fn);
    auto fail = [&](const std::string& why) {
        throw std::logic_error("map " + std::string(f.name) + " into a " + std::to_string(out.rows()) + "x" +
                               std::to_string(out.cols()) + " tile: " + why);
    };
    if (static_cast<int>(args.size()) != f.arity) fail(std::to_string(args.size()) + " operands, it takes " + std::to_string(f.arity));
    for (const Arg& a : args) {
        if (!a.tile) continue;
        const std::int64_t rows = a.broadcast == Broadcast::cols ? 1 : out.rows();
        const std::int64_t cols = a.broadcast == Broadcast::rows ? 1 : out.cols();
        if (a.tile->rows() != rows || a.tile->cols() != cols)
            fail("an operand is " + std::to_string(a.tile->rows()) + "x" + std::to_string(a.tile->cols()) + ", not " +
                 std::to_string(rows) + "x" + std::to_string(cols));
    }
}

// C (+)= op(A) · op(B), accumulated in fp32; op transposes when asked.
struct Product {
    bool transpose_a = false, transpose_b = false;
    bool accumulate = false;
    Split split = Split::Rows;  // how the block's warps divide it
    // Redoes a product of an earlier pass (FlashAttention's backward recomputes S = Q Kᵀ instead of
    // storing P): counted with the others, and reported apart.
    bool recompute = false;
};

// How a store meets what global memory holds: overwrite it, add to it (the block reads the
// region, adds and writes it back), or add with atomic operations that the L2 performs (blocks
// that write the same region at the same time, such as FA2's backward summing dQ).
enum class StoreMode : std::uint8_t { overwrite, accumulate, atomic_add };

// What one thread block can do. Public methods are the tile program's vocabulary;
// each forwards to the executor's implementation. FLOP conventions are documented in
// docs/flop-accounting.md and implemented in one place (tile/elementwise.hpp for maps,
// exec/op_costs.hpp for the rest) that every executor uses.
class Block {
public:
    virtual ~Block() = default;

    // Memory movement.
    virtual Tile alloc(std::int64_t rows, std::int64_t cols, Space space, Fill fill, std::string_view label) = 0;
    // A row statistic: rows x 1 (Tile::statistic).
    virtual Tile alloc_statistic(std::int64_t rows, Space space, Fill fill, std::string_view label) = 0;
    virtual Tile load(const Region& from, Space to, std::string_view label) = 0;
    virtual void store(const Tile& tile, const Region& to, StoreMode mode = StoreMode::overwrite) = 0;
    // A copy of X in the other on-chip space, `elem_bytes` per element (a kernel writes P to shared
    // memory, in the storage dtype, so that every warp can read it transposed).
    virtual Tile stage(const Tile& X, Space to, std::int64_t elem_bytes, std::string_view label) = 0;

    // Products: C (+)= op(A) · op(B) (tensor cores or CUDA cores: the executor decides what it costs).
    virtual void matmul(Tile& C, const Tile& A, const Tile& B, const Product& how) = 0;

    // out = fn(args...) element by element (tile/elementwise.hpp); out may be one of the args.
    void map(Tile& out, Fn fn, std::initializer_list<Arg> args) { map(out, fn, std::span<const Arg>(args.begin(), args.size())); }
    virtual void map(Tile& out, Fn fn, std::span<const Arg> args) = 0;
    // max_j scale·X[i][j] or Σ_j X[i][j], one value per row (a rows x 1 tile).
    virtual Tile reduce_rows(Reduce kind, const Tile& X, std::string_view label, double scale) = 0;
    Tile row_max(const Tile& X, double scale, std::string_view label) { return reduce_rows(Reduce::Max, X, label, scale); }
    Tile row_sum(const Tile& X, std::string_view label) { return reduce_rows(Reduce::Sum, X, label, 1.0); }
    // Elements beyond the sequence ends and, when causal, above the diagonal become -inf.
    virtual void mask(Tile& S, const MaskSpec& spec) = 0;
    // X rounded to the storage dtype (P before P·V: what a tensor-core kernel feeds).
    virtual void round_to_storage(Tile& X) = 0;

    // Split-K exchange: each warp holds a partial X (a max or a sum over its share);
    // they meet in shared memory, separated by barriers, and every warp gets the total.
    virtual void reduce_across_warps(Tile& X, Reduce kind) = 0;
    virtual void barrier() = 0;

    // The tile is now known by another name (the new running max becomes m_i): what traces print for
    // it from here on. Nothing moves; executors that do not print ignore it.
    virtual void rename(const Tile& /*tile*/, std::string_view /*label*/) {}

    // A loop's iterations first, first+1, ..., first+count-1 when they are alike: each does the same
    // operations on tiles of the same shapes, at positions that move by the same step from one
    // iteration to the next (a loop over K/V tiles between the causal diagonal and the ragged last
    // tile). Executors that compute run every iteration; the counting executor may run a few and
    // count the rest by multiplicity (exec/counting_executor.hpp). for_each_run splits a loop into
    // such runs.
    virtual void repeat(std::int64_t first, std::int64_t count, const std::function<void(std::int64_t)>& body) {
        for (std::int64_t i = first; i < first + count; ++i) body(i);
    }
    // A loop's iterations when they grow (a staircase, as KernelDesc::runs_grow for blocks): each does what
    // the one before did on tiles moved by the same step, its own loops of alike iterations each running
    // the same number of iterations more, or fewer (FlashAttention-1's causal outer loop: K/V tile j meets
    // one Q tile less than K/V tile j - 1), or each unit of `period` iterations does what the unit before it
    // did, grown so. The counting executor may run a few and make the rest from them.
    virtual void repeat_growing(std::int64_t first, std::int64_t count, std::int64_t /*period*/,
                                const std::function<void(std::int64_t)>& body) {
        for (std::int64_t i = first; i < first + count; ++i) body(i);
    }

    // Tile bookkeeping (called by Tile's destructor).
    virtual void release(int tile_id) = 0;
};

inline Tile& Tile::operator=(Tile&& o) noexcept {
    if (this != &o) {
        if (owner_) owner_->release(id_);
        owner_ = o.owner_; id_ = o.id_; rows_ = o.rows_; cols_ = o.cols_;
        elem_bytes_ = o.elem_bytes_; space_ = o.space_; statistic_ = o.statistic_;
        o.owner_ = nullptr; o.id_ = -1;
    }
    return *this;
}
inline Tile::~Tile() {
    if (owner_) owner_->release(id_);
}

// One kernel launch: blocks_per_head thread blocks for each of `heads` heads,
// launched in order (block index fastest, then head) as CUDA would for
// grid = (blocks_per_head, heads). How its instructions run on a GPU is not the
// program's business: the counting executor asks a model of the kernel
// (kernels/kernel_execution.hpp) by the kernel's name.
struct KernelDesc {
    std::string name;          // e.g. "fa2_forward"
    std::string role;          // one line: what this kernel does
    std::int64_t blocks_per_head = 1;
    std::int64_t heads = 1;
    int warps = 4;
    // Runs of alike blocks (as Block::repeat's iterations: the same work on tiles at positions that move
    // by the same step from one block to the next), by the block index each starts at, ascending from 0;
    // a run ends where the next begins. Empty: none declared, every block is its own run.
    std::vector<std::int64_t> run_starts = {};
    // The blocks of each run grow instead (a staircase): each does what the block before it did on tiles
    // moved by the same step, its loops of alike iterations (Block::repeat) each running the same number of
    // iterations more, or fewer (causal attention: Q tile i visits one K/V tile more than Q tile i - 1).
    // A growing run is checked on four blocks in a row, as an alike run on three.
    bool runs_grow = false;
    // Blocks in a grid of rows (a GEMM's output tiles: block t is in row t / row_blocks): run_starts then
    // mark the runs within a row, the same in every row, and row_run_starts the runs of alike rows (the
    // same work on tiles that move by a fixed step from one row to the next). 0: one row of blocks.
    std::int64_t row_blocks = 0;
    std::vector<std::int64_t> row_run_starts = {};
    std::int64_t grid() const { return blocks_per_head * heads; }
};

// Runs body(i) for i in [begin, end) as runs of alike iterations (Block::repeat) that start at begin and
// at each cut inside (begin, end); cuts outside are ignored, so callers may pass every index where the
// work could change (the first tile that crosses the causal diagonal, the ragged last tile).
inline void for_each_run(Block& b, std::int64_t begin, std::int64_t end, const std::vector<std::int64_t>& cuts,
                         const std::function<void(std::int64_t)>& body) {
    std::vector<std::int64_t> starts{begin};
    for (const std::int64_t c : cuts)
        if (c > begin && c < end) starts.push_back(c);
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    for (std::size_t r = 0; r < starts.size(); ++r) {
        const std::int64_t stop = r + 1 < starts.size() ? starts[r + 1] : end;
        if (stop > starts[r]) b.repeat(starts[r], stop - starts[r], body);
    }
}

// The starts of the runs of alike blocks in [0, blocks) cut at `cuts` (KernelDesc::run_starts).
inline std::vector<std::int64_t> run_starts(std::int64_t blocks, const std::vector<std::int64_t>& cuts) {
    std::vector<std::int64_t> starts{0};
    for (const std::int64_t c : cuts)
        if (c > 0 && c < blocks) starts.push_back(c);
    std::sort(starts.begin(), starts.end());
    starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
    return starts;
}

using BlockBody = std::function<void(Block& block, std::int64_t head, std::int64_t index)>;

class Executor {
public:
    virtual ~Executor() = default;
    // Makes a global tensor known to the run and returns it with its id (its position in the
    // declaration order); the functional executor binds or allocates its data. Declare every tensor
    // before the kernel that uses it. A name declared before (a tensor an earlier program of the same
    // run wrote, such as the forward's O for the backward) is that tensor, with its first tile grid (or the
    // grid given by use_grids); declaring it with another shape is a program bug (std::logic_error).
    GlobalTensor declare(GlobalTensor tensor) {
        for (const GlobalTensor& t : tensors_) {
            if (t.name != tensor.name) continue;
            if (t.heads != tensor.heads || t.rows != tensor.rows || t.cols != tensor.cols ||
                t.elem_bytes != tensor.elem_bytes || t.row_statistic != tensor.row_statistic)
                throw std::logic_error("tensor " + t.name + " declared again with another shape");
            return t;
        }
        for (const TensorGrid& g : grids_)
            if (g.name == tensor.name) {
                tensor.region_rows = g.rows;
                tensor.region_cols = g.cols;
            }
        tensor.id = static_cast<TensorId>(tensors_.size());
        tensors_.push_back(tensor);
        on_declare(tensors_.back());
        return tensor;
    }
    // The tensors declared so far, in order (index = id).
    const std::vector<GlobalTensor>& tensors() const { return tensors_; }
    // Tile grids for tensors not yet declared, by name: the programs of a run that access a tensor on
    // different grids (the forward's 128-row Q tiles, the backward's 64-row ones) share the finer one.
    struct TensorGrid {
        std::string name;
        std::int64_t rows = 1, cols = 1;
    };
    void use_grids(std::vector<TensorGrid> grids) { grids_ = std::move(grids); }
    virtual void launch(const KernelDesc& kernel, const BlockBody& body) = 0;

protected:
    virtual void on_declare(const GlobalTensor&) {}

private:
    std::vector<GlobalTensor> tensors_;
    std::vector<TensorGrid> grids_;
};

}  // namespace fasim
