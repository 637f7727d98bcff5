// Assignment 3: split-KV decoding (FlashDecoding) as a tile program (docs/assignments/split-kv-decoding.md).
//
// One query row (or a few) against a long K/V cache: the keys are split over S blocks, each runs FA2's
// online softmax over its share and writes a normalised partial output O_s and its LSE_s in fp32; a
// second kernel combines them. The layout (packed query heads under grouped K/V heads), the split
// kernel's online softmax and the declarations are given; fill in the two parts marked TODO. The tile
// API is listed at the top of course/starter/fa2_forward.cpp. Grade it locally:
//   cmake -S . -B build -DFASIM_SUBMISSION=$PWD/my_flash_decoding.cpp
//   cmake --build build --target fa-grade-submission && build/course/fa-grade-submission
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "submission.hpp"

using namespace fasim;

namespace {

// Which query rows a block's Q tile holds: the query rows of one head, or, with one query row and
// grouped K/V heads, the query heads of one K/V head.
struct RowLayout {
    bool packed = false;        // rows are the query heads of a group (N = 1, grouped K/V heads)
    std::int64_t row_heads = 0; // the "heads" the kernels run over: B·H, or B·kv_heads when packed
    std::int64_t rows = 0;      // query rows per row head: N, or the group size when packed
};

RowLayout row_layout(const AttentionProblem& p) {
    if (p.N == 1 && p.grouped()) return {true, p.batch_kv_heads(), p.group_size()};
    return {false, p.batch_heads(), p.N};
}

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const RowLayout L = row_layout(p);
    const std::int64_t BHr = L.row_heads, R = L.rows, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(R, Br), Tc = ceil_div(Nk, Bc);
    [[maybe_unused]] const std::int64_t S = cfg.kv_splits, per_split = ceil_div(Tc, S);
    const double scale = p.softmax_scale();
    // Q and O as the kernels see them: [B·H][N][d], or, packed, [B·kv_heads][group][d] (the same memory).
    const GlobalTensor Q = x.declare({"Q", BHr, R, d, e, Br, d});
    const GlobalTensor K = x.declare({"K", p.batch_kv_heads(), Nk, d, e, Bc, d});
    const GlobalTensor V = x.declare({"V", p.batch_kv_heads(), Nk, d, e, Bc, d});
    const GlobalTensor O = x.declare({"O", BHr, R, d, e, Br, d});
    const GlobalTensor LSE = x.declare({"LSE", BHr, 1, R, 4, 1, Br, true});
    // The splits' partial results, fp32, split s of row head bh at head index bh·S + s.
    std::optional<GlobalTensor> O_part, LSE_part;
    if (S > 1) {
        O_part = x.declare({"O_partial", BHr * S, R, d, 4, Br, d});
        LSE_part = x.declare({"LSE_partial", BHr * S, 1, R, 4, 1, Br, true});
    }
    auto kv_head = [&](std::int64_t bh) { return L.packed ? bh : p.kv_head_of(bh); };
    const bool causal = p.causal && !L.packed;  // one query row sees every key (bottom-right alignment)

    const KernelDesc split{"flash_decoding_split",
                           S > 1 ? "one block per Q tile and split of the keys; partial O and LSE in fp32"
                                 : "one block per Q tile (one split: FA2 with the split kernel's tiles)",
                           S * Tr, BHr, cfg.warps};
    x.launch(split, [&](Block& b, std::int64_t bh, std::int64_t idx) {
        const std::int64_t s = idx / Tr, i = idx % Tr, q0 = i * Br, rows = std::min(Br, R - q0);
        [[maybe_unused]] const KvTileRange visible = visible_kv_tiles(q0, rows, Bc, R, Nk, causal);
        // TODO 1: the K/V tiles split s walks: its share of the per_split tiles, within the visible ones.
        const std::int64_t first = 0, last = 0;
        Tile Oi = b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i");
        Tile mi = b.alloc_statistic(rows, Space::Registers, Fill::NegInf, "m_i");
        Tile li = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "l_i");
        if (first < last) {
            Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
            for (std::int64_t j = first; j < last; ++j) {
                const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
                Tile Kj = b.load(view(K, kv_head(bh)).rows(k0, cols), Space::Shared, "K_j");
                Tile Vj = b.load(view(V, kv_head(bh)).rows(k0, cols), Space::Shared, "V_j");
                Tile Sij = b.alloc(rows, cols, Space::Registers, Fill::Zero, "S_ij");
                b.matmul(Sij, Qi, Kj, {.transpose_b = true, .split = Split::Rows});
                if (tile_crosses_diagonal(q0, k0, cols, R, Nk, causal)) b.mask(Sij, {q0, k0, R, Nk, causal});
                Tile m_new = b.row_max(Sij, scale, "m_new");
                b.map(m_new, Fn::max, {m_new, mi});
                Tile alpha = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "alpha");
                b.map(alpha, Fn::exp_diff, {mi, m_new});
                b.map(Sij, Fn::exp_shifted, {Sij, scale, per_row(m_new)});
                Tile rowsum = b.row_sum(Sij, "rowsum");
                b.map(li, Fn::fma, {alpha, li, rowsum});
                b.map(Oi, Fn::mul, {Oi, per_row(alpha)});
                b.round_to_storage(Sij);
                b.matmul(Oi, Sij, Vj, {.accumulate = true});
                mi = std::move(m_new);
                b.rename(mi, "m_i");
            }
        }
        // A split that sees no key of these rows leaves O_s = 0 and LSE_s = -inf: it weighs nothing.
        b.map(Oi, Fn::div, {Oi, per_row(li)});
        Tile lse = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "LSE_i");
        b.map(lse, Fn::lse, {mi, li});
        if (S == 1) {
            b.store(Oi, view(O, bh).rows(q0, rows));
            b.store(lse, view(LSE, bh).tile(0, 1, q0, rows));
        } else {
            b.store(Oi, view(*O_part, bh * S + s).rows(q0, rows));
            b.store(lse, view(*LSE_part, bh * S + s).tile(0, 1, q0, rows));
        }
    });
    if (S == 1) return;

    // One block per query row (its warps share the splits): with few rows and many splits a block per
    // Q tile would leave the combine on a handful of SMs (MQA: one block for 32 rows x 128 splits).
    const KernelDesc combine{"flash_decoding_combine", "one block per row: LSE = log sum_s exp(LSE_s); O = sum_s exp(LSE_s - LSE) O_s",
                             R, BHr, cfg.warps};
    x.launch(combine, [&](Block& b, std::int64_t bh, std::int64_t q0) {
        // TODO 2: combine the splits of query row q0 of row head bh: load LSE_s and O_s of every split s
        //   (head bh * S + s of LSE_partial and O_partial), LSE = log sum_s exp(LSE_s) (computed stably:
        //   subtract the largest LSE_s first), O = sum_s exp(LSE_s - LSE) · O_s; store O and LSE.
        (void)b; (void)bh; (void)q0;
    });
}

}  // namespace

FASIM_SUBMISSION("flash_decoding", program)
