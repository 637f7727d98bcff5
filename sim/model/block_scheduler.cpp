#include "model/block_scheduler.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>

#include "model/fixed_point.hpp"
#include "model/slot_ring.hpp"

namespace fasim {

namespace {

// BlockTerms' seven sums, exact (model/fixed_point.hpp).
constexpr int kTerms = 7;
using TermSums = std::array<Fixed, kTerms>;

std::array<double, kTerms> term_values(const BlockTerms& t) {
    return {t.matmul, t.nonmatmul, t.sfu, t.smem, t.l2, t.issue, t.latency};
}

BlockTerms terms_from(const std::array<double, kTerms>& v, const BlockTerms& flags) {
    BlockTerms t;
    t.matmul = v[0], t.nonmatmul = v[1], t.sfu = v[2], t.smem = v[3], t.l2 = v[4], t.issue = v[5], t.latency = v[6];
    t.latency_bound_tensor = flags.latency_bound_tensor;
    t.overlapped_products = flags.overlapped_products;
    return t;
}

bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

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
                sm_terms[static_cast<std::size_t>(s % sm_count)] += b.terms;
                if (out.timeline.size() < timeline_blocks)
                    out.timeline.push_back({position, static_cast<int>(s % sm_count), static_cast<int>(s / sm_count), at, end});
                free_slots.push({end, s});
            }
    out.busiest = *std::max_element(sm_terms.begin(), sm_terms.end(),
                                    [](const BlockTerms& a, const BlockTerms& b) { return a.duration(1) < b.duration(1); });
    return out;
}

// The greedy list schedule, computed exactly on fixed-point times and fast where the blocks have
// structure:
//  - a run of equal blocks that the slots take in turn (their free times lie within one block of each
//    other) advances whole rounds at once (SlotRing::lap); one that they do not take in turn is dealt in
//    bulk: each slot's share follows from its free time, in O(slots log slots);
//  - single blocks whose durations do not decrease (causal attention's Q tiles in launch order) are
//    taken in turn too once the slots' free times lie within one block: from there each slot's share of
//    the stretch is a sum of every slots-th duration, read from suffix sums;
//  - every head runs the same blocks: once the slots' free times relative to the earliest, slot by slot,
//    repeat after a cycle of heads, each further cycle adds the same time to every slot and the same terms
//    to every SM, and whole cycles are added at once. Repetition is tested exactly, on the fixed-point
//    times, so the cycles added are exact. It happens where the durations are commensurate (multiples of
//    a common step not too small) or each head fills whole rounds; with generic durations the slots'
//    free times keep drifting against one another and never repeat, and every head is scheduled.
class GreedyScheduler {
public:
    GreedyScheduler(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count, int slots_per_sm,
                    std::size_t timeline_blocks);
    BlockSchedule run();

private:
    // One cycle-detection snapshot (Brent's algorithm): heads done, free times relative to the
    // earliest (by slot), the earliest, and the SMs' terms.
    struct Snapshot {
        std::int64_t heads_done = -1;
        std::vector<Fixed> relative;
        Fixed earliest = 0;
        std::vector<TermSums> sm_terms;
        std::uint64_t hash = 0;
    };

    void run_head(std::int64_t& position);
    void one_block(std::size_t e, std::int64_t position, bool record);
    void run_of(std::size_t e, std::int64_t count);
    void deal_in_bulk(std::size_t e, std::int64_t count);
    void deal_stretch(std::size_t from);
    void settle();
    void credit(int slot, const TermSums& t, Fixed times) {
        TermSums& sum = sm_terms_[static_cast<std::size_t>(sm_of_slot_[static_cast<std::size_t>(slot)])];
        for (int f = 0; f < kTerms; ++f) sum[static_cast<std::size_t>(f)] += t[static_cast<std::size_t>(f)] * times;
    }
    void prepare_stretches();
    std::uint64_t relative_state(std::vector<Fixed>& relative, Fixed& earliest) const;
    std::int64_t skip_repeating_heads(std::int64_t heads_done);

    const std::vector<TimedBlocks>& head_;
    const std::int64_t heads_;
    const int sm_count_, slots_;
    const std::size_t timeline_blocks_;
    FixedPoint time_;
    std::array<FixedPoint, kTerms> term_scale_;
    std::vector<Fixed> duration_;      // per entry
    std::vector<TermSums> terms_;      // per entry
    // Stretches of single blocks whose durations do not decrease: per entry, the end of its stretch
    // (the entry itself outside one); in stretches of at least a round of slots, the entry's duration
    // and terms plus those of the entries a round, two rounds, ... later in the stretch.
    std::vector<std::size_t> stretch_end_;
    std::vector<Fixed> stretch_time_;
    std::vector<TermSums> stretch_terms_;
    SlotRing ring_;
    std::vector<int> sm_of_slot_;
    std::vector<TermSums> sm_terms_;
    std::ptrdiff_t lapping_ = -1;      // the entry whose blocks the ring laps with
    BlockSchedule out_;
    // Cycle detection.
    int check_every_ = 1;
    Snapshot saved_;
    std::int64_t power_ = 1, since_saved_ = 0;
    bool detect_ = true;
    std::vector<Fixed> scratch_;
};

