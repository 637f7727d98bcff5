#include "model/slot_ring.hpp"

#include <algorithm>
#include <numeric>

namespace fasim {

SlotRing::SlotRing(int slots)
    : n_(slots), stored_(static_cast<std::size_t>(slots)), slot_(static_cast<std::size_t>(slots)),
      counted_(static_cast<std::size_t>(slots)), lapped_(static_cast<std::size_t>(slots)) {
    std::iota(slot_.begin(), slot_.end(), 0);
}

Fixed SlotRing::time_at(int position) const {
    return stored_[static_cast<std::size_t>(index(position))] + base_ + (passed(position) ? lap_ : 0);
}

bool SlotRing::comes_before(int position, Fixed time, int slot) const {
    const Fixed t = time_at(position);
    return t < time || (t == time && slot_at(position) < slot);
}

bool SlotRing::deals_in_turn(Fixed duration) const {
    return comes_before(n_ - 1, front_time() + duration, front_slot());
}

void SlotRing::take_at_front(Fixed end) {
    const int s = front_slot();
    lapped_[static_cast<std::size_t>(s)] += rounds_ - counted_[static_cast<std::size_t>(front_)];  // the front is never passed
    // How many of the other slots come before it now. Back first (blocks that do not get shorter), then
    // galloping from the front (short blocks land near it).
    int before = n_ - 1;
    if (n_ > 1 && !comes_before(n_ - 1, end, s)) {
        int lo = 1, hi = 1;  // positions below lo come before; the answer is in [lo, hi]
        while (hi < n_ - 1 && comes_before(hi, end, s)) {
            lo = hi + 1;
            hi = std::min(2 * hi, n_ - 1);
        }
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            if (comes_before(mid, end, s)) lo = mid + 1;
            else hi = mid;
        }
        before = lo - 1;
    }
    // Among the passed slots, it is passed too (the passed ones stay the last).
    const bool is_passed = before >= n_ - passed_;
    int at;
    if (before == n_ - 1) {  // the back: the front's place, and the front moves on
        at = front_;
        front_ = index(1);
    } else if (before <= (n_ - 1) / 2) {  // the slots before it move toward the front
        shift_toward_front(index(1), before);
        at = index(before);
    } else {  // the slots after it move toward the back, into the front's place
        shift_toward_back(index(before + 1), n_ - 1 - before);
        at = index(before + 1);
        front_ = index(1);
    }
    const auto i = static_cast<std::size_t>(at);
    stored_[i] = end - base_ - (is_passed ? lap_ : 0);
    slot_[i] = s;
    counted_[i] = rounds_ + (is_passed ? 1 : 0);
    if (is_passed && ++passed_ == n_) {
        base_ += lap_;
        ++rounds_;
        passed_ = 0;
    }
}

void SlotRing::lap(std::int64_t blocks) {
    const std::int64_t dealt = passed_ + blocks;
    base_ += static_cast<Fixed>(dealt / n_) * lap_;
    rounds_ += dealt / n_;
    passed_ = static_cast<int>(dealt % n_);
    front_ = index(static_cast<int>(blocks % n_));
}

void SlotRing::settle() {
    for (int p = 0; p < n_; ++p) {
        const auto i = static_cast<std::size_t>(index(p));
        const bool was_passed = passed(p);
        lapped_[static_cast<std::size_t>(slot_[i])] += rounds_ + (was_passed ? 1 : 0) - counted_[i];
        if (was_passed) stored_[i] += lap_;
        counted_[i] = 0;
    }
    passed_ = 0;
    rounds_ = 0;
}

void SlotRing::set_lapping_duration(Fixed duration) { lap_ = duration; }

void SlotRing::times(std::vector<Fixed>& by_slot) const {
    by_slot.resize(static_cast<std::size_t>(n_));
    for (int p = 0; p < n_; ++p) by_slot[static_cast<std::size_t>(slot_at(p))] = time_at(p);
}

void SlotRing::assign(const std::vector<Fixed>& by_slot) {
    std::iota(slot_.begin(), slot_.end(), 0);
    std::sort(slot_.begin(), slot_.end(), [&](int a, int b) {
        const Fixed ta = by_slot[static_cast<std::size_t>(a)], tb = by_slot[static_cast<std::size_t>(b)];
        return ta < tb || (ta == tb && a < b);
    });
    for (std::size_t i = 0; i < slot_.size(); ++i) {
        stored_[i] = by_slot[static_cast<std::size_t>(slot_[i])] - base_;
        counted_[i] = 0;
    }
    front_ = 0;
}

void SlotRing::move(int from, int to) {
    const auto f = static_cast<std::size_t>(from), t = static_cast<std::size_t>(to);
    stored_[t] = stored_[f];
    slot_[t] = slot_[f];
    counted_[t] = counted_[f];
}

// The `count` entries from array index `first` on (circularly) move one index down; first - 1 is free.
void SlotRing::shift_toward_front(int first, int count) {
    while (count > 0) {
        if (first == 0) {
            move(0, n_ - 1);
            first = 1;
            --count;
            continue;
        }
        const int run = std::min(count, n_ - first);
        const auto f = static_cast<std::size_t>(first), e = f + static_cast<std::size_t>(run);
        std::copy(stored_.begin() + f, stored_.begin() + e, stored_.begin() + (f - 1));
        std::copy(slot_.begin() + f, slot_.begin() + e, slot_.begin() + (f - 1));
        std::copy(counted_.begin() + f, counted_.begin() + e, counted_.begin() + (f - 1));
        first += run;
        if (first == n_) first = 0;
        count -= run;
    }
}

// The `count` entries from array index `first` on (circularly) move one index up; the index after them is free.
void SlotRing::shift_toward_back(int first, int count) {
    int last = first + count - 1;
    if (last >= n_) last -= n_;
    while (count > 0) {
        if (last == n_ - 1) {
            move(n_ - 1, 0);
            last = n_ - 2;
            --count;
            continue;
        }
        const int run = std::min(count, last + 1);
        const auto b = static_cast<std::size_t>(last + 1 - run), e = static_cast<std::size_t>(last + 1);
        std::copy_backward(stored_.begin() + b, stored_.begin() + e, stored_.begin() + (e + 1));
        std::copy_backward(slot_.begin() + b, slot_.begin() + e, slot_.begin() + (e + 1));
        std::copy_backward(counted_.begin() + b, counted_.begin() + e, counted_.begin() + (e + 1));
        count -= run;
        last -= run;
        if (last < 0) last += n_;
    }
}

}  // namespace fasim
