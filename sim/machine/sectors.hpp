// L2 serves global memory in 32-byte sectors: a request for part of a sector
// costs the whole sector. Tensors are assumed to start 256-byte aligned.
#pragma once

#include <cstdint>

#include "tile/tensors.hpp"

namespace fasim {

inline constexpr std::int64_t kSectorBytes = 32;

inline std::int64_t sectors_in_span(std::int64_t begin_byte, std::int64_t bytes) {
    return (begin_byte + bytes + kSectorBytes - 1) / kSectorBytes - begin_byte / kSectorBytes;
}

// Bytes of whole sectors a region touches.
inline std::int64_t sector_bytes(const Region& r) {
    const GlobalTensor& t = *r.tensor;
    const std::int64_t e = t.elem_bytes, pitch = t.cols * e;
    const std::int64_t head_base = r.head * t.rows * pitch;
    if (r.ncols == t.cols)  // whole rows: one contiguous span
        return kSectorBytes * sectors_in_span(head_base + r.row0 * pitch, r.nrows * pitch);
    if ((head_base % kSectorBytes == 0) && (pitch % kSectorBytes == 0))  // every row alike
        return kSectorBytes * r.nrows * sectors_in_span(r.col0 * e, r.ncols * e);
    std::int64_t sectors = 0;
    for (std::int64_t row = r.row0; row < r.row0 + r.nrows; ++row)
        sectors += sectors_in_span(head_base + row * pitch + r.col0 * e, r.ncols * e);
    return kSectorBytes * sectors;
}

}  // namespace fasim
