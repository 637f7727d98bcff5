// What one thread block costs its SM, term by term (seconds), as the runtime model times it; summed over
// an SM's blocks, the busiest SM's terms say what bounds a kernel.
#pragma once

#include <algorithm>

namespace fasim {

struct BlockTerms {
    // l2: the L2's share of the block's sectors or of its requests, whichever takes longer.
    double matmul = 0, nonmatmul = 0, sfu = 0, smem = 0, l2 = 0, issue = 0;
    // The block's DRAM bytes x latency / its bytes in flight. Each resident block keeps its own loads in
    // flight, so blocks sharing an SM overlap their latencies: this bounds the SM's time for its blocks
    // by one block's, not their sum, and binds only where few blocks are resident (a decode grid).
    double latency = 0;
    // The block's own fill and drain: its first tiles' latency and transfer before its first product, its
    // output's transfer after its last (BlockWork::prologue_bytes, epilogue_bytes). Another resident block
    // computes meanwhile; a block alone on its SM leaves the SM idle for it.
    double fill = 0;
    // mma.sync kernels whose blocks compute on fewer warps than the SM has schedulers (a decoding step's one
    // query row): one computing warp's own instructions at one warp's latency-bound rate. Other warps on
    // its scheduler raise the scheduler's rate, not this warp's; blocks sharing an SM run their chains side
    // by side (their computing warps on schedulers of their own), so like `latency` it bounds the SM's
    // time for its blocks by one block's, not their sum.
    double chain = 0;
    // mma.sync kernels: the pipes' work (summed, as for every kernel) or the instructions the warps
    // issue at the latency-bound rate, whichever takes longer.
    bool latency_bound_tensor = false;
    // wgmma kernels with warp-specialised consumer warpgroups: while one warpgroup's softmax runs on the
    // CUDA cores and SFUs, another's products run on the tensor cores, so the two overlap instead of adding:
    // two warpgroups that each alternate M of products with S of softmax need max(2M, 2S, M + S) for two
    // tiles, max(M, S) per tile.
    bool overlapped_products = false;
    double compute() const {
        if (overlapped_products) return std::max(matmul, nonmatmul + sfu);
        return latency_bound_tensor ? std::max(matmul + nonmatmul + sfu, issue) : matmul + nonmatmul + sfu;
    }
    double duration(int blocks_per_sm) const {
        const double busy = std::max({compute(), smem, l2});
        return std::max({busy * blocks_per_sm, busy + fill, latency, chain + fill});  // resident blocks share the SM
    }
    BlockTerms& operator+=(const BlockTerms& o) {
        matmul += o.matmul; nonmatmul += o.nonmatmul; sfu += o.sfu; smem += o.smem; l2 += o.l2; issue += o.issue;
        latency += o.latency;
        fill += o.fill;
        chain += o.chain;
        latency_bound_tensor = o.latency_bound_tensor;
        overlapped_products = o.overlapped_products;
        return *this;
    }
    BlockTerms scaled(double f) const {
        BlockTerms t = *this;
        t.matmul *= f; t.nonmatmul *= f; t.sfu *= f; t.smem *= f; t.l2 *= f; t.issue *= f; t.latency *= f; t.fill *= f; t.chain *= f;
        return t;
    }
};

}  // namespace fasim
