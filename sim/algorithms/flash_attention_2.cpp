// FlashAttention-2 forward (Dao, 2023, Algorithm 1), as a tile program.
//
// What it changes over FlashAttention-1:
//  - loop order reversed: the outer loop is over Q tiles, and each Q tile is its
//    own thread block, so the grid is batch·heads·Tr (parallel over sequence);
//  - O stays in registers, unnormalised, for the whole inner loop: it is rescaled
//    by exp(m_old − m_new) only, divided by ℓ once at the end, and written once;
//  - only logsumexp (LSE) is saved for the backward pass, not m and ℓ;
//  - the 4 warps split Q (each owns Br/4 rows): no exchange between warps.
// Global traffic: reads Q once and K, V once per Q tile; writes O and LSE once.
#include "algorithms/flash_steps.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d;
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br);
    const double scale = p.softmax_scale();
    const auto [Q, K, V, O, LSE] = fused_tensors(x, p, Br, Bc);

    // Without a mask every Q tile's block does the same work but the ragged last one; causal, each sees
    // its own number of K/V tiles, and a kernel that launches the heaviest first (cfg.heaviest_first:
    // fa2_tc_tuned) gives the block at launch position i the Q tile Tr - 1 - i.
    auto q_tile = [&](std::int64_t i) { return p.causal && cfg.heaviest_first ? Tr - 1 - i : i; };
    const KernelDesc kernel = tile_grid({"fa2_forward", "one block per Q tile; loop over K/V tiles; O and LSE written once",
                                         Tr, BH, cfg.warps}, Tr, p.causal,
                                        [&](std::int64_t i) { return kv_loop_shape(q_tile(i), Br, Bc, N, Nk, p.causal); });
    x.launch(kernel, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = q_tile(i) * Br, rows = std::min(Br, N - q0);
        Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
        Tile Oi = b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i");
        // Row statistics sit beside S: in registers, or in shared memory with a staged S (one lane per row).
        Tile mi = b.alloc_statistic(rows, cfg.scores, Fill::NegInf, "m_i");
        Tile li = b.alloc_statistic(rows, cfg.scores, Fill::Zero, "l_i");

        const KvTileRange kv = visible_kv_tiles(q0, rows, Bc, N, Nk, p.causal);
        for_each_run(b, kv.begin, kv.end, kv_loop_cuts(q0, kv.begin, kv.end, Bc, N, Nk, p.causal), [&](std::int64_t j) {
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j");
            Tile Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "V_j");

            Tile S = score_tile(b, Qi, Kj, q0, k0, p, Split::Rows, cfg.scores);

            Tile m_new = b.row_max(S, scale, "m_new");
            b.map(m_new, Fn::max, {m_new, mi});
            Tile alpha = b.alloc_statistic(rows, cfg.scores, Fill::Zero, "alpha");
            b.map(alpha, Fn::exp_diff, {mi, m_new});              // rescale factor for the old O and ℓ
            b.map(S, Fn::exp_shifted, {S, scale, per_row(m_new)});  // S becomes P̃ = exp(scale·S − m_new)
            Tile rowsum = b.row_sum(S, "rowsum");
            b.map(li, Fn::fma, {alpha, li, rowsum});              // ℓ = α·ℓ + rowsum(P̃)
            b.map(Oi, Fn::mul, {Oi, per_row(alpha)});             // O = diag(α)·O   (no division here)
            b.round_to_storage(S);
            b.matmul(Oi, S, Vj, {.accumulate = true});
            mi = std::move(m_new);
            b.rename(mi, "m_i");
        });
        b.map(Oi, Fn::div, {Oi, per_row(li)});                    // the only division, once per row
        Tile lse = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "LSE_i");
        b.map(lse, Fn::lse, {mi, li});
        b.store(Oi, view(O, bh).rows(q0, rows));
        b.store(lse, view(LSE, bh).tile(0, 1, q0, rows));
    });
}

// Reads Q once and K, V once per Q tile (Tr = ⌈N/Br⌉ times); writes O and the fp32 LSE once.
ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, BH = p.batch_heads();
    const std::int64_t d = p.d, e = p.elem_bytes();
    ClosedForm f;
    f.matmul_flops = p.causal ? std::nullopt : std::optional<Count>(4 * BH * N * Nk * d);
    if (p.causal) return f;  // the papers' formulas count every tile; causal skipping is counted by the program
    f.hbm = ClosedForm::Bytes{BH * e * (N * d + ceil_div(p.N, t.Br) * 2 * Nk * d), BH * (e * N * d + 4 * N)};
    const double n = static_cast<double>(N), nk = static_cast<double>(Nk);
    f.leading_hbm_bytes = 2 * n * nk * static_cast<double>(d * e * BH) / static_cast<double>(t.Br);
    f.leading_text = "FA2 2\u00B7" + std::string(Nk == N ? "N\u00B2" : "N\u00B7Nk") + "\u00B7d\u00B7e\u00B7B\u00B7H/Br with Br=" +
                     std::to_string(t.Br) + " (K and V read once per Q block)";
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    return Count(p.batch_heads()) * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);
}

}  // namespace

const Algorithm& flash_attention_2_algorithm() {
    static const Algorithm a{
        .id = "fa2",
        .title = "FlashAttention-2 (Q outer loop, split-Q warps, O written once)",
        .name = "FlashAttention-2",
        .label = "FA2",
        .tunable_tiles = true,
        .grouped_kv = true,
        .tile_sweep = TileSweep::square,
        .timeline_figure = true,
        .choose_tiles = [](const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
            return choose_q_tiles("fa2", p, gpu, req);
        },
        .smem_bytes = q_tile_smem_bytes,
        .program = program,
        .closed_form = closed_form,
        .tile_steps = tile_steps,
        .tile_step_budget = 100'000'000,
        .grid_text = q_tile_grid_text,
    };
    return a;
}

}  // namespace fasim
