// Which slot took each single block, for a batch of heads, so that the blocks' terms are added entry by
// entry when the batch is flushed: each entry's terms are read once a batch instead of once a head. A
// causal head has 2^17 distinct entries, 14 MB of fixed-point terms; read head after head they cost
// more than scheduling the blocks. The sums are exact integers, so the order they are added in does not
// matter.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fasim {

class TakerLog {
public:
    // For heads of `entries` entries; a batch of up to `heads` heads, fewer where the entries are many.
    TakerLog(std::size_t entries, std::int64_t heads, int slots)
        : entries_(entries),
          rows_(slots < kNone ? static_cast<std::size_t>(std::clamp<std::int64_t>(
                                    static_cast<std::int64_t>(kBudget / std::max<std::size_t>(entries, 1)), 1, std::min<std::int64_t>(heads, 64)))
                              : 0) {}

    // Whether blocks are logged (slot indices fit), or must be credited at once.
    bool logging() const { return rows_ > 0; }
    // The blocks recorded from here on belong to the next head; false when the batch is full (flush first).
    bool next_head() {
        if (row_ + 1 >= rows_ && row_ != kNoRow) return false;
        row_ = row_ == kNoRow ? 0 : row_ + 1;
        return true;
    }
    // Whether a head's blocks are being recorded (not just after a flush).
    bool in_head() const { return row_ != kNoRow; }
    // Blocks of entries first.. (one each) went to `slots`, in order.
    void record(std::size_t first, const int* slots, std::size_t count) {
        if (takers_.empty()) takers_.assign(entries_ * rows_, kNone);
        std::uint16_t* at = &takers_[first * rows_ + row_];
        for (std::size_t i = 0; i < count; ++i, at += rows_) *at = static_cast<std::uint16_t>(slots[i]);
        low_ = std::min(low_, first);
        high_ = std::max(high_, first + count);
    }
    std::size_t recorded_end() const { return high_; }  // entries below it may have blocks recorded
    // Calls credit(slot, entry) for every block recorded, entry by entry, and empties the log; the next
    // head starts a batch.
    template <class Credit>
    void flush(Credit&& credit) {
        const std::size_t used = row_ == kNoRow ? 0 : row_ + 1;  // flushes between heads leave rows unused
        for (std::size_t e = low_; e < high_; ++e) {
            std::uint16_t* row = &takers_[e * rows_];
            for (std::size_t r = 0; r < used; ++r) {
                if (row[r] == kNone) continue;
                credit(static_cast<int>(row[r]), e);
                row[r] = kNone;
            }
        }
        low_ = static_cast<std::size_t>(-1);
        high_ = 0;
        row_ = kNoRow;
    }

private:
    static constexpr std::uint16_t kNone = 0xffff;
    static constexpr std::size_t kBudget = std::size_t{1} << 21;  // takers in a batch: 4 MB
    static constexpr std::size_t kNoRow = static_cast<std::size_t>(-1);
    std::size_t entries_, rows_;
    std::size_t row_ = kNoRow;
    std::size_t low_ = static_cast<std::size_t>(-1), high_ = 0;
    std::vector<std::uint16_t> takers_;  // by entry, then by head in the batch
};

}  // namespace fasim
