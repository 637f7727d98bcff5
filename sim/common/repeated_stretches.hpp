// A sequence kept as its entries plus stretches of them that run several times in a row (a unit of rows
// alike only a few at a time: exec/block_work.hpp, model/block_scheduler.hpp): the sequence it stands for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fasim {

// Entries [first, first + length) of a sequence run `times` times in a row.
struct RepeatedStretch {
    std::size_t first = 0, length = 0;
    std::int64_t times = 1;
};

// Calls visit(entry) for every entry of the sequence, in order; `repeats` in order and apart.
template <class Entries, class Visit>
void for_each_repeated(const Entries& entries, const std::vector<RepeatedStretch>& repeats, Visit&& visit) {
    std::size_t e = 0;
    for (const RepeatedStretch& r : repeats) {
        for (; e < r.first; ++e) visit(entries[e]);
        for (std::int64_t t = 0; t < r.times; ++t)
            for (std::size_t i = r.first; i < r.first + r.length; ++i) visit(entries[i]);
        e = r.first + r.length;
    }
    for (; e < entries.size(); ++e) visit(entries[e]);
}

}  // namespace fasim
