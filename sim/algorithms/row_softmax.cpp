#include "algorithms/row_softmax.hpp"

#include <algorithm>
#include <vector>

#include "algorithms/causal.hpp"

namespace fasim {

void launch_row_softmax(Executor& x, const AttentionProblem& p, const RowSoftmax& k) {
    const std::int64_t N = p.N, Nk = p.Nk, chunk = k.chunk, chunks = ceil_div(Nk, chunk);
    const bool causal = k.causal_mask && p.causal;
    const GlobalTensor &S = k.S, &P = k.P;
    // The chunks a row's passes read: alike but from the first one past the row's diagonal on (masked)
    // and the ragged last.
    auto first_masked_chunk = [&](std::int64_t row) {
        return first_where(0, chunks, [&](std::int64_t c) {
            return tile_crosses_diagonal(row, c * chunk, std::min(chunk, Nk - c * chunk), N, Nk, causal);
        });
    };
    auto chunk_cuts = [&](std::int64_t row) { return std::vector<std::int64_t>{first_masked_chunk(row), chunks - 1}; };
    // Rows do alike work; causal rows cut in chunks do alike work while their diagonal stays in one chunk
    // (the mask costs the same wherever it falls in the chunk): a run per chunk the diagonal enters.
    std::vector<std::int64_t> row_changes;
    if (causal && chunk < Nk) change_points(0, N - 1, first_masked_chunk, row_changes);
    const KernelDesc softmax{"softmax", chunk >= Nk ? "one block per row: read S once, write P"
                                                    : "one block per row (row exceeds SRAM): read S twice, write P",
                             N, S.heads, k.warps, run_starts(N, row_changes)};
    x.launch(softmax, [&](Block& b, std::int64_t bh, std::int64_t row) {
        if (chunk >= Nk) {
            Tile s = b.load(view(S, bh).tile(row, 1, 0, Nk), Space::Shared, "S row");
            if (causal) b.mask(s, {row, 0, N, Nk, true});
            Tile m = b.row_max(s, 1.0, "row max");
            b.map(s, Fn::exp_shifted, {s, 1.0, per_row(m)});
            Tile l = b.row_sum(s, "row sum");
            b.map(s, Fn::div, {s, per_row(l)});
            b.store(s, view(P, bh).tile(row, 1, 0, Nk));
            return;
        }
        // The row does not fit in shared memory: pass 1 keeps a running max and sum
        // over chunks, pass 2 reads the chunks again and writes P.
        Tile m = b.alloc_statistic(1, Space::Registers, Fill::NegInf, "row max");
        Tile l = b.alloc_statistic(1, Space::Registers, Fill::Zero, "row sum");
        const std::vector<std::int64_t> cuts = chunk_cuts(row);
        for_each_run(b, 0, chunks, cuts, [&](std::int64_t c) {
            const std::int64_t c0 = c * chunk, cols = std::min(chunk, Nk - c0);
            Tile s = b.load(view(S, bh).tile(row, 1, c0, cols), Space::Shared, "S chunk (pass 1)");
            if (tile_crosses_diagonal(row, c0, cols, N, Nk, causal)) b.mask(s, {row, c0, N, Nk, true});
            Tile m_new = b.row_max(s, 1.0, "m_new");
            b.map(m_new, Fn::max, {m_new, m});
            Tile alpha = b.alloc_statistic(1, Space::Registers, Fill::Zero, "alpha");
            b.map(alpha, Fn::exp_diff, {m, m_new});
            b.map(s, Fn::exp_shifted, {s, 1.0, per_row(m_new)});
            Tile rs = b.row_sum(s, "chunk sum");
            b.map(l, Fn::fma, {alpha, l, rs});
            m = std::move(m_new);
        });
        for_each_run(b, 0, chunks, cuts, [&](std::int64_t c) {
            const std::int64_t c0 = c * chunk, cols = std::min(chunk, Nk - c0);
            Tile s = b.load(view(S, bh).tile(row, 1, c0, cols), Space::Shared, "S chunk (pass 2)");
            if (tile_crosses_diagonal(row, c0, cols, N, Nk, causal)) b.mask(s, {row, c0, N, Nk, true});
            b.map(s, Fn::exp_shifted, {s, 1.0, per_row(m)});
            b.map(s, Fn::div, {s, per_row(l)});
            b.store(s, view(P, bh).tile(row, 1, c0, cols));
        });
    });
}

void launch_row_softmax_backward(Executor& x, const AttentionProblem& p, const RowSoftmaxBackward& k) {
    const std::int64_t N = p.N, Nk = p.Nk, chunk = k.chunk, chunks = ceil_div(Nk, chunk);
    const GlobalTensor &P = k.P, &dP = k.dP, &dS = k.dS;
    const KernelDesc softmax_bwd{"softmax_bwd", chunk >= Nk ? "one block per row: read P and dP once, write dS"
                                                            : "one block per row (rows exceed SRAM): read P and dP twice, write dS",
                                 N, P.heads, k.warps, run_starts(N, {})};
    x.launch(softmax_bwd, [&](Block& b, std::int64_t bh, std::int64_t row) {
        Tile D = b.alloc_statistic(1, Space::Registers, Fill::Zero, "D");
        if (chunk < Nk) {  // pass 1: D over the chunks (alike but the ragged last)
            for_each_run(b, 0, chunks, {chunks - 1}, [&](std::int64_t c) {
                const std::int64_t c0 = c * chunk, cols = std::min(chunk, Nk - c0);
                Tile pr = b.load(view(P, bh).tile(row, 1, c0, cols), Space::Shared, "P chunk (pass 1)");
                Tile dpr = b.load(view(dP, bh).tile(row, 1, c0, cols), Space::Shared, "dP chunk (pass 1)");
                b.map(dpr, Fn::mul, {dpr, pr});
                Tile part = b.row_sum(dpr, "chunk sum");
                b.map(D, Fn::add, {D, part});
            });
        }
        for_each_run(b, 0, std::max<std::int64_t>(chunks, 1), {chunks - 1}, [&](std::int64_t c) {
            const std::int64_t c0 = c * std::min(chunk, Nk), cols = std::min(chunk, Nk - c0);
            Tile pr = b.load(view(P, bh).tile(row, 1, c0, cols), Space::Shared, chunk >= Nk ? "P row" : "P chunk (pass 2)");
            Tile dpr = b.load(view(dP, bh).tile(row, 1, c0, cols), Space::Shared, chunk >= Nk ? "dP row" : "dP chunk (pass 2)");
            if (chunk >= Nk) {
                Tile prod = b.alloc(1, cols, Space::Shared, Fill::Zero, "P*dP");
                b.map(prod, Fn::mul, {pr, dpr});
                Tile sum = b.row_sum(prod, "D");
                D = std::move(sum);
            }
            b.map(dpr, Fn::sub, {dpr, per_row(D)});
            b.map(dpr, Fn::mul, {dpr, pr});
            b.store(dpr, view(dS, bh).tile(row, 1, c0, cols));
        });
    });
}

}  // namespace fasim
