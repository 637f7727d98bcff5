// FlashDecoding (Dao, Haziza, Massa and Sizov, 2023: flash-attention's split-KV kernels), as a tile
// program: attention for generation, a few query rows against a long K/V cache.
//
// FlashAttention-2 gives each Q tile of each (batch, head) a block; with one query row that is B·H
// blocks, far fewer than the SMs, each streaming the whole cache alone. FlashDecoding also splits the
// keys: split s of a (batch, head) walks only its share of the K/V tiles, with FA2's online softmax,
// and writes its normalised partial output O_s and log-sum-exp LSE_s in fp32; a second kernel combines
// the splits of each row,
//     LSE = log Σ_s exp(LSE_s),   O = Σ_s exp(LSE_s − LSE) · O_s,
// which is exact (each O_s is softmax-weighted over its keys; exp(LSE_s − LSE) is the share of the
// row's softmax mass its keys hold). With one split it is FA2 with the split kernel's tiles.
// Grouped-query attention (fewer K/V heads than query heads): with one query row, the query heads of a
// group become the rows of one Q tile, as flash-attention does it (its "seqlenq_ngroups_swapped"), so
// a K/V head is read by one block per split, not by each of its query heads.
#include "algorithms/flash_steps.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "gpu/gpu_spec.hpp"
#include "kernels/tile_rules.hpp"

namespace fasim {

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

// The split kernel's blocks s*Tr + i: without a mask, the Q tiles of one split do alike work but the ragged
// last one (the splits differ: the last may hold fewer K/V tiles); causal, each Q tile sees its own keys.
std::vector<std::int64_t> split_runs(std::int64_t splits, std::int64_t Tr, bool causal) {
    if (causal) return {};
    std::vector<std::int64_t> starts;
    for (std::int64_t s = 0; s < splits; ++s) {
        starts.push_back(s * Tr);
        if (Tr > 1) starts.push_back(s * Tr + Tr - 1);
    }
    return starts;
}

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const RowLayout L = row_layout(p);
    const std::int64_t BHr = L.row_heads, R = L.rows, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(R, Br), Tc = ceil_div(Nk, Bc);
    const std::int64_t S = cfg.kv_splits, per_split = ceil_div(Tc, S);
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
                           S * Tr, BHr, cfg.warps, split_runs(S, Tr, causal)};
    x.launch(split, [&](Block& b, std::int64_t bh, std::int64_t idx) {
        const std::int64_t s = idx / Tr, i = idx % Tr, q0 = i * Br, rows = std::min(Br, R - q0);
        const KvTileRange visible = visible_kv_tiles(q0, rows, Bc, R, Nk, causal);
        const std::int64_t first = std::max(visible.begin, s * per_split), last = std::min(visible.end, (s + 1) * per_split);
        Tile Oi = b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i");
        Tile mi = b.alloc_statistic(rows, Space::Registers, Fill::NegInf, "m_i");
        Tile li = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "l_i");
        if (first < last) {
            Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
            for_each_run(b, first, last, kv_loop_cuts(q0, first, last, Bc, R, Nk, causal), [&](std::int64_t j) {
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
            });
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
                             R, BHr, cfg.warps, run_starts(R, {})};
    x.launch(combine, [&](Block& b, std::int64_t bh, std::int64_t q0) {
        const std::int64_t rows = 1;
        std::vector<Tile> lse_s;
        for (std::int64_t s = 0; s < S; ++s)
            lse_s.push_back(b.load(view(*LSE_part, bh * S + s).tile(0, 1, q0, rows), Space::Registers, "LSE_" + std::to_string(s)));
        Tile m = b.alloc_statistic(rows, Space::Registers, Fill::NegInf, "LSE_max");
        for (const Tile& t : lse_s) b.map(m, Fn::max, {m, t});
        Tile sum = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "sum");
        for (std::int64_t s = 0; s < S; ++s) {
            Tile w = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "exp(LSE_" + std::to_string(s) + " - max)");
            b.map(w, Fn::exp_diff, {lse_s[static_cast<std::size_t>(s)], m});
            b.map(sum, Fn::add, {sum, w});
        }
        Tile lse = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "LSE_i");
        b.map(lse, Fn::lse, {m, sum});
        Tile Oi = b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i");
        for (std::int64_t s = 0; s < S; ++s) {
            Tile w = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "exp(LSE_" + std::to_string(s) + " - LSE)");
            b.map(w, Fn::exp_diff, {lse_s[static_cast<std::size_t>(s)], lse});
            Tile Os = b.load(view(*O_part, bh * S + s).rows(q0, rows), Space::Registers, "O_" + std::to_string(s));
            b.map(Oi, Fn::fma, {per_row(w), Os, Oi});  // O += exp(LSE_s − LSE) · O_s
        }
        b.store(Oi, view(O, bh).rows(q0, rows));
        b.store(lse, view(LSE, bh).tile(0, 1, q0, rows));
    });
}

