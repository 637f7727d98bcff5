// Which K/V tiles a Q tile must visit, and which of those need element masks.
// Causal masking is bottom-right aligned: key j is visible to query i iff
// j <= i + (Nk - N). Tiles entirely above that diagonal are skipped; only tiles
// that cross it are masked element by element (FlashAttention-2, section 3.1.1).
#pragma once

#include <algorithm>
#include <cstdint>

namespace fasim {

struct KvTileRange {
    std::int64_t begin = 0, end = 0;  // K/V tile indices [begin, end)
};

// Last key index query row `q` may see (may be negative: the row sees nothing).
inline std::int64_t last_visible_key(std::int64_t q, std::int64_t N, std::int64_t Nk) { return q + (Nk - N); }

inline KvTileRange visible_kv_tiles(std::int64_t q0, std::int64_t rows, std::int64_t Bc, std::int64_t N,
                                    std::int64_t Nk, bool causal) {
    const std::int64_t Tc = (Nk + Bc - 1) / Bc;
    if (!causal) return {0, Tc};
    const std::int64_t last_key = last_visible_key(q0 + rows - 1, N, Nk);
    if (last_key < 0) return {0, 0};
    return {0, std::min(Tc, last_key / Bc + 1)};
}

// A visited tile needs an element mask when some key in it is beyond the diagonal
// for the tile's first query row.
inline bool tile_crosses_diagonal(std::int64_t q0, std::int64_t k0, std::int64_t cols, std::int64_t N,
                                  std::int64_t Nk, bool causal) {
    return causal && k0 + cols - 1 > last_visible_key(q0, N, Nk);
}

// A tile whose every key is beyond the diagonal for its last query row is skipped.
inline bool tile_fully_masked(std::int64_t q0, std::int64_t rows, std::int64_t k0, std::int64_t N, std::int64_t Nk,
                              bool causal) {
    return causal && k0 > last_visible_key(q0 + rows - 1, N, Nk);
}

}  // namespace fasim
