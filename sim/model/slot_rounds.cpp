#include "model/slot_rounds.hpp"

#include <algorithm>

namespace fasim {

bool SlotRounds::deal_round(const Fixed* durations) {
    const std::size_t n = order_.size();
    if (n == 0) return true;
    next_.resize(n);
    takers_.resize(n);
    // next_[p]: the slot at place p once it has taken block p; `least`, the earliest of those so far.
    SlotTime least{order_[0].time + durations[0], order_[0].slot};
    next_[0] = least;
    bool ascending = true, descending = true;
    for (std::size_t p = 1; p < n; ++p) {
        if (!(order_[p] < least)) return false;  // block p goes to a slot that took one already
        const SlotTime took{order_[p].time + durations[p], order_[p].slot};
        ascending = ascending && next_[p - 1] < took;
        descending = descending && took < next_[p - 1];
        least = took < least ? took : least;
        next_[p] = took;
    }
    for (std::size_t p = 0; p < n; ++p) takers_[p] = order_[p].slot;
    // The new order: as dealt (blocks that do not get shorter against the spread: in turn), reversed
    // (blocks that shrink faster than the slots' times rise), or sorted.
    if (descending) std::reverse(next_.begin(), next_.end());
    else if (!ascending) sorter_.sort(next_);
    order_.swap(next_);
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
