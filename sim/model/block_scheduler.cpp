#include "model/block_scheduler.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>

#include "common/repeated_stretches.hpp"
#include "model/fixed_point.hpp"
#include "model/slot_ring.hpp"
#include "model/slot_rounds.hpp"
#include "model/taker_log.hpp"

namespace fasim {

namespace {

// BlockTerms' nine sums, exact (model/fixed_point.hpp).
constexpr int kTerms = 9;
using TermSums = std::array<Fixed, kTerms>;

std::array<double, kTerms> term_values(const BlockTerms& t) {
    return {t.matmul, t.nonmatmul, t.sfu, t.smem, t.l2, t.issue, t.latency, t.fill, t.chain};
}

BlockTerms terms_from(const std::array<double, kTerms>& v, const BlockTerms& flags) {
    BlockTerms t;
    t.matmul = v[0], t.nonmatmul = v[1], t.sfu = v[2], t.smem = v[3], t.l2 = v[4], t.issue = v[5], t.latency = v[6], t.fill = v[7], t.chain = v[8];
    t.latency_bound_tensor = flags.latency_bound_tensor;
    t.overlapped_products = flags.overlapped_products;
    return t;
}

bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

// The head with its repeated stretches written out.
std::vector<TimedBlocks> expanded(const std::vector<TimedBlocks>& head, const std::vector<RepeatedStretch>& repeats) {
    std::vector<TimedBlocks> out;
    for_each_repeated(head, repeats, [&](const TimedBlocks& b) { out.push_back(b); });
    return out;
}

// Durations or terms that are not finite (a rate of 0 somewhere) have no exact sums: one block at a time,
// in double precision, as the scheduler always did before.
BlockSchedule schedule_one_at_a_time(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count,
                                     int slots_per_sm, std::size_t timeline_blocks) {
    BlockSchedule out;
    const std::int64_t slots = static_cast<std::int64_t>(sm_count) * slots_per_sm;
    using Slot = std::pair<double, std::int64_t>;  // (free at, slot index)
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_slots;
    for (std::int64_t s = 0; s < slots; ++s) free_slots.push({0.0, s});
    std::vector<BlockTerms> sm_terms(static_cast<std::size_t>(sm_count));
    std::int64_t position = 0;
    for (std::int64_t h = 0; h < heads; ++h)
        for (const TimedBlocks& b : head)
            for (std::int64_t c = 0; c < b.count; ++c, ++position) {
                auto [at, s] = free_slots.top();
                free_slots.pop();
                const double end = at + b.duration;
                out.makespan_s = std::max(out.makespan_s, end);
                out.block_seconds += b.duration;
                sm_terms[static_cast<std::size_t>(sm_of_slot(s, sm_count))] += b.terms;
                if (out.timeline.size() < timeline_blocks)
                    out.timeline.push_back({position, sm_of_slot(s, sm_count), slot_within_sm(s, sm_count), at, end});
                free_slots.push({end, s});
            }
    out.busiest = *std::max_element(sm_terms.begin(), sm_terms.end(),
                                    [](const BlockTerms& a, const BlockTerms& b) { return a.duration(1) < b.duration(1); });
    return out;
}

// The greedy list schedule, computed exactly on fixed-point times and fast where the blocks have
// structure:
//  - a run of equal blocks that the slots take in turn (their free times lie within one block of each
//    other) advances whole rounds at once (SlotRing::lap); one that they do not take in turn goes one
//    block at a time until they do (a few blocks, after a run of slightly longer blocks), or, if that
//    takes more than a few, is dealt in bulk: each slot's share follows from its free time, in
//    O(slots log slots);
//  - in a stretch of single blocks whose durations do not decrease (causal attention's Q tiles in launch
//    order) each block ends no earlier than the one before: the slots that took one wait in first-in,
//    first-out order, and the next block goes to the earlier of that queue's first and the first slot not
//    yet taken, O(1) a block; once the slots' free times lie within one block they take the rest in turn,
//    each slot's share a sum of every slots-th duration from there (summed where heads get there, kept);
//  - other single blocks, many in a row (durations that shrink: FlashAttention-2's causal backward), go
//    a round at a time where every slot takes one of them (model/slot_rounds.hpp: one pass and a sort of
//    the slots), else through a binary heap, O(log slots) a block where the ring's order costs O(slots);
//    the slots that took them are logged and their terms added entry by entry, a batch of heads at once
//    (model/taker_log.hpp);
//  - every head runs the same blocks: once the slots' free times relative to the earliest, slot by slot,
//    repeat after a cycle of heads, each further cycle adds the same time to every slot and the same terms
//    to every SM, and whole cycles are added at once. Repetition is tested exactly, on the fixed-point
//    times, so the cycles added are exact. It happens where the durations are commensurate (multiples of
//    a common step not too small) or each head fills whole rounds; with generic durations the slots'
//    free times keep drifting against one another and never repeat, and every head is scheduled;
//  - a stretch of entries repeated within a head (RepeatedStretch) runs repetition after repetition with
//    the same cycle detection over its repetitions: whole cycles are added at once;
//  - past a budget of slot operations, in a kernel whose longest block is a tiny part of its work, the
//    blocks left are spread evenly over the slots (schedule_blocks says how far from exact that is).
class GreedyScheduler {
public:
    GreedyScheduler(const std::vector<TimedBlocks>& head, const std::vector<RepeatedStretch>& repeats, std::int64_t heads,
                    int sm_count, int slots_per_sm, std::size_t timeline_blocks, std::int64_t exact_operations);
    BlockSchedule run();

private:
    // What two equal states share, in O(1): the earliest and the latest slot, and the time between them.
    struct Signature {
        int front = -1, back = -1;
        Fixed spread = 0;
        bool operator==(const Signature&) const = default;
    };
    // One cycle-detection snapshot (Brent's algorithm): steps done (heads, or a repeat's repetitions),
    // free times relative to the earliest (by slot), the earliest, and the SMs' terms.
    struct Snapshot {
        std::int64_t done = -1;
        Signature signature;
        std::vector<Fixed> relative;
        Fixed earliest = 0;
        std::vector<TermSums> sm_terms;
    };
    // Brent's cycle detection over steps that each run the same blocks: heads, or the repetitions of a
    // repeated stretch. Off once a cycle has been skipped.
    struct CycleDetector {
        Snapshot saved;
        std::int64_t power = 1, since_saved = 0;
        bool on = true;
    };

