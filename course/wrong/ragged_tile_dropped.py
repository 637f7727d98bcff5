# Known-wrong FA2 forward (the grader must reject it), Python twin of course/wrong/ragged_tile_dropped.cpp:
# the tile counts round down (N // Br, Nk // Bc), so when N or Nk is not a multiple of the tile the last,
# ragged Q tile is never computed and the last keys are never seen. Right when the tiles divide N and Nk.
from fasim.tile import (Fill, Fn, KernelDesc, Space, ceil_div, fused_tensors, per_row, view)


def program(x, p, cfg):
    BH, N, Nk, d = p.batch_heads(), p.N, p.Nk, p.d
    Br, Bc = cfg.Br, cfg.Bc
    Tr, Tc = N // Br, Nk // Bc  # (mistake: rounds down)
    scale = p.softmax_scale()
    Q, K, V, O, LSE = fused_tensors(x, p, Br, Bc)

    kernel = KernelDesc("fa2_forward", "one block per Q tile; loop over K/V tiles", Tr, BH, cfg.warps)

    def block(b, bh, i):
        q0 = i * Br
        rows = min(Br, N - q0)
        Qi = b.load(view(Q, bh).rows(q0, rows), Space.Shared, "Q_i")
        Oi = b.alloc(rows, d, Space.Registers, Fill.Zero, "O_i")
        mi = b.alloc_statistic(rows, cfg.scores, Fill.NegInf, "m_i")
        li = b.alloc_statistic(rows, cfg.scores, Fill.Zero, "l_i")

        # Causal, bottom-right aligned: row q sees keys 0 .. q + Nk - N; the block's last row sees the most.
        last_tile = Tc
        if p.causal:
            last_key = q0 + rows - 1 + Nk - N
            last_tile = 0 if last_key < 0 else min(Tc, last_key // Bc + 1)
        for j in range(last_tile):
            k0 = j * Bc
            cols = min(Bc, Nk - k0)
            Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space.Shared, "K_j")
            Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space.Shared, "V_j")
            S = b.alloc(rows, cols, cfg.scores, Fill.Zero, "S_ij")
            b.matmul(S, Qi, Kj, transpose_b=True)
            if p.causal:
                b.mask(S, q0, k0, N, Nk, True)

            m_new = b.row_max(S, scale, "m_new")
            b.map(m_new, Fn.max, [m_new, mi])
            alpha = b.alloc_statistic(rows, cfg.scores, Fill.Zero, "alpha")
            b.map(alpha, Fn.exp_diff, [mi, m_new])
            b.map(S, Fn.exp_shifted, [S, scale, per_row(m_new)])
            rowsum = b.row_sum(S, "rowsum")
            b.map(li, Fn.fma, [alpha, li, rowsum])
            b.map(Oi, Fn.mul, [Oi, per_row(alpha)])
            b.round_to_storage(S)
            b.matmul(Oi, S, Vj, accumulate=True)
            mi = m_new
            b.rename(mi, "m_i")
        b.map(Oi, Fn.div, [Oi, per_row(li)])
        lse = b.alloc_statistic(rows, Space.Registers, Fill.Zero, "LSE_i")
        b.map(lse, Fn.lse, [mi, li])
        b.store(Oi, view(O, bh).rows(q0, rows))
        b.store(lse, view(LSE, bh).tile(0, 1, q0, rows))

    x.launch(kernel, block)


FASIM_SUBMISSION = ("fa2_forward", program)
