#include "exec/counting_executor.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"
#include "kernels/cuda_core_products.hpp"
#include "kernels/issue_costs.hpp"
#include "exec/access_tree.hpp"
#include "exec/op_costs.hpp"
#include "machine/sectors.hpp"

namespace fasim {

namespace {

constexpr int kAddressingRegisters = 32;  // indices, pointers, loop counters per thread
constexpr std::int64_t kExchangeRows = 16;  // rows of the split-K exchange buffer
constexpr std::size_t kMaxRecorded = std::size_t{1} << 16;  // first-block accesses kept before configuring
constexpr std::size_t kMaxDescribed = 4096;  // a lone block's top-level accesses and loops kept before playing them

struct TileInfo {
    std::int64_t rows = 0, cols = 0, elem_bytes = 0;
    Space space = Space::Registers;
    bool live = false;
    std::int64_t warps_holding_rows = 1;  // a product split by columns or by k leaves each row in every warp
    bool padded = false;                  // rows padded in shared memory (LaneGrid::padded_rows)
    // Loaded into registers by each thread for itself (KernelExecution::gather_warp_cols): counted
    // when a product shows which operand it is.
    std::optional<Region> gathered{};
    std::int64_t bytes() const { return rows * cols * elem_bytes; }
    std::int64_t footprint() const { return padded ? rows * padded_row_bytes(cols * elem_bytes) : bytes(); }
};

// What running part of a block adds to the counts: the block's work and the kernel's per-tensor traffic.
struct Counters {
    BlockWork work;
    std::vector<TensorBytes> hbm, l2;
    Count l2_read_requests = 0, l2_write_requests = 0, smem_read = 0, smem_write = 0;
    bool operator==(const Counters&) const = default;
};

// What `to` does more than `from`, of the work alike blocks and iterations add; none where their per-block
// prologue or epilogue differ (then the work does not grow by a fixed increment).
std::optional<BlockWork> work_increment(const BlockWork& from, const BlockWork& to) {
    if (to.prologue_bytes != from.prologue_bytes || to.epilogue_bytes != from.epilogue_bytes) return std::nullopt;
    BlockWork d = to;
    add(d, from, -1);
    d.prologue_bytes = d.epilogue_bytes = 0;
    return d;
}

// after - before (as counters grow, every field of the difference is what happened in between).
Counters difference(const Counters& after, const Counters& before) {
    Counters d = after;
    add(d.work, before.work, -1);
    for (std::size_t i = 0; i < d.hbm.size(); ++i) {
        d.hbm[i].read -= before.hbm[i].read;
        d.hbm[i].write -= before.hbm[i].write;
        d.l2[i].read -= before.l2[i].read;
        d.l2[i].write -= before.l2[i].write;
    }
    d.l2_read_requests -= before.l2_read_requests;
    d.l2_write_requests -= before.l2_write_requests;
    d.smem_read -= before.smem_read;
    d.smem_write -= before.smem_write;
    return d;
}

// The last four blocks (or units of a loop's iterations) of a staircase as they were described, and whether
// they grow alike (KernelDesc::runs_grow, Block::repeat_growing): the same accesses, each moving by one step,
// the same loops, each running a fixed number of iterations more (growing_iterations), and counts and work
// each growing by one increment. Given up on after kMostMisses windows that did not.
class StaircaseWindow {
public:
    struct Described {
        AccessList accesses;
        Counters counts;  // what it added (its work too, for a loop's units; a block's work apart)
        BlockWork work;
    };
    static constexpr int kMostMisses = 16;

    bool watching() const { return misses_ < kMostMisses; }
    std::size_t seen() const { return last_.size(); }  // of the last four
    // The next one; true when the last four grow alike.
    bool grows_with(Described next) {
        last_.push_back(std::move(next));
        if (last_.size() > 4) last_.pop_front();
        if (last_.size() < 4) return false;
        const Counters more = difference(last_[1].counts, last_[0].counts);
        const std::optional<BlockWork> more_work = work_increment(last_[0].work, last_[1].work);
        const bool grows = more_work && difference(last_[2].counts, last_[1].counts) == more &&
                           difference(last_[3].counts, last_[2].counts) == more &&
                           work_increment(last_[1].work, last_[2].work) == more_work &&
                           work_increment(last_[2].work, last_[3].work) == more_work &&
                           growing_iterations(last_[0].accesses, last_[1].accesses, last_[2].accesses, last_[3].accesses);
        if (!grows && ++misses_ >= kMostMisses) last_.clear();
        return grows;
    }
    // Once it grows: the last one, and what each further one adds to the one before.
    Described& last() { return last_.back(); }
    std::vector<AccessGrowth> step() const { return growth(last_[2].accesses, last_[3].accesses); }
    Counters more() const { return difference(last_[3].counts, last_[2].counts); }
    BlockWork more_work() const { return *work_increment(last_[2].work, last_[3].work); }

private:
    std::deque<Described> last_;  // oldest first
    int misses_ = 0;
};

// A thread block, counting; one object serves every block of a launch.
// Occupancy (and so which blocks share L2 at a time) is known only after the
// first block has shown its shared memory and registers, so that block's global
// accesses are recorded and replayed into the L2 model afterwards.
class CountingBlock final : public Block {
public:
    CountingBlock(int warps, const KernelExecution& execution, KernelRecord* record, L2Model* l2, KvHeadUnits* units)
        : units_(units), warps_(warps), lanes_(execution.lanes), gather_warp_cols_(execution.gather_warp_cols),
          warp_rows_(execution.instruction == MatrixInstruction::mma_sync ? execution.warp_rows : 0),
          key_groups_(warp_rows_ > 0 ? std::max<std::int64_t>(1, execution.key_groups) : 1),
          one_address_per_tile_(execution.one_address_per_tile), rec_(record), l2_(l2) {}

    BlockWork work;
    std::int64_t smem_peak = 0, reg_peak = 0;
    int row_blocks_per_warp = 1;  // most 16-row mma row blocks one warp works on (first block)
    int active_warps = 0;         // most warps with rows of a split-Q product (KernelExecution::warp_rows)

    void start_block(bool record_accesses) {
        work = BlockWork{};
        product_seen_ = false;
        loads_before_product_ = 0;
        recording_ = record_accesses;
    }
    // The class path: the block's accesses go into `list` (with its alike loops kept) instead of the
    // L2 model; repeat() runs three iterations of an alike loop and counts the others.
    void describe_into(AccessList* list) {
        describe_ = own_ = list;
        levels_ = 1;  // the block's own level
    }
    // Called when the block's own list grows long (a whole FA1 head is one block, its causal outer loop
    // unrolled): a block played alone may play what it has described so far and empty the list.
    std::function<void(AccessList&)> on_description_long;

