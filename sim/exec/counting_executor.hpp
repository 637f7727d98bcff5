// The counting executor: runs a tile program with shapes only and counts every
// byte at every level, every FLOP and every barrier. This is what fa-sim runs.
//
// Heads are identical and independent, so it runs the blocks of one head and
// multiplies by the number of heads; the L2 model accounts for the other heads'
// blocks that share the chip at the same time.
#pragma once

#include <vector>

#include "exec/kernel_record.hpp"
#include "gpu/gpu_spec.hpp"
#include "kernels/kernel_execution.hpp"
#include "machine/l2_model.hpp"
#include "tile/tile_program.hpp"

namespace fasim {

class CountingExecutor final : public Executor {
public:
    // registers_per_thread > 0: the compiled kernel's register count (ptxas -v, ncu), used for the
    // occupancy of every kernel that multiplies matrices instead of the estimate from its tiles;
    // launched_smem_bytes > 0 likewise the shared memory per block it launches with.
    // execution: how each kernel runs (kernels/kernel_execution.hpp); empty: mma.sync products and
    // the default lane grid for every kernel.
    explicit CountingExecutor(const GpuSpec& gpu, int registers_per_thread = 0, ExecutionModel execution = {},
                              std::int64_t launched_smem_bytes = 0);
    ~CountingExecutor() override;

    void launch(const KernelDesc& kernel, const BlockBody& body) override;

    const std::vector<KernelRecord>& kernels() const { return kernels_; }

private:
    GpuSpec gpu_;
    int registers_per_thread_ = 0;
    ExecutionModel execution_;
    std::int64_t launched_smem_bytes_ = 0;
    L2Model l2_;
    std::vector<KernelRecord> kernels_;
};

}  // namespace fasim