// Q, K and V tiles.
std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig&) {
    return (Br + 2 * Bc) * p.d * p.elem_bytes();
}

// fa-sim's decode kernel tiles (kernels/tile_rules.hpp: what cuda/kernels/flash_decoding.cu launches).
// Then the splits: --kv-splits, or the heuristic; either way rounded to the count whose
// splits all hold K/V tiles (10 tiles in 4 splits are 3 + 3 + 3 + 1; in 6, 2 + 2 + 2 + 2 + 2 and an
// empty sixth: 5 splits).
TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    if (p.causal && p.N > p.Nk)
        throw usage_error("flash_decoding with --causal and N = " + std::to_string(p.N) + " > Nk = " + std::to_string(p.Nk),
                          "a decode step's query rows are the newest tokens, after the cached keys: N <= Nk",
                          "pass --Nk of at least " + std::to_string(p.N) + " (the cache includes the new tokens), or drop --causal");
    TileConfig c;
    c.matmul = req.matmul;
    const std::int64_t d = p.d;
    std::int64_t Br = tile_rules::kFlashDecodingBr, Bc = tile_rules::flash_decoding_bc(static_cast<int>(d));
    c.reasons.push_back("fa-sim's decode kernel for d=" + std::to_string(d) + ": Br = " + std::to_string(Br) + ", Bc = " +
                        std::to_string(Bc) + ", " + std::to_string(tile_rules::kFlashDecodingWarps) + " warps");
    if (req.Br || req.Bc) {
        Br = req.Br.value_or(Br);
        Bc = req.Bc.value_or(Bc);
        if (smem_bytes(p, Br, Bc, c) > gpu.smem_per_block_bytes)
            reject_user_tiles("flash_decoding", p, gpu, Br, Bc, smem_bytes(p, Br, Bc, c));
        c.reasons.push_back(tiles_given_text(req, Br, Bc));
    } else {
        while (smem_bytes(p, Br, Bc, c) > gpu.smem_per_block_bytes && Bc > 16) Bc /= 2;
    }
    c.Br = Br;
    c.Bc = Bc;
    const RowLayout L = row_layout(p);
    if (L.packed)
        c.reasons.push_back("one query row and " + std::to_string(p.group_size()) +
                            " query heads per K/V head: a group's query heads are the rows of one Q tile");
    const std::int64_t Tc = ceil_div(p.Nk, Bc), blocks = L.row_heads * ceil_div(L.rows, Br);
    std::int64_t S = req.kv_splits;
    if (S < 0 || S > Tc)
        throw usage_error("--kv-splits " + std::to_string(S) + " is out of range for Nk = " + std::to_string(p.Nk),
                          "a split needs at least one K/V tile of " + std::to_string(Bc) + " keys: 1.." + std::to_string(Tc),
                          "pass --kv-splits between 1 and " + std::to_string(Tc) + ", or omit it for the heuristic");
    if (S == 0) {
        S = tile_rules::flash_decoding_splits(blocks, 2 * gpu.sm_count, Tc);
        c.reasons.push_back(std::to_string(blocks) + " blocks without a split, " + std::to_string(2 * gpu.sm_count) +
                            " slots (2 blocks of 4 warps per SM): flash-attention's heuristic picks " + std::to_string(S) +
                            (S == 1 ? " split" : " splits"));
    } else {
        c.reasons.push_back(std::to_string(S) + " splits of the keys (--kv-splits)");
    }
    const std::int64_t per_split = ceil_div(Tc, S), used = ceil_div(Tc, per_split);
    if (used != S)
        c.reasons.push_back(std::to_string(Tc) + " K/V tiles in " + std::to_string(S) + " splits of " + std::to_string(per_split) +
                            " fill only " + std::to_string(used) + ": " + std::to_string(used) + " splits");
    c.kv_splits = used;
    return c;
}

