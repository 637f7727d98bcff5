// Which K/V tiles a Q tile must visit, and which of those need element masks.
// Causal masking is bottom-right aligned: key j is visible to query i iff
// j <= i + (Nk - N). Tiles entirely above that diagonal are skipped; only tiles
// that cross it are masked element by element (FlashAttention-2, section 3.1.1).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

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

// The first index in [lo, hi) where a predicate that is false and then true along the range holds (hi
// if none): where a loop's work changes, e.g. the first K/V tile a Q tile's diagonal crosses.
template <class Pred>
std::int64_t first_where(std::int64_t lo, std::int64_t hi, Pred&& pred) {
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (pred(mid)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

// The indices i in (lo, hi] where a non-decreasing function of the index changes, f(i) != f(i - 1), in
// order: found by halving (a range whose two ends agree holds no change), so a function with few steps
// costs few calls however long the range (the rows whose diagonal enters another row chunk).
template <class F>
void change_points(std::int64_t lo, std::int64_t hi, F&& f, std::vector<std::int64_t>& out) {
    if (hi <= lo || f(lo) == f(hi)) return;
    if (hi == lo + 1) {
        out.push_back(hi);
        return;
    }
    const std::int64_t mid = lo + (hi - lo) / 2;
    change_points(lo, mid, f, out);
    change_points(mid, hi, f, out);
}

// Where the work of a loop over the K/V tiles [begin, end) that Q rows [q0, q0+rows) see can change: the
// first tile that crosses the diagonal (masked from there on) and the ragged last tile (for_each_run).
inline std::vector<std::int64_t> kv_loop_cuts(std::int64_t q0, std::int64_t begin, std::int64_t end, std::int64_t Bc,
                                              std::int64_t N, std::int64_t Nk, bool causal) {
    const std::int64_t crossing = first_where(begin, end, [&](std::int64_t j) {
        return tile_crosses_diagonal(q0, j * Bc, std::min(Bc, Nk - j * Bc), N, Nk, causal);
    });
    return {crossing, (Nk + Bc - 1) / Bc - 1};
}

// The bounds of a loop over tiles [begin, end) run as for_each_run with `cuts`: begin, each cut clamped into
// the range, end. Blocks whose loops have the same bounds, or bounds that move by the same steps from block
// to block, do alike or growing work (KernelDesc::runs_grow).
struct LoopShape {
    std::array<std::int64_t, 6> bounds{};
};
inline LoopShape loop_shape(std::int64_t begin, std::int64_t end, const std::vector<std::int64_t>& cuts) {
    LoopShape s;
    if (cuts.size() + 2 > s.bounds.size()) throw std::logic_error("loop_shape: more cuts than LoopShape holds");
    s.bounds[0] = begin;
    s.bounds[1] = end;
    for (std::size_t c = 0; c < cuts.size(); ++c) s.bounds[c + 2] = std::clamp(cuts[c], begin, end);
    return s;
}
// Where a staircase of blocks or iterations [begin, end) must be cut into runs whose loops' bounds each move
// by the same steps from one unit of `period` to the next (KernelDesc::runs_grow, Block::repeat_growing):
// at every index i whose step from i - period differs from the step before it. A period of 1: each bound
// moves by the same step every time; more where the steps are fractions of a tile (FlashAttention-1's K/V
// tiles of 326 keys over Q tiles of 64 rows: 163 Q tiles every 32 K/V tiles). Evaluates shape_of once an index.
template <class ShapeOf>
std::vector<std::int64_t> staircase_cuts(std::int64_t begin, std::int64_t end, ShapeOf&& shape_of, std::int64_t period = 1) {
    std::vector<std::int64_t> cuts;
    const std::int64_t p = period;
    std::vector<LoopShape> seen(static_cast<std::size_t>(2 * p + 1));  // shapes of i - 2p ... i, by i mod (2p + 1)
    auto at = [&](std::int64_t i) -> LoopShape& { return seen[static_cast<std::size_t>((i - begin) % (2 * p + 1))]; };
    for (std::int64_t i = begin; i < end; ++i) {
        at(i) = shape_of(i);
        if (i - begin < 2 * p) continue;
        const LoopShape &now = at(i), &back = at(i - p), &back2 = at(i - 2 * p);
        for (std::size_t b = 0; b < now.bounds.size(); ++b)
            if (now.bounds[b] - back.bounds[b] != back.bounds[b] - back2.bounds[b]) {
                cuts.push_back(i);
                break;
            }
    }
    return cuts;
}

// The loop over K/V tiles of Q tile i (Br rows of N).
inline LoopShape kv_loop_shape(std::int64_t i, std::int64_t Br, std::int64_t Bc, std::int64_t N, std::int64_t Nk, bool causal) {
    const std::int64_t q0 = i * Br;
    const KvTileRange r = visible_kv_tiles(q0, std::min(Br, N - q0), Bc, N, Nk, causal);
    return loop_shape(r.begin, r.end, kv_loop_cuts(q0, r.begin, r.end, Bc, N, Nk, causal));
}

// A loop over Q tiles i = first + t*stride (t in [0, count)) for the K/V tile [k0, k0+cols): the first t
// whose tile some row sees (the tiles before are fully masked and skipped), and the cuts where the work
// can change from there: the first tile no longer crossing the diagonal and the ragged last Q tile.
struct QLoop {
    std::int64_t begin = 0;            // first visible t
    std::vector<std::int64_t> cuts;
};
inline QLoop q_loop(std::int64_t first, std::int64_t stride, std::int64_t count, std::int64_t Br, std::int64_t k0,
                    std::int64_t cols, std::int64_t N, std::int64_t Nk, bool causal) {
    auto q0 = [&](std::int64_t t) { return (first + t * stride) * Br; };
    auto rows = [&](std::int64_t t) { return std::min(Br, N - q0(t)); };
    QLoop l;
    l.begin = first_where(0, count, [&](std::int64_t t) { return !tile_fully_masked(q0(t), rows(t), k0, N, Nk, causal); });
    l.cuts.push_back(first_where(l.begin, count, [&](std::int64_t t) {
        return !tile_crosses_diagonal(q0(t), k0, cols, N, Nk, causal);
    }));
    if (count > 0 && rows(count - 1) < Br) l.cuts.push_back(count - 1);
    return l;
}

}  // namespace fasim
