// The global-memory tensors a tile program reads and writes, and the rectangular
// regions of them that one load or store moves.
//
// The vocabulary is open: a program names its tensors as the papers do ("Q", "dO",
// "O_acc", "LSE", a split's partial output ...) when it declares them, and every
// count, report and trace uses that name. Executor::declare gives each tensor an id,
// its position in the run's declaration order, which executors index their
// per-tensor state with.
#pragma once

#include <cstdint>
#include <string>

namespace fasim {

using TensorId = int;

// A tensor in global memory: [heads][rows][cols], row-major, elem_bytes each.
// region_rows x region_cols is the tile grid this program accesses it on; the L2
// model tracks residency per tile of that grid.
struct GlobalTensor {
    std::string name;
    std::int64_t heads = 0, rows = 0, cols = 0;
    std::int64_t elem_bytes = 0;
    std::int64_t region_rows = 1, region_cols = 1;
    // Row statistics (m, ℓ, LSE) are stored as one row of N per head but held on
    // chip as a column, one value per query row.
    bool row_statistic = false;
    TensorId id = -1;  // set by Executor::declare

    std::int64_t bytes_per_head() const { return rows * cols * elem_bytes; }
};

// rows [row0, row0+nrows) x cols [col0, col0+ncols) of one head of a tensor.
struct Region {
    const GlobalTensor* tensor = nullptr;
    std::int64_t head = 0;
    std::int64_t row0 = 0, nrows = 0;
    std::int64_t col0 = 0, ncols = 0;

    std::int64_t elements() const { return nrows * ncols; }
    std::int64_t bytes() const { return elements() * tensor->elem_bytes; }
};

// Fluent helper so programs read like the papers: view(K, bh).rows(j*Bc, Bc)
struct TensorView {
    const GlobalTensor* tensor;
    std::int64_t head;
    Region rows(std::int64_t row0, std::int64_t nrows) const {
        return Region{tensor, head, row0, nrows, 0, tensor->cols};
    }
    Region tile(std::int64_t row0, std::int64_t nrows, std::int64_t col0, std::int64_t ncols) const {
        return Region{tensor, head, row0, nrows, col0, ncols};
    }
};
inline TensorView view(const GlobalTensor& t, std::int64_t head) { return TensorView{&t, head}; }

}  // namespace fasim
