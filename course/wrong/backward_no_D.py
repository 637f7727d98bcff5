# Known-wrong FA2 backward (the grader must reject it), Python twin of course/wrong/backward_no_D.cpp:
# dS = P o dP instead of P o (dP - D_i), D_i = rowsum(dO_i o O_i). dV = P^T dO does not involve dS and
# stays right; dQ and dK are wrong.
from fasim.tile import (Fill, Fn, GlobalTensor, KernelDesc, Space, Split, StoreMode, ceil_div, fused_tensors, per_row,
                        tile_crosses_diagonal, tile_fully_masked, view)


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

            # P and dS staged in shared memory; their register copies are dropped (del) once staged.
            P = b.alloc(rows, cols, Space.Registers, Fill.Zero, "P_ij")  # S, recomputed
            b.matmul(P, Qi, Kj, transpose_b=True, split=Split.Cols, recompute=True)
            if tile_crosses_diagonal(q0, k0, cols, N, Nk, p.causal):
                b.mask(P, q0, k0, N, Nk, p.causal)
            b.map(P, Fn.exp_shifted, [P, scale, per_row(lse)])  # P = exp(scale·S − LSE): normalised already
            b.round_to_storage(P)
            Ps = b.stage(P, Space.Shared, e, "P_ij (shared)")
            b.barrier()  # every warp's keys of P in place
            b.matmul(dVj, Ps, dOi, transpose_a=True, accumulate=True)  # dV_j += Pᵀ dO_i

            dS = b.alloc(rows, cols, Space.Registers, Fill.Zero, "dS_ij")  # dP, then dS
            b.matmul(dS, dOi, Vj, transpose_b=True, split=Split.Cols)  # dP = dO_i V_jᵀ
            # (mistake: dS = P o dP, the row term D_i = rowsum(dO o O) is not subtracted)
            b.map(dS, Fn.mul, [dS, P])  # dS = P ∘ (dP − D_i)
            b.round_to_storage(dS)
            dSs = b.stage(dS, Space.Shared, e, "dS_ij (shared)")
            del P, dS
            b.barrier()
            b.matmul(dKj, dSs, Qi, transpose_a=True, accumulate=True)  # dK_j += dSᵀ Q_i (scaled at the end)
            dQi = b.alloc(rows, d, Space.Registers, Fill.Zero, "dQ_i (part)")
            b.matmul(dQi, dSs, Kj)  # dS K_j
            b.map(dQi, Fn.mul, [dQi, scale])
            b.store(dQi, view(dQ_acc, bh).rows(q0, rows), StoreMode.atomic_add)
            b.barrier()  # all warps done with P and dS before the next Q tile overwrites them
            del Qi, dOi, lse, Di, Ps, dSs, dQi  # as the C++ loop body's scope ends
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