    Counters counters() const {
        return {work, rec_->hbm.tensors, rec_->l2.tensors, rec_->l2_read_requests, rec_->l2_write_requests, rec_->smem_read,
                rec_->smem_write};
    }
    // Adds `times` more of what `d` counted (alike blocks or iterations that do not run).
    void add_counts(const Counters& d, std::int64_t times, bool with_work) {
        if (with_work) add(work, d.work, times);
        for (std::size_t i = 0; i < d.hbm.size(); ++i) {
            rec_->hbm.tensors[i].read += times * d.hbm[i].read;
            rec_->hbm.tensors[i].write += times * d.hbm[i].write;
            rec_->l2.tensors[i].read += times * d.l2[i].read;
            rec_->l2.tensors[i].write += times * d.l2[i].write;
        }
        rec_->l2_read_requests += times * d.l2_read_requests;
        rec_->l2_write_requests += times * d.l2_write_requests;
        rec_->smem_read += times * d.smem_read;
        rec_->smem_write += times * d.smem_write;
    }

    // Three iterations of a loop run; when they are alike the others are counted by multiplicity and the
    // loop is recorded as one. Iterations alike only a few at a time (k-steps over rows whose length is no
    // multiple of a 128-byte line meet the lines at places that recur) are tried 2, 4 ... at a time: units.
    void repeat(std::int64_t first, std::int64_t count, const std::function<void(std::int64_t)>& body) override {
        if (!describe_ || count < 3) {
            Block::repeat(first, count, body);
            return;
        }
        std::int64_t i = first;
        const std::int64_t end = first + count;
        for (std::int64_t period = 1; period <= kLongestPeriod && end - i >= 3 * period; period *= 2) {
            const auto [alike, done] = repeat_units(i, end, period, body);
            i += done;
            if (alike) break;
        }
        for (; i < end; ++i) body(i);
    }
    // The place where an access meets a 128-byte line recurs after at most 128 iterations.
    static constexpr std::int64_t kLongestPeriod = 128;
    // Units of `period` iterations from `first`: three run; when alike, every whole unit of [first, end) is
    // counted and recorded as one loop. Returns whether they were, and the iterations done.
    std::pair<bool, std::int64_t> repeat_units(std::int64_t first, std::int64_t end, std::int64_t period,
                                               const std::function<void(std::int64_t)>& body) {
        AccessList* outer = describe_;
        AccessList runs[3];
        Counters at[4];
        at[0] = counters();
        ++levels_;
        for (int u = 0; u < 3; ++u) {
            describe_ = &runs[u];
            for (std::int64_t q = 0; q < period; ++q) body(first + u * period + q);
            at[u + 1] = counters();
        }
        --levels_;
        describe_ = outer;
        const Counters d = difference(at[1], at[0]);
        if (d == difference(at[2], at[1]) && d == difference(at[3], at[2]) && alike_iterations(runs[0], runs[1], runs[2])) {
            const std::int64_t units = (end - first) / period;
            set_steps(runs[0], runs[1], levels_);
            add_counts(d, units - 3, true);
            AccessNode loop;
            loop.count = units;
            loop.body = std::move(runs[0]);
            outer->push_back(std::move(loop));
            described();
            return {true, units * period};
        }
        // Not alike: every iteration, as it is.
        for (AccessList& run : runs)
            for (AccessNode& n : run) outer->push_back(unnest(std::move(n), levels_));
        described();
        return {false, 3 * period};
    }
    // Iterations that grow (Block::repeat_growing): run a unit of `period` at a time, each recorded in the
    // block's own list as it was made, until four units in a row grow alike (growing_iterations, their
    // counts and work each by one increment); the rest of the whole units are made from the last of them
    // without running the body: counted by the increments and recorded grown. Loops that shrink are
    // followed while they run at least once.
    // Where four units of `period` do not grow alike, twice as many iterations are taken as a unit, up to
    // kMostUnitIterations: the tiles' places in 128-byte lines recur only every few units (FA1's backward
    // at d = 128 on the A100: 83-row Q tiles, whose 332 bytes of l and m start at a place in a line that
    // recurs every 32 tiles, so the requests of one unit to the next differ, and those of 32 to the next
    // 32 do not). A 4-byte row statistic recurs within 32 rows' worth of tiles, a wider row sooner. Larger
    // units are not tried: the window holds four units' accesses (FA1's backward on the H100 at d = 128,
    // 115-row tiles in units of 115, peaked at 588 MB at N = 2^20 when units of up to 64 x 115 were tried).
    // Nor where a unit's accesses, four of them kept in the window, would hold more than kMostUnitNodes
    // nodes (an access or a loop each). Larger units still hold more: FA1's causal backward on the T4 at
    // d = 256 grows in units of 32, 2.7x faster at N = 2^20, and peaks at 82 MB against 53 MB (the L2
    // model's tile states: the grown units' loops leave more of them stored one by one).
    static constexpr std::int64_t kMostUnitIterations = 64;
    static constexpr std::size_t kMostUnitNodes = std::size_t{1} << 17;
    static constexpr int kMissesBeforeDoubling = 4;
    static std::size_t nodes_in(const AccessList& list) {
        std::size_t n = list.size();
        for (const AccessNode& a : list)
            if (a.count > 0) n += nodes_in(a.body);
        return n;
    }
    void repeat_growing(std::int64_t first, std::int64_t count, std::int64_t period,
                        const std::function<void(std::int64_t)>& body) override {
        if (!describe_ || period < 1 || count < 5 * period) {
            Block::repeat_growing(first, count, period, body);
            return;
        }
        AccessList* outer = describe_;
        StaircaseWindow window;
        std::int64_t i = first, unit = period;
        const std::int64_t end = first + count;
        bool grows = false;
        int misses = 0;
        while (end - i >= unit && !grows) {
            AccessList made;
            describe_ = &made;
            const Counters before = counters();
            for (std::int64_t q = 0; q < unit; ++q) body(i++);
            const Counters after = counters();
            describe_ = outer;
            const std::size_t unit_nodes = nodes_in(made);
            if (window.watching()) grows = window.grows_with({made, difference(after, before), {}});
            for (AccessNode& n : made) outer->push_back(std::move(n));
            described();
            // Four units seen and still not alike: larger units, while enough iterations remain to see four.
            if (!grows && window.seen() >= 4 && ++misses >= kMissesBeforeDoubling && 2 * unit <= kMostUnitIterations &&
                2 * unit_nodes <= kMostUnitNodes && end - i >= 5 * 2 * unit) {
                unit *= 2;
                misses = 0;
                window = StaircaseWindow{};
            }
        }
        if (grows) {
            const std::vector<AccessGrowth> step = window.step();
            const Counters more = window.more();
            AccessList made = std::move(window.last().accesses);
            const std::int64_t n = std::min((end - i) / unit, growth_room(made, step));
            // Unit m = 1 ... n after the last described counts the last one's plus m increments.
            add_counts(window.last().counts, n, true);
            add_counts(more, n * (n + 1) / 2, true);
            for (std::int64_t m = 0; m < n; ++m) {
                grow(made, step, 1);
                outer->insert(outer->end(), made.begin(), made.end());
                described();
            }
            i += n * unit;
        }
        for (; i < end; ++i) body(i);
    }
    // Called when the recording grows large (a whole FA1 head is one block): by then the
    // block has shown its peaks, so the kernel is configured and recording stops.
    std::function<void()> on_recording_full;
    // The first block's accesses, in order, once the L2 model is configured.
    void replay_recorded() {
        for (const auto& [region, is_write] : recorded_) {
            const TensorId id = region.tensor->id;
            if (is_write) rec_->dram[id].write += l2_->write(region);
            else rec_->dram[id].read += l2_->read(region);
        }
        recorded_.clear();
        recorded_.shrink_to_fit();
    }

