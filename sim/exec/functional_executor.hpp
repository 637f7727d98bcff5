// The functional executor: runs the same tile programs as the counting executor,
// but every tile carries real numbers (Eigen, fp32 arithmetic), rounded to the
// storage dtype where a GPU would round: when a tensor is stored, and when P is
// fed to the P·V product. Its output must equal exact attention.
//
// It counts by running the counting executor underneath: every operation is first
// handed to the counting block, then computed. So its traffic equals the counting
// executor's by construction (a test checks it for every algorithm).
#pragma once

#include <array>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "attention_reference.hpp"
#include "exec/counting_executor.hpp"
#include "exec/observer.hpp"
#include "precision.hpp"

namespace fasim {

class FunctionalExecutor final : public Executor {
public:
    // Q, K, V per batch·head, already representable in the problem's dtype.
    FunctionalExecutor(const GpuSpec& gpu, const AttentionProblem& problem, std::vector<reference::Matrix> Q,
                       std::vector<reference::Matrix> K, std::vector<reference::Matrix> V);
    ~FunctionalExecutor() override;

    void set_observer(Observer* observer) { observer_ = observer; }

    void declare(const GlobalTensor& tensor) override;
    void launch(const KernelDesc& kernel, const BlockBody& body) override;

    // A global tensor of one head after the run (row statistics as a 1×N row).
    const reference::MatrixF& tensor(TensorName name, std::int64_t head) const;
    bool has_tensor(TensorName name) const;
    const std::vector<KernelRecord>& kernels() const { return counter_.kernels(); }

private:
    friend class FunctionalBlock;
    AttentionProblem problem_;
    CountingExecutor counter_;
    Observer* observer_ = nullptr;
    std::array<std::vector<reference::MatrixF>, kTensorCount> global_{};
    std::array<bool, kTensorCount> declared_{};
};

// Runs an algorithm functionally on the given inputs (one matrix per batch·head).
struct FunctionalRun {
    std::vector<reference::Matrix> O;  // per head, float64 copies of the stored output
    std::vector<reference::Vector> lse;  // per head; empty for standard attention (it keeps none)
    std::vector<KernelRecord> kernels;
};
FunctionalRun run_functional(Algo algo, const AttentionProblem& p, const GpuSpec& gpu, const TileConfig& tiles,
                             const std::vector<reference::Matrix>& Q, const std::vector<reference::Matrix>& K,
                             const std::vector<reference::Matrix>& V, Observer* observer = nullptr);

}  // namespace fasim
