// FlashAttention-2 backward (Dao, 2023, Algorithm 2), as a tile program.
//
// The forward kept only O and the logsumexp LSE (one value per query row); the backward recomputes
// S = Q Kᵀ and P = exp(scale·S − LSE) tile by tile instead of reading a stored P:
//  - a first kernel computes D = rowsum(dO ∘ O) (one value per query row) and clears the fp32 buffer
//    dQ is summed in;
//  - the main kernel gives each K/V tile its own block (parallel over the key sequence) and loops over
//    the Q tiles that see it: dV_j += Pᵀ dO_i, dP = dO_i V_jᵀ, dS = P ∘ (dP − D_i),
//    dK_j += scale · dSᵀ Q_i stay on chip and are written once; dQ_i += scale · dS K_j comes from every
//    K/V block, so it is added into global memory with fp32 atomic adds (what the official
//    implementation does);
//  - a last kernel converts the fp32 dQ to the storage dtype.
// With --dq separate the main kernel leaves dQ alone and a kernel of its own gives each Q tile a block
// that loops over the K/V tiles it sees, recomputing P and dP there (the same tile steps) and summing
// dQ_i on chip: no atomics and no fp32 buffer, for K and V read once more per Q tile and three more
// products per tile pair (S, dP, dQ: 14·N·Nk·d matmul FLOPs per head instead of 10).
// The warps split the keys for S and dP; P and dS go through shared memory so that every warp can read
// them transposed for dV and dK ("some synchronization is necessary", the paper says of the backward).
// Five products per tile pair where the forward has two: 10·N·Nk·d matmul FLOPs per head, 2·N·Nk·d of
// them recomputing S.
// Grouped-query attention (--kv-heads): each query head's blocks read their group's K/V head and write
// their dK_j, dV_j parts; fa2_bwd_sum_groups adds each group's parts (algorithms/group_sums.hpp), as
// flash-attention 2's mha_bwd does (dk_expanded, then at::sum_out).
#include "algorithms/flash_steps.hpp"
#include "algorithms/group_sums.hpp"

namespace fasim {

namespace {

// The steps every tile pair (i, j) shares, in both kernels that visit it.
// P_ij = exp(scale·Q_i K_jᵀ − LSE_i), recomputed (nothing N×N was kept), masked where the tile crosses
// the diagonal and rounded to the storage dtype for the products it feeds.
Tile recompute_P(Block& b, const Tile& Qi, const Tile& Kj, const Tile& lse, std::int64_t q0, std::int64_t k0,
                 const AttentionProblem& p, Split split) {
    Tile P = b.alloc(Qi.rows(), Kj.rows(), Space::Registers, Fill::Zero, "P_ij");  // S, recomputed
    b.matmul(P, Qi, Kj, {.transpose_b = true, .split = split, .recompute = true});
    if (tile_crosses_diagonal(q0, k0, Kj.rows(), p.N, p.Nk, p.causal)) b.mask(P, {q0, k0, p.N, p.Nk, p.causal});
    b.map(P, Fn::exp_shifted, {P, p.softmax_scale(), per_row(lse)});  // P = exp(scale·S − LSE): normalised already
    b.round_to_storage(P);
    return P;
}

// dS_ij = P ∘ (dO_i V_jᵀ − D_i), rounded to the storage dtype for the products it feeds. `again`: dP
// was computed by another kernel already (the separate dQ kernel redoes it).
Tile gradient_of_scores(Block& b, const Tile& dOi, const Tile& Vj, const Tile& Di, const Tile& P, Split split, bool again) {
    Tile dS = b.alloc(P.rows(), P.cols(), Space::Registers, Fill::Zero, "dS_ij");  // dP, then dS
    b.matmul(dS, dOi, Vj, {.transpose_b = true, .split = split, .recompute = again});  // dP = dO_i V_jᵀ
    b.map(dS, Fn::sub, {dS, per_row(Di)});
    b.map(dS, Fn::mul, {dS, P});  // dS = P ∘ (dP − D_i)
    b.round_to_storage(dS);
    return dS;
}

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br), Tc = ceil_div(Nk, Bc);
    const double scale = p.softmax_scale();
    const bool atomic = cfg.dq == DqMode::atomic;
    const auto [Q, K, V, O, LSE] = fused_tensors(x, p, Br, Bc);
    const GlobalTensor dO = x.declare({"dO", BH, N, d, e, Br, d});
    const GlobalTensor D = x.declare({"D", BH, 1, N, 4, 1, Br, true});
    const GlobalTensor dQ_acc = atomic ? x.declare({"dQ_acc", BH, N, d, 4, Br, d}) : GlobalTensor{};
    const GlobalTensor dQ = x.declare({"dQ", BH, N, d, e, Br, d});
    // The main kernel's dK, dV: per query head, summed over each group by the last kernel when grouped.
    const KvGradients grads = declare_kv_gradients(x, p, Bc, d);

