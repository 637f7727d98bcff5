// Tiled, fused attention *without* online softmax, as a tile program.
//
// Like FlashAttention-2 it gives each Q tile its own thread block and never
// writes S or P to global memory. But it does not rescale O on the fly, so it
// must know each row's max and sum before it can form P: it streams K twice.
//   pass 1: over K tiles, keep the running row max m and sum ℓ (the sum is
//           rescaled when m grows — a scalar per row, not the O tile);
//   pass 2: over K and V tiles, P = exp(scale·S − m)/ℓ is final, O += P·V.
// Compared with fa2 it reads K once more and recomputes Q·Kᵀ: exactly what
// online softmax (rescaling O) buys.
#include "algorithms/flash_steps.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d;
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br);
    const double scale = p.softmax_scale();
    const auto [Q, K, V, O, LSE] = fused_tensors(x, p, Br, Bc);

    const KernelDesc kernel = tile_grid({"tiled_two_pass", "one block per Q tile; pass 1 row max/sum over K, pass 2 P*V over K and V",
                                         Tr, BH, cfg.warps}, Tr, p.causal,
                                        [&](std::int64_t i) { return kv_loop_shape(i, Br, Bc, N, Nk, p.causal); });
    x.launch(kernel, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
        // Row statistics sit beside S: in registers, or in shared memory with a staged S (one lane per row).
        Tile mi = b.alloc_statistic(rows, cfg.scores, Fill::NegInf, "m_i");
        Tile li = b.alloc_statistic(rows, cfg.scores, Fill::Zero, "l_i");
        const KvTileRange kv = visible_kv_tiles(q0, rows, Bc, N, Nk, p.causal);
        const std::vector<std::int64_t> cuts = kv_loop_cuts(q0, kv.begin, kv.end, Bc, N, Nk, p.causal);

        for_each_run(b, kv.begin, kv.end, cuts, [&](std::int64_t j) {  // pass 1: statistics only
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j (pass 1)");
            Tile S = score_tile(b, Qi, Kj, q0, k0, p, Split::Rows, cfg.scores);
            Tile m_new = b.row_max(S, scale, "m_new");
            b.map(m_new, Fn::max, {m_new, mi});
            Tile alpha = b.alloc_statistic(rows, cfg.scores, Fill::Zero, "alpha");
            b.map(alpha, Fn::exp_diff, {mi, m_new});
            b.map(S, Fn::exp_shifted, {S, scale, per_row(m_new)});
            Tile rowsum = b.row_sum(S, "rowsum");
            b.map(li, Fn::fma, {alpha, li, rowsum});  // only the scalar ℓ is rescaled
            mi = std::move(m_new);
        });

        Tile Oi = b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i");
        for_each_run(b, kv.begin, kv.end, cuts, [&](std::int64_t j) {  // pass 2: final P, then P·V
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j (pass 2)");
            Tile Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "V_j");
            Tile S = score_tile(b, Qi, Kj, q0, k0, p, Split::Rows, cfg.scores);
            b.map(S, Fn::exp_shifted, {S, scale, per_row(mi)});
            b.map(S, Fn::div, {S, per_row(li)});   // P is final: no later rescaling
            b.round_to_storage(S);
            b.matmul(Oi, S, Vj, {.accumulate = true});
        });
        Tile lse = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "LSE_i");
        b.map(lse, Fn::lse, {mi, li});
        b.store(Oi, view(O, bh).rows(q0, rows));
        b.store(lse, view(LSE, bh).tile(0, 1, q0, rows));
    });
}

// Q once; K twice and V once per Q tile; O and the fp32 LSE written once. Q·Kᵀ is computed twice.
ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, BH = p.batch_heads();
    const std::int64_t d = p.d, e = p.elem_bytes();
    ClosedForm f;
    if (p.causal) return f;
    f.hbm = ClosedForm::Bytes{BH * e * (N * d + ceil_div(p.N, t.Br) * 3 * Nk * d), BH * (e * N * d + 4 * N)};
    f.matmul_flops = 6 * BH * N * Nk * d;
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    return 2 * Count(p.batch_heads()) * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);  // two passes over K
}

}  // namespace

const Algorithm& tiled_attention_algorithm() {
    static const Algorithm a{
        .id = "tiled",
        .title = "Tiled fused attention without online softmax (two passes over K)",
        .name = "tiled",
        .label = "tiled",
        .tunable_tiles = true,
        .grouped_kv = true,
        .choose_tiles = [](const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
            return choose_q_tiles("tiled", p, gpu, req);
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