    void run_head(std::int64_t& position);
    void run_entries(std::size_t from, std::size_t to, std::int64_t& position);
    void run_repeated(const RepeatedStretch& r, std::int64_t& position);
    void one_block(std::size_t e, std::int64_t position, bool record);
    void run_of(std::size_t e, std::int64_t count);
    void deal_in_bulk(std::size_t e, std::int64_t count);
    void run_stretch(std::size_t from);
    void run_singles(std::size_t from, std::size_t to);
    void deal_stretch(std::size_t from);
    void settle();
    // Whether the blocks from here on are spread evenly (once the budget is spent, where that may be).
    bool spreading() {
        spread_ = spread_ || (may_spread_ && operations_ > exact_operations_ && out_.timeline.size() >= timeline_blocks_);
        return spread_;
    }
    // Entries from.. to..'s blocks, `times` over, spread: their durations and terms summed.
    void spread(std::size_t from, std::size_t to, Fixed times);
    void spread_heads(Fixed heads);  // whole heads, repeats included
    void finish_spread();            // the makespan and each SM's share, from the slots' free times
    // Single blocks of entries first.. went to `takers`: logged, or credited at once.
    void credit_singles(std::size_t first, const int* takers, std::size_t count);
    void flush_log();  // and the lapped classes: whatever is not yet in sm_terms_
    void flush_lapped();
    // An entry's terms, fixed-point. Converted once and kept for the first kept_entries_ entries: every
    // head credits its first few thousand blocks one by one (run_stretch), and the log's flush credits
    // every entry, head batch after head batch. Kept for all of a head of up to 40 MB of them (a causal
    // kernel at N = 2^24 with 64-row tiles, 2^18 entries: 38 MB); of a longer head only the first 2^14, the
    // others converted when asked (a few ns; the last one kept, for the flush, which asks entry by entry):
    // all of 2^19 entries (32-row tiles) would hold 75 MB beside the entries themselves.
    // The reference is valid until the next call.
    const TermSums& terms_of(std::size_t e) {
        if (e < kept_terms_.size()) return kept_terms_[e];
        return e == converted_entry_ ? converted_ : convert(e);
    }
    const TermSums& convert(std::size_t e);  // terms_of's slow path
    // Blocks of entries first.., one each, to `takers`.
    void credit_each(std::size_t first, const int* takers, std::size_t count) {
        if (count == 0) return;
        if (first + count <= kept_entries_) {
            terms_of(first + count - 1);  // all kept from here
            for (std::size_t i = 0; i < count; ++i) credit(takers[i], kept_terms_[first + i], 1);
            return;
        }
        for (std::size_t i = 0; i < count; ++i) credit(takers[i], terms_of(first + i), 1);
    }
    TermSums converted(std::size_t e) const {
        const auto v = term_values(head_[e].terms);
        TermSums t;
        for (std::size_t f = 0; f < kTerms; ++f) t[f] = term_scale_[f].from_seconds(v[f]);
        return t;
    }
    // The rest of a stretch from `from`, dealt in turn: per position p, the durations and the terms of
    // blocks from + p, from + p + slots, ... Heads reach that point at the same few entries, so a few are
    // kept.
    struct InTurnSums {
        std::size_t from = 0;
        std::vector<Fixed> time;
        std::vector<TermSums> terms;
    };
    const InTurnSums& in_turn_sums(std::size_t from);
    void credit(int slot, const TermSums& t, Fixed times) {
        TermSums& sum = sm_terms_[static_cast<std::size_t>(sm_of_slot_[static_cast<std::size_t>(slot)])];
        for (int f = 0; f < kTerms; ++f) sum[static_cast<std::size_t>(f)] += t[static_cast<std::size_t>(f)] * times;
    }
    Signature signature() const { return {ring_.front_slot(), ring_.slot_at(slots_ - 1), ring_.back_time() - ring_.front_time()}; }
    void relative_state(std::vector<Fixed>& relative, Fixed& earliest) const;
    // After `done` of `total` steps: when the state repeats one saved `period` steps before, the steps left
    // repeat it for ever, and whole periods of them are added at once. Returns the steps skipped.
    std::int64_t skip_cycles(CycleDetector& c, std::int64_t done, std::int64_t total);

