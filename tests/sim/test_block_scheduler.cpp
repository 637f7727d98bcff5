// The block scheduler against the greedy list scheduling it replaces (kept here, as it was, as the
// reference): every block in launch order onto the slot that frees first.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <string>

#include "model/block_scheduler.hpp"
#include "model/fixed_point.hpp"

using namespace fasim;

namespace {

// The scheduler with no budget: every block placed as the greedy places it (the checks below are to the bit).
BlockSchedule exact_schedule(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count, int slots_per_sm,
                             std::size_t timeline_blocks, const std::vector<RepeatedStretch>& repeats = {}) {
    return schedule_blocks(head, heads, sm_count, slots_per_sm, timeline_blocks, repeats, std::numeric_limits<std::int64_t>::max());
}

// The runtime model's scheduler before model/block_scheduler.cpp: a priority queue of slot free times,
// one block at a time. `Sums` gives its arithmetic: doubles, as it was, or exact fixed-point sums.
template <class Sums>
BlockSchedule reference_schedule(const std::vector<TimedBlocks>& head, std::int64_t heads, int sm_count,
                                 int slots_per_sm, std::size_t timeline_blocks, const Sums& sums = {}) {
    using Time = typename Sums::Time;
    BlockSchedule out;
    const std::int64_t slots = static_cast<std::int64_t>(sm_count) * slots_per_sm;
    using Slot = std::pair<Time, std::int64_t>;  // (free at, slot index)
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> free_slots;
    for (std::int64_t s = 0; s < slots; ++s) free_slots.push({Time{0}, s});
    std::vector<typename Sums::Terms> sm_terms(static_cast<std::size_t>(sm_count));
    Time makespan{0}, block_seconds{0};
    std::int64_t position = 0;
    for (std::int64_t h = 0; h < heads; ++h) {
        for (const TimedBlocks& b : head) {
            const Time duration = sums.time(b.duration);
            const typename Sums::Terms terms = sums.terms(b.terms);
            for (std::int64_t c = 0; c < b.count; ++c, ++position) {
                auto [at, s] = free_slots.top();
                free_slots.pop();
                const Time end = at + duration;
                makespan = std::max(makespan, end);
                block_seconds += duration;
                sm_terms[static_cast<std::size_t>(s % sm_count)] += terms;
                if (out.timeline.size() < timeline_blocks)
                    out.timeline.push_back({position, static_cast<int>(s % sm_count), static_cast<int>(s / sm_count),
                                            sums.seconds(at), sums.seconds(end)});
                free_slots.push({end, s});
            }
        }
    }
    out.makespan_s = sums.seconds(makespan);
    out.block_seconds = sums.seconds(block_seconds);
    std::vector<BlockTerms> sm_seconds;
    for (const auto& t : sm_terms) sm_seconds.push_back(sums.seconds(t));
    out.busiest = *std::max_element(sm_seconds.begin(), sm_seconds.end(),
                                    [](const BlockTerms& a, const BlockTerms& b) { return a.duration(1) < b.duration(1); });
    return out;
}

// As the scheduler was: double precision.
struct DoubleSums {
    using Time = double;
    using Terms = BlockTerms;
    Time time(double s) const { return s; }
    Terms terms(const BlockTerms& t) const { return t; }
    double seconds(Time t) const { return t; }
    BlockTerms seconds(const Terms& t) const { return t; }
};

// Exact sums: each value rounded once to model/fixed_point.hpp's quanta (a scale fine enough to hold
// every test value exactly), then added without rounding.
struct ExactSums {
    using Time = Fixed;
    struct Terms {
        std::array<Fixed, 8> sum{};
        bool any = false;
        BlockTerms flags;
        Terms& operator+=(const Terms& o) {
            for (std::size_t f = 0; f < sum.size(); ++f) sum[f] += o.sum[f];
            any = true;
            flags = o.flags;
            return *this;
        }
    };
    FixedPoint scale = FixedPoint(std::ldexp(1.0, 40));
    Time time(double s) const { return scale.from_seconds(s); }
    Terms terms(const BlockTerms& t) const {
        Terms out;
        const double v[] = {t.matmul, t.nonmatmul, t.sfu, t.smem, t.l2, t.issue, t.latency, t.fill};
        for (std::size_t f = 0; f < out.sum.size(); ++f) out.sum[f] = scale.from_seconds(v[f]);
        out.flags = t;
        return out;
    }
    double seconds(Time t) const { return scale.to_seconds(t); }
    BlockTerms seconds(const Terms& t) const {
        BlockTerms out;
        if (!t.any) return out;
        out.matmul = seconds(t.sum[0]), out.nonmatmul = seconds(t.sum[1]), out.sfu = seconds(t.sum[2]);
        out.smem = seconds(t.sum[3]), out.l2 = seconds(t.sum[4]), out.issue = seconds(t.sum[5]), out.latency = seconds(t.sum[6]);
        out.fill = seconds(t.sum[7]);
        out.latency_bound_tensor = t.flags.latency_bound_tensor;
        out.overlapped_products = t.flags.overlapped_products;
        return out;
    }
};

// A kernel's shape as time_kernel hands it to the scheduler.
struct Case {
    std::vector<TimedBlocks> head;
    std::int64_t heads = 1;
    int sm_count = 1, slots_per_sm = 1;
    std::size_t timeline_blocks = 0;
    std::string what;
    std::int64_t grid() const {
        std::int64_t per_head = 0;
        for (const TimedBlocks& b : head) per_head += b.count;
        return per_head * heads;
    }
};

// Random block work. Dyadic values (multiples of 2^-12 below 2^8) add up exactly in double precision, so
// the reference's sums carry no rounding and both schedulers must agree to the bit; other values are
// generic doubles.
class CaseMaker {
public:
    CaseMaker(std::uint64_t seed, bool dyadic) : rng_(seed), dyadic_(dyadic) {}

