# Assignment 2: the FlashAttention-2 backward pass as a tile program, in Python
# (docs/assignments/fa2-backward.md; the C++ starter is course/starter/fa2_backward.cpp).
#
# The grader runs fa-sim's FA2 forward first: O and LSE are in global memory when your program starts,
# as are Q, K, V and the output gradient dO. The first and last kernels (D = rowsum(dO o O), and dQ
# converted from its fp32 accumulator) are given; fill in the part marked TODO in the main kernel.
# The tile API is listed at the top of course/starter/fa2_forward.py. Grade it locally:
#   PYTHONPATH=build/python python3 -m fasim.grade my_fa2_backward.py
from fasim.tile import (Fill, Fn, GlobalTensor, KernelDesc, Space, Split, StoreMode, ceil_div, fused_tensors,  # noqa: F401
                        per_row, tile_crosses_diagonal, tile_fully_masked, view)


def program(x, p, cfg):
    BH, N, Nk, d, e = p.batch_heads(), p.N, p.Nk, p.d, p.elem_bytes()
    Br, Bc = cfg.Br, cfg.Bc
    Tr, Tc = ceil_div(N, Br), ceil_div(Nk, Bc)
    scale = p.softmax_scale()
    Q, K, V, O, LSE = fused_tensors(x, p, Br, Bc)
    dO = x.declare(GlobalTensor("dO", BH, N, d, e, Br, d))
    D = x.declare(GlobalTensor("D", BH, 1, N, 4, 1, Br, True))
    dQ_acc = x.declare(GlobalTensor("dQ_acc", BH, N, d, 4, Br, d))
    dQ = x.declare(GlobalTensor("dQ", BH, N, d, e, Br, d))
    dK = x.declare(GlobalTensor("dK", BH, Nk, d, e, Bc, d))
    dV = x.declare(GlobalTensor("dV", BH, Nk, d, e, Bc, d))

    preprocess = KernelDesc("fa2_bwd_preprocess", "D = rowsum(dO * O) per Q tile; dQ_acc = 0", Tr, BH, cfg.warps)

    def preprocess_block(b, bh, i):
        q0 = i * Br
        rows = min(Br, N - q0)
        dOi = b.load(view(dO, bh).rows(q0, rows), Space.Registers, "dO_i")
        Oi = b.load(view(O, bh).rows(q0, rows), Space.Registers, "O_i")
        b.map(dOi, Fn.mul, [dOi, Oi])
        Di = b.row_sum(dOi, "D_i")
        b.store(Di, view(D, bh).tile(0, 1, q0, rows))
        b.store(b.alloc(rows, d, Space.Registers, Fill.Zero, "0"), view(dQ_acc, bh).rows(q0, rows))

    x.launch(preprocess, preprocess_block)

    main = KernelDesc("fa2_backward", "one block per K/V tile; loop over Q tiles; dK, dV written once, dQ added atomically",
                      Tc, BH, cfg.warps)

    def main_block(b, bh, j):
        k0 = j * Bc
        cols = min(Bc, Nk - k0)
        Kj = b.load(view(K, bh).rows(k0, cols), Space.Shared, "K_j")
        Vj = b.load(view(V, bh).rows(k0, cols), Space.Shared, "V_j")
        dKj = b.alloc(cols, d, Space.Registers, Fill.Zero, "dK_j")
        dVj = b.alloc(cols, d, Space.Registers, Fill.Zero, "dV_j")
        for i in range(Tr):
            q0 = i * Br
            rows = min(Br, N - q0)
            if tile_fully_masked(q0, rows, k0, N, Nk, p.causal):
                continue  # no row of Q_i sees K_j
            Qi = b.load(view(Q, bh).rows(q0, rows), Space.Shared, "Q_i")
            dOi = b.load(view(dO, bh).rows(q0, rows), Space.Shared, "dO_i")
            lse = b.load(view(LSE, bh).tile(0, 1, q0, rows), Space.Registers, "LSE_i")
            Di = b.load(view(D, bh).tile(0, 1, q0, rows), Space.Registers, "D_i")

            # TODO: with LSE_i and D_i loaded, this Q tile's share of the gradients:
            #   S = Q_i K_jᵀ (recomputed: b.matmul(..., transpose_b=True, recompute=True)), masked when causal;
            #   P = exp(scale·S - LSE_i) (Fn.exp_shifted with per_row(lse): normalised already);
            #   dV_j += Pᵀ dO_i;  dP = dO_i V_jᵀ;  dS = P o (dP - D_i);
            #   dK_j += dSᵀ Q_i (scaled once, after the loop);  dQ_i = scale · dS K_j, added to dQ_acc with
            #   StoreMode.atomic_add (other K/V blocks add theirs).
            # P and dS are read transposed by every warp: stage them in shared memory (b.stage) between
            # b.barrier() calls, as a GPU kernel must.
            del Qi, dOi, lse, Di  # as the C++ loop body's scope ends
        b.map(dKj, Fn.mul, [dKj, scale])
        b.store(dKj, view(dK, bh).rows(k0, cols))
        b.store(dVj, view(dV, bh).rows(k0, cols))

    x.launch(main, main_block)

    convert = KernelDesc("fa2_bwd_convert_dq", "dQ = dQ_acc in the storage dtype", Tr, BH, cfg.warps)

    def convert_block(b, bh, i):
        q0 = i * Br
        rows = min(Br, N - q0)
        acc = b.load(view(dQ_acc, bh).rows(q0, rows), Space.Registers, "dQ_acc_i")
        b.store(acc, view(dQ, bh).rows(q0, rows))

    x.launch(convert, convert_block)


FASIM_SUBMISSION = ("fa2_backward", program)
