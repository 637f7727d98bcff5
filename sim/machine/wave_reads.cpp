#include "machine/wave_reads.hpp"

#include <algorithm>

namespace fasim {

namespace {

std::int64_t coordinate(const WaveReads::Key& k, int c) { return c == 0 ? k.head : c == 1 ? k.row0 : k.col0; }
std::int64_t coordinate(const WaveReads::Move& m, int c) { return c == 0 ? m.head : c == 1 ? m.rows : m.cols; }

// `into` grown to hold `box` too.
void widen_box(WaveReads::Box& into, const WaveReads::Box& box) {
    for (int c = 0; c < 3; ++c) {
        into.lo[c] = std::min(into.lo[c], box.lo[c]);
        into.hi[c] = std::max(into.hi[c], box.hi[c]);
    }
}

}  // namespace

std::size_t WaveReads::KeyHash::operator()(const Key& k) const {
    // Each field mixed in (splitmix64's finaliser): regions a tile apart must not share buckets.
    auto mix = [](std::uint64_t x) {
        x ^= x >> 30;
        x *= 0xBF58476D1CE4E5B9ull;
        x ^= x >> 27;
        x *= 0x94D049BB133111EBull;
        return x ^ (x >> 31);
    };
    std::uint64_t h = mix(static_cast<std::uint64_t>(k.tensor) + 1);
    for (const std::int64_t v : {k.head, k.row0, k.nrows, k.col0, k.ncols}) h = mix(h ^ static_cast<std::uint64_t>(v));
    return static_cast<std::size_t>(h);
}

void WaveReads::start_wave(std::int64_t wave) {
    if (wave == wave_) return;
    wave_ = wave;
    single_.clear();
    families_.clear();
    first_stamp_.clear();
    span_.clear();
    singles_.clear();
}

void WaveReads::widen(TensorId tensor, const Box& box) {
    const auto [it, fresh] = span_.try_emplace(tensor, box);
    if (!fresh) widen_box(it->second, box);
}

bool WaveReads::may_hold(TensorId tensor, const Box& box) const {
    const auto it = span_.find(tensor);
    if (it == span_.end() || !it->second.overlaps(box)) return false;
    // Closer: the regions recorded one by one, block by block, and each family's own span.
    if (const auto single = singles_.find(tensor); single != singles_.end())
        for (const BlockSpan& s : single->second.spans)
            if (s.box.overlaps(box)) return true;
    const auto families = families_.find(tensor);
    if (families == families_.end()) return false;
    for (const Family& f : families->second.all) {
        Box fb;
        for (int c = 0; c < 3; ++c) {
            fb.lo[c] = f.lo[c];
            fb.hi[c] = f.hi[c];
        }
        if (fb.overlaps(box)) return true;
    }
    return false;
}

// The element of family f at `key`, if there is one: its first dimension's index in `item`.
std::optional<std::int64_t> WaveReads::index_in(const Family& f, const Key& key, std::int64_t& item) const {
    if (key.nrows != f.base.nrows || key.ncols != f.base.ncols) return std::nullopt;
    for (int c = 0; c < 3; ++c)
        if (coordinate(key, c) < f.lo[c] || coordinate(key, c) > f.hi[c]) return std::nullopt;
    Key at = f.base;
    for (std::size_t d = 0; d < f.dims.size(); ++d) {
        const int c = f.pivot[d];
        const std::int64_t step = coordinate(f.dims[d].second, c), off = coordinate(key, c) - coordinate(f.base, c);
        if (off % step != 0) return std::nullopt;
        const std::int64_t i = off / step;
        if (i < 0 || i >= f.dims[d].first) return std::nullopt;
        if (d == 0) item = i;
        at.head += i * f.dims[d].second.head;
        at.row0 += i * f.dims[d].second.rows;
        at.col0 += i * f.dims[d].second.cols;
    }
    if (!(at == key)) return std::nullopt;
    return f.block0 + item * f.block_step;
}

std::optional<std::int64_t> WaveReads::reader(const Key& key) const { return decide(key).block; }

WaveReads::Decision WaveReads::decide(const Key& key) const {
    Decision d;
    std::int64_t stamp = -1;
    if (const auto it = single_.find(key); it != single_.end()) {
        d.block = it->second.block;
        stamp = it->second.stamp;
    }
    const auto families = families_.find(key.tensor);
    if (families == families_.end()) return d;
    // The family with the highest stamp that holds the region, if later than the region's own record. Only the
    // families of the region's band and the wide ones can hold it.
    auto look_in = [&](const std::vector<std::uint32_t>& indices) {
        for (const std::uint32_t i : indices) {
            const Family& f = families->second.all[i];
            if (f.stamp < stamp) continue;
            std::int64_t item = 0;
            if (const auto b = index_in(f, key, item)) {
                d = {&f, b};
                stamp = f.stamp;
            }
        }
    };
    if (const auto band = families->second.by_band.find(band_of(key.row0)); band != families->second.by_band.end()) look_in(band->second);
    if (const auto band = families->second.by_col_band.find(band_of(key.col0, kBandCols)); band != families->second.by_col_band.end())
        look_in(band->second);
    look_in(families->second.wide);
    return d;
}

std::int64_t WaveReads::same_reader_items(const Key& key, const Move& step, std::int64_t limit) const {
    if (limit <= 1) return limit;
    const Family* f = decide(key).family;
    if (f == nullptr) return 1;
    // The family's dimension the step walks along, and how far along it the key lies.
    std::size_t along = f->dims.size();
    for (std::size_t d = 0; d < f->dims.size() && along == f->dims.size(); ++d)
        if (f->dims[d].second == step && f->dims[d].first > 1) along = d;
    if (along == f->dims.size() || (along == 0 && f->block_step != 0)) return 1;  // not its dimension, or other blocks'
    const int c = f->pivot[along];
    const std::int64_t index = (coordinate(key, c) - coordinate(f->base, c)) / coordinate(step, c);
    const std::int64_t items = std::min(limit, f->dims[along].first - index);
    if (items <= 1) return 1;
    // No record later than the family's starts among those regions.
    Box range;
    for (int k = 0; k < 3; ++k) {
        const std::int64_t a = coordinate(key, k), b = a + (items - 1) * coordinate(step, k);
        range.lo[k] = std::min(a, b);
        range.hi[k] = std::max(a, b);
    }
    std::size_t looked = 0;
    const std::vector<Family>& all = families_.at(key.tensor).all;
    for (auto it = all.rbegin(); it != all.rend() && it->stamp > f->stamp; ++it) {
        if (++looked > kLaterLooked) return 1;
        Box fb;
        for (int k = 0; k < 3; ++k) {
            fb.lo[k] = it->lo[k];
            fb.hi[k] = it->hi[k];
        }
        if (fb.overlaps(range)) return 1;
    }
    if (const auto singles = singles_.find(key.tensor); singles != singles_.end()) {
        const std::vector<std::pair<std::int64_t, Key>>& latest = singles->second.latest;
        for (std::size_t i = 0; i < latest.size(); ++i) {  // newest first
            const auto& [stamp, region] = latest[(singles->second.next + latest.size() - 1 - i) % latest.size()];
            if (stamp < f->stamp) break;
            // The oldest kept one is later too: so may be those no longer kept.
            if (++looked > kLaterLooked || i + 1 == kLaterLooked) return 1;
            Box at;
            for (int k = 0; k < 3; ++k) at.lo[k] = at.hi[k] = coordinate(region, k);
            if (at.overlaps(range)) return 1;
        }
    }
    return items;
}

void WaveReads::record(const Key& key, std::int64_t block) {
    single_[key] = {block, ++stamp_};
    first_stamp_.try_emplace(key.tensor, stamp_);
    Box at;
    for (int c = 0; c < 3; ++c) at.lo[c] = at.hi[c] = coordinate(key, c);
    widen(key.tensor, at);
    Singles& singles = singles_[key.tensor];
    if (singles.latest.size() < kLaterLooked) singles.latest.emplace_back(stamp_, key);
    else singles.latest[singles.next] = {stamp_, key};
    singles.next = (singles.next + 1) % kLaterLooked;
    std::vector<BlockSpan>& spans = singles.spans;
    if (spans.empty() || spans.back().block != block) {
        if (spans.size() == kSingleSpans) {  // too many to look through: one box over them all
            for (std::size_t i = 1; i < spans.size(); ++i) widen_box(spans[0].box, spans[i].box);
            spans.resize(1);
        }
        spans.push_back({block, at});
        return;
    }
    widen_box(spans.back().box, at);
}

bool WaveReads::record_family(const Key& base, const std::vector<std::pair<std::int64_t, Move>>& dims, std::int64_t block0,
                              std::int64_t block_step) {
    Family f{base, dims, {}, block0, block_step, 0};
    for (std::size_t d = 0; d < dims.size(); ++d) {
        int pivot = -1;
        for (int c = 0; c < 3 && pivot < 0; ++c) {
            bool only = coordinate(dims[d].second, c) != 0;
            for (std::size_t e = 0; only && e < dims.size(); ++e)
                if (e != d && coordinate(dims[e].second, c) != 0) only = false;
            if (only) pivot = c;
        }
        if (pivot < 0) return false;
        f.pivot.push_back(pivot);
    }
    for (int c = 0; c < 3; ++c) {
        f.lo[c] = f.hi[c] = coordinate(base, c);
        for (const auto& [count, move] : dims) {
            const std::int64_t span = (count - 1) * coordinate(move, c);
            (span < 0 ? f.lo[c] : f.hi[c]) += span;
        }
    }
    f.stamp = ++stamp_;
    first_stamp_.try_emplace(base.tensor, f.stamp);
    Box span;
    for (int c = 0; c < 3; ++c) {
        span.lo[c] = f.lo[c];
        span.hi[c] = f.hi[c];
    }
    widen(base.tensor, span);
    Families& families = families_[base.tensor];
    const auto index = static_cast<std::uint32_t>(families.all.size());
    const std::int64_t first_band = band_of(f.lo[1]), last_band = band_of(f.hi[1]);
    const std::int64_t first_col_band = band_of(f.lo[2], kBandCols), last_col_band = band_of(f.hi[2], kBandCols);
    if (last_band - first_band < kMaxBands)
        for (std::int64_t b = first_band; b <= last_band; ++b) families.by_band[b].push_back(index);
    else if (last_col_band - first_col_band < kMaxBands)
        for (std::int64_t b = first_col_band; b <= last_col_band; ++b) families.by_col_band[b].push_back(index);
    else
        families.wide.push_back(index);
    families.all.push_back(std::move(f));
    return true;
}

bool WaveReads::recorded_before(TensorId tensor, std::int64_t stamp) const {
    const auto it = first_stamp_.find(tensor);
    return it != first_stamp_.end() && it->second < stamp;
}

}  // namespace fasim
