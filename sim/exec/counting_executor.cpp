#include "exec/counting_executor.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "common/errors.hpp"
#include "kernels/cuda_core_products.hpp"
#include "kernels/issue_costs.hpp"
#include "exec/op_costs.hpp"
#include "machine/sectors.hpp"

namespace fasim {

namespace {

constexpr int kAddressingRegisters = 32;  // indices, pointers, loop counters per thread
constexpr std::int64_t kExchangeRows = 16;  // rows of the split-K exchange buffer
constexpr std::size_t kMaxRecorded = std::size_t{1} << 16;  // first-block accesses kept before configuring

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

// A thread block, counting; one object serves every block of a launch.
// Occupancy (and so which blocks share L2 at a time) is known only after the
// first block has shown its shared memory and registers, so that block's global
// accesses are recorded and replayed into the L2 model afterwards.
class CountingBlock final : public Block {
public:
    CountingBlock(int warps, const KernelExecution& execution, KernelRecord* record, L2Model* l2)
        : warps_(warps), lanes_(execution.lanes), gather_warp_cols_(execution.gather_warp_cols), rec_(record), l2_(l2) {}

    BlockWork work;
    std::int64_t smem_peak = 0, reg_peak = 0;
    int row_blocks_per_warp = 1;  // most 16-row mma row blocks one warp works on (first block)

    void start_block(bool record_accesses) {
        work = BlockWork{};
        recording_ = record_accesses;
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
        if (to == Space::Shared) smem_write(bytes);
        if (to == Space::Registers) work.thread_instructions += issue_cost::register_load(bytes);
        else work.thread_instructions += issue_cost::async_copy(bytes) + (t.row_statistic ? 0 : issue_cost::tile_sync(warps_));
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
        global_read(r, threads * r.bytes(), {warps * per_warp.sector_bytes, warps * per_warp.requests});
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
        if (mode == StoreMode::atomic_add && rec_) {
            const std::int64_t fetched = recording_ ? 0 : l2_->read(r);
            if (recording_) record(r, false);
            else rec_->dram[checked_id(r)].read += fetched;
        }
        if (rec_) {
            const TensorId id = checked_id(r);
            const L2Requests asked = l2_requests(r);
            rec_->hbm[id].write += r.bytes();
            rec_->l2[id].write += asked.sector_bytes;
            rec_->l2_write_requests += asked.requests;
            if (recording_) record(r, true);
            else rec_->dram[id].write += l2_->write(r);
            add_l2(asked);
        }
        if (tile.space() == Space::Shared) smem_read(tile.bytes());
        work.thread_instructions += issue_cost::register_store(tile.elements());
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
        if (how.recompute) work.recomputed_matmul_flops += flops;
        // Shared-memory reads: a warp reads the part of each operand its share needs (the data, as
        // mma fragments load it); on the CUDA cores every lane loads its own operands, which costs
        // the shared-memory pipe more wavefronts than the data fills, and computes whole micro-tiles
        // (kernels/cuda_core_products.hpp).
        const std::int64_t W = warps_;
        const Count smem_before = work.smem_bytes;
        const bool lane_tiled = lanes_.lane_tiled;
        if (A.space() == Space::Shared) smem_read(A.bytes() * (split == Split::Cols ? W : 1), lane_tiled);
        if (B.space() == Space::Shared) smem_read(B.bytes() * (split == Split::Rows ? W : 1), lane_tiled);
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
        work.thread_instructions += issue_cost::mma(flops) + issue_cost::fragment_loads((work.smem_bytes - smem_before).to_int64());
        tiles_[static_cast<std::size_t>(C.id())].warps_holding_rows = split == Split::Rows ? 1 : W;
        // Independent 16-row mma blocks per warp: latency hiding inside one warp (runtime model).
        const std::int64_t rows_per_warp = split == Split::Rows ? (m + W - 1) / W : m;
        row_blocks_per_warp = std::max(row_blocks_per_warp, static_cast<int>(std::max<std::int64_t>(1, rows_per_warp / 16)));
    }