    Tile alloc(std::int64_t rows, std::int64_t cols, Space space, Fill, std::string_view) override {
        return make(rows, cols, 4, space, space == Space::Shared && cols > 1 && lanes_.padded_rows);
    }
    Tile alloc_statistic(std::int64_t rows, Space space, Fill, std::string_view) override {
        return make(rows, 1, 4, space, false, true);
    }

    Tile load(const Region& r, Space to, std::string_view) override {
        const GlobalTensor& t = *r.tensor;
        if (to == Space::Registers && gather_warp_cols_ > 0 && !t.row_statistic) {
            Tile tile = make(r.nrows, r.ncols, t.elem_bytes, Space::Registers);
            tiles_[static_cast<std::size_t>(tile.id())].gathered = r;
            return tile;
        }
        const std::int64_t bytes = r.bytes();
        global_read(r, bytes, l2_requests(r));
        if (!product_seen_) loads_before_product_ += bytes;
        if (to == Space::Shared) smem_write(bytes);
        if (to == Space::Registers) work.thread_instructions += issue_cost::register_load(bytes);
        else shared_instructions(copy_instructions(bytes) + (t.row_statistic ? 0 : issue_cost::tile_sync(warps_)));
        if (t.row_statistic) return make(r.ncols, 1, t.elem_bytes, to, false, true);
        const bool padded = to == Space::Shared && lanes_.pads(t.name);
        return make(r.nrows, r.ncols, t.elem_bytes, to, padded);
    }

    Tile stage(const Tile& X, Space to, std::int64_t elem_bytes, std::string_view) override {
        const std::int64_t bytes = X.elements() * elem_bytes;
        if (X.space() == Space::Shared) smem_read(X.bytes());
        if (to == Space::Shared) smem_write(bytes);
        work.thread_instructions += issue_cost::register_store(X.elements());
        return make(X.rows(), X.cols(), elem_bytes, to, to == Space::Shared && X.cols() > 1 && lanes_.padded_rows, X.statistic());
    }

    // The operand tiles of a product that its threads read each for themselves (ThreadGather): one
    // warp load covers `contiguous` consecutive elements of each storage row it touches, `warps` warps
    // each load every element, `threads` threads read each element in all. The SMs request every warp
    // load's sectors (L2 hits after the first: the L2 model sees the tile once), and the threads ask
    // for `threads` times its bytes.
    void count_gathered(TileInfo& t, std::int64_t contiguous, std::int64_t warps, std::int64_t threads) {
        if (!t.gathered) return;
        const Region& r = *t.gathered;
        const L2Requests per_warp = l2_requests(r, contiguous);
        global_read(r, threads * r.bytes(), {warps * per_warp.sector_bytes, warps * per_warp.requests}, contiguous);
        work.thread_instructions += issue_cost::register_load(threads * r.bytes());
        t.gathered.reset();
    }

    void store(const Tile& tile, const Region& r, StoreMode mode) override {
        if (tile.elements() != r.elements())
            throw std::logic_error("store: tile of " + std::to_string(tile.elements()) + " elements into a region of " +
                                   std::to_string(r.elements()));
        // Accumulating: the block reads what is there first. Atomic adds: the L2 reads the lines (from
        // DRAM when they are not resident) and adds; the SMs send the data, as for a store.
        if (mode == StoreMode::accumulate) global_read(r, r.bytes(), l2_requests(r));
        if (mode == StoreMode::atomic_add && rec_) l2_access(r, false);
        if (rec_) {
            const TensorId id = checked_id(r);
            const L2Requests asked = l2_requests(r);
            rec_->hbm[id].write += r.bytes();
            rec_->l2[id].write += asked.sector_bytes;
            rec_->l2_write_requests += asked.requests;
            l2_access(r, true);
            add_l2(asked);
        }
        if (tile.space() == Space::Shared) smem_read(tile.bytes());
        work.thread_instructions += issue_cost::register_store(tile.elements());
        if (product_seen_) work.epilogue_bytes += r.bytes();
    }

    void matmul(Tile& C, const Tile& A, const Tile& B, const Product& how) override {
        const bool transpose_b = how.transpose_b, accumulate = how.accumulate;
        const Split split = how.split;
        const std::int64_t m = how.transpose_a ? A.cols() : A.rows(), k = how.transpose_a ? A.rows() : A.cols();
        const std::int64_t n = transpose_b ? B.rows() : B.cols();
        const std::int64_t kb = transpose_b ? B.cols() : B.rows();
        if (kb != k || C.rows() != m || C.cols() != n)
            throw std::logic_error("matmul: shapes do not agree");
        if (gather_warp_cols_ > 0) {  // one output per thread, warps of (32 / warp_cols) x warp_cols threads
            const std::int64_t warp_rows = issue_cost::kLanes / gather_warp_cols_;
            // A[i][k] is read by the n threads of row i, in the warps that hold the row; a warp load at one k
            // covers an element of each of its rows: apart, or side by side when A is stored k x m.
            count_gathered(tiles_[static_cast<std::size_t>(A.id())], how.transpose_a ? std::min(m, warp_rows) : 1,
                           (n + gather_warp_cols_ - 1) / gather_warp_cols_, n);
            // B's element for (k, j) is read by the m threads of column j, one warp row of them per load;
            // the load covers warp_cols consecutive elements of a row of B, or one of each row of Bᵀ.
            count_gathered(tiles_[static_cast<std::size_t>(B.id())], transpose_b ? 1 : std::min(n, gather_warp_cols_),
                           (m + warp_rows - 1) / warp_rows, m);
        }
        // Operands staged k-major by transposing copies (the first when stored m x k, the second when stored n x k):
        // the copy charged a wavefront per 128 bytes; the bank conflicts cost the rest.
        if (lanes_.lane_tiled && lanes_.transposed_store_wavefronts > 1) {
            const std::int64_t extra = lanes_.transposed_store_wavefronts - 1;
            if (!how.transpose_a && A.space() == Space::Shared) work.smem_wavefronts += extra * cuda_core::plain_wavefronts(A.bytes());
            if (transpose_b && B.space() == Space::Shared) work.smem_wavefronts += extra * cuda_core::plain_wavefronts(B.bytes());
        }
        const std::int64_t flops = op_cost::matmul_flops(m, n, k);
        work.matmul_flops += flops;
        if (!product_seen_) work.prologue_bytes = loads_before_product_;
        product_seen_ = true;
        work.epilogue_bytes = 0;  // only what is stored after the last product
        if (how.recompute) work.recomputed_matmul_flops += flops;
        // Shared-memory reads: a warp reads the part of each operand its share needs (the data, as
        // mma fragments load it); on the CUDA cores every lane loads its own operands, which costs
        // the shared-memory pipe more wavefronts than the data fills, and computes whole micro-tiles
        // (kernels/cuda_core_products.hpp).
        const std::int64_t W = warps_;
        const Count smem_before = work.smem_bytes;
        const bool lane_tiled = lanes_.lane_tiled;
        if (A.space() == Space::Shared) smem_read(A.bytes() * (split == Split::Cols ? W : 1), lane_tiled);
        // Split-Q with fixed row bands: only the warps with rows load B's fragments (KernelExecution::warp_rows).
        const std::int64_t row_warps = split == Split::Rows ? warps_with_rows(m) : W;
        if (split == Split::Rows)
            active_warps = std::max(active_warps, static_cast<int>(std::min<std::int64_t>(W, row_warps * key_groups_)));
        if (B.space() == Space::Shared) smem_read(B.bytes() * (split == Split::Rows ? row_warps : 1), lane_tiled);
        if (lane_tiled) {
            cuda_core::WarpProduct share{split == Split::Rows ? (m + W - 1) / W : m,
                                         split == Split::Cols ? (n + W - 1) / W : n,
                                         split == Split::Inner ? (k + W - 1) / W : k};
            if (transpose_b) share.max_cols = lanes_.score_cols;  // scores in column passes
            work.smem_wavefronts += W * cuda_core::operand_wavefronts(share, lanes_, A.elem_bytes(), B.elem_bytes(),
                                                                      A.space() == Space::Shared,
                                                                      B.space() == Space::Shared);
            work.lane_matmul_flops += W * cuda_core::executed_flops(share, lanes_);
        } else {
            work.lane_matmul_flops += flops;
        }
        if (C.space() == Space::Shared) {
            if (accumulate) smem_read(C.bytes());
            smem_write(C.bytes());
        }
        // (This product's shared-memory bytes: a few tiles, far inside 64 bits.)
        // The tensor cores compute whole 16-row fragments: a warp's missing rows cost as much as its present ones.
        const std::int64_t issued_flops = split == Split::Rows ? op_cost::matmul_flops(executed_rows(m), n, k) : flops;
        work.thread_instructions += issue_cost::mma(issued_flops) + issue_cost::fragment_loads((work.smem_bytes - smem_before).to_int64());
        tiles_[static_cast<std::size_t>(C.id())].warps_holding_rows = split == Split::Rows ? 1 : W;
        // Independent 16-row mma blocks per warp: latency hiding inside one warp (runtime model).
        const std::int64_t rows_per_warp = split == Split::Rows ? (warp_rows_ > 0 ? warp_rows_ : (m + W - 1) / W) : m;
        row_blocks_per_warp = std::max(row_blocks_per_warp, static_cast<int>(std::max<std::int64_t>(1, rows_per_warp / 16)));
    }

