// The work of each block of one head, in launch order (KernelRecord::block_work): run-length encoded, and
// stretches that repeat kept once with their count. Rows alike only a few at a time (a row kernel over
// rows of an odd number of 2-byte elements meets the 128-byte lines at 64 places in turn) are counted a
// unit of rows at a time; the unit's blocks do a few kinds of work in a fixed order, and a million rows
// would otherwise be hundreds of thousands of entries for the schedule to walk and hold. A causal
// staircase (KernelDesc::runs_grow), whose every block does a fixed increment more than the one before, is
// kept as its first block and the increment: 2^17 blocks of 224 bytes each were 29 MB a kernel at N = 2^24.
//
// Two lists are equal when they stand for the same blocks: compared as the expanded sequence, alike
// neighbours joined. The list keeps that sequence's entries, so that the runtime model times the same
// entries whichever way the blocks were counted (by class, or block by block): where a repeated unit would
// join the entry before or after it, one repetition is written out instead; a staircase's blocks are
// entries of one block each, as adding them one by one would leave them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/count.hpp"
#include "common/repeated_stretches.hpp"

namespace fasim {

// The work of one thread block (what the runtime model needs to time it). Counts too: a block can do a
// whole head's work (FlashAttention-1 launches one block per batch·head), and one head passes 64 bits at
// the limits with small tiles: FA1 with --Br 1 --Bc 1, d = 256 executes 2^32.6 lane FLOPs per head at
// N = Nk = 2^8 (measured), quadratic in N, so 2^64.6 at N = Nk = 2^24. The terms added to them stay
// std::int64_t: each is one operation's, at most a product of the largest tiles (2·4096·4096·256 = 2^33
// FLOPs for Br, Bc <= 4096, d <= 256) or one region's bytes (a row of S at Nk = 2^24 in fp32: 2^26).
struct BlockWork {
    Count matmul_flops = 0, nonmatmul_flops = 0, sfu_ops = 0;
    Count recomputed_matmul_flops = 0;  // of matmul_flops: products an earlier pass already did
    Count smem_bytes = 0;   // read + written
    // When the products run on the CUDA cores (kernels/cuda_core_products.hpp), what CUDA-core runs are
    // timed by: the 128-byte wavefronts the shared-memory pipe serves for those accesses, and the
    // matmul FLOPs the lanes execute (whole micro-tiles: matmul_flops plus padding).
    Count smem_wavefronts = 0;
    Count lane_matmul_flops = 0;
    Count l2_bytes = 0;     // sector bytes requested from L2 (read + write)
    Count l2_requests = 0;  // requests to L2: a line per warp access (machine/sectors.hpp)
    Count barriers = 0;
    // Instructions as a warp-level mma.sync kernel issues them, in thread-instructions (/32 = warp
    // instructions; kernels/issue_costs.hpp): what latency-bound tensor-core kernels are timed by.
    Count thread_instructions = 0;
    // Of those, the ones every warp of the block issues its share of, whichever warps compute: tile
    // copies into shared memory, their waits, barriers (KernelExecution::warp_rows).
    Count shared_thread_instructions = 0;
    // The block's own latency chain, which no other work of the block hides: the global bytes it loads
    // before its first product (the first tiles: nothing to compute on until they land) and stores after
    // its last (the output tiles); 0 in a block without products. Per block, not counts: alike iterations and
    // blocks do not add them.
    std::int64_t prologue_bytes = 0, epilogue_bytes = 0;
    bool operator==(const BlockWork&) const = default;
};

// `times` more of w's counts (not its prologue and epilogue: per block, alike blocks do not add them).
inline void add(BlockWork& into, const BlockWork& w, std::int64_t times) {
    into.matmul_flops += times * w.matmul_flops;
    into.nonmatmul_flops += times * w.nonmatmul_flops;
    into.sfu_ops += times * w.sfu_ops;
    into.recomputed_matmul_flops += times * w.recomputed_matmul_flops;
    into.smem_bytes += times * w.smem_bytes;
    into.smem_wavefronts += times * w.smem_wavefronts;
    into.lane_matmul_flops += times * w.lane_matmul_flops;
    into.l2_bytes += times * w.l2_bytes;
    into.l2_requests += times * w.l2_requests;
    into.barriers += times * w.barriers;
    into.thread_instructions += times * w.thread_instructions;
    into.shared_thread_instructions += times * w.shared_thread_instructions;
}

class BlockWorkList {
public:
    using Entry = std::pair<BlockWork, std::int64_t>;  // `second` blocks in a row doing `first`

    BlockWorkList() = default;
    BlockWorkList(std::vector<Entry> entries) : entries_(std::move(entries)) {}  // NOLINT: a plain list

