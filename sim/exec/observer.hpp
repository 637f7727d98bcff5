// Watching a tile program run, step by step: what a lesson prints. The functional
// executor calls the observer after every operation, with the values it produced.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "precision.hpp"
#include "tile/tile_program.hpp"

namespace fasim {

enum class StepKind {
    kernel_begin, block_begin, alloc, load, store, stage, matmul, mask, map, reduce_rows, round_to_storage,
    reduce_across_warps, barrier
};
const char* step_name(StepKind k);

struct Step {
    StepKind kind{};
    const KernelDesc* kernel = nullptr;
    std::int64_t head = 0, block = 0;
    std::string_view result;                  // label of the tile written (or loaded/stored)
    std::vector<std::string_view> operands;   // labels of the tiles read
    const Region* region = nullptr;           // load/store: which part of which tensor
    const reference::MatrixF* values = nullptr;  // the result's values after the step
    bool accumulate = false, transpose_b = false;  // matmul: C += A·B, and whether B is transposed
    bool transpose_a = false;                      // matmul: whether A is transposed
    std::string_view op{};                         // map, reduce_rows: the function, as a trace names it
    std::vector<double> numbers{};                 // map: its number operands (a scale factor, say)
    StoreMode store_mode = StoreMode::overwrite;   // store
};

class Observer {
public:
    virtual ~Observer() = default;
    virtual void on_step(const Step& step) = 0;
};

}  // namespace fasim
