#include "model/slot_ring.hpp"

#include <algorithm>

namespace fasim {

SlotRing::SlotRing(int slots, int sm_count)
    : n_(slots), sm_count_(sm_count), entries_(static_cast<std::size_t>(slots)), lapped_by_sm_(static_cast<std::size_t>(sm_count)) {
    for (int i = 0; i < n_; ++i) place(i, 0, i);
}

bool SlotRing::deals_in_turn(Fixed duration) const {
    return comes_before(n_ - 1, front_time() + duration, front_slot());
}

void SlotRing::take_at_front(Fixed end) {
    const int s = front_slot();
    // How many of the other slots come before it now: the back (blocks that do not get shorter) and the
    // front (short blocks) first. Compared as stored: less base_, and less lap_ among the passed.
    const SlotTime unpassed{end - base_, s}, among_passed{end - base_ - lap_, s};
    auto comes_first = [&](int position) {
        const Entry& e = at(index(position));
        const SlotTime here{e.stored(), e.slot};
        return here < (passed(position) ? among_passed : unpassed);
    };
    int before = n_ - 1;
    if (n_ > 1 && !comes_first(n_ - 1)) {
        int lo = 1;  // positions below lo come before; lo + len does not
        if (comes_first(1)) {
            lo = 2;
            for (int len = n_ - 1 - lo; len > 0;) {  // a conditional move a step, not a branch to mispredict
                const int half = len / 2;
                const bool first = comes_first(lo + half);
                lo = first ? lo + half + 1 : lo;
                len = first ? len - half - 1 : half;
            }
        }
        before = lo - 1;
    }
    // Among the passed slots, it is passed too (the passed ones stay the last).
    const bool is_passed = before >= n_ - passed_;
    int here;
    if (before == n_ - 1) {  // the back: the front's place, and the front moves on
        here = front_;
        front_ = index(1);
    } else if (before <= (n_ - 1) / 2) {  // the slots before it move toward the front
        shift_toward_front(index(1), before);
        here = index(before);
    } else {  // the slots after it move toward the back, into the front's place
        shift_toward_back(index(before + 1), n_ - 1 - before);
        here = index(before + 1);
        front_ = index(1);
    }
    place(here, end - base_ - (is_passed ? lap_ : 0), s);
    if (is_passed) --lapped_by_sm_[static_cast<std::size_t>(at(here).sm)];  // it took this block, not its lapping block of the round
    if (is_passed && ++passed_ == n_) {
        base_ += lap_;
        ++rounds_;
        passed_ = 0;
    }
}

void SlotRing::take_front_band(Fixed duration, std::int64_t limit, std::vector<int>& takers) {
    takers.clear();
    const Entry& back = at(index(n_ - 1));
    const SlotTime latest{back.stored(), back.slot};
    auto ended = [&](int position) {  // the block the slot at `position` would take, as stored
        const Entry& e = at(index(position));
        return SlotTime{e.stored() + duration, e.slot};
    };
    // The front slot after k blocks is the k-th (the earlier ends come later): in turn once its end
    // passes the latest.
    int k = 0;
    const int most = static_cast<int>(std::min<std::int64_t>(limit, n_ - 1));
    while (k < most && !(latest < ended(k))) ++k;
    if (k == 0) return;
    const Entry& last_taker = at(index(k - 1));
    if (!(SlotTime{last_taker.stored(), last_taker.slot} < ended(0))) return;
    band_.resize(static_cast<std::size_t>(k));
    for (int i = 0; i < k; ++i) {
        band_[static_cast<std::size_t>(i)] = at(index(i));
        band_[static_cast<std::size_t>(i)].store(band_[static_cast<std::size_t>(i)].stored() + duration);
        takers.push_back(band_[static_cast<std::size_t>(i)].slot);
    }
    // Merged from the back into the places n - 1 + k ... (the takers' own places, past the end): the
    // slots that stay move k places toward the front.
    auto old_place = [&](int position) { return (front_ + position) % n_; };
    for (int w = n_ - 1 + k, a = n_ - 1, b = k - 1; b >= 0; --w) {
        const Entry& stay = at(old_place(a));
        const Entry& band = band_[static_cast<std::size_t>(b)];
        if (a >= k && SlotTime{band.stored(), band.slot} < SlotTime{stay.stored(), stay.slot}) {
            at(old_place(w)) = stay;
            --a;
        } else {
            at(old_place(w)) = band;
            --b;
        }
    }
    front_ = old_place(k);
}

void SlotRing::lap(std::int64_t blocks) {
    const int round_began = index(n_ - passed_);  // where the current round began: lapping does not move it
    if (blocks != split_blocks_) {  // runs repeat head after head: divide once
        split_blocks_ = blocks;
        split_rounds_ = blocks / n_;
        split_rest_ = static_cast<int>(blocks - split_rounds_ * n_);
    }
    std::int64_t rounds = split_rounds_;
    passed_ += split_rest_;
    if (passed_ >= n_) {
        passed_ -= n_;
        ++rounds;
    }
    base_ += static_cast<Fixed>(rounds) * lap_;
    rounds_ += rounds;
    front_ = round_began + passed_ < n_ ? round_began + passed_ : round_began + passed_ - n_;
}

void SlotRing::settle() {
    lapped_by_all_ += rounds_;
    if (passed_ <= n_ / 2) {  // the passed took one more, and hold it apart from the base
        for (int p = n_ - passed_; p < n_; ++p) {
            Entry& e = at(index(p));
            e.store(e.stored() + lap_);
            ++lapped_by_sm_[static_cast<std::size_t>(e.sm)];
        }
    } else {  // the same, seen as one more round for all and one fewer for the unpassed
        ++lapped_by_all_;
        base_ += lap_;
        for (int p = 0; p < n_ - passed_; ++p) {
            Entry& e = at(index(p));
            e.store(e.stored() - lap_);
            --lapped_by_sm_[static_cast<std::size_t>(e.sm)];
        }
    }
    passed_ = 0;
    rounds_ = 0;
}

void SlotRing::clear_lapped() {
    lapped_by_all_ = 0;
    std::fill(lapped_by_sm_.begin(), lapped_by_sm_.end(), 0);
}

void SlotRing::set_lapping_duration(Fixed duration) { lap_ = duration; }

void SlotRing::times(std::vector<Fixed>& by_slot) const {
    by_slot.resize(static_cast<std::size_t>(n_));
    for (int p = 0; p < n_; ++p) by_slot[static_cast<std::size_t>(slot_at(p))] = time_at(p);
}

void SlotRing::assign(const std::vector<Fixed>& by_slot) {
    for (int i = 0; i < n_; ++i) place(i, by_slot[static_cast<std::size_t>(i)] - base_, i);
    std::sort(entries_.begin(), entries_.end(),
              [](const Entry& a, const Entry& b) { return SlotTime{a.stored(), a.slot} < SlotTime{b.stored(), b.slot}; });
    front_ = 0;
}

void SlotRing::assign_in_order(const std::vector<SlotTime>& ordered) {
    for (int i = 0; i < n_; ++i) place(i, ordered[static_cast<std::size_t>(i)].time - base_, ordered[static_cast<std::size_t>(i)].slot);
    front_ = 0;
}

// The `count` entries from array index `first` on (circularly) move one index down; first - 1 is free.
void SlotRing::shift_toward_front(int first, int count) {
    while (count > 0) {
        if (first == 0) {
            at(n_ - 1) = at(0);
            first = 1;
            --count;
            continue;
        }
        const int run = std::min(count, n_ - first);
        const auto f = entries_.begin() + first;
        std::copy(f, f + run, f - 1);
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
            at(0) = at(n_ - 1);
            last = n_ - 2;
            --count;
            continue;
        }
        const int run = std::min(count, last + 1);
        const auto e = entries_.begin() + (last + 1);
        std::copy_backward(e - run, e, e + 1);
        count -= run;
        last -= run;
        if (last < 0) last += n_;
    }
}

}  // namespace fasim
