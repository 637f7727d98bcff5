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
// The warps split the keys for S and dP; P and dS go through shared memory so that every warp can read
// them transposed for dV and dK ("some synchronization is necessary", the paper says of the backward).
// Five products per tile pair where the forward has two: 10·N·Nk·d matmul FLOPs per head, 2·N·Nk·d of
// them recomputing S.
#include "algorithms/flash_steps.hpp"

namespace fasim {

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br), Tc = ceil_div(Nk, Bc);
    const double scale = p.softmax_scale();
    const auto [Q, K, V, O, LSE] = fused_tensors(x, p, Br, Bc);
    const GlobalTensor dO = x.declare({"dO", BH, N, d, e, Br, d});
    const GlobalTensor D = x.declare({"D", BH, 1, N, 4, 1, Br, true});
    const GlobalTensor dQ_acc = x.declare({"dQ_acc", BH, N, d, 4, Br, d});
    const GlobalTensor dQ = x.declare({"dQ", BH, N, d, e, Br, d});
    const GlobalTensor dK = x.declare({"dK", BH, Nk, d, e, Bc, d});
    const GlobalTensor dV = x.declare({"dV", BH, Nk, d, e, Bc, d});

    const KernelDesc preprocess{"fa2_bwd_preprocess", "D = rowsum(dO * O) per Q tile; dQ_acc = 0", Tr, BH, cfg.warps};
    x.launch(preprocess, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        Tile dOi = b.load(view(dO, bh).rows(q0, rows), Space::Registers, "dO_i");
        Tile Oi = b.load(view(O, bh).rows(q0, rows), Space::Registers, "O_i");
        b.map(dOi, Fn::mul, {dOi, Oi});
        Tile Di = b.row_sum(dOi, "D_i");
        b.store(Di, view(D, bh).tile(0, 1, q0, rows));
        b.store(b.alloc(rows, d, Space::Registers, Fill::Zero, "0"), view(dQ_acc, bh).rows(q0, rows));
    });

    const KernelDesc main{"fa2_backward",
                          "one block per K/V tile; loop over Q tiles; dK, dV written once, dQ added atomically", Tc, BH,
                          cfg.warps};
    x.launch(main, [&](Block& b, std::int64_t bh, std::int64_t j) {
        const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
        Tile Kj = b.load(view(K, bh).rows(k0, cols), Space::Shared, "K_j");
        Tile Vj = b.load(view(V, bh).rows(k0, cols), Space::Shared, "V_j");
        Tile dKj = b.alloc(cols, d, Space::Registers, Fill::Zero, "dK_j");
        Tile dVj = b.alloc(cols, d, Space::Registers, Fill::Zero, "dV_j");
        for (std::int64_t i = 0; i < Tr; ++i) {
            const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
            if (tile_fully_masked(q0, rows, k0, N, Nk, p.causal)) continue;  // no row of Q_i sees K_j
            Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
            Tile dOi = b.load(view(dO, bh).rows(q0, rows), Space::Shared, "dO_i");
            Tile lse = b.load(view(LSE, bh).tile(0, 1, q0, rows), Space::Registers, "LSE_i");
            Tile Di = b.load(view(D, bh).tile(0, 1, q0, rows), Space::Registers, "D_i");

            Tile Ps, dSs;  // P and dS staged in shared memory; their register copies die with the scope
            {
                Tile P = b.alloc(rows, cols, Space::Registers, Fill::Zero, "P_ij");  // S, recomputed
                b.matmul(P, Qi, Kj, {.transpose_b = true, .split = Split::Cols, .recompute = true});
                if (tile_crosses_diagonal(q0, k0, cols, N, Nk, p.causal)) b.mask(P, {q0, k0, N, Nk, p.causal});
                b.map(P, Fn::exp_shifted, {P, scale, per_row(lse)});  // P = exp(scale·S − LSE): normalised already
                b.round_to_storage(P);
                Ps = b.stage(P, Space::Shared, e, "P_ij (shared)");
                b.barrier();  // every warp's keys of P in place
                b.matmul(dVj, Ps, dOi, {.transpose_a = true, .accumulate = true});  // dV_j += Pᵀ dO_i

                Tile dS = b.alloc(rows, cols, Space::Registers, Fill::Zero, "dS_ij");  // dP, then dS
                b.matmul(dS, dOi, Vj, {.transpose_b = true, .split = Split::Cols});  // dP = dO_i V_jᵀ
                b.map(dS, Fn::sub, {dS, per_row(Di)});
                b.map(dS, Fn::mul, {dS, P});  // dS = P ∘ (dP − D_i)
                b.round_to_storage(dS);
                dSs = b.stage(dS, Space::Shared, e, "dS_ij (shared)");
            }
            b.barrier();
            b.matmul(dKj, dSs, Qi, {.transpose_a = true, .accumulate = true});  // dK_j += dSᵀ Q_i (scaled at the end)
            Tile dQi = b.alloc(rows, d, Space::Registers, Fill::Zero, "dQ_i (part)");
            b.matmul(dQi, dSs, Kj, {});  // dS K_j
            b.map(dQi, Fn::mul, {dQi, scale});
            b.store(dQi, view(dQ_acc, bh).rows(q0, rows), StoreMode::atomic_add);
            b.barrier();  // all warps done with P and dS before the next Q tile overwrites them
        }
        b.map(dKj, Fn::mul, {dKj, scale});
        b.store(dKj, view(dK, bh).rows(k0, cols));
        b.store(dVj, view(dV, bh).rows(k0, cols));
    });

    const KernelDesc convert{"fa2_bwd_convert_dq", "dQ = dQ_acc in the storage dtype", Tr, BH, cfg.warps};
    x.launch(convert, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        Tile acc = b.load(view(dQ_acc, bh).rows(q0, rows), Space::Registers, "dQ_acc_i");
        b.store(acc, view(dQ, bh).rows(q0, rows));
    });
}

