// PyTorch's element-wise kernels (ATen's vectorized_elementwise_kernel: 128 threads, 4 elements each), as
// tile-program kernels: what PyTorch's math attention backend launches between its GEMMs (casts, scalings,
// comparisons, selects). A block takes 512 elements: 512 consecutive elements of a row of a rows x cols
// tensor (a row's ragged last chunk shorter), or whole rows, 512 / cols of them, where rows are shorter.
// ATen deals its blocks over the flattened tensor, so where a row is not a multiple of 512 elements its
// blocks straddle rows: the bytes are the same, the block count differs by less than one block per row.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>

#include "algorithms/gemm_tiles.hpp"

namespace fasim {

inline constexpr std::int64_t kAtenBlockElements = 512;
inline constexpr int kAtenWarps = 4;

// The rows x cols piece of a rows x cols tensor one block of an element-wise kernel takes.
struct ElementwiseBlock {
    std::int64_t rows, cols;
};
inline ElementwiseBlock elementwise_block(std::int64_t cols) {
    if (cols >= kAtenBlockElements) return {1, kAtenBlockElements};
    return {std::max<std::int64_t>(1, kAtenBlockElements / cols), cols};
}

// The block's piece: rows [r0, r0 + nr) x cols [c0, c0 + nc) of head `head`.
using ElementwiseBody = std::function<void(Block& b, std::int64_t head, std::int64_t r0, std::int64_t nr, std::int64_t c0,
                                           std::int64_t nc)>;
inline void launch_elementwise(Executor& x, std::string name, std::string role, std::int64_t heads, std::int64_t rows,
                               std::int64_t cols, const ElementwiseBody& body) {
    const ElementwiseBlock piece = elementwise_block(cols);
    const std::int64_t tiles_n = ceil_div(cols, piece.cols);
    const KernelDesc k = grid_kernel(std::move(name), std::move(role), ceil_div(rows, piece.rows), tiles_n, heads, kAtenWarps);
    x.launch(k, [&](Block& b, std::int64_t head, std::int64_t t) {
        const std::int64_t r0 = (t / tiles_n) * piece.rows, c0 = (t % tiles_n) * piece.cols;
        body(b, head, r0, std::min(piece.rows, rows - r0), c0, std::min(piece.cols, cols - c0));
    });
}

// An element-wise kernel that reads `in` and writes `out` (same shape, every head of `in`), times `factor`
// unless it is 1: ATen's copies between dtypes (the store rounds to `out`'s) and its scalings by a number.
inline void launch_copy(Executor& x, std::string name, std::string role, const GlobalTensor& in, const GlobalTensor& out,
                        double factor = 1.0) {
    launch_elementwise(x, std::move(name), std::move(role), in.heads, in.rows, in.cols,
                       [&](Block& b, std::int64_t h, std::int64_t r0, std::int64_t nr, std::int64_t c0, std::int64_t nc) {
                           Tile t = b.load(view(in, h).tile(r0, nr, c0, nc), Space::Registers, in.name);
                           if (factor != 1.0) b.map(t, Fn::mul, {t, factor});
                           b.store(t, view(out, h).tile(r0, nr, c0, nc));
                       });
}

// The tile grid the L2 model tracks a tensor on when element-wise kernels and GEMM k-steps (rows x cols
// tiles of `other`) both access it: fine enough that neither touches part of a tracked tile.
inline std::int64_t common_grid(std::int64_t elementwise, std::int64_t other) { return std::gcd(elementwise, other); }

}  // namespace fasim
