#include "exec/access_tree.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "machine/sectors.hpp"

namespace fasim {

namespace {

using Step = L2Model::Step;

Step difference(const Region& a, const Region& b) { return {b.head - a.head, b.row0 - a.row0, b.col0 - a.col0}; }

Region at(const AccessNode& n, const std::vector<std::int64_t>& index) {
    Region r = n.region;
    for (std::size_t l = 0; l < index.size() && l < n.steps.size(); ++l) {
        r.head += index[l] * n.steps[l].head;
        r.row0 += index[l] * n.steps[l].rows;
        r.col0 += index[l] * n.steps[l].cols;
    }
    return r;
}

// Every access under `nodes` as one access of a loop at `level` whose index is 0 now: where it is at the
// current `index` of the loops above, its step at `level`, and the loops inside the item around it
// (their counts in `inner`, their steps the access's own at their levels).
void flatten(const AccessList& nodes, const std::vector<std::int64_t>& index, std::size_t level,
             std::vector<std::int64_t>& inner, std::vector<L2Model::ItemAccess>& out) {
    for (const AccessNode& n : nodes) {
        if (n.count > 0) {
            inner.push_back(n.count);
            flatten(n.body, index, level, inner, out);
            inner.pop_back();
            continue;
        }
        L2Model::ItemAccess a;
        a.region = at(n, index);
        a.write = n.write;
        a.step = level < n.steps.size() ? n.steps[level] : Step{};
        for (std::size_t i = 0; i < inner.size(); ++i) {
            const std::size_t l = level + 1 + i;
            a.inner.emplace_back(inner[i], l < n.steps.size() ? n.steps[l] : Step{});
        }
        out.push_back(std::move(a));
    }
}

std::vector<L2Model::ItemAccess> item_accesses(const AccessList& nodes, const std::vector<std::int64_t>& index, std::size_t level) {
    std::vector<std::int64_t> inner;
    std::vector<L2Model::ItemAccess> out;
    flatten(nodes, index, level, inner, out);
    return out;
}

void play(L2Model& l2, const AccessList& nodes, std::vector<std::int64_t>& index) {
    for (const AccessNode& n : nodes) {
        if (n.count == 0) {
            const Region r = at(n, index);
            if (n.write) l2.write(r);
            else l2.read(r);
            continue;
        }
        const std::size_t level = index.size();
        index.push_back(0);
        L2Model::LoopShape shape{n.count, {}, 0, 0};
        if (n.count >= L2Model::kShortLoop) shape.accesses = item_accesses(n.body, index, level);
        l2.loop(shape, [&](std::int64_t k) {
            index[level] = k;
            play(l2, n.body, index);
        });
        index.pop_back();
    }
}

// Blocks [b0, b0 + count) of a run, all in one wave.
void play_blocks(L2Model& l2, const BlockRunAccesses& run, std::int64_t b0, std::int64_t count) {
    std::vector<std::int64_t> index{b0 - run.first};
    L2Model::LoopShape shape{count, {}, 1, 0};
    if (count >= L2Model::kShortLoop) shape.accesses = item_accesses(run.block, index, 0);
    l2.loop(shape, [&](std::int64_t k) {
        l2.begin_block(b0 + k);
        std::vector<std::int64_t> at{b0 - run.first + k};
        play(l2, run.block, at);
    });
}

// `waves` whole waves of a run from block b0 (a wave's first block).
void play_waves(L2Model& l2, const BlockRunAccesses& run, std::int64_t b0, std::int64_t waves, std::int64_t slots) {
    std::vector<L2Model::ItemAccess> accesses = item_accesses(run.block, {b0 - run.first}, 0);
    for (L2Model::ItemAccess& a : accesses) {
        const Step per_block = a.step;
        a.step = {per_block.head * slots, per_block.rows * slots, per_block.cols * slots};
        a.inner.insert(a.inner.begin(), {slots, per_block});
    }
    L2Model::LoopShape shape{waves, std::move(accesses), slots, 1};
    l2.loop(shape, [&](std::int64_t k) { play_blocks(l2, run, b0 + k * slots, slots); });
}

bool same_access(const AccessNode& a, const AccessNode& b) {
    return a.count == b.count && a.write == b.write && a.contiguous == b.contiguous && a.region.tensor == b.region.tensor &&
           a.region.nrows == b.region.nrows &&
           a.region.ncols == b.region.ncols && a.steps == b.steps;
}

}  // namespace

// Whether an access costs the same L2 sectors and requests at every iteration: they depend only on where
// its rows start within a 128-byte line, which the step moves by the same bytes each time, so the places
// repeat after 128 / gcd(step, 128) iterations; each of them is checked.
bool same_cost_everywhere(const AccessNode& n, const Step& s) {
    const GlobalTensor& t = *n.region.tensor;
    const std::int64_t pitch = t.cols * t.elem_bytes;
    const std::int64_t shift = ((s.head * t.rows * pitch + s.rows * pitch + s.cols * t.elem_bytes) % kLineBytes + kLineBytes) % kLineBytes;
    if (shift == 0) return true;
    const L2Requests cost = l2_requests(n.region, n.contiguous);
    const std::int64_t places = kLineBytes / std::gcd(shift, kLineBytes);
    for (std::int64_t p = 1; p < places; ++p) {
        Region r = n.region;
        r.head += p * s.head;
        r.row0 += p * s.rows;
        r.col0 += p * s.cols;
        if (r.row0 < 0 || r.col0 < 0 || r.head < 0 || r.row0 + r.nrows > t.rows || r.col0 + r.ncols > t.cols || r.head >= t.heads)
            return false;  // the place lies outside the tensor: not checkable, so not alike
        const L2Requests at = l2_requests(r, n.contiguous);
        if (at.sector_bytes != cost.sector_bytes || at.requests != cost.requests) return false;
    }
    return true;
}

bool alike_iterations(const AccessList& a, const AccessList& b, const AccessList& c) {
    if (a.size() != b.size() || a.size() != c.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!same_access(a[i], b[i]) || !same_access(a[i], c[i])) return false;
        if (a[i].count > 0) {
            if (!alike_iterations(a[i].body, b[i].body, c[i].body)) return false;
            continue;
        }
        const Step step = difference(a[i].region, b[i].region);
        if (!(step == difference(b[i].region, c[i].region)) || !same_cost_everywhere(a[i], step)) return false;
    }
    return true;
}

