// The element-wise functions a tile program applies with Block::map, in one table: what each
// computes (the functional executor evaluates it, element by element, in fp32) and what it
// costs in FLOPs (docs/flop-accounting.md: a multiply-add is 2 FLOPs; add, multiply, divide,
// max are 1; exp and log are 1 FLOP and 1 special-function op). A new function is one row here
// (and its instruction count in kernels/issue_costs.hpp); no executor changes.
//
// Operands are broadcast (Arg): a tile of the output's shape, a rows x 1 column repeated along
// every row (per_row: a row statistic such as m or ℓ), a 1 x cols row repeated down every column
// (per_col), or a number.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

namespace fasim {

enum class Fn : std::uint8_t {
    add,          // x + y
    sub,          // x - y
    mul,          // x * y
    fma,          // x * y + z (rounded twice: the functional executor evaluates x * y, then + z)
    max,          // max(x, y)
    div,          // x / y, 0 where y = 0 (a query row that saw no key has O = 0)
    exp_shifted,  // exp(y * x - z): P = exp(scale * S - m); 0 where z = -inf (a row that sees no key)
    exp_diff,     // exp(x - y): the rescale factor exp(m_old - m_new); 1 where both are -inf (nothing seen yet)
    lse,          // x + log(y): the log-sum-exp m + log(ℓ); -inf where y = 0
    seen,         // 1 where x > -inf, else 0: a score some mask left visible (PyTorch's isneginf test, negated)
};

struct FnInfo {
    std::string_view name;  // as traces print it
    int arity = 2;
    std::int64_t flops = 0;  // non-matmul FLOPs per output element
    std::int64_t sfu = 0;    // special-function evaluations (exp, log) per output element
};

// At namespace scope, so that a call reads one entry rather than building the table on its stack.
inline constexpr std::array<FnInfo, 10> kFnTable = {{
    {"add", 2, 1, 0},
    {"sub", 2, 1, 0},
    {"mul", 2, 1, 0},
    {"fma", 3, 2, 0},
    {"max", 2, 1, 0},
    {"divide", 2, 1, 0},
    {"exp", 3, 3, 1},      // the multiply, the subtraction, the exp
    {"expdiff", 2, 2, 1},  // the subtraction, the exp
    {"lse", 2, 2, 1},      // the log, the addition
    {"seen", 1, 1, 0},     // the comparison
}};

constexpr FnInfo fn_info(Fn f) { return kFnTable[static_cast<std::size_t>(f)]; }

// The function's value on one element (unused operands are ignored).
inline float apply(Fn f, float x, float y, float z) {
    constexpr float neg_inf = -std::numeric_limits<float>::infinity();
    switch (f) {
        case Fn::add: return x + y;
        case Fn::sub: return x - y;
        case Fn::mul: return x * y;
        case Fn::fma: {
            const float product = x * y;
            return product + z;
        }
        case Fn::max: return std::max(x, y);
        case Fn::div: return y == 0.0f ? 0.0f : x / y;
        case Fn::exp_shifted: return z == neg_inf ? 0.0f : std::exp(std::fma(y, x, -z));
        case Fn::exp_diff: return x == neg_inf && y == neg_inf ? 1.0f : std::exp(x - y);
        case Fn::lse: return y == 0.0f ? neg_inf : x + std::log(y);
        case Fn::seen: return x > neg_inf ? 1.0f : 0.0f;
    }
    return std::numeric_limits<float>::quiet_NaN();
}

}  // namespace fasim
