// One attention problem: the shapes, the storage precision and the mask.
#pragma once

#include <cstdint>
#include <string>

#include "problem/dtype.hpp"

namespace fasim {

struct AttentionProblem {
    std::int64_t batch = 1;
    std::int64_t heads = 16;
    std::int64_t N = 4096;   // query length
    std::int64_t Nk = 4096;  // key length (N for self-attention)
    std::int64_t d = 64;     // head dimension
    DType dtype = DType::fp16;
    bool causal = false;
    // Grouped-query attention: K and V have kv_heads heads, each read by heads / kv_heads query heads
    // (multi-query attention: 1). 0: as many as the query heads (multi-head attention).
    std::int64_t kv_heads = 0;

    std::int64_t batch_heads() const { return batch * heads; }
    std::int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
    std::int64_t group_size() const { return heads / kv_head_count(); }  // query heads per K/V head
    std::int64_t batch_kv_heads() const { return batch * kv_head_count(); }
    bool grouped() const { return kv_head_count() != heads; }
    // The K/V head (an index over batch·kv_heads) that query head bh (over batch·heads) reads.
    std::int64_t kv_head_of(std::int64_t bh) const { return (bh / heads) * kv_head_count() + (bh % heads) / group_size(); }
    std::int64_t elem_bytes() const { return dtype_bytes(dtype); }
    double softmax_scale() const;  // 1/sqrt(d)
    std::string describe() const;  // "B=1 H=16 N=4096 Nk=4096 d=64 fp16 non-causal"
};

// Limits the simulator accepts; validate() throws UsageError naming value, range and fix. Batch and
// heads may each reach max_batch_heads, their product too (training batches reach B·H in the thousands).
// Every counter is exact far beyond these (common/count.hpp: N = Nk = 2^24 already).
struct ProblemLimits {
    static constexpr std::int64_t max_seq = std::int64_t{1} << 24;   // 16,777,216
    static constexpr std::int64_t max_batch_heads = std::int64_t{1} << 16;  // 65,536
    static constexpr std::int64_t max_batch = max_batch_heads;
    static constexpr std::int64_t max_heads = max_batch_heads;
};
// "65536": a limit as messages and --help write it.
inline std::string limit_text(std::int64_t limit) { return std::to_string(limit); }

// Head dimensions the product supports (the flash-attention family's set plus
// a few non-powers of two that the reference and kernels handle).
bool supported_head_dim(std::int64_t d);
std::string supported_head_dims_text();

void validate(const AttentionProblem& p);

}  // namespace fasim
