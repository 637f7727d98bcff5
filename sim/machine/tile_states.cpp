#include "machine/tile_states.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

namespace fasim {

TileState TileStates::advanced(TileState s, const Advance& step, std::int64_t times) {
    s.clock += step.clock * times;
    s.wave += step.wave * times;
    s.set_block(s.block() + step.block * times);
    return s;
}

TileState TileStates::Run::at(std::int64_t index) const {
    const std::int64_t offset = index - first;
    if (period == 1) return advanced(base.front(), step, offset);
    return advanced(base[static_cast<std::size_t>(offset % period)], step, offset / period);
}

void TileStates::reset(std::int64_t tiles) {
    forget_found();
    runs_.clear();
    size_ = tiles;
    pages_.clear();
    pages_held_ = 0;
    forget_unallocated();
    pages_.resize(static_cast<std::size_t>((tiles + kPageTiles - 1) / kPageTiles));
}

TileState& TileStates::stored(std::int64_t index) {
    std::unique_ptr<Page>& page = pages_[static_cast<std::size_t>(index / kPageTiles)];
    if (!page) {
        page = std::make_unique<Page>();
        ++pages_held_;
        forget_unallocated();
    }
    return (*page)[static_cast<std::size_t>(index % kPageTiles)];
}

TileState TileStates::get(std::int64_t index) const {
    if (index < found_.first || index >= found_.end) {
        const auto next = runs_.upper_bound(index);
        found_.set(0, next == runs_.end() ? size_ : next->first, nullptr);
        if (next != runs_.begin()) {
            const Run& run = std::prev(next)->second;
            if (index < run.end) found_.set(run.first, run.end, &run);
            else found_.first = run.end;
        }
    }
    if (found_.run) return found_.run->at(index);
    const std::unique_ptr<Page>& page = pages_[static_cast<std::size_t>(index / kPageTiles)];
    return page ? (*page)[static_cast<std::size_t>(index % kPageTiles)] : TileState{};
}

void TileStates::store(const Run& run, std::int64_t from, std::int64_t to) {
    for (std::int64_t i = from; i < to; ++i) stored(i) = run.at(i);
}

void TileStates::cut(std::int64_t index) {
    forget_found();
    auto it = runs_.upper_bound(index);
    if (it == runs_.begin()) return;
    --it;
    Run& run = it->second;
    if (index <= run.first || index >= run.end) return;
    // The run's period holding `index`: its tiles before `index` go one by one unless it starts there.
    const std::int64_t q = (index - run.first) / run.period;
    const std::int64_t period_start = run.first + q * run.period;
    const std::int64_t right_start = period_start == index ? index : std::min(run.end, period_start + run.period);
    if (right_start != index) store(run, period_start, right_start);
    if (right_start < run.end) {
        Run right{right_start, run.end, run.period, run.base, run.step};
        for (TileState& s : right.base) s = advanced(s, run.step, (right_start - run.first) / run.period);
        runs_.emplace(right_start, std::move(right));
    }
    run.end = period_start;
    if (run.end <= run.first) runs_.erase(it);
}

TileState& TileStates::at(std::int64_t index) {
    // Most tiles written lie outside every run: nothing to cut, and the stretch get() found (runs only) holds.
    const auto next = runs_.upper_bound(index);
    if (next == runs_.begin() || std::prev(next)->second.end <= index) return stored(index);
    forget_found();
    cut(index);
    cut(index + 1);
    const auto it = runs_.find(index);  // a run of exactly this tile is left: store it
    if (it != runs_.end()) {
        store(it->second, index, index + 1);
        runs_.erase(it);
    }
    return stored(index);
}

TileStates::Stored TileStates::stored_around(std::int64_t index) {
    const auto next = runs_.upper_bound(index);
    std::int64_t first = index / kPageTiles * kPageTiles, end = std::min(size_, first + kPageTiles);
    if (next != runs_.end()) end = std::min(end, next->first);
    if (next != runs_.begin()) {
        const Run& run = std::prev(next)->second;
        if (index < run.end) return {};
        first = std::max(first, run.end);
    }
    return {first, end, &stored(index) - (index - first)};
}

void TileStates::set_run(std::int64_t first, std::int64_t periods, std::vector<TileState> base, const Advance& step) {
    const auto period = static_cast<std::int64_t>(base.size());
    const std::int64_t end = first + periods * period;
    if (periods <= 0 || period == 0) return;
    forget_found();
    cut(first);
    cut(end);
    runs_.erase(runs_.lower_bound(first), runs_.lower_bound(end));
    runs_.emplace(first, Run{first, end, period, std::move(base), step});
}

TileStates::Piece TileStates::piece_at(std::int64_t index) const {
    const auto next = runs_.upper_bound(index);
    std::int64_t first = 0;
    if (next != runs_.begin()) {
        const Run& run = std::prev(next)->second;
        if (index < run.end) return {run.first, run.end, &run};
        first = run.end;
    }
    std::int64_t end = next == runs_.end() ? size() : next->first;
    // Within the gap, the pages never allocated hold tiles never touched: looked for up to 1024 pages either
    // way (a caller walking the tiles asks again further on), and kept until a page is allocated or freed. A
    // loop's check of its items' tiles asks for each of them in turn, and the stretch it finds is how many
    // items it may carry over at once (a wave of 1296 blocks' tiles, 16 pages: 13 waves).
    constexpr std::int64_t kPagesLookedAt = 1024;
    auto page_of = [&](std::int64_t i) { return pages_[static_cast<std::size_t>(i / kPageTiles)].get(); };
    if (page_of(index) != nullptr) return {first, end, nullptr};
    if (index < unallocated_.first || index >= unallocated_.second) {
        std::int64_t lo = index / kPageTiles * kPageTiles, hi = lo + kPageTiles;
        for (int p = 0; p < kPagesLookedAt && lo > 0 && page_of(lo - 1) == nullptr; ++p) lo -= kPageTiles;
        for (int p = 0; p < kPagesLookedAt && hi < size_ && page_of(hi) == nullptr; ++p) hi += kPageTiles;
        unallocated_ = {lo, std::min(hi, size_)};
    }
    return {std::max(first, unallocated_.first), std::min(end, unallocated_.second), nullptr, true};
}

}  // namespace fasim
