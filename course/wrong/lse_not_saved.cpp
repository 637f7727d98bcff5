// Known-wrong FA2 forward (the grader must reject it): O is right, but LSE, which the backward needs, is
// computed and never stored.
#include "algorithms/flash_steps.hpp"
#include "submission.hpp"

using namespace fasim;

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d;
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br), Tc = ceil_div(Nk, Bc);
    const double scale = p.softmax_scale();
    const auto [Q, K, V, O, LSE] = fused_tensors(x, p, Br, Bc);

    const KernelDesc kernel{"fa2_forward", "one block per Q tile; loop over K/V tiles", Tr, BH, cfg.warps};
    x.launch(kernel, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
        Tile Oi = b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i");
        Tile mi = b.alloc_statistic(rows, cfg.scores, Fill::NegInf, "m_i");
        Tile li = b.alloc_statistic(rows, cfg.scores, Fill::Zero, "l_i");

        // Causal, bottom-right aligned: row q sees keys 0 .. q + Nk - N; the block's last row sees the most.
        std::int64_t last_tile = Tc;
        if (p.causal) {
            const std::int64_t last_key = q0 + rows - 1 + Nk - N;
            last_tile = last_key < 0 ? 0 : std::min(Tc, last_key / Bc + 1);
        }
        for (std::int64_t j = 0; j < last_tile; ++j) {
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j");
            Tile Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "V_j");
            Tile S = b.alloc(rows, cols, cfg.scores, Fill::Zero, "S_ij");
            b.matmul(S, Qi, Kj, {.transpose_b = true});
            if (p.causal) b.mask(S, {q0, k0, N, Nk, true});

            Tile m_new = b.row_max(S, scale, "m_new");
            b.map(m_new, Fn::max, {m_new, mi});
            Tile alpha = b.alloc_statistic(rows, cfg.scores, Fill::Zero, "alpha");
            b.map(alpha, Fn::exp_diff, {mi, m_new});
            b.map(S, Fn::exp_shifted, {S, scale, per_row(m_new)});
            Tile rowsum = b.row_sum(S, "rowsum");
            b.map(li, Fn::fma, {alpha, li, rowsum});
            b.map(Oi, Fn::mul, {Oi, per_row(alpha)});
            b.round_to_storage(S);
            b.matmul(Oi, S, Vj, {.accumulate = true});
            mi = std::move(m_new);
        }
        b.map(Oi, Fn::div, {Oi, per_row(li)});
        Tile lse = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "LSE_i");
        b.map(lse, Fn::lse, {mi, li});
        b.store(Oi, view(O, bh).rows(q0, rows));
        // (mistake: LSE_i is never stored)
    });
}

}  // namespace

FASIM_SUBMISSION("fa2_forward", program)