    double value() {
        if (dyadic_) return std::ldexp(static_cast<double>(std::uniform_int_distribution<int>(1, 1 << 20)(rng_)), -12);
        return std::uniform_real_distribution<double>(0.05, 4.0)(rng_) * 1e-6;
    }
    BlockTerms terms(bool latency_bound, bool overlapped) {
        BlockTerms t;
        t.matmul = value();
        t.nonmatmul = value() * pick(0.0, 1.0);
        t.sfu = value() * pick(0.0, 1.0);
        t.smem = value() * pick(0.0, 1.0);
        t.l2 = value() * pick(0.0, 1.0);
        t.issue = latency_bound ? value() : 0;
        t.latency = value() * pick(0.0, 0.0, 1.0);
        t.fill = value() * pick(0.0, 1.0);
        t.latency_bound_tensor = latency_bound;
        t.overlapped_products = overlapped;
        return t;
    }
    double pick(double a, double b) { return std::uniform_int_distribution<int>(0, 1)(rng_) ? a : b; }
    double pick(double a, double b, double c) {
        const int i = std::uniform_int_distribution<int>(0, 2)(rng_);
        return i == 0 ? a : i == 1 ? b : c;
    }
    std::int64_t uniform(std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_); }

    static constexpr int kShapes = 8;

