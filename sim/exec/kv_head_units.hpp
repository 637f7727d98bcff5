// Grouped-query attention in the counting executor: which heads it simulates together.
//
// The G query heads of one K/V head read the same K and V, and a launch orders its blocks by head, so
// those heads' blocks run side by side and L2 serves the group's K/V reads after the first (the L2
// model's rule 1, machine/l2_model.hpp). Simulating one query head and multiplying would count every
// head's K/V reads from DRAM. So for a grouped problem the executor simulates one K/V head's worth of
// every kernel as its unit: the kernel's heads that map to K/V head 0 (G of a kernel over query heads,
// or the largest divisor of G whose heads' blocks can run together: CountingExecutor::heads_simulated;
// 1 of a kernel over K/V heads), and multiplies by the units.
//
// The L2 model tracks one head of each tensor. A tensor with F > 1 heads per K/V head (Q, O, dQ: F = G;
// a split's partial outputs: F = G * splits) keeps the unit's F heads as F heads stacked in the rows of
// one, each padded to whole tiles of the tensor's grid so that every head starts on a tile.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tile/tensors.hpp"

namespace fasim {

class KvHeadUnits {
public:
    KvHeadUnits() = default;  // not grouped: every unit is one head
    // batch_kv_heads: the problem's K/V heads over the batch (B * kv_heads), when fewer than its query heads.
    explicit KvHeadUnits(std::int64_t batch_kv_heads) : kv_heads_(batch_kv_heads) {}

    // Heads per K/V head of a kernel or tensor with `heads` heads (1 when not grouped, or not a multiple).
    std::int64_t heads_per_unit(std::int64_t heads) const {
        return kv_heads_ > 0 && heads > kv_heads_ && heads % kv_heads_ == 0 ? heads / kv_heads_ : 1;
    }
    // The region as the L2 model tracks it: in a tensor of several heads per K/V head, head h of the unit
    // becomes rows [h * padded rows, ...) of a stacked tensor with the same id and name.
    Region folded(const Region& r);

private:
    std::int64_t kv_heads_ = 0;
    std::vector<std::unique_ptr<GlobalTensor>> stacked_;  // by tensor id; pointers outlive every access list
};

}  // namespace fasim