namespace {

bool same_but_count(const AccessNode& a, const AccessNode& b) {
    return (a.count > 0) == (b.count > 0) && a.write == b.write && a.contiguous == b.contiguous &&
           a.region.tensor == b.region.tensor && a.region.nrows == b.region.nrows && a.region.ncols == b.region.ncols &&
           a.steps == b.steps;
}

}  // namespace

bool growing_iterations(const AccessList& a, const AccessList& b, const AccessList& c, const AccessList& d) {
    if (a.size() != b.size() || a.size() != c.size() || a.size() != d.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (!same_but_count(a[i], b[i]) || !same_but_count(a[i], c[i]) || !same_but_count(a[i], d[i])) return false;
        if (a[i].count > 0) {
            const std::int64_t more = b[i].count - a[i].count;
            if (c[i].count - b[i].count != more || d[i].count - c[i].count != more ||
                !growing_iterations(a[i].body, b[i].body, c[i].body, d[i].body))
                return false;
            continue;
        }
        const Step step = difference(a[i].region, b[i].region);
        if (!(step == difference(b[i].region, c[i].region)) || !(step == difference(c[i].region, d[i].region)) ||
            !same_cost_everywhere(a[i], step))
            return false;
    }
    return true;
}

std::vector<AccessGrowth> growth(const AccessList& from, const AccessList& to) {
    std::vector<AccessGrowth> out(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) {
        if (from[i].count > 0) {
            out[i].count = to[i].count - from[i].count;
            out[i].body = growth(from[i].body, to[i].body);
        } else {
            out[i].step = difference(from[i].region, to[i].region);
        }
    }
    return out;
}

void grow(AccessList& record, const std::vector<AccessGrowth>& by, std::int64_t times) {
    for (std::size_t i = 0; i < record.size(); ++i) {
        AccessNode& n = record[i];
        if (n.count > 0) {
            n.count += times * by[i].count;
            grow(n.body, by[i].body, times);
            continue;
        }
        n.region.head += times * by[i].step.head;
        n.region.row0 += times * by[i].step.rows;
        n.region.col0 += times * by[i].step.cols;
    }
}

std::int64_t growth_room(const AccessList& record, const std::vector<AccessGrowth>& by) {
    std::int64_t room = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < record.size(); ++i) {
        if (record[i].count == 0) continue;
        if (by[i].count < 0) room = std::min(room, (record[i].count - 1) / -by[i].count);
        room = std::min(room, growth_room(record[i].body, by[i].body));
    }
    return room;
}

void set_steps(AccessList& first, const AccessList& second, std::size_t level) {
    for (std::size_t i = 0; i < first.size(); ++i) {
        if (first[i].count > 0) {
            set_steps(first[i].body, second[i].body, level);
        } else {
            if (first[i].steps.size() <= level) first[i].steps.resize(level + 1);
            first[i].steps[level] = difference(first[i].region, second[i].region);
        }
    }
}

