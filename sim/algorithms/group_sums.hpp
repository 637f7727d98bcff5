// Grouped-query attention's dK and dV (--kv-heads). The G = H/KV query heads of a group read one K/V
// head, so that head's gradients are the sums of G query heads' parts. The backward programs do what
// flash-attention 2's mha_bwd does (and PyTorch's autograd of repeat_interleave): each query head's
// kernels write their dK, dV parts into per-query-head buffers (dk_expanded, dv_expanded, in the storage
// dtype), and a last kernel adds each group's parts in fp32 and writes dK and dV once per K/V head.
// Without grouping the parts are dK and dV themselves and there is no last kernel.
#pragma once

#include <cstdint>

#include "algorithms/algorithm.hpp"

namespace fasim {

struct KvGradients {
    GlobalTensor dK_parts, dV_parts;  // per query head: what the backward's kernels write
    GlobalTensor dK, dV;              // per K/V head: the parts themselves without grouping
};

// Declares them, tracked in L2 in tiles of tile_rows x tile_cols as the kernels that write the parts store them.
KvGradients declare_kv_gradients(Executor& x, const AttentionProblem& p, std::int64_t tile_rows, std::int64_t tile_cols);

// With grouping: one block of 8 warps per tile_rules::group_sum_rows keys (a 16-byte vector per thread) of
// every batch·K/V head reads the group's G parts of dK and dV, adds them in fp32 and writes dK and dV once
// (kernel_name: fa2_bwd_sum_groups for FA2, as the CUDA kernel). Without grouping: nothing.
void sum_kv_gradient_groups(Executor& x, const AttentionProblem& p, const KvGradients& g, const char* kernel_name);

// The bytes the sum adds to a backward's traffic: every part read once, dK and dV written once per K/V head
// (0 without grouping).
ClosedForm::Bytes kv_gradient_group_bytes(const AttentionProblem& p);

}  // namespace fasim
