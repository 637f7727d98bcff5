// FlashAttention backward (Dao et al., 2022, Algorithm 4), as a tile program.
//
// The forward kept O and the row statistics m and ℓ; the backward recomputes S = Q Kᵀ and
// P = diag(ℓ)⁻¹ exp(scale·S − m) tile by tile:
//  - an init kernel clears dQ in HBM (in fp32 for 16-bit storage, as the forward's running O);
//  - one block per batch·head: outer loop over K/V tiles (line 6), inner loop over Q tiles (line 11):
//    every inner step reads Q_i, O_i, dO_i, ℓ_i, m_i and dQ_i from HBM and writes dQ_i back (lines 11,
//    21): the Tc round trips of dQ are the Θ(N²d²/M) term, as O's are in the forward; dK_j and dV_j
//    stay on chip and are written once per outer step (line 24);
//  - D_i = rowsum(dO_i ∘ O_i) is recomputed on every inner step (line 19);
//  - the 4 warps split the keys ("split-K"), as in the forward: dQ_i = dS K_j sums over keys, so the
//    warps' partial products are exchanged through shared memory.
// The last K/V tile a Q tile sees writes its dQ in the storage dtype.
// Grouped-query attention (--kv-heads): each query head's block reads its group's K/V head and writes its
// dK_j, dV_j parts; a last kernel adds each group's parts (algorithms/group_sums.hpp).
#include <numeric>

