// The functional executor: runs the same tile programs as the counting executor,
// but every tile carries real numbers (Eigen, fp32 arithmetic), rounded to the
// storage dtype where a GPU would round: when a tensor is stored, and when P is
// fed to the P·V product. Its output must equal exact attention.
//
// It counts by running the counting executor underneath: every operation is first
// handed to the counting block, then computed. So its traffic equals the counting
// executor's by construction (a test checks it for every algorithm).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "attention_reference.hpp"
#include "exec/counting_executor.hpp"
#include "exec/observer.hpp"
#include "precision.hpp"

namespace fasim {

// Input tensors by name ("Q", "K", "V", ...), one matrix per batch·head (K and V: per batch·K/V head),
// already representable in the problem's dtype; their rows, head after head, fill the declared tensor
// in memory order, as on a GPU. A declared tensor with an input of its name starts with those values; every
// other declared tensor starts as NaN, so an element the program forgets to write shows up in
// every check.
using FunctionalInputs = std::map<std::string, std::vector<reference::Matrix>, std::less<>>;

class FunctionalExecutor final : public Executor {
public:
    // execution: how the kernels run, for the counts (kernels/kernel_execution.hpp); empty: the default.
    FunctionalExecutor(const GpuSpec& gpu, const AttentionProblem& problem, FunctionalInputs inputs,
                       ExecutionModel execution = {});
    ~FunctionalExecutor() override;

    void set_observer(Observer* observer) { observer_ = observer; }

    void launch(const KernelDesc& kernel, const BlockBody& body) override;

    // A global tensor of one head after the run (row statistics as a 1×N row).
    const reference::MatrixF& tensor(std::string_view name, std::int64_t head) const;
    // The same memory read as `heads` matrices of rows x cols (FlashDecoding's O of packed query heads
    // read back per query head).
    std::vector<reference::MatrixF> tensor_as(std::string_view name, std::int64_t heads, std::int64_t rows,
                                              std::int64_t cols) const;
    bool has_tensor(std::string_view name) const;
    const std::vector<KernelRecord>& kernels() const { return counter_.kernels(); }

protected:
    void on_declare(const GlobalTensor& tensor) override;

private:
    friend class FunctionalBlock;
    AttentionProblem problem_;
    CountingExecutor counter_;
    Observer* observer_ = nullptr;
    FunctionalInputs inputs_;
    std::vector<std::vector<reference::MatrixF>> global_;  // by tensor id, one matrix per head
};

// The forward, then the backward of an algorithm, functionally, on inputs Q, K, V and the output
// gradient dO (Q and dO one matrix per batch·head, K and V one per batch·K/V head); the observer, if any,
// sees the backward's steps.
struct BackwardRun {
    // Float64 copies of the stored gradients: dQ per query head, dK and dV per K/V head.
    std::vector<reference::Matrix> dQ, dK, dV;
    std::vector<KernelRecord> kernels;          // the backward's kernels only
};
BackwardRun run_functional_backward(const Algorithm& forward, const Algorithm& backward, const AttentionProblem& p,
                                    const GpuSpec& gpu, const TileConfig& forward_tiles, const TileConfig& backward_tiles,
                                    const std::vector<reference::Matrix>& Q, const std::vector<reference::Matrix>& K,
                                    const std::vector<reference::Matrix>& V, const std::vector<reference::Matrix>& dO,
                                    Observer* observer = nullptr);

// Runs an algorithm functionally on the given inputs: Q one matrix per batch·head, K and V one per
// batch·K/V head.
struct FunctionalRun {
    std::vector<reference::Matrix> O;  // per head, float64 copies of the stored output
    std::vector<reference::Vector> lse;  // per head; empty for standard attention (it keeps none)
    std::vector<KernelRecord> kernels;
};
FunctionalRun run_functional(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileConfig& tiles,
                             const std::vector<reference::Matrix>& Q, const std::vector<reference::Matrix>& K,
                             const std::vector<reference::Matrix>& V, Observer* observer = nullptr);

}  // namespace fasim
