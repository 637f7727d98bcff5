// Assignment 2: the FlashAttention-2 backward pass as a tile program (docs/assignments/fa2-backward.md).
//
// The grader runs fa-sim's FA2 forward first: O and LSE are in global memory when your program starts,
// as are Q, K, V and the output gradient dO. The first and last kernels (D = rowsum(dO o O), and dQ
// converted from its fp32 accumulator) are given; fill in the part marked TODO in the main kernel.
// The tile API is listed at the top of course/starter/fa2_forward.cpp. Grade it locally:
//   cmake -S . -B build -DFASIM_SUBMISSION=$PWD/my_fa2_backward.cpp
//   cmake --build build --target fa-grade-submission && build/course/fa-grade-submission
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

            // TODO: with LSE_i and D_i loaded, this Q tile's share of the gradients:
            //   S = Q_i K_jᵀ (recomputed: Product{.transpose_b = true, .recompute = true}), masked when causal;
            //   P = exp(scale·S - LSE_i) (Fn::exp_shifted with per_row(lse): normalised already);
            //   dV_j += Pᵀ dO_i;  dP = dO_i V_jᵀ;  dS = P o (dP - D_i);
            //   dK_j += dSᵀ Q_i (scaled once, after the loop);  dQ_i = scale · dS K_j, added to dQ_acc with
            //   StoreMode::atomic_add (other K/V blocks add theirs).
            // P and dS are read transposed by every warp: stage them in shared memory (b.stage) between
            // b.barrier() calls, as a GPU kernel must.
            (void)Qi; (void)dOi; (void)lse; (void)Di; (void)scale;
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
