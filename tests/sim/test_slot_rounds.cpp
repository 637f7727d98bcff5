// The block scheduler's parts for single blocks: the slots' order after a round (SlotSorter), a round
// dealt at once against one block at a time (SlotRounds), and the takers' log (TakerLog).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include "model/slot_rounds.hpp"
#include "model/slot_sort.hpp"
#include "model/taker_log.hpp"

using namespace fasim;

namespace {

std::vector<SlotTime> shuffled_slots(std::mt19937_64& rng, const std::vector<Fixed>& times) {
    std::vector<SlotTime> out;
    for (std::size_t s = 0; s < times.size(); ++s) out.push_back({times[s], static_cast<int>(s)});
    std::shuffle(out.begin(), out.end(), rng);
    return out;
}

// The greedy itself: each block to the earliest slot, ties to the lower one.
std::vector<int> greedy_takers(std::vector<SlotTime>& slots, const std::vector<Fixed>& durations) {
    std::vector<int> takers;
    for (Fixed d : durations) {
        auto first = std::min_element(slots.begin(), slots.end());
        takers.push_back(first->slot);
        first->time += d;
    }
    std::sort(slots.begin(), slots.end());
    return takers;
}

}  // namespace

TEST_CASE("Block scheduler, SlotSorter: the greedy's order, from close ties to times 2^120 apart", "[model][scheduler]") {
    std::mt19937_64 rng(7);
    SlotSorter sorter;
    for (int i = 0; i < 600; ++i) {
        const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 600)(rng);
        const int kind = i % 5;
        std::vector<Fixed> times(n);
        const Fixed base = static_cast<Fixed>(rng()) << 40;
        for (Fixed& t : times) {
            switch (kind) {
                case 0: t = base + static_cast<Fixed>(rng() % 1000); break;  // narrow: exact keys, many ties
                case 1: t = base + (static_cast<Fixed>(rng() >> 8) << 64) + static_cast<Fixed>(rng() % 4); break;  // wide: cut keys, ties in their bits
                case 2: t = base + static_cast<Fixed>(rng() % 8); break;  // clustered: big buckets
                case 3: t = base; break;  // all equal: by slot
                default: t = base + static_cast<Fixed>(rng() % 3) * (Fixed{1} << 120) + static_cast<Fixed>(rng() % 5); break;  // far clusters
            }
        }
        if (kind == 2 && n > 1) times[0] = base + (Fixed{1} << 100);  // one far away: the others share a bucket
        std::vector<SlotTime> got = shuffled_slots(rng, times), want = got;
        std::sort(want.begin(), want.end());
        sorter.sort(got);
        INFO("case " << i << ", kind " << kind << ", " << n << " slots");
        REQUIRE(got.size() == want.size());
        std::size_t wrong = 0;
        for (std::size_t p = 0; p < n; ++p) wrong += got[p].slot != want[p].slot || got[p].time != want[p].time;
        CHECK(wrong == 0);
    }
}

TEST_CASE("Block scheduler, SlotRounds: a round dealt at once only where the greedy gives every slot one block, in order", "[model][scheduler]") {
    std::mt19937_64 rng(11);
    std::size_t dealt = 0, refused = 0;
    for (int i = 0; i < 400; ++i) {
        const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 300)(rng);
        std::vector<Fixed> times(n), durations(n);
        const Fixed spread = static_cast<Fixed>(std::uniform_int_distribution<int>(1, 1000)(rng));
        for (Fixed& t : times) t = static_cast<Fixed>(rng() % static_cast<std::uint64_t>(spread));
        // Durations around the spread: some rounds deal one a slot, some not; sorted down half the time.
        for (Fixed& d : durations) d = static_cast<Fixed>(rng() % static_cast<std::uint64_t>(3 * spread)) + (i % 3 == 0 ? 0 : spread);
        if (i % 2 == 0) std::sort(durations.rbegin(), durations.rend());
        std::vector<SlotTime> greedy = shuffled_slots(rng, times);
        std::sort(greedy.begin(), greedy.end());
        SlotRounds rounds;
        rounds.assign_in_order(greedy);
        const std::vector<int> want = greedy_takers(greedy, durations);
        std::vector<int> in_order;
        for (const SlotTime& s : rounds.in_order()) in_order.push_back(s.slot);
        INFO("case " << i << ", " << n << " slots");
        if (rounds.deal_round(durations.data())) {
            ++dealt;
            CHECK(want == in_order);  // block p to the slot at place p
            CHECK(rounds.takers() == want);
        } else {
            ++refused;
            CHECK(want != in_order);
            rounds.deal_one_at_a_time(durations.data(), n);
            CHECK(rounds.takers() == want);
        }
        std::size_t wrong = 0;
        for (std::size_t p = 0; p < n; ++p)
            wrong += rounds.in_order()[p].slot != greedy[p].slot || rounds.in_order()[p].time != greedy[p].time;
        CHECK(wrong == 0);
    }
    CHECK(dealt > 50);
    CHECK(refused > 50);
}

TEST_CASE("Block scheduler, TakerLog: every block logged is credited once, over batches and flushes between them", "[model][scheduler]") {
    std::mt19937_64 rng(3);
    for (const std::size_t entries : {std::size_t{1}, std::size_t{37}, std::size_t{5000}, std::size_t{1} << 18}) {
        const std::int64_t heads = 40;
        TakerLog log(entries, heads, 264);
        REQUIRE(log.logging());
        std::map<std::pair<int, std::size_t>, int> want, got;
        std::vector<int> takers;
        for (std::int64_t h = 0; h < heads; ++h) {
            if (!log.next_head() || rng() % 7 == 0) {  // full, or flushed between heads anyway
                log.flush([&](int slot, std::size_t entry) { ++got[{slot, entry}]; });
                REQUIRE(log.next_head());
            }
            // A few ranges of the head's entries, not all of them.
            for (std::size_t first = rng() % entries; first < entries; first += 1 + rng() % (entries + 3)) {
                const std::size_t count = std::min<std::size_t>(entries - first, 1 + rng() % 600);
                takers.resize(count);
                for (int& t : takers) t = static_cast<int>(rng() % 264);
                log.record(first, takers.data(), count);
                for (std::size_t i = 0; i < count; ++i) ++want[{takers[i], first + i}];
                first += count;
            }
        }
        log.flush([&](int slot, std::size_t entry) { ++got[{slot, entry}]; });
        INFO(entries << " entries");
        CHECK(got == want);
    }
    CHECK_FALSE(TakerLog(10, 10, 70000).logging());  // slot indices above 16 bits: credited at once
}