    void mask(Tile& S, const MaskSpec&) override {
        elementwise(op_cost::mask(S.elements()), {&S}, &S, issue_cost::mask(S.elements()));
    }
    Tile reduce_rows(Reduce kind, const Tile& X, std::string_view, double) override {
        const op_cost::Cost cost = kind == Reduce::Max ? op_cost::row_max(X.elements()) : op_cost::row_sum(X.elements());
        elementwise(cost, {&X}, nullptr, row_reduce_instructions(X));
        return make(X.rows(), 1, 4, Space::Registers, false, true);
    }
    using Block::map;
    void map(Tile& out, Fn fn, std::span<const Arg> args) override {
        check_map(out, fn, args);
        std::int64_t instructions = issue_cost::map_per_element(fn) *
                                    (out.statistic() ? out.rows() * lanes_per_row(out) : out.elements());
        std::vector<const Tile*> inputs;
        for (const Arg& a : args)
            if (a.tile) inputs.push_back(a.tile);
        if (fn == Fn::div) {
            const Arg& divisor = args[1];
            const bool per_row_divisor = divisor.broadcast == Broadcast::rows || out.statistic();
            instructions += issue_cost::divide_reciprocals(
                !divisor.tile ? 0 : per_row_divisor ? out.rows() * lanes_per_row(out) : out.elements());
        }
        elementwise(op_cost::map(fn, out.elements()), inputs, &out, instructions);
    }
    void round_to_storage(Tile& X) override { work.thread_instructions += issue_cost::round_to_storage(X.elements()); }

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
        work.thread_instructions += issue_cost::barrier(warps_);
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
    void global_read(const Region& r, std::int64_t bytes, const L2Requests& asked) {
        if (!rec_) return;
        const TensorId id = checked_id(r);
        rec_->hbm[id].read += bytes;
        rec_->l2[id].read += asked.sector_bytes;
        rec_->l2_read_requests += asked.requests;
        if (recording_) record(r, false);
        else rec_->dram[id].read += l2_->read(r);
        add_l2(asked);
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
    void add_cost(op_cost::Cost c) {
        work.nonmatmul_flops += c.flops;
        work.sfu_ops += c.sfu;
    }
    std::int64_t threads() const { return 32 * static_cast<std::int64_t>(warps_); }
    std::int64_t lanes_per_row(const Tile& t) const { return issue_cost::lanes_per_row(t.rows(), threads()); }
    std::int64_t row_reduce_instructions(const Tile& S) const {
        return issue_cost::row_reduce(S.elements(), S.rows(), tiles_[static_cast<std::size_t>(S.id())].warps_holding_rows);
    }
    // Operands in shared memory are read, a result in shared memory is written.
    void elementwise(op_cost::Cost c, std::initializer_list<const Tile*> inputs, const Tile* output,
                     std::int64_t thread_instructions) {
        elementwise(c, std::vector<const Tile*>(inputs), output, thread_instructions);
    }
    void elementwise(op_cost::Cost c, const std::vector<const Tile*>& inputs, const Tile* output,
                     std::int64_t thread_instructions) {
        add_cost(c);
        work.thread_instructions += thread_instructions;
        for (const Tile* t : inputs)
            if (t->space() == Space::Shared) smem_read(t->bytes());
        if (output && output->space() == Space::Shared) smem_write(output->bytes());
    }

    int warps_;
    LaneGrid lanes_;
    std::int64_t gather_warp_cols_ = 0;
    KernelRecord* rec_;
    L2Model* l2_;
    std::vector<TileInfo> tiles_;
    std::vector<int> free_;
    std::int64_t smem_live_ = 0, reg_live_ = 0;
    bool recording_ = false;
    std::vector<std::pair<Region, bool>> recorded_;  // (region, is_write) of the first block
};

}  // namespace

CountingExecutor::CountingExecutor(const GpuSpec& gpu, int registers_per_thread, ExecutionModel execution,
                                   std::int64_t launched_smem_bytes)
    : gpu_(gpu),
      registers_per_thread_(registers_per_thread),
      execution_(std::move(execution)),
      launched_smem_bytes_(launched_smem_bytes),
      l2_(gpu.l2_bytes) {}
CountingExecutor::~CountingExecutor() = default;

void CountingExecutor::launch(const KernelDesc& kernel, const BlockBody& body) {
    KernelRecord rec;
    rec.desc = kernel;
    for (const GlobalTensor& t : tensors()) {
        rec.hbm.tensors.push_back({t.name});
        rec.l2.tensors.push_back({t.name});
        rec.dram.tensors.push_back({t.name});
    }
    const int threads = kernel.warps * 32;
    rec.execution = execution_ ? execution_(kernel) : KernelExecution{};
    CountingBlock block(kernel.warps, rec.execution, &rec, &l2_);

    auto finish_block = [&] {
        rec.matmul_flops += block.work.matmul_flops;
        rec.recomputed_matmul_flops += block.work.recomputed_matmul_flops;
        rec.nonmatmul_flops += block.work.nonmatmul_flops;
        rec.sfu_ops += block.work.sfu_ops;
        rec.barriers += block.work.barriers;
        rec.smem_wavefronts += block.work.smem_wavefronts;
        rec.lane_matmul_flops += block.work.lane_matmul_flops;
        rec.warp_instructions += block.work.thread_instructions;  // divided by 32 once all blocks are in
        if (!rec.block_work.empty() && rec.block_work.back().first == block.work) ++rec.block_work.back().second;
        else rec.block_work.emplace_back(block.work, 1);
    };

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
        l2_.begin_kernel(concurrent_blocks(gpu_, rec.occupancy), kernel.grid(), kernel.blocks_per_head);
        l2_.begin_block(0);
        block.replay_recorded();
    };
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

    // Every head does the same: scale the one simulated head to all of them.
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