    const KernelDesc preprocess{"fa2_bwd_preprocess",
                                atomic ? "D = rowsum(dO * O) per Q tile; dQ_acc = 0" : "D = rowsum(dO * O) per Q tile", Tr,
                                BH, cfg.warps, run_starts(Tr, {Tr - 1})};
    x.launch(preprocess, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        Tile dOi = b.load(view(dO, bh).rows(q0, rows), Space::Registers, "dO_i");
        Tile Oi = b.load(view(O, bh).rows(q0, rows), Space::Registers, "O_i");
        b.map(dOi, Fn::mul, {dOi, Oi});
        Tile Di = b.row_sum(dOi, "D_i");
        b.store(Di, view(D, bh).tile(0, 1, q0, rows));
        if (atomic) b.store(b.alloc(rows, d, Space::Registers, Fill::Zero, "0"), view(dQ_acc, bh).rows(q0, rows));
    });

    // K/V tile j's loop: from the first Q tile that sees K_j.
    auto q_tiles_of = [&](std::int64_t j) { return q_loop(0, 1, Tr, Br, j * Bc, std::min(Bc, Nk - j * Bc), N, Nk, p.causal); };
    const KernelDesc main = tile_grid({"fa2_backward",
                                       atomic ? "one block per K/V tile; loop over Q tiles; dK, dV written once, dQ added atomically"
                                              : "one block per K/V tile; loop over Q tiles; dK, dV written once (dQ: its own kernel)",
                                       Tc, BH, cfg.warps}, Tc, p.causal, [&](std::int64_t j) {
                                           const QLoop q = q_tiles_of(j);
                                           return loop_shape(q.begin, Tr, q.cuts);
                                       });
    x.launch(main, [&](Block& b, std::int64_t bh, std::int64_t j) {
        const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
        Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j");
        Tile Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "V_j");
        Tile dKj = b.alloc(cols, d, Space::Registers, Fill::Zero, "dK_j");
        Tile dVj = b.alloc(cols, d, Space::Registers, Fill::Zero, "dV_j");
        const QLoop q = q_tiles_of(j);
        for_each_run(b, q.begin, Tr, q.cuts, [&](std::int64_t i) {
            const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
            Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
            Tile dOi = b.load(view(dO, bh).rows(q0, rows), Space::Shared, "dO_i");
            Tile lse = b.load(view(LSE, bh).tile(0, 1, q0, rows), Space::Registers, "LSE_i");
            Tile Di = b.load(view(D, bh).tile(0, 1, q0, rows), Space::Registers, "D_i");

            Tile Ps, dSs;  // P and dS staged in shared memory; their register copies die with the scope
            {
                Tile P = recompute_P(b, Qi, Kj, lse, q0, k0, p, Split::Cols);
                Ps = b.stage(P, Space::Shared, e, "P_ij (shared)");
                b.barrier();  // every warp's keys of P in place
                b.matmul(dVj, Ps, dOi, {.transpose_a = true, .accumulate = true});  // dV_j += Pᵀ dO_i
                Tile dS = gradient_of_scores(b, dOi, Vj, Di, P, Split::Cols, false);
                dSs = b.stage(dS, Space::Shared, e, "dS_ij (shared)");
            }
            b.barrier();
            b.matmul(dKj, dSs, Qi, {.transpose_a = true, .accumulate = true});  // dK_j += dSᵀ Q_i (scaled at the end)
            if (atomic) {
                Tile dQi = b.alloc(rows, d, Space::Registers, Fill::Zero, "dQ_i (part)");
                b.matmul(dQi, dSs, Kj, {});  // dS K_j
                b.map(dQi, Fn::mul, {dQi, scale});
                b.store(dQi, view(dQ_acc, bh).rows(q0, rows), StoreMode::atomic_add);
            }
            b.barrier();  // all warps done with P and dS before the next Q tile overwrites them
        });
        b.map(dKj, Fn::mul, {dKj, scale});
        b.store(dKj, view(grads.dK_parts, bh).rows(k0, cols));
        b.store(dVj, view(grads.dV_parts, bh).rows(k0, cols));
    });

    if (atomic) {
        const KernelDesc convert{"fa2_bwd_convert_dq", "dQ = dQ_acc in the storage dtype", Tr, BH, cfg.warps,
                                 run_starts(Tr, {Tr - 1})};
        x.launch(convert, [&](Block& b, std::int64_t bh, std::int64_t i) {
            const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
            Tile acc = b.load(view(dQ_acc, bh).rows(q0, rows), Space::Registers, "dQ_acc_i");
            b.store(acc, view(dQ, bh).rows(q0, rows));
        });
        sum_kv_gradient_groups(x, p, grads, "fa2_bwd_sum_groups");  // last, as mha_bwd's at::sum_out
        return;
    }

    // --dq separate: one block per Q tile, its warps splitting the rows (split-Q, as the forward: no
    // exchange), loops over the K/V tiles its rows see; dQ_i summed in registers and written once.
    const KernelDesc dq_kernel = tile_grid({"fa2_bwd_dq", "one block per Q tile; loop over K/V tiles, S, P, dP recomputed; dQ written once",
                                            Tr, BH, cfg.warps}, Tr, p.causal,
                                           [&](std::int64_t i) { return kv_loop_shape(i, Br, Bc, N, Nk, p.causal); });
    x.launch(dq_kernel, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
        Tile dOi = b.load(view(dO, bh).rows(q0, rows), Space::Shared, "dO_i");
        Tile lse = b.load(view(LSE, bh).tile(0, 1, q0, rows), Space::Registers, "LSE_i");
        Tile Di = b.load(view(D, bh).tile(0, 1, q0, rows), Space::Registers, "D_i");
        Tile dQi = b.alloc(rows, d, Space::Registers, Fill::Zero, "dQ_i");
        const KvTileRange kv = visible_kv_tiles(q0, rows, Bc, N, Nk, p.causal);
        for_each_run(b, kv.begin, kv.end, kv_loop_cuts(q0, kv.begin, kv.end, Bc, N, Nk, p.causal), [&](std::int64_t j) {
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j");
            Tile Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "V_j");
            {
                Tile P = recompute_P(b, Qi, Kj, lse, q0, k0, p, Split::Rows);
                Tile dS = gradient_of_scores(b, dOi, Vj, Di, P, Split::Rows, true);
                b.matmul(dQi, dS, Kj, {.accumulate = true});  // dQ_i += dS K_j (scaled at the end)
            }
            b.barrier();  // all warps done with K_j, V_j before the next ones overwrite them
        });
        b.map(dQi, Fn::mul, {dQi, scale});
        b.store(dQi, view(dQ, bh).rows(q0, rows));
    });
    sum_kv_gradient_groups(x, p, grads, "fa2_bwd_sum_groups");
}