GreedyScheduler::GreedyScheduler(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count,
                                 int slots_per_sm, std::size_t timeline_blocks)
    : head_(head), heads_(heads), sm_count_(sm_count), slots_(sm_count * slots_per_sm), timeline_blocks_(timeline_blocks),
      ring_(sm_count * slots_per_sm), sm_of_slot_(static_cast<std::size_t>(slots_)),
      sm_terms_(static_cast<std::size_t>(sm_count), TermSums{}) {
    for (int s = 0; s < slots_; ++s) sm_of_slot_[static_cast<std::size_t>(s)] = s % sm_count_;
    // Quanta from the largest sums: all blocks' durations, and each term over all blocks (at least any
    // one value, when there are no blocks).
    double total_time = 0;
    std::array<double, kTerms> total_terms{};
    for (const TimedBlocks& b : head_) {
        const double blocks = static_cast<double>(b.count) * static_cast<double>(heads_);
        total_time += std::max(blocks * b.duration, b.duration);
        const auto v = term_values(b.terms);
        for (std::size_t f = 0; f < kTerms; ++f) total_terms[f] += std::max(blocks * v[f], v[f]);
    }
    time_ = FixedPoint(total_time);
    for (std::size_t f = 0; f < kTerms; ++f) term_scale_[f] = FixedPoint(total_terms[f]);
    for (const TimedBlocks& b : head_) {
        duration_.push_back(time_.from_seconds(b.duration));
        const auto v = term_values(b.terms);
        TermSums t;
        for (std::size_t f = 0; f < kTerms; ++f) t[f] = term_scale_[f].from_seconds(v[f]);
        terms_.push_back(t);
    }
    // Checking for repeating heads costs O(slots); a head costs at least O(entries).
    check_every_ = static_cast<int>(std::clamp<std::size_t>(static_cast<std::size_t>(slots_) / (4 * head_.size() + 1), 1, 16));
    prepare_stretches();
}

void GreedyScheduler::prepare_stretches() {
    const std::size_t n = head_.size(), round = static_cast<std::size_t>(slots_);
    stretch_end_.resize(n);
    bool any_long = false;
    for (std::size_t a = 0; a < n;) {
        std::size_t e = a + 1;
        if (head_[a].count == 1)
            while (e < n && head_[e].count == 1 && duration_[e] >= duration_[e - 1]) ++e;
        for (std::size_t i = a; i < e; ++i) stretch_end_[i] = e;
        any_long = any_long || e - a >= 2 * round;
        a = e;
    }
    if (!any_long) return;
    stretch_time_.assign(n, 0);
    stretch_terms_.assign(n, TermSums{});
    for (std::size_t i = n; i-- > 0;) {
        if (head_[i].count != 1) continue;
        stretch_time_[i] = duration_[i];
        stretch_terms_[i] = terms_[i];
        if (i + round < stretch_end_[i]) {
            stretch_time_[i] += stretch_time_[i + round];
            for (std::size_t f = 0; f < kTerms; ++f) stretch_terms_[i][f] += stretch_terms_[i + round][f];
        }
    }
}

BlockSchedule GreedyScheduler::run() {
    std::int64_t position = 0;
    for (std::int64_t h = 0; h < heads_;) {
        if (detect_ && out_.timeline.size() >= timeline_blocks_ && h % check_every_ == 0) {
            const std::int64_t skipped = skip_repeating_heads(h);
            h += skipped;
            if (h >= heads_) break;
        }
        run_head(position);
        ++h;
    }
    settle();
    out_.makespan_s = time_.to_seconds(ring_.back_time());
    Fixed all = 0;
    for (std::size_t e = 0; e < head_.size(); ++e) all += duration_[e] * head_[e].count;
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
    const std::size_t round = static_cast<std::size_t>(slots_);
    for (std::size_t e = 0; e < head_.size(); ++e) {
        std::int64_t count = head_[e].count;
        for (; count > 0 && out_.timeline.size() < timeline_blocks_; --count) one_block(e, position++, true);
        if (count == 0) continue;
        position += count;
        if (!stretch_time_.empty() && head_[e].count == 1 && stretch_end_[e] - e >= round && ring_.deals_in_turn(duration_[e])) {
            deal_stretch(e);
            position += static_cast<std::int64_t>(stretch_end_[e] - e) - 1;
            e = stretch_end_[e] - 1;
            continue;
        }
        run_of(e, count);
    }
}

void GreedyScheduler::one_block(std::size_t e, std::int64_t position, bool record) {
    const int s = ring_.front_slot();
    const Fixed start = ring_.front_time(), end = start + duration_[e];
    credit(s, terms_[e], 1);
    if (record)
        out_.timeline.push_back({position, s % sm_count_, s / sm_count_, time_.to_seconds(start), time_.to_seconds(end)});
    ring_.take_at_front(end);
}

