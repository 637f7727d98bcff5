// Single blocks of differing durations dealt a round at a time: the slots in the greedy's order (earliest
// first, ties to the lower slot) and the next `slots` blocks. When every slot takes exactly one of them,
// block p of the round goes to the slot at place p, and the round costs one pass and a sort of the new
// free times. With durations that do not grow (FlashAttention-2's causal backward: K/V tile j visits
// Tr - j Q tiles) that is every round until the blocks get shorter than the slots' spread.
//
// Why the round is exact: before block p (blocks 0..p-1 went to places 0..p-1) the slots are those at
// places p.. with their times unchanged, the earliest of them at place p as the order is sorted, and those
// that took a block, free at time + duration. The greedy takes the least of all (slots differ, so the order
// is strict and ties go to the lower slot): place p exactly when it comes before every slot that took a
// block. deal_round checks just that, for every p, against the least of those so far, unless the latest
// slot is free before the earliest plus the shortest block of the round (then no slot that took a block
// comes before any that did not). When the check fails the round goes through a binary heap, one block
// at a time, as the greedy itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/fixed_point.hpp"
#include "model/slot_ring.hpp"
#include "model/slot_sort.hpp"

namespace fasim {

class SlotRounds {
public:
    // All slots, in the greedy's order.
    void assign_in_order(const std::vector<SlotTime>& ordered) { order_ = ordered; }
    const std::vector<SlotTime>& in_order() const { return order_; }
    std::size_t size() const { return order_.size(); }

    // The next size() blocks, of durations[0..size()): whether each slot takes one, in order; if so they
    // are dealt and takers() says which slot took each, else nothing changes.
    bool deal_round(const Fixed* durations);
    // The next `count` blocks (any count), one at a time through a binary heap.
    void deal_one_at_a_time(const Fixed* durations, std::size_t count);
    // The slot that took each block of the last deal.
    const std::vector<int>& takers() const { return takers_; }

private:
    bool each_takes_one() const;  // of the round in next_: the check above, place by place

    std::vector<SlotTime> order_, next_;
    std::vector<int> takers_;
    SlotSorter sorter_;
};

}  // namespace fasim
