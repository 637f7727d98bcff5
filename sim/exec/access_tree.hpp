// What a thread block reads and writes in global memory, with the block's alike loops kept as loops
// (Block::repeat) instead of unrolled: the counting executor's record of a run of alike blocks, from which
// the L2 model learns what reaches DRAM (replay) without the tile program running every block.
//
// Every access carries its region at index 0 of each loop around it and, per loop, the step it moves by
// from one iteration to the next; level 0 is the block index within its run of alike blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "machine/l2_model.hpp"
#include "tile/tensors.hpp"

namespace fasim {

struct AccessNode {
    std::int64_t count = 0;            // > 0: a loop of `count` alike iterations of `body`
    std::vector<AccessNode> body;
    Region region;                     // count == 0: one access, at index 0 of every loop around it
    bool write = false;
    std::int64_t contiguous = 0;       // how the SMs' requests for it were counted (machine/sectors.hpp)
    std::vector<L2Model::Step> steps;  // one per loop around it, outermost (the block) first
    L2Model::Step row_step{};          // in a grid of alike rows of blocks: the step from one row to the next
};
using AccessList = std::vector<AccessNode>;

// Whether three iterations' records (of a loop at `level`, or three consecutive blocks at level 0) are
// one loop's: the same accesses and inner loops, each access moving by the same step from the first to
// the second as from the second to the third, and costing the same L2 sectors and requests wherever the
// step takes it (they depend on where it lies in a 128-byte line: every such place is checked).
bool alike_iterations(const AccessList& a, const AccessList& b, const AccessList& c);
// The first iteration's record with every access's step at `level` set to how far it moved by the second.
void set_steps(AccessList& first, const AccessList& second, std::size_t level);

// The record of the next row of a grid with every access's row_step set to how far it moved (as
// set_steps for a loop).
void set_row_steps(AccessList& first_row, const AccessList& second_row);

// Four consecutive blocks' records of a run that grows (KernelDesc::runs_grow): the same accesses, each
// moving by the same step from one block to the next and costing the same L2 sectors and requests wherever
// that takes it, in the same loops, each running the same number of iterations more (or fewer) than in
// the block before.
bool growing_iterations(const AccessList& a, const AccessList& b, const AccessList& c, const AccessList& d);
// What one block of such a run adds to the record of the block before: per loop the iterations, per access
// the step (loop bodies nested as in the record).
struct AccessGrowth {
    std::int64_t count = 0;
    L2Model::Step step{};
    std::vector<AccessGrowth> body;
};
std::vector<AccessGrowth> growth(const AccessList& from, const AccessList& to);
// The record `times` blocks further along the run, in place.
void grow(AccessList& record, const std::vector<AccessGrowth>& by, std::int64_t times);
// How many blocks further along the run every loop of `record` still runs at least once (no limit: INT64_MAX).
std::int64_t growth_room(const AccessList& record, const std::vector<AccessGrowth>& by);

// A run of alike blocks [first, first + count) of the simulated head, as the record of block `first`.
struct BlockRunAccesses {
    std::int64_t first = 0, count = 1;
    AccessList block;
};
// Alike rows [first_row, first_row + rows) of a grid of row_blocks blocks a row (KernelDesc::row_blocks),
// as the runs of row first_row with every access's row_step set. A "row" may be several of the grid's
// rows taken together (row_blocks then counts all their blocks): rows alike only with a period.
struct RowRunAccesses {
    std::int64_t first_row = 0, rows = 1, row_blocks = 0;
    std::vector<BlockRunAccesses> row;
};

// Plays a kernel's runs of blocks, in launch order, into the L2 model: blocks wave by wave (slots at a
// time), each block's accesses as its tile program made them, alike blocks, waves and loop iterations as
// loops the model may carry over (L2Model::loop). The caller begins and ends the kernel.
void replay(L2Model& l2, const std::vector<BlockRunAccesses>& runs, std::int64_t slots);
// Alike rows likewise: row by row, and in groups of rows that fill whole waves, which the model may carry
// over like waves.
void replay(L2Model& l2, const RowRunAccesses& rows, std::int64_t slots);

}  // namespace fasim
