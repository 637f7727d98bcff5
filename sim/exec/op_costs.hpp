// FLOPs and special-function operations of each tile operation: the one table both
// executors use, so the functional run performs exactly what is counted.
// Conventions (docs/flop-accounting.md): a multiply-add is 2 FLOPs; add, multiply,
// divide, max, compare-and-select are 1; exp and log are 1 FLOP and 1 SFU op.
#pragma once

#include <cstdint>

namespace fasim::op_cost {

struct Cost {
    std::int64_t flops = 0;  // non-matmul FLOPs
    std::int64_t sfu = 0;    // exp/log evaluations (special-function unit)
};

inline std::int64_t matmul_flops(std::int64_t m, std::int64_t n, std::int64_t k) { return 2 * m * n * k; }

inline Cost row_max(std::int64_t elems) { return {elems, 0}; }
inline Cost row_sum(std::int64_t elems) { return {elems, 0}; }
inline Cost exp_rows(std::int64_t elems) { return {3 * elems, elems}; }  // fma(scale, s, -m) + exp
inline Cost multiply(std::int64_t elems) { return {elems, 0}; }
inline Cost scale_rows(std::int64_t elems) { return {elems, 0}; }
inline Cost divide_rows(std::int64_t elems) { return {elems, 0}; }
inline Cost add(std::int64_t elems) { return {elems, 0}; }
inline Cost vec_max(std::int64_t n) { return {n, 0}; }
inline Cost vec_exp_diff(std::int64_t n) { return {2 * n, n}; }
inline Cost vec_mul(std::int64_t n) { return {n, 0}; }
inline Cost vec_mul_add(std::int64_t n) { return {2 * n, 0}; }
inline Cost vec_lse(std::int64_t n) { return {2 * n, n}; }
inline Cost reduce_across_warps(std::int64_t elems, int warps) { return {(warps - 1) * elems, 0}; }
inline Cost mask(std::int64_t) { return {0, 0}; }  // selects, not arithmetic

}  // namespace fasim::op_cost
