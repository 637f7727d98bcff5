#include "model/slot_sort.hpp"

#include <algorithm>
#include <bit>

namespace fasim {

namespace {

int bit_width(Fixed v) {  // v >= 0
    const auto high = static_cast<std::uint64_t>(v >> 64), low = static_cast<std::uint64_t>(v);
    return static_cast<int>(high != 0 ? 64 + std::bit_width(high) : std::bit_width(low));
}

// Buckets above this size get std::sort: the insertion pass then moves a key past fewer than this many.
constexpr std::uint32_t kInsertionBucket = 16;

template <class T>
void insertion_sort(T* v, std::size_t n) {
    for (std::size_t i = 1; i < n; ++i) {
        const T x = v[i];
        std::size_t j = i;
        for (; j > 0 && x < v[j - 1]; --j) v[j] = v[j - 1];
        v[j] = x;
    }
}

}  // namespace

void SlotSorter::sort(std::vector<SlotTime>& times) {
    const std::size_t n = times.size();
    if (n < 2) return;
    Fixed earliest = times[0].time, latest = earliest;
    for (const SlotTime& t : times) {
        earliest = std::min(earliest, t.time);
        latest = std::max(latest, t.time);
    }
    const int slot_bits = static_cast<int>(std::bit_width(n - 1));
    const int cut = std::max(0, bit_width(latest - earliest) - (64 - slot_bits));  // low time bits dropped
    keys_.resize(n);
    by_slot_.resize(n);
    std::uint64_t largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const SlotTime& t = times[i];
        by_slot_[static_cast<std::size_t>(t.slot)] = t.time;
        keys_[i] = (static_cast<std::uint64_t>((t.time - earliest) >> cut) << slot_bits) | static_cast<std::uint64_t>(t.slot);
        largest = std::max(largest, keys_[i]);
    }
    // Counting pass on the keys' leading bits.
    const int bucket_bits = slot_bits, key_bits = static_cast<int>(std::bit_width(largest));
    const int shift = std::max(0, key_bits - bucket_bits);
    const std::size_t buckets = std::size_t{1} << bucket_bits;
    starts_.assign(buckets + 1, 0);
    for (std::uint64_t k : keys_) ++starts_[(k >> shift) + 1];
    std::uint32_t most = 0;
    for (std::size_t b = 1; b <= buckets; ++b) {
        most = std::max(most, starts_[b]);
        starts_[b] += starts_[b - 1];
    }
    scratch_.resize(n);
    for (std::uint64_t k : keys_) scratch_[starts_[k >> shift]++] = k;  // starts_[b] becomes bucket b's end
    if (most > kInsertionBucket)
        for (std::size_t b = 0, begin = 0; b < buckets; begin = starts_[b++])
            if (starts_[b] - begin > kInsertionBucket)
                std::sort(scratch_.begin() + static_cast<std::ptrdiff_t>(begin), scratch_.begin() + starts_[b]);
    insertion_sort(scratch_.data(), n);
    const std::uint64_t slot_mask = (std::uint64_t{1} << slot_bits) - 1;
    for (std::size_t i = 0; i < n; ++i) {
        const int slot = static_cast<int>(scratch_[i] & slot_mask);
        times[i] = {by_slot_[static_cast<std::size_t>(slot)], slot};
    }
    if (cut > 0) insertion_sort(times.data(), n);  // equal leading bits went by slot
}

}  // namespace fasim
