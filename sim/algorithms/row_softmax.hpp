// The row kernels of the attention programs that keep S and P in HBM: P = softmax(S) and its backward
// dS = P ∘ (dP − rowsum(P ∘ dP)), one block per row of every head, a row staged in shared memory whole
// or, when it does not fit, in chunks read twice. Standard attention (Algorithm 0) and PyTorch's math
// backend (torch_math) both launch them.
#pragma once

#include <cstdint>

#include "algorithms/algorithm.hpp"

namespace fasim {

struct RowSoftmax {
    const GlobalTensor& S;  // read
    const GlobalTensor& P;  // written
    std::int64_t chunk;     // columns staged at once (>= Nk: the whole row)
    bool causal_mask;       // the kernel masks above the diagonal itself (standard's); false: S holds the mask
    int warps;
};
// Kernel "softmax": P = softmax(S) along each row, every head of S.
void launch_row_softmax(Executor& x, const AttentionProblem& p, const RowSoftmax& k);

struct RowSoftmaxBackward {
    const GlobalTensor& P;   // the forward's output, read
    const GlobalTensor& dP;  // read
    const GlobalTensor& dS;  // written
    std::int64_t chunk;      // as RowSoftmax::chunk, for a row of P and dP together
    int warps;
};
// Kernel "softmax_bwd": dS = P ∘ (dP − D), D = rowsum(P ∘ dP), every head.
void launch_row_softmax_backward(Executor& x, const AttentionProblem& p, const RowSoftmaxBackward& k);

}  // namespace fasim
