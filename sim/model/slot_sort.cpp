#include "model/slot_sort.hpp"

#include <algorithm>
#include <bit>

namespace fasim {

namespace {

int bit_width(Fixed v) {  // v >= 0
    const auto high = static_cast<std::uint64_t>(v >> 64), low = static_cast<std::uint64_t>(v);
    return static_cast<int>(high != 0 ? 64 + std::bit_width(high) : std::bit_width(low));
}

// Buckets above this size get std::sort: the insertion pass then moves a time past fewer than this many.
constexpr std::uint32_t kInsertionBucket = 16;

}  // namespace

void SlotSorter::sort(std::vector<SlotTime>& times) {
    const std::size_t n = times.size();
    if (n < 2) return;
    Fixed earliest = times[0].time, latest = earliest;
    for (const SlotTime& t : times) {
        earliest = std::min(earliest, t.time);
        latest = std::max(latest, t.time);
    }
    const int bucket_bits = static_cast<int>(std::bit_width(n - 1));
    const int shift = std::max(0, bit_width(latest - earliest) - bucket_bits);
    auto bucket = [&](const SlotTime& t) { return static_cast<std::size_t>((t.time - earliest) >> shift); };
    const std::size_t buckets = std::size_t{1} << bucket_bits;
    starts_.assign(buckets + 1, 0);
    for (const SlotTime& t : times) ++starts_[bucket(t) + 1];
    std::uint32_t most = 0;
    for (std::size_t b = 1; b <= buckets; ++b) {
        most = std::max(most, starts_[b]);
        starts_[b] += starts_[b - 1];
    }
    scratch_.resize(n);
    for (const SlotTime& t : times) scratch_[starts_[bucket(t)]++] = t;  // starts_[b] becomes bucket b's end
    if (most > kInsertionBucket)
        for (std::size_t b = 0, begin = 0; b < buckets; begin = starts_[b++])
            if (starts_[b] - begin > kInsertionBucket)
                std::sort(scratch_.begin() + static_cast<std::ptrdiff_t>(begin), scratch_.begin() + starts_[b]);
    for (std::size_t i = 1; i < n; ++i) {
        const SlotTime t = scratch_[i];
        std::size_t j = i;
        for (; j > 0 && t < scratch_[j - 1]; --j) scratch_[j] = scratch_[j - 1];
        scratch_[j] = t;
    }
    times.swap(scratch_);
}

}  // namespace fasim
