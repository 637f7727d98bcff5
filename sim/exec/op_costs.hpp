// FLOPs and special-function operations of each tile operation: the one table both
// executors use, so the functional run performs exactly what is counted (maps take theirs
// from the function table, tile/elementwise.hpp).
// Conventions (docs/flop-accounting.md): a multiply-add is 2 FLOPs; add, multiply,
// divide, max, compare-and-select are 1; exp and log are 1 FLOP and 1 SFU op.
#pragma once

#include <cstdint>

#include "tile/elementwise.hpp"

namespace fasim::op_cost {

struct Cost {
    std::int64_t flops = 0;  // non-matmul FLOPs
    std::int64_t sfu = 0;    // exp/log evaluations (special-function unit)
};

inline std::int64_t matmul_flops(std::int64_t m, std::int64_t n, std::int64_t k) { return 2 * m * n * k; }

inline Cost row_max(std::int64_t elems) { return {elems, 0}; }
inline Cost row_sum(std::int64_t elems) { return {elems, 0}; }
// An element-wise map: the function's FLOPs and exp/log per output element (tile/elementwise.hpp).
inline Cost map(Fn f, std::int64_t elems) { return {fn_info(f).flops * elems, fn_info(f).sfu * elems}; }
inline Cost reduce_across_warps(std::int64_t elems, int warps) { return {(warps - 1) * elems, 0}; }
inline Cost mask(std::int64_t) { return {0, 0}; }  // selects, not arithmetic

}  // namespace fasim::op_cost