    // `times` more blocks doing `w`.
    void add(const BlockWork& w, std::int64_t times) {
        if (times <= 0) return;
        if (ends_in_repeat() && entries_.back().first == w) unroll_last_repetition();
        if (ends_in_staircase() && last_of_staircase() == w) {
            // Its last block joins w's, as block by block it would have.
            --entries_.back().second;
            if (entries_.back().second == 1) staircases_.pop_back();
            plain_add(w, times + 1);
            return;
        }
        plain_add(w, times);
    }
    // `blocks` more blocks, each doing `more` more than the one before, the first `first` (a causal
    // staircase; `more` has no prologue or epilogue).
    void add_staircase(const BlockWork& first, const BlockWork& more, std::int64_t blocks) {
        if (blocks <= 0) return;
        add(first, 1);
        if (blocks == 1) return;
        BlockWork second = first;
        fasim::add(second, more, 1);
        if (second == first) {  // it does not grow
            add(first, blocks - 1);
            return;
        }
        if (blocks == 2) {
            add(second, 1);
            return;
        }
        staircases_.push_back({entries_.size(), more});
        entries_.emplace_back(second, blocks - 1);
    }
    // The blocks of `unit` (entries whose neighbours differ), `times` times in a row.
    void add_repeated(const std::vector<Entry>& unit, std::int64_t times) {
        if (unit.empty() || times <= 0) return;
        if (unit.size() == 1) {
            add(unit.front().first, unit.front().second * times);
            return;
        }
        if (unit.front().first == unit.back().first) {
            // Each repetition's last entry joins the next one's first: X (n1), the middle, then (X (last + n1),
            // the middle) times - 1, and X (last).
            const std::vector<Entry> first(unit.begin(), unit.end() - 1);
            std::vector<Entry> joined = first;
            joined.front().second += unit.back().second;
            for (const auto& [w, n] : first) add(w, n);
            add_repeated(joined, times - 1);
            add(unit.back().first, unit.back().second);
            return;
        }
        // The first repetition written out joins the entry before, as the expanded sequence would.
        for (const auto& [w, n] : unit) add(w, n);
        if (times == 1) return;
        if (times < 4) {  // too short to be worth a repeat
            for (std::int64_t t = 1; t < times; ++t)
                for (const auto& [w, n] : unit) add(w, n);
            return;
        }
        repeats_.push_back({entries_.size(), unit.size(), times - 1});
        entries_.insert(entries_.end(), unit.begin(), unit.end());
    }

    // Calls visit(work, blocks) for each entry in order, a staircase's blocks one at a time; repeats()
    // index the entries so visited.
    template <class Visit>
    void for_each_entry(Visit&& visit) const {
        std::size_t next_staircase = 0;
        for (std::size_t e = 0; e < entries_.size(); ++e) {
            if (next_staircase < staircases_.size() && staircases_[next_staircase].entry == e) {
                BlockWork w = entries_[e].first;
                for (std::int64_t m = 0; m < entries_[e].second; ++m, fasim::add(w, staircases_[next_staircase].more, 1)) visit(w, std::int64_t{1});
                ++next_staircase;
                continue;
            }
            visit(entries_[e].first, entries_[e].second);
        }
    }
    // Stretches of the entries for_each_entry visits that run several times in a row.
    std::vector<RepeatedStretch> repeats() const {
        std::vector<RepeatedStretch> out = repeats_;
        for (RepeatedStretch& r : out)  // staircases come before or after a repeat, never inside
            for (const Staircase& st : staircases_)
                if (st.entry < r.first) r.first += static_cast<std::size_t>(entries_[st.entry].second - 1);
        return out;
    }
    // The first entry's work (a staircase's first block).
    const BlockWork& front() const { return entries_.front().first; }
    // Entries as for_each_entry visits them.
    std::size_t size() const {
        std::size_t n = entries_.size();
        for (const Staircase& st : staircases_) n += static_cast<std::size_t>(entries_[st.entry].second - 1);
        return n;
    }
    bool empty() const { return entries_.empty(); }
    // Entries the list holds (a staircase one): what its memory grows with.
    std::size_t entries_held() const { return entries_.size(); }

    // The sequence the list stands for, alike neighbours joined.
    std::vector<Entry> expanded() const {
        std::vector<Entry> visited, out;
        for_each_entry([&](const BlockWork& w, std::int64_t n) { visited.emplace_back(w, n); });
        for_each_repeated(visited, repeats(), [&](const Entry& x) {
            if (!out.empty() && out.back().first == x.first) out.back().second += x.second;
            else out.push_back(x);
        });
        return out;
    }
    bool operator==(const BlockWorkList& o) const { return expanded() == o.expanded(); }

private:
    // entries_[entry] = (the first block's work, the blocks), each block `more` more than the one before.
    struct Staircase {
        std::size_t entry = 0;
        BlockWork more;
    };

    void plain_add(const BlockWork& w, std::int64_t times) {
        if (!entries_.empty() && !ends_in_repeat() && !ends_in_staircase() && entries_.back().first == w) entries_.back().second += times;
        else entries_.emplace_back(w, times);
    }
    bool ends_in_repeat() const {
        return !repeats_.empty() && repeats_.back().first + repeats_.back().length == entries_.size();
    }
    bool ends_in_staircase() const { return !staircases_.empty() && staircases_.back().entry + 1 == entries_.size(); }
    BlockWork last_of_staircase() const {
        BlockWork w = entries_.back().first;
        fasim::add(w, staircases_.back().more, entries_.back().second - 1);
        return w;
    }
    // The last repeat runs once less and that repetition follows it as plain entries.
    void unroll_last_repetition() {
        RepeatedStretch& r = repeats_.back();
        const std::vector<Entry> unit(entries_.begin() + static_cast<std::ptrdiff_t>(r.first), entries_.end());
        if (--r.times == 0) {
            entries_.resize(r.first);
            repeats_.pop_back();
        }
        entries_.insert(entries_.end(), unit.begin(), unit.end());
    }

    std::vector<Entry> entries_;
    std::vector<RepeatedStretch> repeats_;
    std::vector<Staircase> staircases_;
};

}  // namespace fasim