// K_j, V_j, Q_i and dO_i, and P and dS staged in the storage dtype (the main kernel; the separate dQ
// kernel holds the four tiles only).
std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig&) {
    const std::int64_t d = p.d, e = p.elem_bytes();
    return (2 * Bc + 2 * Br) * d * e + 2 * Br * Bc * e;
}

// FlashAttention-2's backward tiles for d <= 64: 128 x 128; d <= 128: 64 x 128 (K/V tiles of 128 keys);
// larger d: 64 x 64; halved, Br first, until they fit.
TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c;
    c.matmul = req.matmul;
    c.dq = req.dq;
    c.warps = req.warps > 0 ? req.warps : 8;  // the official backward kernels run 8 warps per block
    const std::int64_t d = p.d, limit = gpu.smem_per_block_bytes;
    auto fits = [&](std::int64_t Br, std::int64_t Bc) { return smem_bytes(p, Br, Bc, c) <= limit; };
    std::int64_t Br = d <= 64 ? 128 : 64;
    std::int64_t Bc = d <= 128 ? 128 : 64;
    c.reasons.push_back("flash-attention 2 backward defaults for d=" + std::to_string(d) + ": Br = " + std::to_string(Br) +
                        ", Bc = " + std::to_string(Bc) + ", " + std::to_string(c.warps) + " warps");
    if (req.Br || req.Bc) {
        Br = req.Br.value_or(Br);
        Bc = req.Bc.value_or(Bc);
        if (!fits(Br, Bc)) reject_user_tiles("fa2_bwd", p, gpu, Br, Bc, smem_bytes(p, Br, Bc, c));
        c.reasons.push_back(tiles_given_text(req, Br, Bc));
    } else if (!fits(Br, Bc)) {
        const std::int64_t need = smem_bytes(p, Br, Bc, c);
        while (!fits(Br, Bc) && (Br > 16 || Bc > 16)) {
            if (Br >= Bc && Br > 16) Br /= 2;
            else Bc /= 2;
        }
        c.reasons.push_back("K, V, Q, dO tiles and the staged P and dS need " + std::to_string(need) + " B > " +
                            std::to_string(limit) + " B of shared memory: halved to Br = " + std::to_string(Br) +
                            ", Bc = " + std::to_string(Bc));
    }
    c.Br = Br;
    c.Bc = Bc;
    c.reasons.push_back(c.dq == DqMode::atomic
                            ? "dQ summed over the K/V blocks with fp32 atomic adds, then converted (the official kernels; --dq)"
                            : "dQ in a kernel of its own: one block per Q tile, S, P and dP recomputed, no atomics (--dq separate)");
    return c;
}

