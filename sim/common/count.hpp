// fasim::Count: an exact integer for totals summed over batch·heads (bytes, FLOPs, instructions,
// requests). At the limits issue 24 sets (N = Nk = 2^24, batch·heads = 2^16, d = 256) matmul FLOPs are
// 4·B·H·N·Nk·d = 2^74 and standard attention's S alone is B·H·N·Nk·4 = 2^66 bytes: past 64 bits. Count
// holds a signed 128-bit integer (GCC's __int128; |value| < 2^127 ≈ 1.7·10^38), so every such total and
// any product of a few of the limits stays exact.
//
// It is a thin class rather than an alias so that nothing narrows silently: it converts implicitly
// *from* any integer type (counters add std::int64_t terms), but to double or std::int64_t only when
// asked (to_double(c) for display and rates; c.to_int64() checks that the value fits). Arithmetic that
// would overflow 128 bits throws std::overflow_error instead of wrapping. `out << c` and to_string(c)
// print every digit (Catch2 prints a Count with it); JSON is in common/exact_json.hpp.
#pragma once

#include <compare>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fasim {

// -Wpedantic: ISO C++ has no __int128; __extension__ marks its (only) use as intended.
__extension__ typedef __int128 int128_t;
__extension__ typedef unsigned __int128 uint128_t;

class Count {
public:
    constexpr Count() = default;
    template <std::integral T>
        requires(!std::same_as<T, bool>)
    constexpr Count(T v) : v_(static_cast<int128_t>(v)) {}  // NOLINT: implicit, counters add integer terms

    static constexpr Count from_raw(int128_t v) {
        Count c;
        c.v_ = v;
        return c;
    }
    constexpr int128_t raw() const { return v_; }

    // For display, ratios and rates: the nearest double (exact below 2^53). Values that fit 64 bits take
    // the one-instruction conversion (the same double: both round the same integer to nearest); the
    // runtime model converts block counts in its scheduling loop.
    explicit constexpr operator double() const {
        return fits_int64() ? static_cast<double>(static_cast<std::int64_t>(v_)) : static_cast<double>(v_);
    }
    explicit constexpr operator bool() const { return v_ != 0; }  // if (count), count ? a : b
    constexpr bool fits_int64() const {
        return v_ >= std::numeric_limits<std::int64_t>::min() && v_ <= std::numeric_limits<std::int64_t>::max();
    }
    // The value as std::int64_t; throws std::overflow_error when it does not fit.
    constexpr std::int64_t to_int64() const {
        if (!fits_int64()) throw std::overflow_error("fasim::Count: " + to_string() + " does not fit in 64 bits");
        return static_cast<std::int64_t>(v_);
    }
    std::string to_string() const;

    friend constexpr Count operator+(Count a, Count b) {
        int128_t r;
        if (__builtin_add_overflow(a.v_, b.v_, &r)) overflow("+");
        return from_raw(r);
    }
    friend constexpr Count operator-(Count a, Count b) {
        int128_t r;
        if (__builtin_sub_overflow(a.v_, b.v_, &r)) overflow("-");
        return from_raw(r);
    }
    friend constexpr Count operator*(Count a, Count b) {
        int128_t r;
        if (__builtin_mul_overflow(a.v_, b.v_, &r)) overflow("*");
        return from_raw(r);
    }
    // Truncating division and remainder, as for the built-in integers.
    friend constexpr Count operator/(Count a, Count b) {
        if (b.v_ == 0) throw std::domain_error("fasim::Count: division by zero");
        return from_raw(a.v_ / b.v_);
    }
    friend constexpr Count operator%(Count a, Count b) {
        if (b.v_ == 0) throw std::domain_error("fasim::Count: division by zero");
        return from_raw(a.v_ % b.v_);
    }
    constexpr Count operator-() const { return Count{} - *this; }
    constexpr Count& operator+=(Count o) { return *this = *this + o; }
    constexpr Count& operator-=(Count o) { return *this = *this - o; }
    constexpr Count& operator*=(Count o) { return *this = *this * o; }
    constexpr Count& operator/=(Count o) { return *this = *this / o; }
    constexpr Count& operator++() { return *this += 1; }

    friend constexpr bool operator==(const Count&, const Count&) = default;
    friend constexpr std::strong_ordering operator<=>(const Count& a, const Count& b) {
        return a.v_ < b.v_ ? std::strong_ordering::less : a.v_ > b.v_ ? std::strong_ordering::greater : std::strong_ordering::equal;
    }

private:
    [[noreturn]] static void overflow(const char* op) {
        throw std::overflow_error(std::string("fasim::Count: 128-bit overflow in ") + op);
    }
    int128_t v_ = 0;
};

constexpr double to_double(Count c) { return static_cast<double>(c); }

// Every digit, with a leading '-' when negative: "18889465931478580854784" (= 2^74).
inline std::string Count::to_string() const {
    if (v_ == 0) return "0";
    // Magnitude as unsigned, so that the most negative value prints too.
    uint128_t m = v_ < 0 ? uint128_t{0} - static_cast<uint128_t>(v_) : static_cast<uint128_t>(v_);
    char buf[48];
    char* end = buf + sizeof buf;
    char* p = end;
    while (m != 0) {
        *--p = static_cast<char>('0' + static_cast<int>(m % 10));
        m /= 10;
    }
    if (v_ < 0) *--p = '-';
    return std::string(p, end);
}
inline std::string to_string(Count c) { return c.to_string(); }
inline std::ostream& operator<<(std::ostream& out, Count c) { return out << c.to_string(); }

// The integer that `text` writes in decimal (an optional '-', then digits only); nullopt for anything
// else or for a value beyond 128 bits.
inline std::optional<Count> parse_count(std::string_view text) {
    const bool negative = !text.empty() && text.front() == '-';
    if (negative) text.remove_prefix(1);
    if (text.empty()) return std::nullopt;
    int128_t v = 0;
    for (const char ch : text) {
        if (ch < '0' || ch > '9') return std::nullopt;
        const int digit = ch - '0';
        // Accumulated as a negative number, so that -2^127 parses too.
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_sub_overflow(v, digit, &v)) return std::nullopt;
    }
    if (!negative) {
        int128_t pos;
        if (__builtin_sub_overflow(int128_t{0}, v, &pos)) return std::nullopt;  // -2^127 has no positive twin
        return Count::from_raw(pos);
    }
    return Count::from_raw(v);
}

}  // namespace fasim
