// Assignment 1: the FlashAttention-2 forward pass as a tile program (docs/assignments/fa2-forward.md).
//
// Fill in the four parts marked TODO. The program runs on fa-sim's executors: the functional one
// computes with real numbers (fp32 arithmetic, fp16 storage), the counting one counts every byte your
// loads and stores move. Grade it locally:
//   cmake -S . -B build -DFASIM_SUBMISSION=$PWD/my_fa2_forward.cpp
//   cmake --build build --target fa-grade-submission && build/course/fa-grade-submission
//
// The tile API (sim/tile/tile_program.hpp; the built-in algorithms in sim/algorithms/ use the same):
//   b.load(view(K, head).rows(k0, cols), Space::Shared, "K_j")   a tile of a global tensor, on chip
//   b.store(tile, view(O, head).rows(q0, rows))                  a tile back to global memory
//   b.alloc(rows, cols, space, Fill::Zero, "name"), b.alloc_statistic(rows, space, fill, "name")
//   b.matmul(C, A, B, {.transpose_b = true, .accumulate = false})  C (+)= A · Bᵀ
//   b.mask(S, {q0, k0, N, Nk, causal})    S[i][j] = -inf where key k0 + j is not visible to query q0 + i
//   b.row_max(S, scale, "m"), b.row_sum(S, "l")                   one value per row (rows x 1)
//   b.map(out, Fn::..., {args})   element-wise (sim/tile/elementwise.hpp): add, sub, mul, fma (x·y + z),
//       max, div, exp_shifted (exp(y·x - z)), exp_diff (exp(x - y)), lse (x + log y); per_row(v)
//       broadcasts a rows x 1 tile along each row
//   b.round_to_storage(P)         P rounded to fp16, as a tensor-core kernel feeds P·V
// Causal masking is bottom-right aligned: query row q sees keys 0 .. q + Nk - N.
#include "algorithms/flash_steps.hpp"
#include "submission.hpp"

using namespace fasim;

namespace {

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d;
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br), Tc = ceil_div(Nk, Bc);
    [[maybe_unused]] const double scale = p.softmax_scale();  // 1/sqrt(d)
    // Q, K, V, O: [heads][rows][d]; LSE: one fp32 value per query row.
    [[maybe_unused]] const auto [Q, K, V, O, LSE] = fused_tensors(x, p, Br, Bc);

    const KernelDesc kernel{"fa2_forward", "one block per Q tile; loop over K/V tiles", Tr, BH, cfg.warps};
    x.launch(kernel, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);  // the last Q tile may be ragged
        Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");
        Tile Oi = b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i");
        Tile mi = b.alloc_statistic(rows, cfg.scores, Fill::NegInf, "m_i");  // running row max
        Tile li = b.alloc_statistic(rows, cfg.scores, Fill::Zero, "l_i");    // running row sum

        // TODO 1: with p.causal, visit only the K/V tiles some row of this Q tile sees.
        const std::int64_t last_tile = Tc;
        for (std::int64_t j = 0; j < last_tile; ++j) {
            [[maybe_unused]] const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            // TODO 2: load K_j and V_j (K/V head p.kv_head_of(bh)); S = Q_i K_jᵀ; mask S when causal.
            // TODO 3: the online softmax: m_new = max(m_i, rowmax(scale·S)); alpha = exp(m_i - m_new);
            //         P = exp(scale·S - m_new); l_i = alpha·l_i + rowsum(P); O_i = diag(alpha)·O_i + P·V_j;
            //         m_i = m_new.
        }
        // TODO 4: O_i = diag(1/l_i)·O_i; LSE_i = m_i + log(l_i); store O_i and LSE_i
        //         (LSE is [heads][1][N]: view(LSE, bh).tile(0, 1, q0, rows)).
    });
}

}  // namespace

FASIM_SUBMISSION("fa2_forward", program)
