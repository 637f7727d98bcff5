# Instructors' solution of the split-KV decoding assignment in Python (docs/assignments/split-kv-decoding.md):
# FlashDecoding as a tile program, line for line course/solutions/flash_decoding.cpp. Graded full marks by
# the course tests (tests/python/test_course.py); not for students.
from fasim.tile import (Fill, Fn, GlobalTensor, KernelDesc, Space, Split, ceil_div, per_row, tile_crosses_diagonal, view,
                        visible_kv_tiles)


def row_layout(p):
    """Which query rows a block's Q tile holds: the query rows of one head, or, with one query row and
    grouped K/V heads, the query heads of one K/V head. Returns (packed, row_heads, rows): row_heads are
    the "heads" the kernels run over (B·H, or B·kv_heads when packed), rows the query rows per row head."""
    if p.N == 1 and p.grouped():
        return True, p.batch_kv_heads(), p.group_size()
    return False, p.batch_heads(), p.N


def program(x, p, cfg):
    packed, BHr, R = row_layout(p)
    Nk, d, e = p.Nk, p.d, p.elem_bytes()
    Br, Bc = cfg.Br, cfg.Bc
    Tr, Tc = ceil_div(R, Br), ceil_div(Nk, Bc)
    S = cfg.kv_splits
    per_split = ceil_div(Tc, S)
    scale = p.softmax_scale()
    # Q and O as the kernels see them: [B·H][N][d], or, packed, [B·kv_heads][group][d] (the same memory).
    Q = x.declare(GlobalTensor("Q", BHr, R, d, e, Br, d))
    K = x.declare(GlobalTensor("K", p.batch_kv_heads(), Nk, d, e, Bc, d))
    V = x.declare(GlobalTensor("V", p.batch_kv_heads(), Nk, d, e, Bc, d))
    O = x.declare(GlobalTensor("O", BHr, R, d, e, Br, d))
    LSE = x.declare(GlobalTensor("LSE", BHr, 1, R, 4, 1, Br, True))
    # The splits' partial results, fp32, split s of row head bh at head index bh·S + s.
    O_part = LSE_part = None
    if S > 1:
        O_part = x.declare(GlobalTensor("O_partial", BHr * S, R, d, 4, Br, d))
        LSE_part = x.declare(GlobalTensor("LSE_partial", BHr * S, 1, R, 4, 1, Br, True))

    def kv_head(bh):
        return bh if packed else p.kv_head_of(bh)

    causal = p.causal and not packed  # one query row sees every key (bottom-right alignment)

    split = KernelDesc("flash_decoding_split",
                       "one block per Q tile and split of the keys; partial O and LSE in fp32" if S > 1
                       else "one block per Q tile (one split: FA2 with the split kernel's tiles)",
                       S * Tr, BHr, cfg.warps)

    def split_block(b, bh, idx):
        s, i = idx // Tr, idx % Tr
        q0 = i * Br
        rows = min(Br, R - q0)
        visible = visible_kv_tiles(q0, rows, Bc, R, Nk, causal)
        first, last = max(visible.begin, s * per_split), min(visible.end, (s + 1) * per_split)
        Oi = b.alloc(rows, d, Space.Registers, Fill.Zero, "O_i")
        mi = b.alloc_statistic(rows, Space.Registers, Fill.NegInf, "m_i")
        li = b.alloc_statistic(rows, Space.Registers, Fill.Zero, "l_i")
        if first < last:
            Qi = b.load(view(Q, bh).rows(q0, rows), Space.Shared, "Q_i")
            for j in range(first, last):
                k0 = j * Bc
                cols = min(Bc, Nk - k0)
                Kj = b.load(view(K, kv_head(bh)).rows(k0, cols), Space.Shared, "K_j")
                Vj = b.load(view(V, kv_head(bh)).rows(k0, cols), Space.Shared, "V_j")
                Sij = b.alloc(rows, cols, Space.Registers, Fill.Zero, "S_ij")
                b.matmul(Sij, Qi, Kj, transpose_b=True, split=Split.Rows)
                if tile_crosses_diagonal(q0, k0, cols, R, Nk, causal):
                    b.mask(Sij, q0, k0, R, Nk, causal)
                m_new = b.row_max(Sij, scale, "m_new")
                b.map(m_new, Fn.max, [m_new, mi])
                alpha = b.alloc_statistic(rows, Space.Registers, Fill.Zero, "alpha")
                b.map(alpha, Fn.exp_diff, [mi, m_new])
                b.map(Sij, Fn.exp_shifted, [Sij, scale, per_row(m_new)])
                rowsum = b.row_sum(Sij, "rowsum")
                b.map(li, Fn.fma, [alpha, li, rowsum])
                b.map(Oi, Fn.mul, [Oi, per_row(alpha)])
                b.round_to_storage(Sij)
                b.matmul(Oi, Sij, Vj, accumulate=True)
                mi = m_new
                b.rename(mi, "m_i")
        # A split that sees no key of these rows leaves O_s = 0 and LSE_s = -inf: it weighs nothing.
        b.map(Oi, Fn.div, [Oi, per_row(li)])
        lse = b.alloc_statistic(rows, Space.Registers, Fill.Zero, "LSE_i")
        b.map(lse, Fn.lse, [mi, li])
        if S == 1:
            b.store(Oi, view(O, bh).rows(q0, rows))
            b.store(lse, view(LSE, bh).tile(0, 1, q0, rows))
        else:
            b.store(Oi, view(O_part, bh * S + s).rows(q0, rows))
            b.store(lse, view(LSE_part, bh * S + s).tile(0, 1, q0, rows))

    x.launch(split, split_block)
    if S == 1:
        return

    # One block per query row (its warps share the splits): with few rows and many splits a block per
    # Q tile would leave the combine on a handful of SMs (MQA: one block for 32 rows x 128 splits).
    combine = KernelDesc("flash_decoding_combine",
                         "one block per row: LSE = log sum_s exp(LSE_s); O = sum_s exp(LSE_s - LSE) O_s", R, BHr, cfg.warps)

    def combine_block(b, bh, q0):
        rows = 1
        lse_s = [b.load(view(LSE_part, bh * S + s).tile(0, 1, q0, rows), Space.Registers, f"LSE_{s}") for s in range(S)]
        m = b.alloc_statistic(rows, Space.Registers, Fill.NegInf, "LSE_max")
        for t in lse_s:
            b.map(m, Fn.max, [m, t])
        total = b.alloc_statistic(rows, Space.Registers, Fill.Zero, "sum")
        for s in range(S):
            w = b.alloc_statistic(rows, Space.Registers, Fill.Zero, f"exp(LSE_{s} - max)")
            b.map(w, Fn.exp_diff, [lse_s[s], m])
            b.map(total, Fn.add, [total, w])
        lse = b.alloc_statistic(rows, Space.Registers, Fill.Zero, "LSE_i")
        b.map(lse, Fn.lse, [m, total])
        Oi = b.alloc(rows, d, Space.Registers, Fill.Zero, "O_i")
        for s in range(S):
            w = b.alloc_statistic(rows, Space.Registers, Fill.Zero, f"exp(LSE_{s} - LSE)")
            b.map(w, Fn.exp_diff, [lse_s[s], lse])
            Os = b.load(view(O_part, bh * S + s).rows(q0, rows), Space.Registers, f"O_{s}")
            b.map(Oi, Fn.fma, [per_row(w), Os, Oi])  # O += exp(LSE_s − LSE) · O_s
        b.store(Oi, view(O, bh).rows(q0, rows))
        b.store(lse, view(LSE, bh).tile(0, 1, q0, rows))

    x.launch(combine, combine_block)


FASIM_SUBMISSION = ("flash_decoding", program)