    void mask(Tile& S, const MaskSpec&) override {
        elementwise(op_cost::mask(S.elements()), {&S}, &S, issue_cost::mask(executed_elements(S)));
    }
    Tile reduce_rows(Reduce kind, const Tile& X, std::string_view, double) override {
        const op_cost::Cost cost = kind == Reduce::Max ? op_cost::row_max(X.elements()) : op_cost::row_sum(X.elements());
        elementwise(cost, {&X}, nullptr, row_reduce_instructions(X));
        return make(X.rows(), 1, 4, Space::Registers, false, true);
    }
    using Block::map;
    void map(Tile& out, Fn fn, std::span<const Arg> args) override {
        check_map(out, fn, args);
        const std::int64_t rows = executed_rows(out);
        std::int64_t instructions = issue_cost::map_per_element(fn) *
                                    (out.statistic() ? rows * lanes_per_row(rows) : executed_elements(out));
        std::array<const Tile*, 3> operands{};  // at most three (fma, exp): no allocation on the hot path
        std::size_t count = 0;
        for (const Arg& a : args)
            if (a.tile && count < operands.size()) operands[count++] = a.tile;
        const std::span<const Tile* const> inputs(operands.data(), count);
        if (fn == Fn::div) {
            const Arg& divisor = args[1];
            const bool per_row_divisor = divisor.broadcast == Broadcast::rows || out.statistic();
            instructions += issue_cost::divide_reciprocals(
                !divisor.tile ? 0 : per_row_divisor ? rows * lanes_per_row(rows) : executed_elements(out));
        }
        elementwise(op_cost::map(fn, out.elements()), inputs, &out, instructions);
    }
    void round_to_storage(Tile& X) override { work.thread_instructions += issue_cost::round_to_storage(executed_elements(X)); }

    // Every warp writes its partial into shared memory and the block sums them. The
    // buffer holds kExchangeRows rows of every warp's partial and is reused row chunk
    // by row chunk: all of X crosses shared memory, but only that much space is held.
    void reduce_across_warps(Tile& X, Reduce) override {
        const std::int64_t W = warps_, traffic = W * X.bytes();
        const std::int64_t buffer = W * std::min(X.rows(), kExchangeRows) * X.cols() * 4;
        smem_peak = std::max(smem_peak, smem_live_ + buffer);
        smem_write(traffic);
        smem_read(traffic);
        const std::int64_t barriers = 2 * ((X.rows() + kExchangeRows - 1) / kExchangeRows);
        work.barriers += barriers;
        add_cost(op_cost::reduce_across_warps(X.elements(), warps_));
        work.thread_instructions += issue_cost::exchange(X.elements(), W, X.cols() == 1) + barriers * issue_cost::barrier(W);
    }
    void barrier() override {
        ++work.barriers;
        shared_instructions(issue_cost::barrier(warps_));
    }