#include "algorithms/flash_steps.hpp"
#include "algorithms/group_sums.hpp"
#include "common/errors.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br), Tc = ceil_div(Nk, Bc);
    const double scale = p.softmax_scale();

    const GlobalTensor Q = x.declare({"Q", BH, N, d, e, Br, d});
    const GlobalTensor K = x.declare({"K", p.batch_kv_heads(), Nk, d, e, Bc, d});
    const GlobalTensor V = x.declare({"V", p.batch_kv_heads(), Nk, d, e, Bc, d});
    const GlobalTensor O = x.declare({"O", BH, N, d, e, Br, d});
    const GlobalTensor m = x.declare({"m", BH, 1, N, 4, 1, Br, true});
    const GlobalTensor l = x.declare({"l", BH, 1, N, 4, 1, Br, true});
    const GlobalTensor dO = x.declare({"dO", BH, N, d, e, Br, d});
    const bool separate_acc = e != 4;  // fp32 storage accumulates in dQ itself
    const GlobalTensor dQ_fp32 = separate_acc ? x.declare({"dQ_acc", BH, N, d, 4, Br, d}) : GlobalTensor{};
    const GlobalTensor dQ = x.declare({"dQ", BH, N, d, e, Br, d});
    const GlobalTensor& dQ_acc = separate_acc ? dQ_fp32 : dQ;
    const KvGradients grads = declare_kv_gradients(x, p, Bc, d);  // per query head, summed when grouped

    // The last K/V tile Q tile i sees (causal: the one holding its last row's diagonal); -1: none.
    auto last_kv_tile = [&](std::int64_t q0, std::int64_t rows) -> std::int64_t {
        if (!p.causal) return Tc - 1;
        const std::int64_t last_key = q0 + rows - 1 + (Nk - N);
        return last_key < 0 ? -1 : std::min(Tc - 1, last_key / Bc);
    };

    // Alike but the ragged last Q tile, and (causal, fp16/bf16) the tiles no key is visible to, which
    // also clear dQ.
    const std::int64_t first_seeing = first_where(0, Tr, [&](std::int64_t i) {
        return last_kv_tile(i * Br, std::min(Br, N - i * Br)) >= 0;
    });
    const KernelDesc init{"fa1_bwd_init", "line 5: write dQ = 0 to HBM", Tr, BH, cfg.warps,
                          run_starts(Tr, {first_seeing, Tr - 1})};
    x.launch(init, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        b.store(b.alloc(rows, d, Space::Registers, Fill::Zero, "dQ_i"), view(dQ_acc, bh).rows(q0, rows));
        if (separate_acc && last_kv_tile(q0, rows) < 0)  // rows no key is visible to: dQ = 0
            b.store(b.alloc(rows, d, Space::Registers, Fill::Zero, "dQ_i"), view(dQ, bh).rows(q0, rows));
    });

    const KernelDesc kernel{"fa1_backward", "one block per batch*head; outer loop K/V tiles, inner loop Q tiles", 1, BH,
                            cfg.warps};
    x.launch(kernel, [&](Block& b, std::int64_t bh, std::int64_t) {
        const std::int64_t last_j = last_kv_tile((Tr - 1) * Br, N - (Tr - 1) * Br);
        // Line 10, the Q tiles that see K_j, in runs of alike steps; causal, those for which K_j is the
        // last K/V tile (they write dQ) are a run of their own.
        auto q_tiles_of = [&](std::int64_t j) {
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            QLoop q = q_loop(0, 1, Tr, Br, k0, cols, N, Nk, p.causal);
            auto last_for = [&](std::int64_t i) { return last_kv_tile(i * Br, std::min(Br, N - i * Br)); };
            q.cuts.push_back(first_where(q.begin, Tr, [&](std::int64_t i) { return last_for(i) >= j; }));
            q.cuts.push_back(first_where(q.begin, Tr, [&](std::int64_t i) { return last_for(i) > j; }));
            return q;
        };
        auto kv_step = [&](std::int64_t j) {  // line 6
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j");  // line 7
            Tile Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "V_j");
            Tile dKj = b.alloc(cols, d, Space::Registers, Fill::Zero, "dK_j");  // line 8
            Tile dVj = b.alloc(cols, d, Space::Registers, Fill::Zero, "dV_j");
            const QLoop q = q_tiles_of(j);  // line 10
            for_each_run(b, q.begin, Tr, q.cuts, [&](std::int64_t i) {
                const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
                Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");  // line 11
                Tile Oi = b.load(view(O, bh).rows(q0, rows), Space::Shared, "O_i");
                Tile dOi = b.load(view(dO, bh).rows(q0, rows), Space::Shared, "dO_i");
                Tile li = b.load(view(l, bh).tile(0, 1, q0, rows), Space::Registers, "l_i");
                Tile mi = b.load(view(m, bh).tile(0, 1, q0, rows), Space::Registers, "m_i");

                Tile Ps, dSs;  // P and dS staged in shared memory; their register copies die with the scope
                {
                    Tile P = b.alloc(rows, cols, Space::Registers, Fill::Zero, "P_ij");  // line 12: S, recomputed
                    b.matmul(P, Qi, Kj, {.transpose_b = true, .split = Split::Cols, .recompute = true});
                    if (tile_crosses_diagonal(q0, k0, cols, N, Nk, p.causal)) b.mask(P, {q0, k0, N, Nk, p.causal});
                    b.map(P, Fn::exp_shifted, {P, scale, per_row(mi)});  // line 14: P = diag(l)^-1 exp(S - m)
                    b.map(P, Fn::div, {P, per_row(li)});
                    b.round_to_storage(P);
                    Ps = b.stage(P, Space::Shared, e, "P_ij (shared)");
                    b.barrier();
                    b.matmul(dVj, Ps, dOi, {.transpose_a = true, .accumulate = true});  // line 16

                    Tile dS = b.alloc(rows, cols, Space::Registers, Fill::Zero, "dS_ij");  // line 17: dP
                    b.matmul(dS, dOi, Vj, {.transpose_b = true, .split = Split::Cols});
                    Tile prod = b.alloc(rows, d, Space::Registers, Fill::Zero, "dO_i*O_i");  // line 19: D_i
                    b.map(prod, Fn::mul, {dOi, Oi});
                    Tile Di = b.row_sum(prod, "D_i");
                    b.map(dS, Fn::sub, {dS, per_row(Di)});  // line 20: dS = P o (dP - D_i)
                    b.map(dS, Fn::mul, {dS, P});
                    b.round_to_storage(dS);
                    dSs = b.stage(dS, Space::Shared, e, "dS_ij (shared)");
                }
                b.barrier();

                Tile dQi = b.alloc(rows, d, Space::Registers, Fill::Zero, "dQ_i (part)");  // line 21
                b.matmul(dQi, dSs, Kj, {.split = Split::Inner});
                b.reduce_across_warps(dQi, Reduce::Sum);
                b.map(dQi, Fn::mul, {dQi, scale});
                const bool last = j == last_kv_tile(q0, rows);
                if (!last || !separate_acc) {
                    b.store(dQi, view(dQ_acc, bh).rows(q0, rows), StoreMode::accumulate);
                } else {  // the sum so far in fp32, plus this part, into dQ in the storage dtype
                    Tile acc = b.load(view(dQ_acc, bh).rows(q0, rows), Space::Registers, "dQ_i");
                    b.map(acc, Fn::add, {acc, dQi});
                    b.store(acc, view(dQ, bh).rows(q0, rows));
                }
                b.matmul(dKj, dSs, Qi, {.transpose_a = true, .accumulate = true});  // line 22
                b.barrier();
            });
            b.map(dKj, Fn::mul, {dKj, scale});
            b.store(dKj, view(grads.dK_parts, bh).rows(k0, cols));  // line 24
            b.store(dVj, view(grads.dV_parts, bh).rows(k0, cols));
        };
        if (p.causal) {
            // Each K/V tile meets its own Q tiles, Bc / Br fewer than the tile before: a whole number of
            // them every `period` K/V tiles.
            const std::int64_t period = Br / std::gcd(Bc, Br);
            for_each_staircase(b, 0, last_j + 1, period, [&](std::int64_t j) {
                const QLoop q = q_tiles_of(j);
                return loop_shape(q.begin, Tr, q.cuts);
            }, kv_step);
        } else {
            for_each_run(b, 0, last_j + 1, {last_j}, kv_step);  // the last writes dQ, and may be ragged
        }
    });
    sum_kv_gradient_groups(x, p, grads, "fa1_bwd_sum_groups");
}