    const std::vector<TimedBlocks>& head_;
    const std::vector<RepeatedStretch>& repeats_;
    const std::int64_t heads_;
    const int sm_count_, slots_;
    const std::size_t timeline_blocks_;
    FixedPoint time_;
    std::array<FixedPoint, kTerms> term_scale_;
    std::vector<Fixed> duration_;  // per entry
    // Per entry: the end of its stretch of single blocks whose durations do not decrease (the next entry,
    // outside one); for a single block outside a stretch of a round, the end of such blocks.
    std::vector<std::uint32_t> stretch_end_, singles_end_;
    std::size_t kept_entries_;
    std::vector<TermSums> kept_terms_;  // of the first entries
    TermSums converted_{};               // of entry converted_entry_
    std::size_t converted_entry_ = static_cast<std::size_t>(-1);
    std::vector<InTurnSums> in_turn_sums_;  // the last few asked for, latest first
    std::vector<SlotTime> untouched_, queue_, rest_;  // run_stretch's
    std::vector<int> taker_;
    SlotRing ring_;
    SlotRounds rounds_;  // run_singles'
    TakerLog log_;       // single blocks' takers, credited a batch of heads at a time
    std::vector<int> sm_of_slot_;
    std::vector<TermSums> sm_terms_;
    std::ptrdiff_t lapping_ = -1;      // the entry whose blocks the ring laps with
    // Lapping blocks settled but not yet credited, by class (an entry of it) and SM.
    struct LappedClass {
        std::size_t entry = 0;
        std::vector<std::int64_t> by_sm;
        std::int64_t by_every_slot = 0;
    };
    static constexpr std::size_t kLappedClasses = 4;
    std::vector<LappedClass> lapped_classes_;
    // Whether e's blocks are the lapping class's: the lapping entry's duration and terms (rows of a row
    // kernel alike but for where they meet 128-byte lines lap as one class, with no settle between them).
    bool laps_with(std::size_t e) {
        if (lapping_ < 0) return false;
        const auto l = static_cast<std::size_t>(lapping_);
        if (l == e) return true;
        if (duration_[e] != duration_[l]) return false;
        const TermSums of_e = terms_of(e);  // a copy: terms_of(l) replaces what the reference shows
        return of_e == terms_of(l);
    }
    BlockSchedule out_;
    CycleDetector heads_cycle_;
    bool in_repeat_ = false;  // its entries run again in the same head: singles are credited at once, not logged
    // In a repeat, the entry with the most blocks of each repetition: it laps even as a short run, since
    // it comes back every repetition with the same class (only one, or each would settle the other's).
    std::ptrdiff_t repeat_lapper_ = -1;
    std::vector<Fixed> scratch_;
    // The budget: one_block's and settle's calls so far, against exact_operations_.
    std::int64_t operations_ = 0;
    const std::int64_t exact_operations_;
    bool may_spread_ = false;  // the longest block times the slots is at most kSpreadShare of the work
    bool spread_ = false;
    Fixed longest_ = 0;        // the longest block's duration
    Fixed spread_work_ = 0;    // the spread blocks' durations and terms, summed
    TermSums spread_terms_{};
};

// Spread blocks may move the makespan by up to the longest block: allowed where that is at most this share of
// all blocks' durations over the slots.
constexpr double kSpreadShare = 1e-4;

GreedyScheduler::GreedyScheduler(const std::vector<TimedBlocks>& head, const std::vector<RepeatedStretch>& repeats,
                                 std::int64_t heads, int sm_count, int slots_per_sm, std::size_t timeline_blocks,
                                 std::int64_t exact_operations)
    : head_(head), repeats_(repeats), heads_(heads), sm_count_(sm_count), slots_(sm_count * slots_per_sm), timeline_blocks_(timeline_blocks),
      ring_(sm_count * slots_per_sm, sm_count), log_(head.size(), heads, sm_count * slots_per_sm), sm_of_slot_(static_cast<std::size_t>(slots_)),
      sm_terms_(static_cast<std::size_t>(sm_count), TermSums{}), exact_operations_(exact_operations) {
    const std::size_t keep_all_up_to = (std::size_t{40} << 20) / sizeof(TermSums);  // 40 MB: 291,271 entries
    kept_entries_ = head_.size() <= keep_all_up_to ? head_.size() : std::size_t{1} << 14;
    for (int s = 0; s < slots_; ++s) sm_of_slot_[static_cast<std::size_t>(s)] = sm_of_slot(s, sm_count_);
    // Quanta from the largest sums: all blocks' durations, and each term over all blocks (at least any
    // one value, when there are no blocks).
    // Summed over the entries as the head runs them (a repeated stretch once per repetition): the same
    // sums, to the bit, as over the same head listed without repeats.
    double total_time = 0;
    std::array<double, kTerms> total_terms{};
    auto add_to_totals = [&](const TimedBlocks& b) {
        const double blocks = static_cast<double>(b.count) * static_cast<double>(heads_);
        total_time += std::max(blocks * b.duration, b.duration);
        const auto v = term_values(b.terms);
        for (std::size_t f = 0; f < kTerms; ++f) total_terms[f] += std::max(blocks * v[f], v[f]);
    };
    for_each_repeated(head_, repeats_, add_to_totals);
    std::vector<bool> boundary(head_.size() + 1, false);  // a repeat starts or ends before the entry
    for (const RepeatedStretch& r : repeats_) boundary[r.first] = boundary[r.first + r.length] = true;
    time_ = FixedPoint(total_time);
    for (std::size_t f = 0; f < kTerms; ++f) term_scale_[f] = FixedPoint(total_terms[f]);
    const std::size_t n = head_.size(), round = static_cast<std::size_t>(slots_);
    double longest = 0;
    for (const TimedBlocks& b : head_)
        if (b.count > 0) longest = std::max(longest, b.duration);
    may_spread_ = heads_ > 0 && longest * static_cast<double>(slots_) <= kSpreadShare * total_time;
    longest_ = time_.from_seconds(longest);
    duration_.resize(n);
    stretch_end_.resize(n);
    singles_end_.resize(n);
    // From the back: each entry needs the next one's.
    for (std::size_t e = n; e-- > 0;) {
        const TimedBlocks& b = head_[e];
        duration_[e] = time_.from_seconds(b.duration);
        // Stretches and runs of singles end where a repeat starts or ends: the entry that runs next is not e + 1.
        const bool stretch_goes_on = e + 1 < n && !boundary[e + 1] && b.count == 1 && head_[e + 1].count == 1 &&
                                     duration_[e + 1] >= duration_[e];
        stretch_end_[e] = stretch_goes_on ? stretch_end_[e + 1] : static_cast<std::uint32_t>(e + 1);
        // A single block outside a stretch of a round: one of a run of such that the heap may take.
        auto single = [&](std::size_t i) { return head_[i].count == 1 && stretch_end_[i] - i < round; };
        singles_end_[e] = single(e) && e + 1 < n && !boundary[e + 1] && single(e + 1) ? singles_end_[e + 1] : static_cast<std::uint32_t>(e + 1);
    }
}

BlockSchedule GreedyScheduler::run() {
    std::int64_t position = 0;
    for (std::int64_t h = 0; h < heads_;) {
        if (heads_cycle_.on && out_.timeline.size() >= timeline_blocks_) {
            const std::int64_t skipped = skip_cycles(heads_cycle_, h, heads_);
            h += skipped;
            if (h >= heads_) break;
        }
        if (log_.logging() && !log_.next_head()) {
            flush_log();
            log_.next_head();
        }
        run_head(position);
        ++h;
        if (spread_) {
            spread_heads(heads_ - h);
            break;
        }
    }
    settle();
    flush_log();
    out_.makespan_s = time_.to_seconds(ring_.back_time());
    if (spread_) finish_spread();
    Fixed all = 0;
    for (std::size_t e = 0; e < head_.size(); ++e) all += duration_[e] * head_[e].count;
    for (const RepeatedStretch& r : repeats_)
        for (std::size_t e = r.first; e < r.first + r.length; ++e) all += duration_[e] * head_[e].count * (r.times - 1);
    out_.block_seconds = time_.to_seconds(all * heads_);
    if (all == 0 && std::none_of(head_.begin(), head_.end(), [&](const TimedBlocks& b) { return b.count > 0 && heads_ > 0; }))
        return std::move(out_);  // no blocks
    // The busiest SM: the first whose summed terms take longest, as the reference's max_element.
    const BlockTerms flags = head_.front().terms;
    bool first = true;
    for (const TermSums& sums : sm_terms_) {
        std::array<double, kTerms> v{};
        for (std::size_t f = 0; f < kTerms; ++f) v[f] = term_scale_[f].to_seconds(sums[f]);
        const BlockTerms t = terms_from(v, flags);
        if (first || t.duration(1) > out_.busiest.duration(1)) out_.busiest = t;
        first = false;
    }
    return std::move(out_);
}

void GreedyScheduler::run_head(std::int64_t& position) {
    std::size_t e = 0;
    for (const RepeatedStretch& r : repeats_) {
        run_entries(e, r.first, position);
        run_repeated(r, position);
        e = r.first + r.length;
    }
    run_entries(e, head_.size(), position);
}

// The repetitions of a repeated stretch, skipping whole cycles of them once the slots' state repeats (as
// heads do).
void GreedyScheduler::run_repeated(const RepeatedStretch& r, std::int64_t& position) {
    if (spreading()) {
        spread(r.first, r.first + r.length, r.times);
        return;
    }
    in_repeat_ = true;
    CycleDetector cycle;
    std::int64_t blocks = 0;
    for (std::size_t e = r.first; e < r.first + r.length; ++e) {
        blocks += head_[e].count;
        if (repeat_lapper_ < 0 || head_[e].count > head_[static_cast<std::size_t>(repeat_lapper_)].count)
            repeat_lapper_ = static_cast<std::ptrdiff_t>(e);
    }
    for (std::int64_t t = 0; t < r.times;) {
        if (cycle.on && out_.timeline.size() >= timeline_blocks_) {
            const std::int64_t skipped = skip_cycles(cycle, t, r.times);
            t += skipped;
            position += skipped * blocks;
            if (t >= r.times) break;
        }
        run_entries(r.first, r.first + r.length, position);
        ++t;
        if (spread_) {
            spread(r.first, r.first + r.length, r.times - t);
            break;
        }
    }
    in_repeat_ = false;
    repeat_lapper_ = -1;
    if (log_.logging() && !log_.in_head()) log_.next_head();  // a flush above ended the head's row of the log
}

void GreedyScheduler::run_entries(std::size_t from, std::size_t to, std::int64_t& position) {
    const std::size_t round = static_cast<std::size_t>(slots_);
    for (std::size_t e = from; e < to; ++e) {
        if (spreading()) {
            spread(e, to, 1);
            return;
        }
        std::int64_t count = head_[e].count;
        for (; count > 0 && out_.timeline.size() < timeline_blocks_; --count) one_block(e, position++, true);
        if (count == 0) continue;
        position += count;
        if (head_[e].count == 1 && stretch_end_[e] - e >= round) {
            run_stretch(e);
            position += static_cast<std::int64_t>(stretch_end_[e] - e) - 1;
            e = stretch_end_[e] - 1;
            continue;
        }
        if (head_[e].count == 1 && singles_end_[e] - e >= 2 * round) {  // the heap's setup costs O(slots log slots)
            run_singles(e, singles_end_[e]);
            position += static_cast<std::int64_t>(singles_end_[e] - e) - 1;
            e = singles_end_[e] - 1;
            continue;
        }
        run_of(e, count);
    }
}

const TermSums& GreedyScheduler::convert(std::size_t e) {
    if (e < kept_entries_) {
        if (kept_terms_.capacity() < kept_entries_) kept_terms_.reserve(kept_entries_);  // no doubling: no copy held twice
        while (kept_terms_.size() <= e) kept_terms_.push_back(converted(kept_terms_.size()));
        return kept_terms_[e];
    }
    converted_ = converted(e);
    converted_entry_ = e;
    return converted_;
}

void GreedyScheduler::one_block(std::size_t e, std::int64_t position, bool record) {
    ++operations_;
    const int s = ring_.front_slot();
    const Fixed start = ring_.front_time(), end = start + duration_[e];
    credit(s, terms_of(e), 1);
    if (record)
        out_.timeline.push_back({position, sm_of_slot(s, sm_count_), slot_within_sm(s, sm_count_), time_.to_seconds(start),
                                 time_.to_seconds(end)});
    ring_.take_at_front(end);
}

void GreedyScheduler::run_of(std::size_t e, std::int64_t count) {
    const Fixed d = duration_[e];
    if (d == 0) {  // blocks that take no time all go to the front slot, which stays the front
        credit(ring_.front_slot(), terms_of(e), count);
        return;
    }
    // Making e the lapping class settles every slot, O(slots): worth it for a quarter of a round.
    const std::int64_t switch_at = slots_ / 4 + 1, bulk_at = 4 * static_cast<std::int64_t>(slots_);
    // A long run goes in bulk, O(slots log slots), unless a few blocks one at a time bring the slots in
    // turn: after a run of longer blocks only the slots free more than d after the earliest are out of
    // turn, and the earliest ones, a block each, fall in among them (a row kernel's rows alternate so);
    // those are placed in one merge (SlotRing::take_front_band).
    const std::int64_t steps_before_bulk = slots_ / 16;
    std::int64_t stepped = 0;
    while (count > 0) {
        if (ring_.deals_in_turn(d)) {
            if (!laps_with(e)) {
                if (count < switch_at && static_cast<std::ptrdiff_t>(e) != repeat_lapper_) {
                    one_block(e, 0, false);
                    --count;
                    continue;
                }
                settle();
                ring_.set_lapping_duration(d);
                lapping_ = static_cast<std::ptrdiff_t>(e);
            }
            ring_.lap(count);
            return;
        }
        if (count >= bulk_at && stepped >= steps_before_bulk) {
            deal_in_bulk(e, count);
            return;
        }
        // A run of four rounds or more takes the out-of-turn band in one merge (a settle first); a shorter run goes
        // one block at a time without settling (after a short ragged block the band is a few slots).
        if (stepped == 0 && count >= bulk_at) {
            settle();
            ring_.take_front_band(d, count, taker_);
            if (!taker_.empty()) {
                const TermSums& terms = terms_of(e);
                for (const int s : taker_) credit(s, terms, 1);
                count -= static_cast<std::int64_t>(taker_.size());
                stepped += static_cast<std::int64_t>(taker_.size());
                continue;
            }
        }
        one_block(e, 0, false);
        --count;
        ++stepped;
    }
}

// `count` equal blocks of duration d where the slots do not take them in turn. With m the earliest free
// time, slot s (free at f_s = m + l_s d + r_s, 0 <= r_s < d) could start blocks at f_s, f_s + d, ...; the
// greedy order takes those start times in order, round by round (m + L d to m + (L + 1) d), each round in
// the order of (r_s, s) among the slots with l_s <= L. So whole rounds up to some L, then the first slots of
// round L.
void GreedyScheduler::deal_in_bulk(std::size_t e, std::int64_t count) {
    settle();
    const Fixed d = duration_[e];
    ring_.times(scratch_);
    const std::size_t n = scratch_.size();
    const Fixed earliest = ring_.front_time();
    std::vector<Fixed> lap(n), rest(n);
    std::vector<int> by_lap(n);
    for (std::size_t s = 0; s < n; ++s) {
        lap[s] = (scratch_[s] - earliest) / d;
        rest[s] = (scratch_[s] - earliest) - lap[s] * d;
    }
    std::iota(by_lap.begin(), by_lap.end(), 0);
    std::sort(by_lap.begin(), by_lap.end(), [&](int a, int b) { return lap[static_cast<std::size_t>(a)] < lap[static_cast<std::size_t>(b)]; });
    // The round L the last block falls in, and how many blocks round L takes.
    Fixed left = count, last_round = 0, in_last = 0;
    std::size_t joined = 0;
    for (std::size_t j = 0; j < n; ++j) {
        const Fixed from = lap[static_cast<std::size_t>(by_lap[j])];
        const std::size_t width = j + 1;  // slots taking part from round `from` on
        if (j + 1 < n && lap[static_cast<std::size_t>(by_lap[j + 1])] == from) continue;
        const Fixed rounds = j + 1 < n ? lap[static_cast<std::size_t>(by_lap[j + 1])] - from : 0;
        if (j + 1 == n || left < rounds * static_cast<Fixed>(width)) {
            last_round = from + left / static_cast<Fixed>(width);
            in_last = left % static_cast<Fixed>(width);
            joined = width;
            break;
        }
        left -= rounds * static_cast<Fixed>(width);
    }
    // Round `last_round` goes to the first `in_last` of the joined slots, in the order of (r_s, s).
    std::vector<int> order(by_lap.begin(), by_lap.begin() + static_cast<std::ptrdiff_t>(joined));
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        const Fixed ra = rest[static_cast<std::size_t>(a)], rb = rest[static_cast<std::size_t>(b)];
        return ra < rb || (ra == rb && a < b);
    });
    std::vector<Fixed> took(n, 0);
    for (std::size_t s = 0; s < n; ++s) took[s] = std::max<Fixed>(0, last_round - lap[s]);
    for (std::size_t i = 0; i < static_cast<std::size_t>(in_last); ++i) took[static_cast<std::size_t>(order[i])] += 1;
    const TermSums terms = terms_of(e);
    for (std::size_t s = 0; s < n; ++s) {
        if (took[s] == 0) continue;
        scratch_[s] += took[s] * d;
        credit(static_cast<int>(s), terms, took[s]);
    }
    ring_.assign(scratch_);
}