    void release(int id) override {
        TileInfo& t = tiles_[static_cast<std::size_t>(id)];
        if (t.gathered) throw std::logic_error("a tile its threads gathered from " + t.gathered->tensor->name + " fed no product");
        if (t.space == Space::Shared) smem_live_ -= t.footprint();
        else reg_live_ -= t.bytes();
        t.live = false;
        free_.push_back(id);
    }

private:
    Tile make(std::int64_t rows, std::int64_t cols, std::int64_t elem_bytes, Space space, bool padded = false,
              bool statistic = false) {
        int id;
        if (!free_.empty()) {
            id = free_.back();
            free_.pop_back();
        } else {
            id = static_cast<int>(tiles_.size());
            tiles_.emplace_back();
        }
        TileInfo& t = tiles_[static_cast<std::size_t>(id)];
        t = TileInfo{rows, cols, elem_bytes, space, true};
        t.padded = padded;
        if (space == Space::Shared) smem_peak = std::max(smem_peak, smem_live_ += t.footprint());
        else reg_peak = std::max(reg_peak, reg_live_ += t.bytes());
        return Tile(this, id, rows, cols, elem_bytes, space, statistic);
    }
    void record(const Region& r, bool is_write) {
        recorded_.emplace_back(r, is_write);
        if (recorded_.size() >= kMaxRecorded && on_recording_full) {
            on_recording_full();  // configures the L2 model and replays what was recorded
            recording_ = false;
        }
    }
    // Bytes moved, and the wavefronts they take: plain 4-byte-word accesses, unless a product's
    // lanes load their operands themselves (counted by the product).
    void smem_read(std::int64_t bytes, bool wavefronts_counted_elsewhere = false) {
        work.smem_bytes += bytes;
        if (!wavefronts_counted_elsewhere) work.smem_wavefronts += cuda_core::plain_wavefronts(bytes);
        if (rec_) rec_->smem_read += bytes;
    }
    void smem_write(std::int64_t bytes) {
        work.smem_bytes += bytes;
        work.smem_wavefronts += cuda_core::plain_wavefronts(bytes);
        if (rec_) rec_->smem_write += bytes;
    }
    // A global read: `bytes` as the program asks for them, `asked` of L2 by the SMs; the L2 model
    // sees the region once (what reaches DRAM).
    void global_read(const Region& r, std::int64_t bytes, const L2Requests& asked, std::int64_t contiguous = 0) {
        if (!rec_) return;
        const TensorId id = checked_id(r);
        rec_->hbm[id].read += bytes;
        rec_->l2[id].read += asked.sector_bytes;
        rec_->l2_read_requests += asked.requests;
        l2_access(r, false, contiguous);
        add_l2(asked);
    }
    // An access reaches the L2 model: described (class path), recorded until the kernel is configured
    // (the first block, by-block path), or played now.
    void l2_access(const Region& unfolded, bool write, std::int64_t contiguous = 0) {
        const Region r = units_->folded(unfolded);  // a grouped problem's heads as the L2 model tracks them
        if (describe_) {
            AccessNode n;
            n.region = r;
            n.write = write;
            n.contiguous = contiguous;
            n.steps.resize(levels_);
            describe_->push_back(std::move(n));
            described();
        } else if (recording_) {
            record(r, write);
        } else if (write) {
            rec_->dram[checked_id(r)].write += l2_->write(r);
        } else {
            rec_->dram[checked_id(r)].read += l2_->read(r);
        }
    }
    // A node was added to the list being described: a long list of the block's own is handed on.
    void described() {
        if (describe_ == own_ && on_description_long && own_->size() >= kMaxDescribed) on_description_long(*own_);
    }
    // A node of an unrolled loop at `level`: every access under it loses that level's step.
    static AccessNode unnest(AccessNode n, std::size_t level) {
        if (n.count > 0) {
            for (AccessNode& c : n.body) c = unnest(std::move(c), level);
        } else if (n.steps.size() > level) {
            n.steps.erase(n.steps.begin() + static_cast<std::ptrdiff_t>(level));
        }
        return n;
    }
    // The tensor's id, once it is known to be one this launch counts (declared before the kernel).
    TensorId checked_id(const Region& r) const {
        const TensorId id = r.tensor->id;
        if (id < 0 || static_cast<std::size_t>(id) >= rec_->hbm.tensors.size() || rec_->hbm[id].name != r.tensor->name)
            throw std::logic_error("tile program: tensor " + r.tensor->name + " was not declared before kernel " + rec_->desc.name);
        return id;
    }
    void add_l2(const L2Requests& asked) {
        work.l2_bytes += asked.sector_bytes;
        work.l2_requests += asked.requests;
    }
    void shared_instructions(std::int64_t n) {
        work.thread_instructions += n;
        work.shared_thread_instructions += n;
    }
    void add_cost(op_cost::Cost c) {
        work.nonmatmul_flops += c.flops;
        work.sfu_ops += c.sfu;
    }
    std::int64_t threads() const { return 32 * static_cast<std::int64_t>(warps_); }
    std::int64_t copy_instructions(std::int64_t bytes) const {
        return one_address_per_tile_ ? issue_cost::async_copy_one_address_per_tile(bytes, warps_) : issue_cost::async_copy(bytes);
    }
    std::int64_t lanes_per_row(std::int64_t rows) const { return issue_cost::lanes_per_row(rows, threads()); }
    std::int64_t row_reduce_instructions(const Tile& S) const {
        return issue_cost::row_reduce(executed_elements(S), executed_rows(S), tiles_[static_cast<std::size_t>(S.id())].warps_holding_rows);
    }
    // Split-Q kernels whose warps own fixed bands of warp_rows_ query rows (KernelExecution::warp_rows):
    // the warps a product of m rows keeps busy, and the rows they compute, whole bands (a one-row Q tile:
    // one warp, 16 rows). Otherwise every warp, and the rows themselves.
    std::int64_t warps_with_rows(std::int64_t m) const {
        return warp_rows_ > 0 ? std::min<std::int64_t>(warps_, (m + warp_rows_ - 1) / warp_rows_) : warps_;
    }
    std::int64_t executed_rows(std::int64_t m) const {
        return warp_rows_ > 0 ? std::max(m, warps_with_rows(m) * warp_rows_) : m;
    }
    // A register tile of query rows (S, P, O and their statistics) is worked on in whole bands too.
    std::int64_t executed_rows(const Tile& t) const { return t.space() == Space::Registers ? executed_rows(t.rows()) : t.rows(); }
    std::int64_t executed_elements(const Tile& t) const { return executed_rows(t) * t.cols(); }
    // Operands in shared memory are read, a result in shared memory is written.
    void elementwise(op_cost::Cost c, std::initializer_list<const Tile*> inputs, const Tile* output,
                     std::int64_t thread_instructions) {
        elementwise(c, std::span<const Tile* const>(inputs.begin(), inputs.size()), output, thread_instructions);
    }
    void elementwise(op_cost::Cost c, std::span<const Tile* const> inputs, const Tile* output, std::int64_t thread_instructions) {
        add_cost(c);
        work.thread_instructions += thread_instructions;
        for (const Tile* t : inputs)
            if (t->space() == Space::Shared) smem_read(t->bytes());
        if (output && output->space() == Space::Shared) smem_write(output->bytes());
    }