    // Durations as time_kernel computes them: each block's terms at the resident blocks per SM.
    Case make(int shape) {
        Case c;
        static const int sms[] = {1, 1, 2, 3, 5, 7, 8, 13, 16, 32, 108, 132};
        c.sm_count = sms[uniform(0, std::size(sms) - 1)];
        c.slots_per_sm = static_cast<int>(uniform(1, 4));
        const std::int64_t slots = static_cast<std::int64_t>(c.sm_count) * c.slots_per_sm;
        const bool latency_bound = uniform(0, 1) != 0, overlapped = !latency_bound && uniform(0, 3) == 0;
        std::vector<std::pair<BlockTerms, std::int64_t>> head;
        auto count_near = [&](std::int64_t n) { return std::max<std::int64_t>(1, n + uniform(-2, 2)); };
        switch (shape) {
            case 0: {  // 1 to 3 entries, counts from single blocks to several rounds of the slots
                const std::int64_t entries = uniform(1, 3);
                for (std::int64_t e = 0; e < entries; ++e) {
                    const std::int64_t scale = uniform(0, 3);
                    const std::int64_t count = scale == 0 ? uniform(1, 3) : scale == 1 ? count_near(slots)
                                             : scale == 2 ? uniform(1, 3 * slots) : uniform(slots, 9 * slots);
                    head.push_back({terms(latency_bound, overlapped), count});
                }
                c.what = "1-3 entries";
                break;
            }
            case 1: {  // interior blocks and a ragged last one, the last one shorter or longer
                const BlockTerms interior = terms(latency_bound, overlapped);
                BlockTerms last = interior;
                last.matmul *= pick(0.5, 0.25, 1.5);
                head.push_back({interior, uniform(1, 4 * slots)});
                head.push_back({last, 1});
                c.what = "interior + ragged";
                break;
            }
            case 2: case 3: {  // many distinct entries: causal tiles in launch order (growing), or reversed
                const std::int64_t n = uniform(2, 600);
                const BlockTerms tile = terms(latency_bound, overlapped), diagonal = terms(latency_bound, overlapped);
                for (std::int64_t i = 0; i < n; ++i) {
                    const double visits = static_cast<double>(shape == 2 ? i : n - 1 - i);
                    BlockTerms t = diagonal;
                    t.matmul += visits * tile.matmul;
                    t.nonmatmul += visits * tile.nonmatmul;
                    t.sfu += visits * tile.sfu;
                    t.smem += visits * tile.smem;
                    t.l2 += visits * tile.l2;
                    t.issue += visits * tile.issue;
                    head.push_back({t, 1});
                }
                c.what = shape == 2 ? "causal" : "causal reversed";
                break;
            }
            case 4: {  // many entries: random values, random counts
                const std::int64_t n = uniform(4, 300);
                for (std::int64_t i = 0; i < n; ++i) head.push_back({terms(latency_bound, overlapped), uniform(0, 3) ? 1 : uniform(1, 2 * slots)});
                c.what = "random entries";
                break;
            }
            case 5: {  // a long block, then runs of short ones that the slots do not take in turn at first
                BlockTerms t = terms(latency_bound, overlapped);
                t.matmul *= static_cast<double>(uniform(2, 300));
                head.push_back({t, uniform(1, 3)});
                for (std::int64_t e = uniform(1, 3); e > 0; --e) head.push_back({terms(latency_bound, overlapped), uniform(1, 12 * slots)});
                c.what = "long, then short runs";
                break;
            }
            case 6: {  // blocks that take no time among others
                const std::int64_t n = uniform(2, 6);
                for (std::int64_t i = 0; i < n; ++i)
                    head.push_back({uniform(0, 1) ? BlockTerms{} : terms(latency_bound, overlapped), uniform(1, 3 * slots)});
                for (auto& e : head) e.first.latency_bound_tensor = latency_bound, e.first.overlapped_products = overlapped;
                c.what = "with empty blocks";
                break;
            }
            default: {  // rows of a GEMM with a ragged column, the last row ragged too (non-multiple sizes)
                const std::int64_t rows = uniform(1, 40), cols = uniform(1, 3 * slots);
                const BlockTerms a = terms(latency_bound, overlapped), b = terms(latency_bound, overlapped),
                                 ar = terms(latency_bound, overlapped), br = terms(latency_bound, overlapped);
                for (std::int64_t r = 0; r < rows; ++r) {
                    if (cols > 1) head.push_back({r + 1 < rows ? a : ar, cols - 1});
                    head.push_back({r + 1 < rows ? b : br, 1});
                }
                c.what = "ragged GEMM rows";
                break;
            }
        }
        std::int64_t per_head = 0;
        for (const auto& e : head) per_head += e.second;
        // Heads 1..300, fewer where a head is long (the reference runs every block).
        c.heads = uniform(1, std::clamp<std::int64_t>(60000 / per_head, 1, 300));
        if (uniform(0, 4) == 0) c.heads = std::max<std::int64_t>(1, slots / per_head / 2);  // a grid smaller than the slots
        const std::int64_t grid = per_head * c.heads;
        const int resident = static_cast<int>(std::min<std::int64_t>(c.slots_per_sm, (grid + c.sm_count - 1) / c.sm_count));
        for (const auto& [t, count] : head) c.head.push_back({t, t.duration(resident), count});
        c.timeline_blocks = static_cast<std::size_t>(uniform(0, 2) == 0 ? 0 : uniform(0, 2) == 0 ? grid : uniform(1, 5000));
        return c;
    }

private:
    std::mt19937_64 rng_;
    bool dyadic_;
};

std::string describe(const Case& c) {
    return c.what + ": " + std::to_string(c.head.size()) + " entries, " + std::to_string(c.heads) + " heads, " +
           std::to_string(c.sm_count) + " SMs x " + std::to_string(c.slots_per_sm) + " slots, grid " +
           std::to_string(c.grid()) + ", timeline " + std::to_string(c.timeline_blocks);
}

