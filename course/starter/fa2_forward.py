# Assignment 1: the FlashAttention-2 forward pass as a tile program, in Python
# (docs/assignments/fa2-forward.md; the C++ starter is course/starter/fa2_forward.cpp).
#
# Fill in the four parts marked TODO. The program runs on fa-sim's executors through the Python module:
# the functional one computes with real numbers (fp32 arithmetic, fp16 storage), the counting one counts
# every byte your loads and stores move. Grade it locally (the module built, or pip install .):
#   PYTHONPATH=build/python python3 -m fasim.grade my_fa2_forward.py
#
# The tile API (fasim.tile; help(fasim.tile.Block) documents each method):
#   b.load(view(K, head).rows(k0, cols), Space.Shared, "K_j")   a tile of a global tensor, on chip
#   b.store(tile, view(O, head).rows(q0, rows))                 a tile back to global memory
#   b.alloc(rows, cols, space, Fill.Zero, "name"), b.alloc_statistic(rows, space, fill, "name")
#   b.matmul(C, A, B, transpose_b=True, accumulate=False)       C (+)= A · Bᵀ
#   b.mask(S, q0, k0, N, Nk, causal)     S[i][j] = -inf where key k0 + j is not visible to query q0 + i
#   b.row_max(S, scale, "m"), b.row_sum(S, "l")                 one value per row (rows x 1)
#   b.map(out, Fn.<f>, [args])   element-wise: add, sub, mul, fma (x·y + z), max, div,
#       exp_shifted (exp(y·x - z)), exp_diff (exp(x - y)), lse (x + log y); per_row(v) broadcasts a
#       rows x 1 tile along each row; numbers are operands too
#   b.round_to_storage(P)        P rounded to fp16, as a tensor-core kernel feeds P·V
# Causal masking is bottom-right aligned: query row q sees keys 0 .. q + Nk - N.
# A tile lives only while its block's body runs: keep nothing from one block to the next.
from fasim.tile import (Fill, Fn, KernelDesc, Space, ceil_div, fused_tensors, per_row, view)  # noqa: F401


def program(x, p, cfg):
    BH, N, Nk, d = p.batch_heads(), p.N, p.Nk, p.d
    Br, Bc = cfg.Br, cfg.Bc
    Tr, Tc = ceil_div(N, Br), ceil_div(Nk, Bc)
    scale = p.softmax_scale()  # 1/sqrt(d)  # noqa: F841
    # Q, K, V, O: [heads][rows][d]; LSE: one fp32 value per query row.
    Q, K, V, O, LSE = fused_tensors(x, p, Br, Bc)

    kernel = KernelDesc("fa2_forward", "one block per Q tile; loop over K/V tiles", Tr, BH, cfg.warps)

    def block(b, bh, i):
        q0 = i * Br
        rows = min(Br, N - q0)  # the last Q tile may be ragged
        Qi = b.load(view(Q, bh).rows(q0, rows), Space.Shared, "Q_i")  # noqa: F841
        Oi = b.alloc(rows, d, Space.Registers, Fill.Zero, "O_i")  # noqa: F841
        mi = b.alloc_statistic(rows, cfg.scores, Fill.NegInf, "m_i")  # running row max  # noqa: F841
        li = b.alloc_statistic(rows, cfg.scores, Fill.Zero, "l_i")  # running row sum  # noqa: F841

        # TODO 1: with p.causal, visit only the K/V tiles some row of this Q tile sees.
        last_tile = Tc
        for j in range(last_tile):
            k0 = j * Bc
            cols = min(Bc, Nk - k0)  # noqa: F841
            # TODO 2: load K_j and V_j (K/V head p.kv_head_of(bh)); S = Q_i K_jᵀ; mask S when causal.
            # TODO 3: the online softmax: m_new = max(m_i, rowmax(scale·S)); alpha = exp(m_i - m_new);
            #         P = exp(scale·S - m_new); l_i = alpha·l_i + rowsum(P); O_i = diag(alpha)·O_i + P·V_j;
            #         m_i = m_new.
        # TODO 4: O_i = diag(1/l_i)·O_i; LSE_i = m_i + log(l_i); store O_i and LSE_i
        #         (LSE is [heads][1][N]: view(LSE, bh).tile(0, 1, q0, rows)).

    x.launch(kernel, block)


FASIM_SUBMISSION = ("fa2_forward", program)