// Single blocks from `from` to the end of their stretch, durations not decreasing: each ends no earlier
// than the one before it, so the slots that took one wait behind the others in the order they took it,
// and the next block goes to the earlier of the first slot not yet taken and the first of that queue.
void GreedyScheduler::run_stretch(std::size_t from) {
    settle();
    const std::size_t end = stretch_end_[from], n = static_cast<std::size_t>(slots_);
    untouched_.resize(n);
    queue_.resize(n);
    for (std::size_t p = 0; p < n; ++p) untouched_[p] = {ring_.time_at(static_cast<int>(p)), ring_.slot_at(static_cast<int>(p))};
    auto wrap = [n](std::size_t i) { return i < n ? i : i - n; };
    std::size_t next = 0, first = 0, queued = 0;  // untouched_[next...]; queue_[first...], circular
    taker_.clear();
    std::size_t j = from;
    for (; j < end; ++j) {
        const bool from_queue = queued > 0 && (next == n || queue_[first] < untouched_[next]);
        const SlotTime front = from_queue ? queue_[first] : untouched_[next];
        const SlotTime took{front.time + duration_[j], front.slot};
        // Once the free times lie within one block they stay so (blocks do not get shorter): looked at
        // every few blocks.
        if ((j - from) % 16 == 0) {
            const SlotTime* back = &untouched_[n - 1];
            if (queued > 0 && (next == n || *back < queue_[wrap(first + queued - 1)])) back = &queue_[wrap(first + queued - 1)];
            if (*back < took) break;  // the rest go in turn
        }
        if (from_queue) {
            first = wrap(first + 1);
            --queued;
        } else {
            ++next;
        }
        taker_.push_back(front.slot);
        queue_[wrap(first + queued)] = took;
        ++queued;
    }
    // Credited at once: the few thousand entries a head starts with keep their terms in cache, where the
    // log would only add its own pass.
    credit_each(from, taker_.data(), taker_.size());
    // Back into the ring, in order.
    rest_.assign(untouched_.begin() + static_cast<std::ptrdiff_t>(next), untouched_.end());
    for (std::size_t i = 0, r = 0, q = 0; i < n; ++i) {
        if (q < queued && (r == rest_.size() || queue_[wrap(first + q)] < rest_[r])) untouched_[i] = queue_[wrap(first + q++)];
        else untouched_[i] = rest_[r++];
    }
    ring_.assign_in_order(untouched_);
    if (j < end) deal_stretch(j);
}