void check_terms_equal(const BlockTerms& a, const BlockTerms& b) {
    CHECK(a.matmul == b.matmul);
    CHECK(a.nonmatmul == b.nonmatmul);
    CHECK(a.sfu == b.sfu);
    CHECK(a.smem == b.smem);
    CHECK(a.l2 == b.l2);
    CHECK(a.issue == b.issue);
    CHECK(a.latency == b.latency);
    CHECK(a.latency_bound_tensor == b.latency_bound_tensor);
    CHECK(a.overlapped_products == b.overlapped_products);
}

// The first block where two timelines differ (their length where none does).
std::size_t first_difference(const std::vector<ScheduledBlock>& a, const std::vector<ScheduledBlock>& b) {
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (a[i].block != b[i].block || a[i].sm != b[i].sm || a[i].slot != b[i].slot || a[i].start_s != b[i].start_s ||
            a[i].end_s != b[i].end_s)
            return i;
    return a.size() == b.size() ? b.size() : std::min(a.size(), b.size());
}

// Every result to the bit.
void check_same(const BlockSchedule& got, const BlockSchedule& want) {
    CHECK(got.makespan_s == want.makespan_s);
    CHECK(got.block_seconds == want.block_seconds);
    check_terms_equal(got.busiest, want.busiest);
    CHECK(first_difference(got.timeline, want.timeline) == want.timeline.size());
}

}  // namespace

TEST_CASE("Block scheduler: the greedy list schedule, to the bit where the reference's sums are exact", "[model][scheduler]") {
    CaseMaker make(20261127, true);
    for (int i = 0; i < 400; ++i) {
        const Case c = make.make(i % CaseMaker::kShapes);
        INFO("case " << i << ", " << describe(c));
        check_same(exact_schedule(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks),
                   reference_schedule<DoubleSums>(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks));
    }
}

// With other durations the reference's double sums round, and where two slots are free at the same time
// in exact arithmetic (the same blocks in another order) its rounding decides which goes first: the busiest
// SM's terms and the slots of the timeline then differ, though not the times. Run on exact sums, the
// reference agrees with the scheduler to the bit.
TEST_CASE("Block scheduler: the exact greedy list schedule of any durations, and the double one's times", "[model][scheduler]") {
    CaseMaker make(11, false);
    for (int i = 0; i < 400; ++i) {
        const Case c = make.make(i % CaseMaker::kShapes);
        INFO("case " << i << ", " << describe(c));
        const BlockSchedule got = exact_schedule(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks);
        check_same(got, reference_schedule<ExactSums>(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks));
        // The double reference's free times carry a rounding error of at most one unit in 2^53 per block
        // summed: below 1e-11 here (at most 60000 blocks per slot).
        const BlockSchedule doubles = reference_schedule<DoubleSums>(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks);
        CHECK(got.makespan_s == Approx(doubles.makespan_s).epsilon(1e-11));
        CHECK(got.block_seconds == Approx(doubles.block_seconds).epsilon(1e-11));
        REQUIRE(got.timeline.size() == doubles.timeline.size());
        std::size_t off = 0;
        for (std::size_t b = 0; b < got.timeline.size(); ++b)
            if (std::abs(got.timeline[b].start_s - doubles.timeline[b].start_s) > 1e-11 * doubles.timeline[b].start_s ||
                std::abs(got.timeline[b].end_s - doubles.timeline[b].end_s) > 1e-11 * doubles.timeline[b].end_s)
                ++off;
        CHECK(off == 0);
    }
}

// All blocks alike: the scheduler used whole waves (waves x duration, grid x duration, the terms x the
// busiest SM's blocks), each a double product rounded once; the exact sums convert to the same doubles.
TEST_CASE("Block scheduler: blocks all alike give the whole-wave results to the bit", "[model][scheduler]") {
    CaseMaker make(5, false);
    for (int i = 0; i < 200; ++i) {
        Case c = make.make(0);
        c.head.resize(1);
        c.head.front().count = make.uniform(1, 5000);
        INFO("case " << i << ", " << describe(c));
        const TimedBlocks& b = c.head.front();
        const std::int64_t slots = static_cast<std::int64_t>(c.sm_count) * c.slots_per_sm, grid = c.grid();
        const BlockSchedule got = exact_schedule(c.head, c.heads, c.sm_count, c.slots_per_sm, 64);
        CHECK(got.makespan_s == static_cast<double>((grid + slots - 1) / slots) * b.duration);
        CHECK(got.block_seconds == static_cast<double>(grid) * b.duration);
        check_terms_equal(got.busiest, b.terms.scaled(static_cast<double>((grid + c.sm_count - 1) / c.sm_count)));
        for (const ScheduledBlock& s : got.timeline) {
            const std::int64_t slot = s.block % slots, wave = s.block / slots;
            CHECK(s.sm == slot % c.sm_count);
            CHECK(s.slot == slot / c.sm_count);
            CHECK(s.start_s == static_cast<double>(wave) * b.duration);
            CHECK(s.end_s == static_cast<double>(wave + 1) * b.duration);
        }
    }
}

