// The counting executor: runs a tile program with shapes only and counts every
// byte at every level, every FLOP and every barrier. This is what fa-sim runs.
//
// Heads are identical and independent, so it runs the blocks of one head and
// multiplies by the number of heads; the L2 model accounts for the other heads'
// blocks that share the chip at the same time. Heads that read the same K/V head of a
// grouped problem are not independent in L2: they run together (exec/kv_head_units.hpp).
//
// Two paths give the same counts. By block: every block of the head runs, every
// iteration of every loop, each access goes to the L2 model as it is made (what the
// functional executor and the traces use). By class (the default): of a run of alike
// blocks (KernelDesc::run_starts) three run, and of a loop of alike iterations
// (Block::repeat) three; their counts show what each further block or iteration adds,
// and their accesses, kept with their loops (exec/access_tree.hpp), are played into
// the L2 model wave by wave, which carries alike blocks, waves and iterations over
// without playing them one by one (machine/l2_loops.cpp). Its cost follows the number
// of such runs, not N or batch·heads.
#pragma once

#include <vector>

#include "exec/kernel_record.hpp"
#include "exec/kv_head_units.hpp"
#include "gpu/gpu_spec.hpp"
#include "kernels/kernel_execution.hpp"
#include "machine/l2_model.hpp"
#include "tile/tile_program.hpp"

namespace fasim {

enum class CountPath : std::uint8_t { by_class, by_block };

class CountingExecutor final : public Executor {
public:
    // registers_per_thread > 0: the compiled kernel's register count (ptxas -v, ncu), used for the
    // occupancy of every kernel that multiplies matrices instead of the estimate from its tiles;
    // launched_smem_bytes > 0 likewise the shared memory per block it launches with.
    // execution: how each kernel runs (kernels/kernel_execution.hpp); empty: mma.sync products and
    // the default lane grid for every kernel.
    explicit CountingExecutor(const GpuSpec& gpu, int registers_per_thread = 0, ExecutionModel execution = {},
                              std::int64_t launched_smem_bytes = 0, CountPath path = CountPath::by_class);
    ~CountingExecutor() override;

    void launch(const KernelDesc& kernel, const BlockBody& body) override;

    // A grouped-query problem (AttentionProblem::grouped): its batch_kv_heads() K/V heads. From now on a
    // kernel runs one K/V head's worth of its heads where they can share the L2 (heads_simulated) and
    // multiplies by the K/V heads. Call before the first launch.
    void share_kv_heads(std::int64_t batch_kv_heads) { units_ = KvHeadUnits(batch_kv_heads); }
    // The heads of `kernel` whose blocks run (the first ones): the most heads of one K/V head, a divisor of
    // its group, whose last starts while the first could still be running (fewer blocks apart than the GPU
    // holds of the kernel's warps at most); 1 for a kernel over K/V heads, or whose heads start far apart. Heads
    // further apart meet in L2 only by reuse, which is not modelled (each unit reads its K/V from DRAM),
    // and simulating them together would cost as many times more (standard attention's S = QK^T: a
    // head's (N/64)^2 blocks).
    std::int64_t heads_simulated(const KernelDesc& kernel) const;

    const std::vector<KernelRecord>& kernels() const { return kernels_; }
    // The records, moved out (a causal kernel's per-block work at N = 2^24 is tens of MB: not copied).
    std::vector<KernelRecord> take_kernels() { return std::move(kernels_); }

private:
    GpuSpec gpu_;
    int registers_per_thread_ = 0;
    ExecutionModel execution_;
    std::int64_t launched_smem_bytes_ = 0;
    CountPath path_ = CountPath::by_class;
    L2Model l2_;
    KvHeadUnits units_;
    std::vector<KernelRecord> kernels_;
};

}  // namespace fasim
