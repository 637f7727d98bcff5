// The global-memory tensors an attention tile program reads and writes, and the
// rectangular regions of them that one load or store moves.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace fasim {

// Every tensor the forward programs touch, named as in the papers. Traffic is
// reported per tensor, so a student sees which one dominates. O_acc is FA1's running
// output in fp32 when the storage dtype is 16-bit (FlashAttention-1's o_tmp): rounding
// O to fp16/bf16 on each of its Tc round trips would compound the error.
enum class TensorName : std::uint8_t { Q, K, V, O, O_acc, S, P, m, l, LSE };
inline constexpr int kTensorCount = 10;
inline constexpr std::array<TensorName, kTensorCount> kAllTensors = {
    TensorName::Q, TensorName::K, TensorName::V, TensorName::O, TensorName::O_acc, TensorName::S,
    TensorName::P, TensorName::m, TensorName::l, TensorName::LSE};

constexpr std::string_view tensor_label(TensorName t) {
    constexpr std::array<std::string_view, kTensorCount> labels = {"Q",   "K", "V", "O", "O_acc",
                                                                   "S", "P", "m", "l", "LSE"};
    return labels[static_cast<std::size_t>(t)];
}
constexpr int index_of(TensorName t) { return static_cast<int>(t); }

// A tensor in global memory: [heads][rows][cols], row-major, elem_bytes each.
// region_rows x region_cols is the tile grid this program accesses it on; the L2
// model tracks residency per tile of that grid.
struct GlobalTensor {
    TensorName name{};
    std::int64_t heads = 0, rows = 0, cols = 0;
    std::int64_t elem_bytes = 0;
    std::int64_t region_rows = 1, region_cols = 1;
    // Row statistics (m, ℓ, LSE) are stored as one row of N per head but held on
    // chip as a column, one value per query row.
    bool row_statistic = false;

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
