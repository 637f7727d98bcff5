// Slot free times into the greedy's order (earliest first, ties to the lower slot), fast for a round's
// worth of them: a round of blocks leaves the slots' times in no particular order, and a comparison sort
// of a few hundred 128-bit times costs more than the round itself.
//
// One counting pass spreads the times over as many buckets as there are times (at least), by their
// leading bits above the earliest; times in different buckets are then in order, and an insertion pass
// orders each bucket. A bucket that catches many (times clustered against a far one, or all equal) is
// sorted on its own.
#pragma once

#include <cstdint>
#include <vector>

#include "model/slot_ring.hpp"

namespace fasim {

class SlotSorter {
public:
    void sort(std::vector<SlotTime>& times);

private:
    std::vector<SlotTime> scratch_;
    std::vector<std::uint32_t> starts_;  // by bucket
};

}  // namespace fasim