// K_j, V_j, Q_i and dO_i, and P and dS staged in the storage dtype.
std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig&) {
    const std::int64_t d = p.d, e = p.elem_bytes();
    return (2 * Bc + 2 * Br) * d * e + 2 * Br * Bc * e;
}

// FlashAttention-2's backward tiles for d <= 64: 128 x 128; d <= 128: 64 x 128 (K/V tiles of 128 keys);
// larger d: 64 x 64; halved, Br first, until they fit.
TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c;
    c.matmul = req.matmul;
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
    return c;
}

// Per head: the preprocessing reads dO and O and writes D (fp32) and the zeroed fp32 dQ_acc; the main
// kernel reads K and V once and, for each of the Tc K/V blocks, all of Q, dO, LSE and D, and adds its
// part of dQ (fp32) atomically; it writes dK and dV once; the conversion reads dQ_acc and writes dQ.
ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    const std::int64_t N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes(), BH = p.batch_heads();
    const std::int64_t Tc = ceil_div(Nk, t.Bc);
    ClosedForm f;
    if (p.causal) return f;
    f.hbm = ClosedForm::Bytes{BH * (2 * N * d * e + 2 * Nk * d * e + Tc * (2 * N * d * e + 2 * N * 4) + N * d * 4),
                              BH * (N * 4 + N * d * 4 + Tc * N * d * 4 + 2 * Nk * d * e + N * d * e)};
    f.matmul_flops = 10 * BH * N * Nk * d;
    const double n = static_cast<double>(N), nk = static_cast<double>(Nk);
    f.leading_hbm_bytes = nk / static_cast<double>(t.Bc) * n * static_cast<double>(d * (2 * e + 4) + 8) *
                          static_cast<double>(BH);
    f.leading_text = "FA2 backward (" + std::string(Nk == N ? "N" : "Nk") +
                     "/Bc)\u00B7N\u00B7(2d\u00B7e + 4d + 8)\u00B7B\u00B7H with Bc=" + std::to_string(t.Bc) +
                     " (Q, dO, LSE and D read and dQ added in fp32 once per K/V block)";
    return f;
}

std::int64_t tile_steps(const AttentionProblem& p, const TileConfig& t) {
    return p.batch_heads() * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);
}

}  // namespace

const Algorithm& flash_attention_2_backward_algorithm() {
    static const Algorithm a{
        .id = "fa2_bwd",
        .title = "FlashAttention-2 backward (one block per K/V tile, S recomputed, dQ added atomically)",
        .name = "FlashAttention-2 backward",
        .label = "FA2",
        .family = "fa2",
        .pass = Pass::backward,
        .tunable_tiles = true,
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