void GreedyScheduler::run_of(std::size_t e, std::int64_t count) {
    const Fixed d = duration_[e];
    if (d == 0) {  // blocks that take no time all go to the front slot, which stays the front
        credit(ring_.front_slot(), terms_[e], count);
        return;
    }
    // Making e the lapping class settles every slot, O(slots): worth it for a quarter of a round.
    const std::int64_t switch_at = slots_ / 4 + 1, bulk_at = 4 * static_cast<std::int64_t>(slots_);
    while (count > 0) {
        if (ring_.deals_in_turn(d)) {
            if (lapping_ != static_cast<std::ptrdiff_t>(e)) {
                if (count < switch_at) {
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
        if (count >= bulk_at) {
            deal_in_bulk(e, count);
            return;
        }
        one_block(e, 0, false);
        --count;
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
    for (std::size_t s = 0; s < n; ++s) {
        if (took[s] == 0) continue;
        scratch_[s] += took[s] * d;
        credit(static_cast<int>(s), terms_[e], took[s]);
    }
    ring_.assign(scratch_);
}

// Single blocks from `from` to the end of its stretch, durations not decreasing, the slots taking them in
// turn: each block's end is no earlier than the one before it, so each sends its slot to the back, and the
// slot at position p takes blocks from + p, from + p + slots, ...
void GreedyScheduler::deal_stretch(std::size_t from) {
    settle();
    const std::size_t end = stretch_end_[from], round = static_cast<std::size_t>(slots_);
    for (std::size_t p = 0; p < round && from + p < end; ++p) {
        const int position = static_cast<int>(p);
        credit(ring_.slot_at(position), stretch_terms_[from + p], 1);
        ring_.add_at(position, stretch_time_[from + p]);
    }
    ring_.rotate(static_cast<std::int64_t>(end - from));
}

void GreedyScheduler::settle() {
    ring_.settle();
    std::vector<std::int64_t>& lapped = ring_.lapped_blocks();
    if (lapping_ < 0) return;
    for (std::size_t s = 0; s < lapped.size(); ++s) {
        if (lapped[s] == 0) continue;
        credit(static_cast<int>(s), terms_[static_cast<std::size_t>(lapping_)], lapped[s]);
        lapped[s] = 0;
    }
}

std::uint64_t GreedyScheduler::relative_state(std::vector<Fixed>& relative, Fixed& earliest) const {
    ring_.times(relative);
    earliest = ring_.front_time();
    std::uint64_t hash = 0x9e3779b97f4a7c15u;
    for (Fixed& t : relative) {
        t -= earliest;
        hash = (hash ^ static_cast<std::uint64_t>(t) ^ static_cast<std::uint64_t>(t >> 64)) * 0xff51afd7ed558ccdu;
        hash ^= hash >> 29;
    }
    return hash;
}

// Brent's cycle detection on the state after every check_every_ heads: compared with a saved state, which
// is replaced after 1, 2, 4, ... checks. When the state repeats, the heads in between will repeat for
// ever: whole cycles of them are added at once. Returns the heads skipped.
std::int64_t GreedyScheduler::skip_repeating_heads(std::int64_t heads_done) {
    Fixed earliest = 0;
    const std::uint64_t hash = relative_state(scratch_, earliest);
    if (saved_.heads_done >= 0 && hash == saved_.hash && scratch_ == saved_.relative) {
        detect_ = false;
        settle();
        const std::int64_t period = heads_done - saved_.heads_done, cycles = (heads_ - heads_done) / period;
        ring_.add_to_all((earliest - saved_.earliest) * cycles);
        for (std::size_t sm = 0; sm < sm_terms_.size(); ++sm)
            for (std::size_t f = 0; f < kTerms; ++f)
                sm_terms_[sm][f] += (sm_terms_[sm][f] - saved_.sm_terms[sm][f]) * cycles;
        return cycles * period;
    }
    if (++since_saved_ >= power_ || saved_.heads_done < 0) {
        settle();
        saved_.heads_done = heads_done;
        saved_.relative = scratch_;
        saved_.earliest = earliest;
        saved_.sm_terms = sm_terms_;
        saved_.hash = hash;
        power_ *= 2;
        since_saved_ = 0;
    }
    return 0;
}

}  // namespace

BlockSchedule schedule_blocks(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count, int slots_per_sm,
                              std::size_t timeline_blocks) {
    for (const TimedBlocks& b : head) {
        bool finite = finite_non_negative(b.duration);
        for (double v : term_values(b.terms)) finite = finite && finite_non_negative(v);
        if (!finite) return schedule_one_at_a_time(head, heads, sm_count, slots_per_sm, timeline_blocks);
    }
    return GreedyScheduler(head, heads, sm_count, slots_per_sm, timeline_blocks).run();
}

}  // namespace fasim
