#include "model/slot_rounds.hpp"

#include <algorithm>

namespace fasim {

bool SlotRounds::deal_round(const Fixed* durations) {
    const std::size_t n = order_.size();
    if (n == 0) return true;
    next_.resize(n);
    takers_.resize(n);
    // next_[p]: the slot at place p once it has taken block p. Whether they come out in order (blocks
    // that do not get shorter against the spread: in turn) or reversed (blocks that shrink faster than the
    // slots' times rise) decides the new order's cost.
    Fixed shortest = durations[0];
    next_[0] = {order_[0].time + durations[0], order_[0].slot};
    takers_[0] = order_[0].slot;
    bool ascending = true, descending = true;
    for (std::size_t p = 1; p < n; ++p) {
        next_[p] = {order_[p].time + durations[p], order_[p].slot};
        takers_[p] = order_[p].slot;
        shortest = std::min(shortest, durations[p]);
        ascending = ascending && next_[p - 1] < next_[p];
        descending = descending && next_[p] < next_[p - 1];
    }
    // A slot that took a block is free no earlier than the earliest time plus the shortest block: when the
    // latest slot is free before that, every place comes first. Else place by place.
    if (!(order_[n - 1].time < order_[0].time + shortest) && !each_takes_one()) return false;
    if (descending) std::reverse(next_.begin(), next_.end());
    else if (!ascending) sorter_.sort(next_);
    order_.swap(next_);
    return true;
}

bool SlotRounds::each_takes_one() const {
    SlotTime least = next_[0];  // the earliest of the slots that took a block so far
    for (std::size_t p = 1; p < order_.size(); ++p) {
        if (!(order_[p] < least)) return false;  // block p goes to a slot that took one already
        least = next_[p] < least ? next_[p] : least;
    }
    return true;
}

void SlotRounds::deal_one_at_a_time(const Fixed* durations, std::size_t count) {
    const std::size_t n = order_.size();
    takers_.resize(count);
    std::vector<SlotTime>& heap = order_;  // in order: a heap, earliest on top
    for (std::size_t j = 0; j < count; ++j) {
        takers_[j] = heap[0].slot;
        // The top takes the block and sinks to its place.
        const SlotTime took{heap[0].time + durations[j], heap[0].slot};
        std::size_t i = 0;
        for (std::size_t child = 1; child < n; i = child, child = 2 * i + 1) {
            if (child + 1 < n && heap[child + 1] < heap[child]) ++child;
            if (!(heap[child] < took)) break;
            heap[i] = heap[child];
        }
        heap[i] = took;
    }
    sorter_.sort(heap);
}

}  // namespace fasim