void set_row_steps(AccessList& first_row, const AccessList& second_row) {
    for (std::size_t i = 0; i < first_row.size(); ++i) {
        if (first_row[i].count > 0) set_row_steps(first_row[i].body, second_row[i].body);
        else first_row[i].row_step = difference(first_row[i].region, second_row[i].region);
    }
}

namespace {

// `out`, a copy of `nodes`, becomes the record `rows` rows further down the grid (its accesses moved, all
// else as in `nodes`). In place: a row's replay reuses one copy rather than copying the tree per row.
void move_rows(const AccessList& nodes, std::int64_t rows, AccessList& out) {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const AccessNode& n = nodes[i];
        if (n.count > 0) {
            move_rows(n.body, rows, out[i].body);
            continue;
        }
        Region& r = out[i].region;
        r = n.region;
        r.head += rows * n.row_step.head;
        r.row0 += rows * n.row_step.rows;
        r.col0 += rows * n.row_step.cols;
    }
}

// Every access's row_step, in flatten's order.
void row_steps(const AccessList& nodes, std::vector<Step>& out) {
    for (const AccessNode& n : nodes) {
        if (n.count > 0) row_steps(n.body, out);
        else out.push_back(n.row_step);
    }
}

// Row `row` of a run of alike rows, as runs of blocks of its own, into `runs` (a copy of rr.row).
const std::vector<BlockRunAccesses>& row_of(const RowRunAccesses& rr, std::int64_t row, std::vector<BlockRunAccesses>& runs) {
    for (std::size_t i = 0; i < rr.row.size(); ++i) {
        runs[i].first = rr.row[i].first + (row - rr.first_row) * rr.row_blocks;
        move_rows(rr.row[i].block, row - rr.first_row, runs[i].block);
    }
    return runs;
}

}  // namespace

void replay(L2Model& l2, const RowRunAccesses& rr, std::int64_t slots) {
    // Groups of rows that fill whole waves (their blocks, rows x row_blocks, a multiple of slots) meet the
    // waves alike: they are the items of a loop. Rows before the first such group's start run alone.
    const std::int64_t per_group = slots / std::gcd(rr.row_blocks, slots);
    std::int64_t row = rr.first_row;
    const std::int64_t end = rr.first_row + rr.rows;
    auto first_block = [&](std::int64_t r) { return rr.row.front().first + (r - rr.first_row) * rr.row_blocks; };
    std::vector<BlockRunAccesses> at_row = rr.row;  // the row being replayed
    while (row < end && first_block(row) % slots != 0) replay(l2, row_of(rr, row++, at_row), slots);
    const std::int64_t groups = (end - row) / per_group;
    if (groups >= 3) {
        std::vector<L2Model::ItemAccess> accesses;
        for (const BlockRunAccesses& run : row_of(rr, row, at_row)) {
            std::vector<L2Model::ItemAccess> in_run = item_accesses(run.block, {0}, 0);
            std::vector<Step> down;
            row_steps(run.block, down);
            for (std::size_t i = 0; i < in_run.size(); ++i) {
                L2Model::ItemAccess& a = in_run[i];
                a.inner.insert(a.inner.begin(), {run.count, a.step});  // the run's blocks
                a.inner.insert(a.inner.begin(), {per_group, down[i]});  // the group's rows
                a.step = {down[i].head * per_group, down[i].rows * per_group, down[i].cols * per_group};
                accesses.push_back(std::move(a));
            }
        }
        const std::int64_t blocks = per_group * rr.row_blocks;
        L2Model::LoopShape shape{groups, std::move(accesses), blocks, blocks / slots};
        const std::int64_t first = row;
        l2.loop(shape, [&](std::int64_t g) {
            for (std::int64_t r = first + g * per_group; r < first + (g + 1) * per_group; ++r) replay(l2, row_of(rr, r, at_row), slots);
        });
        row += groups * per_group;
    }
    while (row < end) replay(l2, row_of(rr, row++, at_row), slots);
}

void replay(L2Model& l2, const std::vector<BlockRunAccesses>& runs, std::int64_t slots) {
    for (const BlockRunAccesses& run : runs) {
        std::int64_t b = run.first;
        const std::int64_t end = run.first + run.count;
        while (b < end) {
            const std::int64_t wave_end = (b / slots + 1) * slots;
            const std::int64_t whole_waves = b % slots == 0 ? (end - b) / slots : 0;
            if (whole_waves >= 3) {
                play_waves(l2, run, b, whole_waves, slots);
                b += whole_waves * slots;
            } else {
                const std::int64_t stop = std::min(end, wave_end);
                play_blocks(l2, run, b, stop - b);
                b = stop;
            }
        }
    }
}

}  // namespace fasim
