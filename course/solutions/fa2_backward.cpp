// Instructors' solution of the FA2 backward assignment (docs/assignments/fa2-backward.md): FlashAttention-2's
// Algorithm 2 as a tile program (the grader runs the reference forward first, for O and LSE). Graded
// full marks by the course tests; not for students.
#include "algorithms/flash_steps.hpp"
#include "submission.hpp"

using namespace fasim;

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

}  // namespace

FASIM_SUBMISSION("fa2_backward", program)
