// L2 serves global memory in 32-byte sectors of 128-byte lines: a request for part of a sector
// costs the whole sector, and each line a warp's load or store touches is one request to L2 (its
// slices look a request up once, whatever the number of its sectors, 1 to 4). Tensors are assumed
// to start 256-byte aligned.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tile/tensors.hpp"

namespace fasim {

inline constexpr std::int64_t kSectorBytes = 32;
inline constexpr std::int64_t kLineBytes = 128;

inline std::int64_t units_in_span(std::int64_t begin_byte, std::int64_t bytes, std::int64_t unit) {
    return (begin_byte + bytes + unit - 1) / unit - begin_byte / unit;
}
inline std::int64_t sectors_in_span(std::int64_t begin_byte, std::int64_t bytes) {
    return units_in_span(begin_byte, bytes, kSectorBytes);
}

// What the SMs ask of L2 for a region: bytes of whole sectors, and requests (lines per access).
struct L2Requests {
    std::int64_t sector_bytes = 0;
    std::int64_t requests = 0;
};

// Warp accesses that each cover `contiguous` consecutive elements of a row (0: the whole row span),
// over the accesses that cover the region once. A sector or line two accesses touch counts twice:
// each access is its own request. contiguous = 1: every element a sector of its own.
inline L2Requests l2_requests(const Region& r, std::int64_t contiguous = 0) {
    const GlobalTensor& t = *r.tensor;
    const std::int64_t e = t.elem_bytes, pitch = t.cols * e;
    const std::int64_t head_base = r.head * t.rows * pitch;
    const std::int64_t chunk = contiguous > 0 ? contiguous : r.ncols;
    L2Requests total;
    auto add_row = [&](std::int64_t row_begin_byte, std::int64_t times) {
        for (std::int64_t c = 0; c < r.ncols; c += chunk) {
            const std::int64_t begin = row_begin_byte + (r.col0 + c) * e, bytes = std::min(chunk, r.ncols - c) * e;
            total.sector_bytes += times * kSectorBytes * sectors_in_span(begin, bytes);
            total.requests += times * units_in_span(begin, bytes, kLineBytes);
        }
    };
    if (contiguous == 0 && r.ncols == t.cols) {  // whole rows: one contiguous span
        const std::int64_t begin = head_base + r.row0 * pitch, bytes = r.nrows * pitch;
        return {kSectorBytes * sectors_in_span(begin, bytes), units_in_span(begin, bytes, kLineBytes)};
    }
    if ((head_base % kLineBytes == 0) && (pitch % kLineBytes == 0)) {  // every row alike
        add_row(0, r.nrows);
        return total;
    }
    for (std::int64_t row = r.row0; row < r.row0 + r.nrows; ++row) add_row(head_base + row * pitch, 1);
    return total;
}

}  // namespace fasim