// Per row head (B·H, or B·kv_heads when a group's query heads are packed as rows) with R rows, S splits and
// Tr = ⌈R/Br⌉ Q tiles: each split reads its Q tile and its share of K and V (K and V once per Q tile in
// all); with S > 1 the splits write O_s and LSE_s in fp32 and the combine reads them back and writes O
// and LSE; with one split O and LSE are written directly.
ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    const RowLayout L = row_layout(p);
    // Counts (BHr, R, Nk): every product below is computed in 128 bits.
    const Count BHr = L.row_heads, R = L.rows, Nk = p.Nk;
    const std::int64_t d = p.d, e = p.elem_bytes(), S = t.kv_splits;
    const Count Tr = ceil_div(L.rows, t.Br);
    ClosedForm f;
    f.matmul_flops = p.causal && !L.packed ? std::nullopt : std::optional<Count>(4 * BHr * R * Nk * d);
    if (p.causal && !L.packed) return f;
    const Count partials = S > 1 ? S * BHr * R * (d + 1) * 4 : Count(0);
    f.hbm = ClosedForm::Bytes{S * BHr * R * d * e + BHr * Tr * 2 * Nk * d * e + partials, partials + BHr * R * (d * e + 4)};
    f.leading_hbm_bytes = to_double(BHr * Tr * 2 * Nk * d * e);
    f.leading_text = "FlashDecoding 2\u00B7Nk\u00B7d\u00B7e per " + std::string(L.packed ? "K/V head" : "head and Q tile") +
                     " (K and V read once; the partials' round trip is " + to_string(partials) + " B)";
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    const RowLayout L = row_layout(p);
    return Count(L.row_heads) * ceil_div(L.rows, t.Br) * ceil_div(p.Nk, t.Bc) + Count(L.row_heads) * L.rows * t.kv_splits;
}

}  // namespace

const Algorithm& flash_decoding_algorithm() {
    static const Algorithm a{
        .id = "flash_decoding",
        .title = "FlashDecoding (keys split over blocks, partial outputs combined by their log-sum-exp)",
        .name = "FlashDecoding",
        .label = "FlashDec",
        .tunable_tiles = true,
        .grouped_kv = true,
        .kv_splits = true,
        .decoding = true,
        .choose_tiles = choose_tiles,
        .smem_bytes = smem_bytes,
        .program = program,
        .closed_form = closed_form,
        .tile_steps = tile_steps,
        .tile_step_budget = 100'000'000,
        .grid_text = [](const AttentionProblem& p, const TileConfig& t) {
            const RowLayout L = row_layout(p);
            return std::string(" = ") + (L.packed ? "B\u00B7KV" : "B\u00B7H") + " \u00D7 splits \u00D7 \u2308" +
                   (L.packed ? "group" : "N") + "/Br\u2309 = " + std::to_string(L.row_heads) + " \u00D7 " +
                   std::to_string(t.kv_splits) + " \u00D7 " + std::to_string(ceil_div(L.rows, t.Br));
        },
    };
    return a;
}

}  // namespace fasim