namespace {

// Heads of single blocks whose durations shrink (FlashAttention-2's causal backward: K/V tile j visits
// Tr - j Q tiles), with the ties and turns that decide the greedy's choices: the scheduler deals them a
// round at a time where every slot takes one (model/slot_rounds.hpp) and through a heap elsewhere.
class ShrinkingCases {
public:
    explicit ShrinkingCases(std::uint64_t seed) : rng_(seed) {}

    static constexpr int kKinds = 6;
    // Dyadic kinds: every sum exact in double precision, so the double reference agrees to the bit.
    static bool dyadic(int kind) { return kind <= 2; }

    Case make(int kind) {
        Case c;
        static const int sms[] = {1, 2, 3, 7, 16, 132};
        c.sm_count = sms[uniform(0, std::size(sms) - 1)];
        c.slots_per_sm = static_cast<int>(uniform(1, 3));
        const std::int64_t slots = static_cast<std::int64_t>(c.sm_count) * c.slots_per_sm;
        // Long enough for rounds: at least two rounds of the slots, often many.
        const std::int64_t n = uniform(2 * slots, std::max<std::int64_t>(2 * slots + 1, std::min<std::int64_t>(40 * slots, 6000)));
        std::vector<double> work;  // seconds of each block at one resident block
        switch (kind) {
            case 0: {  // causal backward exactly: a + (n - 1 - i) b, dyadic, so that sums tie exactly
                const double a = dyadic_value(1, 64), b = dyadic_value(1, 16);
                for (std::int64_t i = 0; i < n; ++i) work.push_back(a + static_cast<double>(n - 1 - i) * b);
                c.what = "shrinking, linear (exact ties)";
                break;
            }
            case 1: {  // plateaus: a few values, each for a random run, largest first
                std::vector<double> values(static_cast<std::size_t>(uniform(1, 6)));
                for (double& v : values) v = dyadic_value(1, 4096);
                std::sort(values.rbegin(), values.rend());
                for (std::int64_t i = 0; i < n; ++i) work.push_back(values[static_cast<std::size_t>(i * static_cast<std::int64_t>(values.size()) / n)]);
                c.what = "shrinking, plateaus";
                break;
            }
            case 2: {  // dyadic values sorted down, many equal neighbours
                for (std::int64_t i = 0; i < n; ++i) work.push_back(dyadic_value(1, 256));
                std::sort(work.rbegin(), work.rend());
                c.what = "shrinking, random dyadic";
                break;
            }
            case 3: {  // generic doubles: a causal backward's rounded terms
                const double a = generic(), b = generic() * 1e-3;
                for (std::int64_t i = 0; i < n; ++i) work.push_back(a + static_cast<double>(n - 1 - i) * b);
                c.what = "shrinking, linear (rounded)";
                break;
            }
            case 4: {  // shrinking geometrically to far below the slots' spread: the last rounds fail. Down to
                       // 2^-24 of the first at most: fixed_point.hpp holds such values exactly.
                double v = generic() * 1e3;
                const double ratio = std::exp2(-static_cast<double>(uniform(4, 24)) / static_cast<double>(n));
                for (std::int64_t i = 0; i < n; ++i, v *= ratio) work.push_back(v);
                c.what = "shrinking to tiny";
                break;
            }
            default: {  // mixed: stretches that shrink, grow (some a round or longer) or stay, and runs of blocks
                while (static_cast<std::int64_t>(work.size()) < n) {
                    const std::int64_t len = uniform(1, 3 * slots);
                    const int shape = static_cast<int>(uniform(0, 2));
                    const double a = generic(), b = generic() * 1e-2;
                    for (std::int64_t i = 0; i < len; ++i)
                        work.push_back(shape == 2 ? a : a + static_cast<double>(shape == 0 ? len - 1 - i : i) * b);
                }
                c.what = "mixed stretches";
                break;
            }
        }
        for (std::size_t i = 0; i < work.size(); ++i) {
            BlockTerms t;
            t.matmul = work[i];
            if (!dyadic(kind)) t.sfu = work[i] * 0.25;  // a second term, rounded
            c.head.push_back({t, 0, 1});
            if (kind == 5 && uniform(0, 40) == 0) c.head.push_back({t, 0, uniform(2, 2 * slots)});  // a run among them
        }
        std::int64_t per_head = 0;
        for (const TimedBlocks& b : c.head) per_head += b.count;
        c.heads = uniform(1, std::clamp<std::int64_t>(80000 / per_head, 1, 40));
        const std::int64_t grid = per_head * c.heads;
        const int resident = static_cast<int>(std::min<std::int64_t>(c.slots_per_sm, (grid + c.sm_count - 1) / c.sm_count));
        for (TimedBlocks& b : c.head) b.duration = b.terms.duration(resident);
        c.timeline_blocks = static_cast<std::size_t>(uniform(0, 3) == 0 ? uniform(1, 3 * slots) : 0);
        return c;
    }

private:
    std::int64_t uniform(std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_); }
    // A multiple of 2^-12 between lo and hi 2^-12 (well inside 2^53 quanta: sums stay exact).
    double dyadic_value(std::int64_t lo, std::int64_t hi) { return std::ldexp(static_cast<double>(uniform(lo, hi)), -12); }
    double generic() { return std::uniform_real_distribution<double>(0.05, 4.0)(rng_) * 1e-6; }

