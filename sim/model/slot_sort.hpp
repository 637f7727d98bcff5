// Slot free times into the greedy's order (earliest first, ties to the lower slot), fast for a round's
// worth of them: a round of blocks leaves the slots' times in no particular order, and a comparison sort
// of a few hundred 128-bit times costs more than the round itself.
//
// Each time becomes a 64-bit key: its leading bits above the earliest time, then the slot. Keys that
// differ in the time bits order the times as the times themselves do (cutting low bits keeps the order,
// or makes equal); equal time bits fall back on the slot, and a last insertion pass on the exact times
// moves the few such. The keys are spread over as many buckets as there are times by their leading bits
// (in order between buckets) and an insertion pass orders each bucket; a bucket that catches many (times
// clustered against a far one, or all equal) gets std::sort.
#pragma once

#include <cstdint>
#include <vector>

#include "model/fixed_point.hpp"
#include "model/slot_ring.hpp"

namespace fasim {

class SlotSorter {
public:
    // `times` holds slots 0..times.size() - 1, each once.
    void sort(std::vector<SlotTime>& times);

private:
    std::vector<std::uint64_t> keys_, scratch_;
    std::vector<Fixed> by_slot_;
    std::vector<std::uint32_t> starts_;  // by bucket
};

}  // namespace fasim