// Single blocks from `from` to `to` a round at a time where each slot takes one (model/slot_rounds.hpp),
// else one at a time through a binary heap.
void GreedyScheduler::run_singles(std::size_t from, std::size_t to) {
    settle();
    const std::size_t n = static_cast<std::size_t>(slots_);
    untouched_.resize(n);
    for (std::size_t p = 0; p < n; ++p) untouched_[p] = {ring_.time_at(static_cast<int>(p)), ring_.slot_at(static_cast<int>(p))};
    rounds_.assign_in_order(untouched_);
    for (std::size_t j = from; j < to;) {
        const std::size_t count = std::min(n, to - j);
        if (count < n || !rounds_.deal_round(&duration_[j])) rounds_.deal_one_at_a_time(&duration_[j], count);
        credit_singles(j, rounds_.takers().data(), count);
        j += count;
    }
    ring_.assign_in_order(rounds_.in_order());
}

// The rest of a stretch, from `from`, when the slots take it in turn: the slot at position p takes the
// blocks from + p, from + p + slots, ...
void GreedyScheduler::deal_stretch(std::size_t from) {
    const InTurnSums& sums = in_turn_sums(from);
    for (std::size_t p = 0; p < sums.time.size(); ++p) {
        const int position = static_cast<int>(p);
        credit(ring_.slot_at(position), sums.terms[p], 1);
        ring_.add_at(position, sums.time[p]);
    }
    ring_.rotate(static_cast<std::int64_t>(stretch_end_[from] - from));
}