    std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("Block scheduler: shrinking, plateaued and mixed single blocks, as the greedy list schedule", "[model][scheduler]") {
    ShrinkingCases make(20261128);
    for (int i = 0; i < 240; ++i) {
        const int kind = i % ShrinkingCases::kKinds;
        const Case c = make.make(kind);
        INFO("case " << i << ", " << describe(c));
        const BlockSchedule got = exact_schedule(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks);
        check_same(got, reference_schedule<ExactSums>(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks));
        if (ShrinkingCases::dyadic(kind))
            check_same(got, reference_schedule<DoubleSums>(c.head, c.heads, c.sm_count, c.slots_per_sm, c.timeline_blocks));
    }
}

// The scheduler keeps every entry's fixed-point terms only up to 40 MB of them (291,271 entries); a longer
// head, a causal kernel of 2^19 blocks (32-row Q tiles at N = 2^24), keeps its first 2^14 and converts
// the others when asked. Heads of 300,000 single blocks that grow, shrink or plateau cross that line in
// every path that credits single blocks (one by one, in turn, by rounds, through the log).
TEST_CASE("Block scheduler: heads longer than the terms it keeps converted, as the greedy list schedule", "[model][scheduler]") {
    std::mt19937_64 rng(20261201);
    auto dyadic = [&](int lo, int hi) { return std::ldexp(static_cast<double>(std::uniform_int_distribution<int>(lo, hi)(rng)), -12); };
    const std::int64_t n = 300000;
    for (const char* shape : {"growing", "shrinking", "plateaus"}) {
        Case c;
        c.sm_count = 132;
        c.slots_per_sm = 2;
        c.heads = 2;
        c.what = shape;
        const double first = dyadic(4096, 8192), step = dyadic(1, 4);
        for (std::int64_t i = 0; i < n; ++i) {
            BlockTerms t;
            const std::string s = shape;
            const double k = static_cast<double>(s == "growing" ? i : s == "shrinking" ? n - 1 - i : (i / 5000) % 7);
            t.matmul = first + k * step;
            t.smem = t.matmul * 0.5;
            c.head.push_back({t, t.duration(2), 1});
        }
        INFO(describe(c));
        check_same(exact_schedule(c.head, c.heads, c.sm_count, c.slots_per_sm, 0),
                   reference_schedule<ExactSums>(c.head, c.heads, c.sm_count, c.slots_per_sm, 0));
    }
}

// A row kernel over rows that are no whole number of 128-byte lines: each row a long run of blocks whose
// duration differs a little from the row before's (where the row meets the lines), then its ragged last
// block. A run (of four rounds or more) after a longer one finds the slots out of turn by a band of them,
// placed at once (SlotRing::take_front_band); with dyadic durations the band meets the latest slots in ties.
TEST_CASE("Block scheduler: rows of long runs a little shorter or longer than the row before, and ragged blocks", "[model][scheduler]") {
    std::mt19937_64 rng(20261130);
    auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    for (int i = 0; i < 60; ++i) {
        const bool dyadic = i % 2 == 0;
        const int sms = uniform(1, 6), slots_per_sm = uniform(1, 4), slots = sms * slots_per_sm;
        std::vector<TimedBlocks> head;
        const int rows = uniform(3, 40);
        for (int r = 0; r < rows; ++r) {
            BlockTerms run, ragged;
            const int places = uniform(80, 82);  // the run's duration, in steps (a line more or less)
            run.l2 = dyadic ? std::ldexp(places, -10) : places * 5.744681e-10 * (1 + 1e-9 * uniform(0, 3));
            run.matmul = run.l2 / 4;
            ragged.l2 = uniform(0, 1) ? run.l2 : run.l2 * uniform(1, 60) / 80;
            ragged.nonmatmul = run.matmul;
            head.push_back({run, run.duration(slots_per_sm), uniform(4, 8) * slots + uniform(0, slots)});
            head.push_back({ragged, ragged.duration(slots_per_sm), 1});
        }
        const std::int64_t heads = uniform(1, 3);
        const std::size_t timeline = static_cast<std::size_t>(uniform(0, 1) ? 0 : uniform(1, 2 * slots));
        INFO("case " << i << ": " << rows << " rows, " << sms << " SMs x " << slots_per_sm << " slots, " << heads << " heads");
        check_same(exact_schedule(head, heads, sms, slots_per_sm, timeline),
                   reference_schedule<ExactSums>(head, heads, sms, slots_per_sm, timeline));
    }
}

// Every block equal and one per slot at first: every round is a tie of all slots at once, broken by the
// slot index, round after round, head after head.
TEST_CASE("Block scheduler: rounds of equal single blocks tie every slot and go by slot index", "[model][scheduler]") {
    for (const int sms : {1, 3, 132})
        for (const std::int64_t heads : {1, 5}) {
            const int slots_per_sm = 2, slots = sms * slots_per_sm;
            std::vector<TimedBlocks> head;
            for (int i = 0; i < 5 * slots + 3; ++i) {
                BlockTerms t;
                t.matmul = 0.5 + 0.125 * (i % 3 == 0);  // a few a little longer: the ties come and go
                head.push_back({t, t.duration(slots_per_sm), 1});
            }
            INFO(sms << " SMs, " << heads << " heads");
            check_same(exact_schedule(head, heads, sms, slots_per_sm, 2 * slots),
                       reference_schedule<DoubleSums>(head, heads, sms, slots_per_sm, 2 * slots));
        }
}

TEST_CASE("Block scheduler: stretches repeated in a head schedule as the head written out, to the bit", "[model][scheduler]") {
    // A unit of rows alike only a few at a time is kept once with its count (exec/block_work.hpp): the
    // scheduler runs its repetitions, skipping whole cycles of them once the slots' state repeats. Random
    // heads of plain entries and 1 to 3 repeated units (2 to 40 entries, 2 to 1500 times), against the same
    // head written out, and against the reference where the grid is small.
    CaseMaker make(20261130, true);
    std::mt19937_64 rng(20261130);
    auto uniform = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    int cycles_possible = 0;
    for (int i = 0; i < 300; ++i) {
        const Case base = make.make(i % CaseMaker::kShapes);
        const std::int64_t slots = static_cast<std::int64_t>(base.sm_count) * base.slots_per_sm;
        std::vector<TimedBlocks> head;
        std::vector<RepeatedStretch> repeats;
        auto plain = [&](std::int64_t n) {
            for (std::int64_t e = 0; e < n; ++e) head.push_back(base.head[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(base.head.size()) - 1))]);
        };
        plain(uniform(0, 3));
        for (std::int64_t r = uniform(1, 3); r > 0; --r) {
            RepeatedStretch rep{head.size(), static_cast<std::size_t>(uniform(2, 40)), uniform(2, 1500)};
            // Entries from a few kinds (as a unit's rows meet the lines at a few places), counts from single
            // blocks to about a round of the slots.
            const std::int64_t kinds = uniform(1, 3);
            for (std::size_t e = 0; e < rep.length; ++e) {
                TimedBlocks b = base.head[static_cast<std::size_t>(uniform(0, std::min<std::int64_t>(kinds, static_cast<std::int64_t>(base.head.size())) - 1))];
                b.count = uniform(0, 2) == 0 ? uniform(1, 2 * slots) : uniform(1, 5);
                head.push_back(b);
            }
            repeats.push_back(rep);
            plain(uniform(0, 2));
        }
        std::vector<TimedBlocks> written_out;
        std::size_t e = 0;
        std::int64_t per_head = 0;
        for (const RepeatedStretch& r : repeats) {
            for (; e < r.first; ++e) written_out.push_back(head[e]);
            for (std::int64_t t = 0; t < r.times; ++t)
                for (std::size_t j = r.first; j < r.first + r.length; ++j) written_out.push_back(head[j]);
            e = r.first + r.length;
        }
        for (; e < head.size(); ++e) written_out.push_back(head[e]);
        for (const TimedBlocks& b : written_out) per_head += b.count;
        const std::int64_t heads = uniform(1, std::clamp<std::int64_t>(1000000 / per_head, 1, 4));
        const std::size_t timeline = static_cast<std::size_t>(uniform(0, 1) ? 0 : uniform(1, 3000));
        cycles_possible += repeats.front().times > 64;
        INFO("case " << i << ": " << head.size() << " entries, " << repeats.size() << " repeated (first " << repeats.front().length
                     << " entries x " << repeats.front().times << "), " << heads << " heads, " << base.sm_count << " SMs x "
                     << base.slots_per_sm << " slots, " << per_head << " blocks a head");
        const BlockSchedule got = exact_schedule(head, heads, base.sm_count, base.slots_per_sm, timeline, repeats);
        check_same(got, exact_schedule(written_out, heads, base.sm_count, base.slots_per_sm, timeline));
        if (per_head * heads <= 200000)
            check_same(got, reference_schedule<DoubleSums>(written_out, heads, base.sm_count, base.slots_per_sm, timeline));
    }
    CHECK(cycles_possible > 100);
}