// Per head, atomic dQ: the preprocessing reads dO and O and writes D (fp32) and the zeroed fp32 dQ_acc;
// the main kernel reads K and V once and, for each of the Tc K/V blocks, all of Q, dO, LSE and D, and
// adds its part of dQ (fp32) atomically; it writes dK and dV once; the conversion reads dQ_acc and
// writes dQ. Separate dQ: the preprocessing writes D only, the main kernel adds nothing to dQ, and the dQ
// kernel reads Q, dO, LSE and D once and K and V once per Q tile (Tr times) and writes dQ once.
// Grouped K/V heads: every query head's blocks read their group's K and V as above and write their dK,
// dV parts; the sum reads every part once (2·Nk·d·e per query head) and writes dK, dV once per K/V head.
ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, BH = p.batch_heads();
    const std::int64_t d = p.d, e = p.elem_bytes();
    const Count Tr = ceil_div(p.N, t.Br), Tc = ceil_div(p.Nk, t.Bc);
    ClosedForm f;
    if (p.causal) return f;
    const Count dkdv_read = 2 * N * d * e + 2 * Nk * d * e + Tc * (2 * N * d * e + 2 * N * 4);
    const Count dkdv_write = N * 4 + 2 * Nk * d * e;
    const double n = static_cast<double>(N), nk = static_cast<double>(Nk), de = static_cast<double>(d * e);
    const std::string per_kv = Nk == N ? "(N/Bc)" : "(Nk/Bc)";
    if (t.dq == DqMode::atomic) {
        f.hbm = ClosedForm::Bytes{BH * (dkdv_read + N * d * 4), BH * (dkdv_write + N * d * 4 + Tc * N * d * 4 + N * d * e)};
        f.matmul_flops = 10 * BH * N * Nk * d;
        f.leading_hbm_bytes = nk / static_cast<double>(t.Bc) * n * static_cast<double>(d * (2 * e + 4) + 8) *
                              static_cast<double>(BH);
        f.leading_text = "FA2 backward " + per_kv + "\u00B7N\u00B7(2d\u00B7e + 4d + 8)\u00B7B\u00B7H with Bc=" +
                         std::to_string(t.Bc) + " (Q, dO, LSE and D read and dQ added in fp32 once per K/V block)";
    } else {
        f.hbm = ClosedForm::Bytes{BH * (dkdv_read + 2 * N * d * e + 2 * N * 4 + Tr * 2 * Nk * d * e), BH * (dkdv_write + N * d * e)};
        f.matmul_flops = 14 * BH * N * Nk * d;
        f.leading_hbm_bytes = (nk / static_cast<double>(t.Bc) * n * (2 * de + 8) + n / static_cast<double>(t.Br) * nk * 2 * de) *
                              static_cast<double>(BH);
        f.leading_text = "FA2 backward, separate dQ: " + per_kv + "\u00B7N\u00B7(2d\u00B7e + 8) + (N/Br)\u00B7" +
                         (Nk == N ? "N" : "Nk") + "\u00B72d\u00B7e, \u00B7B\u00B7H, with Br=" + std::to_string(t.Br) +
                         ", Bc=" + std::to_string(t.Bc) + " (Q, dO, LSE, D once per K/V block; K, V once per Q tile)";
    }
    const ClosedForm::Bytes groups = kv_gradient_group_bytes(p);
    f.hbm->read += groups.read;
    f.hbm->write += groups.write;
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {  // the dQ kernel visits every pair again
    return Count(t.dq == DqMode::separate ? 2 : 1) * p.batch_heads() * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);
}

}  // namespace

const Algorithm& flash_attention_2_backward_algorithm() {
    static const Algorithm a{
        .id = "fa2_bwd",
        .title = "FlashAttention-2 backward (one block per K/V tile, S recomputed, dQ added atomically or in its own kernel)",
        .name = "FlashAttention-2 backward",
        .label = "FA2",
        .family = "fa2",
        .pass = Pass::backward,
        .tunable_tiles = true,
        .grouped_kv = true,
        .dq_modes = true,
        .choose_tiles = choose_tiles,
        .smem_bytes = smem_bytes,
        .program = program,
        .closed_form = closed_form,
        .tile_steps = tile_steps,
        .tile_step_budget = 100'000'000,
        .grid_text = [](const AttentionProblem& p, const TileConfig& t) {
            return " = B\u00B7H \u00D7 \u2308Nk/Bc\u2309 = " + std::to_string(p.batch_heads()) + " \u00D7 " +
                   std::to_string(ceil_div(p.Nk, t.Bc));
        },
    };
    return a;
}

}  // namespace fasim