// K_j, V_j, Q_i, O_i, dO_i, P and dS staged in the storage dtype, and the split-K exchange buffer of
// the warps' partial dQ_i (fp32), 16 rows at a time.
std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig& cfg) {
    const std::int64_t d = p.d, e = p.elem_bytes(), W = cfg.warps;
    return (2 * Bc + 3 * Br) * d * e + 2 * Br * Bc * e + W * std::min<std::int64_t>(Br, 16) * d * 4;
}

std::string bytes_text(std::int64_t b) { return std::to_string(b) + " B"; }

// Line 1 of Algorithm 4 (as the forward's): Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d); lowered, the larger first,
// until the backward's tiles fit.
TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c;
    c.matmul = req.matmul;
    const std::int64_t d = p.d, e = p.elem_bytes(), limit = gpu.smem_per_block_bytes;
    auto fits = [&](std::int64_t Br, std::int64_t Bc) { return smem_bytes(p, Br, Bc, c) <= limit; };
    c.M_elements = limit / e;
    const std::int64_t paper_bc = ceil_div(c.M_elements, 4 * d);
    std::int64_t Bc = paper_bc, Br = std::min(paper_bc, d);
    c.reasons.push_back("M = " + bytes_text(limit) + " shared memory per block / " + std::to_string(e) + " B = " +
                        std::to_string(c.M_elements) + " elements");
    c.reasons.push_back("Bc = ceil(M/4d) = " + std::to_string(paper_bc) + ", Br = min(ceil(M/4d), d) = " + std::to_string(Br) +
                        " (Algorithm 4, line 1)");
    if (req.Br || req.Bc) {
        Br = req.Br.value_or(Br);
        Bc = req.Bc.value_or(Bc);
        if (!fits(Br, Bc)) reject_user_tiles("fa1_bwd", p, gpu, Br, Bc, smem_bytes(p, Br, Bc, c));
        c.reasons.push_back(tiles_given_text(req, Br, Bc));
    } else if (!fits(Br, Bc)) {
        const std::int64_t need = smem_bytes(p, Br, Bc, c);
        while (!fits(Br, Bc) && (Br > 1 || Bc > 1)) {
            if (Bc >= Br) --Bc;
            else --Br;
        }
        c.reasons.push_back("the backward's K, V, Q, O, dO tiles, staged P and dS and the split-K buffer need " +
                            bytes_text(need) + " > " + bytes_text(limit) + ": lowered to Br = " + std::to_string(Br) +
                            ", Bc = " + std::to_string(Bc) + ", the largest that fit");
    }
    c.Br = Br;
    c.Bc = Bc;
    return c;
}

// Per head (non-causal): K and V read once; on each of the Tc outer steps Q, O, dO (e bytes), ℓ, m (fp32)
// and the fp32 dQ read, and dQ written back (fp32, the last time in the storage dtype); dK and dV
// written once; the init kernel writes dQ = 0 (fp32).
ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, BH = p.batch_heads();
    const std::int64_t d = p.d, e = p.elem_bytes();
    const Count Tc = ceil_div(p.Nk, t.Bc);
    ClosedForm f;
    if (p.causal) return f;
    f.hbm = ClosedForm::Bytes{BH * (2 * Nk * d * e + Tc * (3 * N * d * e + 2 * N * 4 + N * d * 4)),
                              BH * (N * d * 4 + (Tc - 1) * N * d * 4 + N * d * e + 2 * Nk * d * e)};
    const ClosedForm::Bytes groups = kv_gradient_group_bytes(p);  // grouped K/V heads: the sum of dK, dV parts
    f.hbm->read += groups.read;
    f.hbm->write += groups.write;
    f.matmul_flops = 10 * BH * N * Nk * d;
    f.leading_hbm_bytes = static_cast<double>(Nk) / static_cast<double>(t.Bc) * static_cast<double>(N) *
                          static_cast<double>(3 * d * e + 8 * d + 8) * static_cast<double>(BH);
    f.leading_text = "FA1 backward (" + std::string(Nk == N ? "N" : "Nk") +
                     "/Bc)\u00B7N\u00B7(3d\u00B7e + 8d + 8)\u00B7B\u00B7H with Bc=" + std::to_string(t.Bc) +
                     " (Q, O, dO, \u2113, m read and fp32 dQ read and written once per K/V block: \u221D N\u00B2d\u00B2/M)";
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    return Count(p.batch_heads()) * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);
}

}  // namespace

const Algorithm& flash_attention_1_backward_algorithm() {
    static const Algorithm a{
        .id = "fa1_bwd",
        .title = "FlashAttention-1 backward (Algorithm 4: K/V outer loop, S recomputed, dQ through HBM)",
        .name = "FlashAttention-1 backward",
        .label = "FA1",
        .family = "fa1",
        .pass = Pass::backward,
        .tunable_tiles = true,
        .grouped_kv = true,
        .choose_tiles = choose_tiles,
        .smem_bytes = smem_bytes,
        .program = program,
        .closed_form = closed_form,
        .tile_steps = tile_steps,
        .tile_step_budget = 4'000'000,
        .grid_text = [](const AttentionProblem&, const TileConfig&) {
            return std::string(" = B\u00B7H, one per batch\u00B7head");
        },
    };
    return a;
}

}  // namespace fasim