const GreedyScheduler::InTurnSums& GreedyScheduler::in_turn_sums(std::size_t from) {
    constexpr std::size_t kKept = 4;
    for (std::size_t i = 0; i < in_turn_sums_.size(); ++i)
        if (in_turn_sums_[i].from == from) {
            std::rotate(in_turn_sums_.begin(), in_turn_sums_.begin() + static_cast<std::ptrdiff_t>(i),
                        in_turn_sums_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            return in_turn_sums_.front();
        }
    if (in_turn_sums_.size() < kKept) in_turn_sums_.emplace_back();
    std::rotate(in_turn_sums_.begin(), in_turn_sums_.end() - 1, in_turn_sums_.end());
    InTurnSums& sums = in_turn_sums_.front();
    const std::size_t end = stretch_end_[from], round = static_cast<std::size_t>(slots_);
    const std::size_t width = std::min(round, end - from);
    sums.from = from;
    sums.time.assign(width, 0);
    sums.terms.assign(width, TermSums{});
    for (std::size_t row = from; row < end; row += round)
        for (std::size_t p = 0; p < width && row + p < end; ++p) {
            sums.time[p] += duration_[row + p];
            const auto v = term_values(head_[row + p].terms);
            for (std::size_t f = 0; f < kTerms; ++f) sums.terms[p][f] += term_scale_[f].from_seconds(v[f]);
        }
    return sums;
}

void GreedyScheduler::credit_singles(std::size_t first, const int* takers, std::size_t count) {
    if (count == 0) return;
    if (log_.logging() && !in_repeat_) {
        log_.record(first, takers, count);
        return;
    }
    credit_each(first, takers, count);
}

void GreedyScheduler::flush_log() {
    log_.flush([this](int slot, std::size_t entry) { credit(slot, terms_of(entry), 1); });
    flush_lapped();
}

void GreedyScheduler::settle() {
    ++operations_;
    ring_.settle();
    if (lapping_ >= 0) {
        // Counted by class (the lapping entry's duration and terms): a row kernel's rows alternate between a
        // few, and the terms are multiplied once per class and SM when flushed, not at every settle.
        const auto l = static_cast<std::size_t>(lapping_);
        auto same = [&](const LappedClass& c) { return c.entry == l || laps_with(c.entry); };
        auto it = std::find_if(lapped_classes_.begin(), lapped_classes_.end(), same);
        if (it == lapped_classes_.end()) {
            if (lapped_classes_.size() == kLappedClasses) flush_lapped();
            lapped_classes_.push_back({l, std::vector<std::int64_t>(static_cast<std::size_t>(sm_count_), 0), 0});
            it = lapped_classes_.end() - 1;
        }
        it->by_every_slot += ring_.lapped_by_every_slot();
        for (std::size_t sm = 0; sm < it->by_sm.size(); ++sm) it->by_sm[sm] += ring_.lapped_by_sm()[sm];
    }
    ring_.clear_lapped();
}

void GreedyScheduler::spread(std::size_t from, std::size_t to, Fixed times) {
    for (std::size_t e = from; e < to; ++e) {
        const Fixed blocks = times * head_[e].count;
        if (blocks == 0) continue;
        spread_work_ += duration_[e] * blocks;
        const TermSums& t = terms_of(e);
        for (std::size_t f = 0; f < kTerms; ++f) spread_terms_[f] += t[f] * blocks;
    }
}

void GreedyScheduler::spread_heads(Fixed heads) {
    std::size_t e = 0;
    for (const RepeatedStretch& r : repeats_) {
        spread(e, r.first, heads);
        spread(r.first, r.first + r.length, heads * r.times);
        e = r.first + r.length;
    }
    spread(e, head_.size(), heads);
}

// List scheduling from free times f_s with work W left, blocks at most `longest_`: the last block starts
// when every slot is busy, so no later than (sum f + W - its duration) / slots, and the makespan is at most
// (sum f + W) / slots + longest (1 - 1 / slots); at least that average, and at least max f.
void GreedyScheduler::finish_spread() {
    ring_.times(scratch_);
    Fixed free_sum = 0;
    for (const Fixed f : scratch_) free_sum += f;
    const Fixed slots = slots_, latest = ring_.back_time();
    const Fixed average = (free_sum + spread_work_) / slots;
    const Fixed low = std::max(latest, average), high = std::max(latest, average + longest_ - longest_ / slots);
    out_.makespan_s = time_.to_seconds(low + (high - low) / 2);
    out_.makespan_bound_s = time_.to_seconds((high - low + 1) / 2);
    // Each SM its slots' share of the spread terms (divided first: the sums may use 125 bits).
    const Fixed per_sm = slots_ / sm_count_;
    for (TermSums& sm : sm_terms_)
        for (std::size_t f = 0; f < kTerms; ++f)
            sm[f] += spread_terms_[f] / slots * per_sm + spread_terms_[f] % slots * per_sm / slots;
}

void GreedyScheduler::flush_lapped() {
    for (const LappedClass& c : lapped_classes_) {
        const TermSums& terms = terms_of(c.entry);
        const std::int64_t by_every_sm = c.by_every_slot * (slots_ / sm_count_);
        for (std::size_t sm = 0; sm < sm_terms_.size(); ++sm) {
            const std::int64_t lapped = by_every_sm + c.by_sm[sm];
            if (lapped != 0)
                for (std::size_t f = 0; f < kTerms; ++f) sm_terms_[sm][f] += terms[f] * lapped;
        }
    }
    lapped_classes_.clear();
}

void GreedyScheduler::relative_state(std::vector<Fixed>& relative, Fixed& earliest) const {
    ring_.times(relative);
    earliest = ring_.front_time();
    for (Fixed& t : relative) t -= earliest;
}

// Brent's cycle detection on the state after each step (a head, or a repetition of a repeated stretch):
// compared with a saved state (by signature first, then slot by slot), which is replaced after 1, 2, 4, ...
// steps. When the state repeats, the steps in between will repeat for ever: whole cycles of them are added
// at once. Returns the steps skipped.
std::int64_t GreedyScheduler::skip_cycles(CycleDetector& c, std::int64_t done, std::int64_t total) {
    const Signature now = signature();
    Fixed earliest = 0;
    if (c.saved.done >= 0 && now == c.saved.signature) {
        relative_state(scratch_, earliest);
        if (scratch_ == c.saved.relative) {
            c.on = false;
            settle();
            flush_log();
            const std::int64_t period = done - c.saved.done, cycles = (total - done) / period;
            ring_.add_to_all((earliest - c.saved.earliest) * cycles);
            for (std::size_t sm = 0; sm < sm_terms_.size(); ++sm)
                for (std::size_t f = 0; f < kTerms; ++f)
                    sm_terms_[sm][f] += (sm_terms_[sm][f] - c.saved.sm_terms[sm][f]) * cycles;
            return cycles * period;
        }
    }
    if (++c.since_saved >= c.power || c.saved.done < 0) {
        settle();
        flush_log();
        relative_state(c.saved.relative, c.saved.earliest);
        c.saved.done = done;
        c.saved.signature = now;
        c.saved.sm_terms = sm_terms_;
        c.power *= 2;
        c.since_saved = 0;
    }
    return 0;
}

}  // namespace

BlockSchedule schedule_blocks(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count, int slots_per_sm,
                              std::size_t timeline_blocks, const std::vector<RepeatedStretch>& repeats, std::int64_t exact_operations) {
    for (const TimedBlocks& b : head) {
        bool finite = finite_non_negative(b.duration);
        for (double v : term_values(b.terms)) finite = finite && finite_non_negative(v);
        if (!finite) return schedule_one_at_a_time(expanded(head, repeats), heads, sm_count, slots_per_sm, timeline_blocks);
    }
    return GreedyScheduler(head, repeats, heads, sm_count, slots_per_sm, timeline_blocks, exact_operations).run();
}

}  // namespace fasim
