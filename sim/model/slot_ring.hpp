// The block slots' free times in the order a greedy scheduler takes them: earliest first, ties to the
// lower slot index. A circular array; its front is the slot the next block goes to.
//
// Blocks dealt in turn cost nothing per block. When the front's next block ends no earlier than the
// back's free time (and, on a tie, comes from a higher slot), that block sends the front to the back, and
// so does every further block as long as none is shorter (deals_in_turn). A run of c blocks of one class,
// the "lapping" class, then only moves the front c places: each slot keeps the time it had when the
// round began plus, for those already passed in this round (the last `passed_` places), one lapping
// duration; each completed round goes into a common base. The blocks so dealt are counted when the ring
// settles: every slot took one per completed round and the passed ones one more, less one for each time a
// slot took another block and went among the passed (it then skips its lapping block of that round). The
// counts are kept by SM, which is all the scheduler credits, so a settle costs the passed or the unpassed
// places, whichever are fewer, not every slot (a row kernel's rows may switch the lapping class every row).
#pragma once

#include <cstdint>
#include <vector>

#include "model/fixed_point.hpp"

namespace fasim {

// A slot and when it is free.
struct SlotTime {
    Fixed time = 0;
    int slot = 0;
    // The greedy's order: earlier first, ties to the lower slot.
    bool operator<(const SlotTime& o) const { return time < o.time || (time == o.time && slot < o.slot); }
};

// Slots are numbered round-robin over the SMs: slot s is slot s / sm_count of SM s % sm_count. The block
// scheduler, the reference scheduler and the ring all place slots so.
inline int sm_of_slot(std::int64_t slot, int sm_count) { return static_cast<int>(slot % sm_count); }
inline int slot_within_sm(std::int64_t slot, int sm_count) { return static_cast<int>(slot / sm_count); }

class SlotRing {
public:
    // `slots` slots, slot s on SM s % sm_count, every one free at 0.
    SlotRing(int slots, int sm_count);

    int size() const { return n_; }
    int slot_at(int position) const { return at(index(position)).slot; }  // position 0: the front
    Fixed time_at(int position) const { return at(index(position)).stored() + base_ + (passed(position) ? lap_ : 0); }
    int front_slot() const { return at(front_).slot; }
    Fixed front_time() const { return time_at(0); }
    Fixed back_time() const { return time_at(n_ - 1); }  // the latest free time

    // Whether blocks of `duration` would go to the front in turn from here (see above).
    bool deals_in_turn(Fixed duration) const;
    // The front slot takes a block that ends at `end` (>= its free time) and moves to its place.
    void take_at_front(Fixed end);
    // After settle(), where deals_in_turn(duration) does not hold: blocks of `duration` (at most `limit`)
    // taken one at a time until it does, at once. The front slots free more than `duration` before the
    // latest take them; their ends, in order, fall among the latest free times, so one merge places them
    // (take_at_front would shift the latest once per block). Their slots, in order, go to `takers`;
    // none where a block would end before a later front slot is free (then take them one at a time).
    void take_front_band(Fixed duration, std::int64_t limit, std::vector<int>& takers);
    // `blocks` blocks of the lapping class go to the front in turn; deals_in_turn(lapping duration) must hold.
    void lap(std::int64_t blocks);

    // Counts the lapping blocks the slots took (lapped_by_every_slot() and lapped_by_sm()), and stores every
    // free time as is.
    void settle();
    // The lapping blocks taken up to the last settle(): as many by every slot, and, SM by SM, a few more or
    // fewer in all. The caller empties both (clear_lapped()).
    std::int64_t lapped_by_every_slot() const { return lapped_by_all_; }
    const std::vector<std::int64_t>& lapped_by_sm() const { return lapped_by_sm_; }
    void clear_lapped();
    void set_lapping_duration(Fixed duration);  // settle() first

    // After settle(): adds to the free time of the slot at `position`.
    void add_at(int position, Fixed delta) {
        Entry& e = at(index(position));
        e.store(e.stored() + delta);
    }
    // After settle(): the first `places` slots move behind the others (they took one block more, in turn).
    void rotate(std::int64_t places) { front_ = index(static_cast<int>(places % n_)); }
    void add_to_all(Fixed delta) { base_ += delta; }
    // Every slot's free time, by slot index.
    void times(std::vector<Fixed>& by_slot) const;
    // After settle(): new free times, by slot index; or all slots, in the greedy's order.
    void assign(const std::vector<Fixed>& by_slot);
    void assign_in_order(const std::vector<SlotTime>& ordered);

private:
    // A slot's place: its free time less base_ (and less lap_ if passed), in two halves (24 bytes to
    // shift, where a 16-byte aligned Fixed would make 32).
    struct Entry {
        std::uint64_t low = 0;
        std::int64_t high = 0;
        int slot = 0, sm = 0;  // (the SM fills the padding: 24 bytes still)
        Fixed stored() const { return static_cast<Fixed>(high) * (Fixed{1} << 64) + static_cast<Fixed>(low); }
        void store(Fixed v) {
            low = static_cast<std::uint64_t>(v);
            high = static_cast<std::int64_t>(v >> 64);
        }
    };
    void place(int i, Fixed stored, int slot) {
        at(i).store(stored);
        at(i).slot = slot;
        at(i).sm = sm_of_slot(slot, sm_count_);
    }
    const Entry& at(int i) const { return entries_[static_cast<std::size_t>(i)]; }
    Entry& at(int i) { return entries_[static_cast<std::size_t>(i)]; }
    int index(int position) const { return front_ + position < n_ ? front_ + position : front_ + position - n_; }
    bool passed(int position) const { return position >= n_ - passed_; }
    bool comes_before(int position, Fixed time, int slot) const { return SlotTime{time_at(position), slot_at(position)} < SlotTime{time, slot}; }
    void shift_toward_front(int first, int count);
    void shift_toward_back(int first, int count);

    int n_, sm_count_;
    std::vector<Entry> entries_;              // by array index
    std::vector<Entry> band_;                 // take_front_band's
    std::int64_t lapped_by_all_ = 0;          // lapping blocks every slot took (settled)
    std::vector<std::int64_t> lapped_by_sm_;  // by SM: more (or fewer) than lapped_by_all_ per slot, summed
    Fixed base_ = 0, lap_ = 0;
    int front_ = 0;
    int passed_ = 0;            // slots that took a lapping block in the current round: the last ones
    std::int64_t rounds_ = 0;   // rounds completed since settle()
    std::int64_t split_blocks_ = 0, split_rounds_ = 0;  // lap(): the last run, in rounds and the rest
    int split_rest_ = 0;
};

}  // namespace fasim
