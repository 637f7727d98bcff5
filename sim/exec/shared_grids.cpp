#include "exec/shared_grids.hpp"

#include <algorithm>
#include <numeric>

namespace fasim {

namespace {

// An executor that only takes declarations: launches do nothing.
class DeclarationRecorder final : public Executor {
public:
    void launch(const KernelDesc&, const BlockBody&) override {}
};

// The finest grid that both `first` and `later` line up with.
std::int64_t finer(std::int64_t first, std::int64_t later) { return later > 0 ? std::gcd(first, later) : first; }

}  // namespace

std::vector<Executor::TensorGrid> shared_grids(const std::vector<std::pair<const Algorithm*, TileConfig>>& programs,
                                               const AttentionProblem& p) {
    std::vector<Executor::TensorGrid> grids;  // by first declaration
    std::vector<bool> refined;
    for (const auto& [algo, tiles] : programs) {
        DeclarationRecorder recorder;
        run_algorithm(*algo, recorder, p, tiles);
        for (const GlobalTensor& t : recorder.tensors()) {
            const auto it = std::find_if(grids.begin(), grids.end(), [&](const Executor::TensorGrid& g) { return g.name == t.name; });
            if (it == grids.end()) {
                grids.push_back({t.name, t.region_rows, t.region_cols});
                refined.push_back(false);
                continue;
            }
            const Executor::TensorGrid before = *it;
            it->rows = finer(it->rows, t.region_rows);
            it->cols = finer(it->cols, t.region_cols);
            if (it->rows != before.rows || it->cols != before.cols) refined[static_cast<std::size_t>(it - grids.begin())] = true;
        }
    }
    std::vector<Executor::TensorGrid> out;
    for (std::size_t i = 0; i < grids.size(); ++i)
        if (refined[i]) out.push_back(grids[i]);
    return out;
}

}  // namespace fasim