TEST_CASE("Block scheduler: past its budget, a long kernel's blocks spread evenly, within list scheduling's bound of the greedy",
          "[model][scheduler]") {
    // A row kernel whose rows end in a ragged block and meet the lines two ways (two classes of equal
    // duration, other terms): the slots' free times never repeat, so the exact greedy steps through every
    // row. Past the budget the rest is spread: the makespan lies within makespan_bound_s of the greedy's,
    // which is at most half the longest block; every SM gets its share of the terms.
    auto block = [](double duration, double l2, std::int64_t count) {
        TimedBlocks b;
        b.duration = duration;
        b.count = count;
        b.terms.l2 = l2;
        b.terms.nonmatmul = duration / 7;
        return b;
    };
    std::vector<TimedBlocks> head;
    for (int row = 0; row < 32; ++row) {
        head.push_back(block(7.5255e-7, row % 4 == 0 ? 6.17e-8 : 6.27e-8, 101));
        head.push_back(block(row % 3 == 0 ? 1.2064e-7 : 1.0915e-7, 9.1e-9, 1));
    }
    const std::vector<RepeatedStretch> rows{{0, head.size(), 3000}};  // 96,000 rows a head
    const int sms = 16, slots_per_sm = 2;
    const std::int64_t heads = 2;
    const BlockSchedule exact = exact_schedule(head, heads, sms, slots_per_sm, 100, rows);
    CHECK(exact.makespan_bound_s == 0);
    for (const std::int64_t budget : {std::int64_t{1} << 10, kExactSlotOperations}) {
        INFO("budget " << budget);
        const BlockSchedule spread = schedule_blocks(head, heads, sms, slots_per_sm, 100, rows, budget);
        if (budget < kExactSlotOperations) CHECK(spread.makespan_bound_s > 0);  // (the model's budget may be enough)
        CHECK(spread.makespan_bound_s <= 7.5255e-7 / 2 * (1 + 1e-9));
        CHECK(std::abs(spread.makespan_s - exact.makespan_s) <= spread.makespan_bound_s);
        CHECK(spread.block_seconds == exact.block_seconds);
        CHECK(spread.busiest.l2 == Approx(exact.busiest.l2).epsilon(1e-4));
        CHECK(spread.busiest.nonmatmul == Approx(exact.busiest.nonmatmul).epsilon(1e-4));
        CHECK(first_difference(spread.timeline, exact.timeline) == exact.timeline.size());
    }
    // Where the longest block is more than 10^-4 of the work over the slots, it stays exact past the budget.
    const std::vector<RepeatedStretch> few_rows{{0, head.size(), 3}};
    check_same(schedule_blocks(head, heads, sms, slots_per_sm, 0, few_rows, 16), exact_schedule(head, heads, sms, slots_per_sm, 0, few_rows));
    CHECK(schedule_blocks(head, heads, sms, slots_per_sm, 0, few_rows, 16).makespan_bound_s == 0);
}