    KvHeadUnits* units_;
    int warps_;
    LaneGrid lanes_;
    std::int64_t gather_warp_cols_ = 0;
    std::int64_t warp_rows_ = 0;
    std::int64_t key_groups_ = 1;  // KernelExecution::key_groups
    bool one_address_per_tile_ = false;  // KernelExecution::one_address_per_tile
    KernelRecord* rec_;
    L2Model* l2_;
    std::vector<TileInfo> tiles_;
    std::vector<int> free_;
    std::int64_t smem_live_ = 0, reg_live_ = 0;
    bool recording_ = false;
    // Until the block's first product its loads are its prologue, kept here and put in work at that product:
    // a block without products has none, and its alike iterations stay alike (work compares equal).
    bool product_seen_ = false;
    std::int64_t loads_before_product_ = 0;
    std::vector<std::pair<Region, bool>> recorded_;  // (region, is_write) of the first block
    AccessList* describe_ = nullptr;  // the class path's record of the block's accesses
    AccessList* own_ = nullptr;       // the block's own level of it
    std::size_t levels_ = 1;          // loops around the next access, the block's level included
};

}  // namespace

CountingExecutor::CountingExecutor(const GpuSpec& gpu, int registers_per_thread, ExecutionModel execution,
                                   std::int64_t launched_smem_bytes, CountPath path)
    : gpu_(gpu),
      registers_per_thread_(registers_per_thread),
      execution_(std::move(execution)),
      launched_smem_bytes_(launched_smem_bytes),
      path_(path),
      l2_(gpu.l2_bytes) {}

namespace {

// The runs of alike blocks a kernel declares, as [first, end) pairs; every block alone when it declares
// none (or declares them out of order: a program bug that costs time, not counts).
std::vector<std::pair<std::int64_t, std::int64_t>> block_runs(const KernelDesc& k) {
    std::vector<std::pair<std::int64_t, std::int64_t>> runs;
    const std::vector<std::int64_t>& s = k.run_starts;
    bool declared = !s.empty() && s.front() == 0;
    for (std::size_t i = 1; declared && i < s.size(); ++i) declared = s[i] > s[i - 1] && s[i] < k.blocks_per_head;
    if (!declared) {
        for (std::int64_t b = 0; b < k.blocks_per_head; ++b) runs.emplace_back(b, b + 1);
        return runs;
    }
    for (std::size_t i = 0; i < s.size(); ++i) runs.emplace_back(s[i], i + 1 < s.size() ? s[i + 1] : k.blocks_per_head);
    return runs;
}

// A row's work log with neighbouring entries of the same work joined: the three blocks described and the
// run counted after them are one entry when the run's blocks all do the same.
std::vector<std::pair<BlockWork, std::int64_t>> merge_alike(const std::vector<std::pair<BlockWork, std::int64_t>>& log) {
    std::vector<std::pair<BlockWork, std::int64_t>> merged;
    for (const auto& [w, times] : log) {
        if (!merged.empty() && merged.back().first == w) merged.back().second += times;
        else merged.emplace_back(w, times);
    }
    return merged;
}

}  // namespace
CountingExecutor::~CountingExecutor() = default;

namespace {

// A grouped problem's kernel as the executor runs it: one K/V head's `unit` heads as one head of unit times
// the blocks (launch order: a head's blocks, then the next head's), their runs declared head after head.
KernelDesc unit_of(const KernelDesc& k, std::int64_t unit) {
    if (unit <= 1) return k;
    KernelDesc u = k;
    u.blocks_per_head = k.blocks_per_head * unit;
    u.heads = k.heads / unit;
    auto repeated = [&](const std::vector<std::int64_t>& starts, std::int64_t per_head) {
        std::vector<std::int64_t> all;
        for (std::int64_t h = 0; h < unit && !starts.empty(); ++h)
            for (const std::int64_t s : starts) all.push_back(h * per_head + s);
        return all;
    };
    u.run_starts = repeated(k.run_starts, k.blocks_per_head);
    if (k.row_blocks > 1 && k.blocks_per_head % k.row_blocks == 0)
        u.row_run_starts = repeated(k.row_run_starts, k.blocks_per_head / k.row_blocks);
    return u;
}

}  // namespace

std::int64_t CountingExecutor::heads_simulated(const KernelDesc& kernel) const {
    const std::int64_t group = units_.heads_per_unit(kernel.heads);
    const std::int64_t resident_at_most =
        std::int64_t{gpu_.sm_count} * std::min(gpu_.max_blocks_per_sm, gpu_.max_warps_per_sm / std::max(1, kernel.warps));
    // The most heads of the group (a divisor, so that units tile the launch) whose last starts while the first
    // could still run.
    for (std::int64_t unit = group; unit > 1; --unit)
        if (group % unit == 0 && (unit - 1) * kernel.blocks_per_head < resident_at_most) return unit;
    return 1;
}

void CountingExecutor::launch(const KernelDesc& launched, const BlockBody& launched_body) {
    const std::int64_t unit_heads = heads_simulated(launched);
    const KernelDesc kernel = unit_of(launched, unit_heads);
    const std::int64_t head_blocks = launched.blocks_per_head;
    const BlockBody unit_body = [&](Block& b, std::int64_t, std::int64_t i) { launched_body(b, i / head_blocks, i % head_blocks); };
    const BlockBody& body = unit_heads > 1 ? unit_body : launched_body;
    KernelRecord rec;
    rec.desc = launched;
    rec.heads_simulated = unit_heads;
    for (const GlobalTensor& t : tensors()) {
        rec.hbm.tensors.push_back({t.name});
        rec.l2.tensors.push_back({t.name});
        rec.dram.tensors.push_back({t.name});
    }
    const int threads = kernel.warps * 32;
    rec.execution = execution_ ? execution_(launched) : KernelExecution{};
    CountingBlock block(kernel.warps, rec.execution, &rec, &l2_, &units_);

    // `times` blocks did block.work (noted in work_log too, where the class path follows a row).
    std::vector<std::pair<BlockWork, std::int64_t>>* work_log = nullptr;
    auto count_blocks = [&](const BlockWork& w, std::int64_t times) {
        rec.matmul_flops += times * w.matmul_flops;
        rec.recomputed_matmul_flops += times * w.recomputed_matmul_flops;
        rec.nonmatmul_flops += times * w.nonmatmul_flops;
        rec.sfu_ops += times * w.sfu_ops;
        rec.barriers += times * w.barriers;
        rec.smem_wavefronts += times * w.smem_wavefronts;
        rec.lane_matmul_flops += times * w.lane_matmul_flops;
        rec.warp_instructions += times * w.thread_instructions;  // divided by 32 once all blocks are in
    };
    auto finish_blocks = [&](std::int64_t times) {
        if (work_log) work_log->emplace_back(block.work, times);
        count_blocks(block.work, times);
        rec.block_work.add(block.work, times);
    };
    auto finish_block = [&] { finish_blocks(1); };

    // The first block shows the shared memory and registers a block holds at its peak;
    // they decide occupancy, and occupancy decides which blocks share L2 at a time.
    bool configured = false;
    auto configure = [&] {
        if (configured) return;
        configured = true;
        rec.smem_bytes_per_block = block.smem_peak;
        rec.register_bytes_per_block = block.reg_peak;
        if (rec.smem_bytes_per_block > gpu_.smem_per_block_bytes)
            throw usage_error("kernel '" + kernel.name + "' needs " + std::to_string(rec.smem_bytes_per_block) +
                                  " B of shared memory per block",
                              gpu_.name + " allows at most " + std::to_string(gpu_.smem_per_block_bytes) + " B per block",
                              "choose smaller tiles with --Br/--Bc, a smaller --d, or a 2-byte --dtype");
        const std::int64_t tile_regs = (rec.register_bytes_per_block / 4 + threads - 1) / threads;
        rec.register_spill = tile_regs + kAddressingRegisters > gpu_.max_registers_per_thread;
        rec.registers_per_thread =
            static_cast<int>(std::min<std::int64_t>(tile_regs + kAddressingRegisters, gpu_.max_registers_per_thread));
        rec.row_blocks_per_warp = block.row_blocks_per_warp;
        rec.active_warps = block.active_warps > 0 ? block.active_warps : kernel.warps;
        if (registers_per_thread_ > 0 && block.work.matmul_flops > 0) {  // the compiled kernel's own count
            rec.registers_per_thread = registers_per_thread_;
            rec.registers_given = true;
            rec.register_spill = false;
        }
        if (launched_smem_bytes_ > 0 && block.work.matmul_flops > 0)  // what the kernel launches with
            rec.smem_bytes_per_block = launched_smem_bytes_;
        rec.occupancy = compute_occupancy(gpu_, kernel.warps, rec.smem_bytes_per_block, rec.registers_per_thread);
        if (rec.occupancy.blocks_per_sm < 1)
            throw usage_error("kernel '" + kernel.name + "' cannot fit one block on an SM of " + gpu_.name,
                              "a block needs at most the SM's shared memory, registers and warps",
                              "choose smaller tiles with --Br/--Bc");
        if (path_ == CountPath::by_class) return;  // the accesses are played into L2 after all blocks
        l2_.begin_kernel(concurrent_blocks(gpu_, rec.occupancy), kernel.grid(), kernel.blocks_per_head);
        l2_.begin_block(0);
        block.replay_recorded();
    };

    if (path_ == CountPath::by_block) {
        block.on_recording_full = configure;
        block.start_block(/*record_accesses=*/true);
        body(block, 0, 0);
        finish_block();
        configure();
        block.on_recording_full = nullptr;
        for (std::int64_t i = 1; i < kernel.blocks_per_head; ++i) {
            l2_.begin_block(i);
            block.start_block(/*record_accesses=*/false);
            body(block, 0, i);
            finish_block();
        }
        l2_.end_kernel(kernel.heads);
        rec.blocks_run = kernel.blocks_per_head;
    } else {
        // Of each run of alike blocks, three run (their counts and accesses show what each block adds);
        // the others are counted by multiplicity and their accesses played as a loop. The accesses are
        // played into L2 in launch order as soon as a run (or a run of rows) is described, and then dropped:
        // a causal kernel has a run per Q tile, 2^17 of them at N = 2^24.
        std::vector<L2Model::Dram> before;
        std::int64_t slots = 0;
        auto play = [&](const auto& runs) {
            if (slots == 0) {  // the first block has run: occupancy, and so the blocks sharing L2, are known
                before = l2_.dram_by_tensor();
                slots = concurrent_blocks(gpu_, rec.occupancy);
                l2_.begin_kernel(slots, kernel.grid(), kernel.blocks_per_head);
            }
            replay(l2_, runs, slots);
        };
        // A block played alone (`alone`: no alike block is compared with it, and every block before it has
        // been played) plays its accesses in parts as they are described: FA1 with the mask is one block per
        // head whose record would otherwise grow with N. Its kernel is configured by then: the peaks the
        // block has shown decide occupancy, as on the by-block path.
        auto describe = [&](std::int64_t b, AccessList& into, bool alone = false) {
            ++rec.blocks_run;
            block.start_block(/*record_accesses=*/false);
            block.describe_into(&into);
            std::int64_t smem_seen = -1, regs_seen = -1;  // the peaks when configured early
            if (alone)
                block.on_description_long = [&](AccessList& list) {
                    if (!configured) {
                        smem_seen = block.smem_peak;
                        regs_seen = block.reg_peak;
                        configure();
                    }
                    play(std::vector<BlockRunAccesses>{{b, 1, std::move(list)}});
                    list.clear();
                };
            body(block, 0, b);
            block.on_description_long = nullptr;
            block.describe_into(nullptr);  // `into` may be dropped once played
            finish_block();
            configure();
            if (smem_seen >= 0 && (block.smem_peak != smem_seen || block.reg_peak != regs_seen))
                throw std::logic_error("kernel '" + kernel.name + "': its first block's shared memory or registers grew after its record " +
                                       "first reached " + std::to_string(kMaxDescribed) + " entries, when its occupancy was fixed");
        };
        // A run of alike blocks [first, end): three run, and when alike the rest are counted by multiplicity
        // and kept as one run. When not, the rest run one by one (`rest`), or are left to the caller. Returns
        // the blocks done.
        auto describe_run = [&](std::int64_t first, std::int64_t end, std::vector<BlockRunAccesses>& runs, bool play_now,
                                bool rest) {
            auto played = [&] {
                if (!play_now) return;
                play(runs);
                runs.clear();
            };
            const std::int64_t count = end - first;
            if (count >= 3) {
                AccessList blocks[3];
                Counters at[4];
                BlockWork works[3];
                at[0] = block.counters();
                for (int i = 0; i < 3; ++i) {
                    describe(first + i, blocks[i]);
                    works[i] = block.work;
                    at[i + 1] = block.counters();
                }
                for (Counters& c : at) c.work = BlockWork{};  // each block's own work is compared apart
                const Counters d = difference(at[1], at[0]);
                if (works[0] == works[1] && works[1] == works[2] && d == difference(at[2], at[1]) &&
                    d == difference(at[3], at[2]) && alike_iterations(blocks[0], blocks[1], blocks[2])) {
                    set_steps(blocks[0], blocks[1], 0);
                    block.add_counts(d, count - 3, false);
                    finish_blocks(count - 3);  // the same work as the three
                    runs.push_back({first, count, std::move(blocks[0])});
                    played();
                    return count;
                }
                for (int i = 0; i < 3; ++i) runs.push_back({first + i, 1, std::move(blocks[i])});
                played();
                if (!rest) return std::int64_t{3};
                first += 3;
            }
            for (std::int64_t b = first; b < end; ++b) {
                describe(b, runs.emplace_back(BlockRunAccesses{b, 1, {}}).block, play_now);
                played();
            }
            return count;
        };
        // A run whose blocks grow (KernelDesc::runs_grow): blocks are described and played one by one until
        // four in a row grow alike (growing_iterations, and their counts and work each by one increment);
        // the rest are made from the last of them, counted by the increments and played as made, without
        // running the tile program. Loops that shrink are followed while they run at least once; the blocks
        // after are described.
        auto describe_growing_run = [&](std::int64_t first, std::int64_t end) {
            StaircaseWindow window;
            std::vector<BlockRunAccesses> one(1);
            std::int64_t b = first;
            bool grows = false;
            while (b < end && !grows) {
                Counters at_start = block.counters();
                one[0] = {b, 1, {}};
                describe(b, one[0].block);
                if (window.watching()) {
                    Counters after = block.counters();
                    at_start.work = after.work = BlockWork{};
                    grows = window.grows_with({one[0].block, difference(after, at_start), block.work});
                }
                play(one);
                ++b;
            }
            if (grows) {
                const std::vector<AccessGrowth> step = window.step();
                const Counters more = window.more();
                const BlockWork more_work = window.more_work();
                StaircaseWindow::Described& last = window.last();
                one[0].block = std::move(last.accesses);
                const std::int64_t n = std::min(end - b, growth_room(one[0].block, step));
                // Block b + m - 1 (m = 1 ... n) counts the last described one's plus m increments.
                block.add_counts(last.counts, n, false);
                block.add_counts(more, n * (n + 1) / 2, false);
                count_blocks(last.work, n);
                count_blocks(more_work, n * (n + 1) / 2);
                BlockWork next = last.work;
                add(next, more_work, 1);
                rec.block_work.add_staircase(next, more_work, n);
                for (std::int64_t m = 0; m < n; ++m, ++b) {
                    grow(one[0].block, step, 1);
                    one[0].first = b;
                    play(one);
                }
            }
            for (; b < end; ++b) {
                one[0] = {b, 1, {}};
                describe(b, one[0].block);
                play(one);
            }
        };
        // With play_now, each run is played and dropped once described; otherwise `runs` keeps them.
        auto describe_runs = [&](const std::vector<std::pair<std::int64_t, std::int64_t>>& block_runs_in,
                                 std::vector<BlockRunAccesses>& runs, bool play_now) {
            for (const auto& [first, end] : block_runs_in) describe_run(first, end, runs, play_now, true);
        };
        // In launch order: runs of blocks, or runs of alike rows of a grid.
        std::vector<BlockRunAccesses> runs;  // described, not yet played
        // A kernel that declares no grid of rows is a grid of one-block rows: its runs of alike blocks are
        // runs of alike rows, so blocks that are alike only a few at a time (a row kernel's rows meeting
        // 128-byte lines at places that recur) are found as units too.
        const bool one_block_rows = kernel.row_blocks <= 1;
        const std::int64_t row_blocks = one_block_rows ? 1 : kernel.row_blocks;
        if (kernel.blocks_per_head % row_blocks != 0) {
            describe_runs(block_runs(kernel), runs, true);
        } else {
            // Three rows of a run of alike rows run (each as its runs of blocks); the others are counted by
            // multiplicity: each adds what the third added, the same blocks' work in the same order.
            const std::int64_t rows = kernel.blocks_per_head / row_blocks;
            KernelDesc row_desc = kernel;
            row_desc.blocks_per_head = row_blocks;
            if (one_block_rows) row_desc.run_starts = {0};
            const std::vector<std::pair<std::int64_t, std::int64_t>> in_row = block_runs(row_desc);
            auto row_runs = [&](std::int64_t r) {
                std::vector<std::pair<std::int64_t, std::int64_t>> shifted = in_row;
                for (auto& [first, end] : shifted) {
                    first += r * row_blocks;
                    end += r * row_blocks;
                }
                return shifted;
            };
            KernelDesc rows_desc = kernel;
            rows_desc.blocks_per_head = rows;
            rows_desc.run_starts = one_block_rows ? kernel.run_starts : kernel.row_run_starts;
            // Rows `period` at a time from `first` (each unit the runs of `period` rows): three units run;
            // when they are alike the rest of [first, r1) is counted by multiplicity and played as a run of
            // alike units. Returns the rows done: all whole units when alike, the three otherwise.
            auto units_from = [&](std::int64_t first, std::int64_t r1, std::int64_t period) -> std::pair<bool, std::int64_t> {
                auto unit_runs = [&](std::int64_t u) {
                    std::vector<std::pair<std::int64_t, std::int64_t>> all;
                    for (std::int64_t q = 0; q < period; ++q) {
                        const auto one = row_runs(first + u * period + q);
                        all.insert(all.end(), one.begin(), one.end());
                    }
                    return all;
                };
                std::vector<BlockRunAccesses> three[3];
                std::vector<std::pair<BlockWork, std::int64_t>> works[3];
                Counters at[4];
                at[0] = block.counters();
                for (int i = 0; i < 3; ++i) {
                    work_log = &works[i];
                    describe_runs(unit_runs(i), three[i], false);
                    work_log = nullptr;
                    at[i + 1] = block.counters();
                }
                for (Counters& c : at) c.work = BlockWork{};
                const Counters d = difference(at[1], at[0]);
                bool alike = works[0] == works[1] && works[1] == works[2] && d == difference(at[2], at[1]) &&
                             d == difference(at[3], at[2]) && three[0].size() == three[1].size() && three[0].size() == three[2].size();
                for (std::size_t j = 0; alike && j < three[0].size(); ++j)
                    alike = three[0][j].count == three[1][j].count && three[0][j].count == three[2][j].count &&
                            alike_iterations(three[0][j].block, three[1][j].block, three[2][j].block);
                if (!alike) {
                    for (const auto& unit : three) play(unit);
                    return {false, 3 * period};
                }
                const std::int64_t units = (r1 - first) / period;
                for (std::size_t j = 0; j < three[0].size(); ++j) set_row_steps(three[0][j].block, three[1][j].block);
                block.add_counts(d, units - 3, false);
                // The other units' blocks do the unit's work in the unit's order: one repeated stretch.
                const std::vector<std::pair<BlockWork, std::int64_t>> unit_work = merge_alike(works[0]);
                for (const auto& [w, times] : unit_work) count_blocks(w, times * (units - 3));
                rec.block_work.add_repeated(unit_work, units - 3);
                play(RowRunAccesses{0, units, period * row_blocks, std::move(three[0])});
                return {true, units * period};
            };
            // Rows one at a time are alike where their accesses meet 128-byte lines at the same places; an
            // element-wise row whose length is no multiple of a line starts elsewhere in its line than the
            // row before, and the places repeat after at most 128 rows. So rows that are not alike one at a
            // time are tried 2, 4, ... 128 at a time.
            constexpr std::int64_t kLongestRowPeriod = 128;
            // Units are played in groups that fill whole waves, and the first group starts where a unit
            // starts at a wave's first block: that needs the units to start at a multiple of
            // gcd(slots, blocks per unit). Rows before such a start run one at a time.
            auto align_units = [&](std::int64_t row, std::int64_t r1, std::int64_t period) {
                const std::int64_t g = std::gcd(concurrent_blocks(gpu_, rec.occupancy), period * row_blocks);
                for (; row < r1 && (row * row_blocks) % g != 0; ++row) describe_runs(row_runs(row), runs, true);
                return row;
            };
            for (const auto& [r0, r1] : block_runs(rows_desc)) {
                std::int64_t row = r0;
                if (one_block_rows && kernel.runs_grow) {  // a staircase
                    describe_growing_run(r0, r1);
                    continue;
                }
                // One-block rows alike one at a time are a run of blocks, played wave by wave from any block
                // (a group of rows would have to start on a wave's first block).
                if (one_block_rows) {
                    row += describe_run(r0, r1, runs, true, false);
                    if (row == r1) continue;
                }
                for (std::int64_t period = one_block_rows ? 2 : 1; period <= kLongestRowPeriod && r1 - row >= 3 * period; period *= 2) {
                    if (period > 1) row = align_units(row, r1, period);  // rows before are described: configured
                    if (r1 - row < 3 * period) break;
                    const auto [alike, done] = units_from(row, r1, period);
                    row += done;
                    if (alike) break;
                }
                for (; row < r1; ++row) describe_runs(row_runs(row), runs, true);
            }
        }
        block.describe_into(nullptr);
        l2_.end_kernel(kernel.heads);
        const std::vector<L2Model::Dram>& after = l2_.dram_by_tensor();
        for (std::size_t i = 0; i < after.size() && i < rec.dram.tensors.size(); ++i) {
            rec.dram.tensors[i].read = after[i].read - (i < before.size() ? before[i].read : 0);
            rec.dram.tensors[i].write = after[i].write - (i < before.size() ? before[i].write : 0);
        }
    }

    // Every head (every K/V head's unit of heads) does the same: scale the simulated one to all of them.
    const std::int64_t H = kernel.heads;
    rec.hbm = rec.hbm.scaled(H);
    rec.l2 = rec.l2.scaled(H);
    rec.dram = rec.dram.scaled(H);
    rec.smem_read *= H;
    rec.smem_write *= H;
    rec.smem_wavefronts *= H;
    rec.l2_read_requests *= H;
    rec.l2_write_requests *= H;
    rec.lane_matmul_flops *= H;
    rec.matmul_flops *= H;
    rec.recomputed_matmul_flops *= H;
    rec.nonmatmul_flops *= H;
    rec.sfu_ops *= H;
    rec.barriers *= H;
    rec.warp_instructions = rec.warp_instructions * H / issue_cost::kLanes;
    kernels_.push_back(std::move(rec));
}

}  // namespace fasim
