// A sequence kept as its entries plus stretches of them that run several times in a row (a unit of rows
// alike only a few at a time: exec/block_work.hpp, model/block_scheduler.hpp): the sequence it stands for.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fasim {

// Calls visit(entry) for every entry of the sequence, in order. `repeats`: in order and apart, each with
// `first`, `length` and `times`: entries [first, first + length) run `times` times in a row.
template <class Entries, class Repeats, class Visit>
void for_each_repeated(const Entries& entries, const Repeats& repeats, Visit&& visit) {
    std::size_t e = 0;
    for (const auto& r : repeats) {
        for (; e < r.first; ++e) visit(entries[e]);
        for (std::int64_t t = 0; t < r.times; ++t)
            for (std::size_t i = r.first; i < r.first + r.length; ++i) visit(entries[i]);
        e = r.first + r.length;
    }
    for (; e < entries.size(); ++e) visit(entries[e]);
}

}  // namespace fasim
