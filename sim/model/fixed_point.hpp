// Seconds as exact integers, so that the block scheduler can add, compare and multiply them (rounds,
// repeating heads) with results that do not depend on the order of the operations.
//
// A value is an integer number of quanta of 2^exponent seconds. The quantum is chosen from the largest
// sum that will be formed (a kernel's block durations, all summed; or one term, summed over all blocks)
// so that every sum stays below 2^125, well inside a signed 128-bit integer. A double x is held exactly
// when x >= 2^(exponent + 52), that is when it is at least 2^-72 of that largest sum; a smaller one is
// rounded to the nearest quantum, an error below 2^-125 of the sum. That is the scheduler's whole
// tolerance: on the values it holds, every schedule it computes is exact, and a result converts back to
// the double nearest to it.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace fasim {

__extension__ typedef __int128 Fixed;  // __extension__: -Wpedantic accepts it

class FixedPoint {
public:
    FixedPoint() = default;
    // For values whose sums stay at most `largest_sum` seconds (finite, >= 0).
    explicit FixedPoint(double largest_sum) {
        int e = 0;
        if (largest_sum > 0) std::frexp(largest_sum, &e);  // largest_sum < 2^e
        exponent_ = e - 124;
    }

    // The nearest multiple of the quantum (x finite, >= 0).
    Fixed from_seconds(double x) const {
        // x = mantissa 2^(exponent - 1075), read from its bits (a subnormal's exponent field is 0, read as 1).
        const auto bits = std::bit_cast<std::uint64_t>(x);
        const auto exponent = static_cast<int>(bits >> 52);
        const std::uint64_t fraction = bits & kFraction;
        if (exponent == 0 && fraction == 0) return 0;
        const Fixed mantissa = static_cast<std::int64_t>(exponent == 0 ? fraction : fraction | (kFraction + 1));
        const int shift = (exponent == 0 ? 1 : exponent) - 1075 - exponent_;
        if (shift >= 0) return mantissa << shift;
        if (shift <= -54) return 0;  // below half a quantum
        return (mantissa + (Fixed{1} << (-shift - 1))) >> -shift;
    }
    // The double nearest to v quanta.
    double to_seconds(Fixed v) const { return std::ldexp(static_cast<double>(v), exponent_); }

private:
    static constexpr std::uint64_t kFraction = (std::uint64_t{1} << 52) - 1;
    int exponent_ = 0;
};

}  // namespace fasim
