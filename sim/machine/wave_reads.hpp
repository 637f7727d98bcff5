// Rule 1 of the L2 model for streamed tensors: which block of the current wave last read each region (a
// read of a region another block of the wave read is shared). A region read in an earlier wave cannot be
// shared any more, so the record starts afresh with each wave.
//
// Regions are recorded one by one as blocks read them, or, when the L2 model carries a loop's items over
// (machine/l2_loops.cpp), as a family: the regions base + i0*step0 + i1*step1 + ..., read by block
// block0 + i0*block_step, all at once. The latest record of a region decides.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tile/tensors.hpp"

namespace fasim {

class WaveReads {
public:
    struct Key {
        TensorId tensor = -1;
        std::int64_t head = 0, row0 = 0, nrows = 0, col0 = 0, ncols = 0;
        bool operator==(const Key&) const = default;
    };
    struct Move {  // how far a family's regions lie apart along one of its dimensions
        std::int64_t head = 0, rows = 0, cols = 0;
        bool operator==(const Move&) const = default;
    };
    static Key key_of(const Region& r) { return {r.tensor->id, r.head, r.row0, r.nrows, r.col0, r.ncols}; }

    // The record holds the reads of `wave` from now on (forgetting the last wave's when it changes).
    void start_wave(std::int64_t wave);
    std::int64_t wave() const { return wave_; }

    // The block that last read the region in this wave, if one did.
    std::optional<std::int64_t> reader(const Key& key) const;
    // How many of the regions key, key + step, key + 2 step ... (at most `limit`, at least 1 when limit is)
    // reader() is sure to answer as it answers for key: those one family read, by one block, with no later
    // record among them. A loop's second pass over what its first pass read asks this once, not per region.
    std::int64_t same_reader_items(const Key& key, const Move& step, std::int64_t limit) const;
    void record(const Key& key, std::int64_t block);
    // Regions base + sum_d i_d * dims[d].second (i_d < dims[d].first), read by block0 + i_0 * block_step.
    // False, recording nothing, where a region could not be told from its position in the family (two
    // dimensions moving along the same coordinate): the caller records them one by one.
    bool record_family(const Key& base, const std::vector<std::pair<std::int64_t, Move>>& dims, std::int64_t block0,
                       std::int64_t block_step);

    // Regions whose first head, row and column lie within [lo, hi] (per coordinate: head, row, column).
    struct Box {
        std::int64_t lo[3] = {0, 0, 0}, hi[3] = {-1, -1, -1};
        bool overlaps(const Box& o) const {
            for (int c = 0; c < 3; ++c)
                if (hi[c] < o.lo[c] || o.hi[c] < lo[c]) return false;
            return true;
        }
    };
    // False when no region of the tensor recorded in this wave starts within the box.
    bool may_hold(TensorId tensor, const Box& box) const;

    // A count that grows with every record: whether a tensor's regions were recorded before a moment.
    std::int64_t stamp() const { return stamp_; }
    bool recorded_before(TensorId tensor, std::int64_t stamp) const;

private:
    struct Reader {
        std::int64_t block = 0, stamp = 0;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const;
    };
    struct Family {
        Key base;
        std::vector<std::pair<std::int64_t, Move>> dims;
        std::vector<int> pivot;  // per dimension, the coordinate only it moves (0 head, 1 rows, 2 cols)
        std::int64_t block0 = 0, block_step = 0, stamp = 0;
        std::int64_t lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};  // the head, row0 and col0 its regions span
    };
    std::optional<std::int64_t> index_in(const Family& f, const Key& key, std::int64_t& item) const;
    // The latest record that holds the region decides who read it: a family (then `family` is it), or the
    // region's own one-by-one record (family nullptr); no block where none holds it.
    struct Decision {
        const Family* family = nullptr;
        std::optional<std::int64_t> block;
    };
    Decision decide(const Key& key) const;

    // A tensor's families in record order, and which of them may hold a region starting in a band of
    // kBandRows rows, or, for families spanning too many of those, in a band of kBandCols columns: reader()
    // looks at those and the ones spanning too many of both, not at all of them (a wave of a row kernel
    // records a family per row; of a GEMM over Pᵀ, a family per column strip of P down all its rows).
    static constexpr std::int64_t kBandRows = 8, kBandCols = 64, kMaxBands = 16;
    struct Families {
        std::vector<Family> all;
        std::unordered_map<std::int64_t, std::vector<std::uint32_t>> by_band, by_col_band;
        std::vector<std::uint32_t> wide;
    };
    static std::int64_t band_of(std::int64_t at, std::int64_t width = kBandRows) {
        return at >= 0 ? at / width : (at + 1) / width - 1;
    }

    std::int64_t wave_ = -1, stamp_ = 0;
    std::unordered_map<Key, Reader, KeyHash> single_;
    std::unordered_map<TensorId, Families> families_;  // by tensor
    std::unordered_map<TensorId, std::int64_t> first_stamp_;  // per tensor, its first record in this wave
    std::unordered_map<TensorId, Box> span_;                 // per tensor, where its records start
    // Per tensor, where its one-by-one records start: a box per stretch of records by one block (blocks
    // of a wave read apart: one box over all would cover every later block's regions), merged into one
    // when there are more than kSingleSpans.
    static constexpr std::size_t kSingleSpans = 256;
    struct BlockSpan {
        std::int64_t block = 0;
        Box box;
    };
    // same_reader_items looks at the records later than a family, up to this many, before answering 1.
    static constexpr std::size_t kLaterLooked = 64;
    struct Singles {
        std::vector<BlockSpan> spans;
        // The latest kLaterLooked one-by-one records (stamp, region), circularly from `next`.
        std::vector<std::pair<std::int64_t, Key>> latest;
        std::size_t next = 0;
    };
    std::unordered_map<TensorId, Singles> singles_;
    void widen(TensorId tensor, const Box& box);
};

}  // namespace fasim
