#include "plot/axis.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <system_error>

namespace fasim::plot {

namespace {

// %g-style with `significant` digits via std::to_chars (no locale), exponent
// written compactly: "1e+06" -> "1e6", "2.5e-05" -> "2.5e-5".
std::string general(double v, int significant) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    if (v == 0) return "0";
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::general,
                                   std::clamp(significant, 1, 17));
    if (res.ec != std::errc{}) return "?";
    std::string s(buf.data(), res.ptr);
    const auto e = s.find('e');
    if (e == std::string::npos) return s;
    std::string mant = s.substr(0, e);
    std::string exp = s.substr(e + 1);
    bool neg = false;
    if (!exp.empty() && (exp[0] == '+' || exp[0] == '-')) {
        neg = exp[0] == '-';
        exp.erase(0, 1);
    }
    while (exp.size() > 1 && exp[0] == '0') exp.erase(0, 1);
    return mant + "e" + (neg ? "-" : "") + exp;
}

// Rounds to `significant` digits and reports the value as a double again.
double round_sig(double v, int significant) {
    if (v == 0 || !std::isfinite(v)) return v;
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::scientific,
                                   significant - 1);
    double out = v;
    std::from_chars(buf.data(), res.ptr, out);
    return out;
}

struct Prefix {
    int power;            // of the base
    const char* symbol;
};

// Scales |v| by base^power for the largest power with |v|/base^power >= 1
// (after rounding to 6 significant digits), within [lowest, highest].
std::string scaled(double v, double base, const Prefix* prefixes, std::size_t count, std::string_view unit,
                   bool space_without_unit, int sig) {
    if (!std::isfinite(v)) return general(v, sig);
    if (v == 0) return unit.empty() ? "0" : "0 " + std::string(unit);
    const double a = std::fabs(v);
    std::size_t chosen = 0;
    // prefixes are sorted ascending by power; index of power 0 must exist.
    for (std::size_t i = 0; i < count; ++i) {
        const double scale = std::pow(base, prefixes[i].power);
        if (round_sig(a / scale, sig) >= 1.0) chosen = i;
    }
    const double scale = std::pow(base, prefixes[chosen].power);
    std::string num = general(v / scale, sig);
    const std::string sym = prefixes[chosen].symbol;
    if (unit.empty()) {
        if (sym.empty()) return num;
        return num + (space_without_unit ? " " : "") + sym;
    }
    return num + " " + sym + std::string(unit);
}

constexpr std::array<Prefix, 7> kSiLarge{{{0, ""}, {1, "k"}, {2, "M"}, {3, "G"}, {4, "T"}, {5, "P"}, {6, "E"}}};
constexpr std::array<Prefix, 11> kSiAll{{{-4, "p"}, {-3, "n"}, {-2, "\xC2\xB5"}, {-1, "m"}, {0, ""},
                                         {1, "k"}, {2, "M"}, {3, "G"}, {4, "T"}, {5, "P"}, {6, "E"}}};
constexpr std::array<Prefix, 5> kSeconds{{{-4, "p"}, {-3, "n"}, {-2, "\xC2\xB5"}, {-1, "m"}, {0, ""}}};
constexpr std::array<Prefix, 7> kBinary{
    {{0, ""}, {1, "Ki"}, {2, "Mi"}, {3, "Gi"}, {4, "Ti"}, {5, "Pi"}, {6, "Ei"}}};
constexpr std::array<Prefix, 5> kTokens{{{0, ""}, {1, "k"}, {2, "M"}, {3, "G"}, {4, "T"}}};

double pow10i(int e) { return std::pow(10.0, e); }

}  // namespace

// ---- formatters --------------------------------------------------------------

std::string format_plain(double v, int significant) { return general(v, significant); }

std::string format_si(double v, std::string_view unit, int significant) {
    // Without a unit, sub-unit prefixes (m for milli next to M for mega) would confuse.
    if (unit.empty()) {
        if (round_sig(std::fabs(v), significant) < 1000) return general(v, significant);
        return scaled(v, 1000.0, kSiLarge.data(), kSiLarge.size(), unit, false, significant);
    }
    if (round_sig(std::fabs(v), significant) >= 1)
        return scaled(v, 1000.0, kSiLarge.data(), kSiLarge.size(), unit, false, significant);
    return scaled(v, 1000.0, kSiAll.data(), kSiAll.size(), unit, false, significant);
}

std::string format_binary(double v, std::string_view unit, int significant) {
    return scaled(v, 1024.0, kBinary.data(), kBinary.size(), unit, true, significant);
}

std::string format_seconds(double v, int significant) {
    if (round_sig(std::fabs(v), significant) >= 1 || v == 0) return general(v, significant) + " s";
    return scaled(v, 1000.0, kSeconds.data(), kSeconds.size(), "s", false, significant);
}

std::string format_tokens(double v, int significant) {
    return scaled(v, 1024.0, kTokens.data(), kTokens.size(), "", false, significant);
}

std::string format_percent(double fraction) { return general(fraction * 100.0, 6) + "%"; }

LabelFormatter plain_labels() { return [](double v) { return format_plain(v); }; }
LabelFormatter si_labels(std::string unit) {
    return [unit = std::move(unit)](double v) { return format_si(v, unit); };
}
LabelFormatter binary_labels(std::string unit) {
    return [unit = std::move(unit)](double v) { return format_binary(v, unit); };
}
LabelFormatter seconds_labels() { return [](double v) { return format_seconds(v); }; }
LabelFormatter tokens_labels() { return [](double v) { return format_tokens(v); }; }
LabelFormatter percent_labels() { return [](double v) { return format_percent(v); }; }

// ---- ticks -------------------------------------------------------------------

double AxisTicks::fraction(double v) const {
    if (is_log(scale)) {
        const double l0 = std::log10(lo);
        const double l1 = std::log10(hi);
        if (v <= 0) return -1e9;
        return (std::log10(v) - l0) / (l1 - l0);
    }
    return (v - lo) / (hi - lo);
}

bool AxisTicks::contains(double v) const {
    const double tol = 1e-12 * std::max({std::fabs(lo), std::fabs(hi), 1e-300});
    return v >= lo - tol && v <= hi + tol;
}

double nice_step(double raw) {
    if (!(raw > 0) || !std::isfinite(raw)) throw std::invalid_argument("nice_step: step must be positive");
    int e = static_cast<int>(std::floor(std::log10(raw)));
    for (int attempt = 0; attempt < 3; ++attempt) {
        const double p = pow10i(e);
        for (double m : {1.0, 2.0, 5.0}) {
            if (m * p >= raw * (1 - 1e-12)) return m * p;
        }
        ++e;
    }
    return pow10i(e);
}

namespace {

AxisTicks linear_axis(double lo, double hi, const LabelFormatter& fmt, const TickRequest& req) {
    // A range too narrow to label (or a single value) is widened around it.
    if (hi - lo <= std::max(std::fabs(lo), std::fabs(hi)) * 1e-12) {
        if (lo == 0 && hi == 0) {
            hi = 1;
        } else {
            const double d = std::max(std::fabs(lo), std::fabs(hi)) * 0.1;
            lo -= d;
            hi += d;
        }
    }
    // Three ticks at least: a range across zero always needs -s, 0, s.
    const int max_major = std::max(3, req.max_major);
    double step = nice_step((hi - lo) / (max_major - 1));
    long long klo = 0, khi = 0;
    for (int attempt = 0; attempt < 16; ++attempt) {
        klo = static_cast<long long>(std::floor(lo / step));
        khi = static_cast<long long>(std::ceil(hi / step));
        while (static_cast<double>(klo) * step > lo) --klo;  // rounding guards:
        while (static_cast<double>(khi) * step < hi) ++khi;  // the range holds the data
        if (khi - klo + 1 <= max_major) break;
        step = nice_step(step * 1.0001);  // the next 1-2-5 step up
    }
    AxisTicks out;
    out.scale = ScaleKind::Linear;
    out.lo = static_cast<double>(klo) * step;
    out.hi = static_cast<double>(khi) * step;
    for (long long k = klo; k <= khi; ++k) {
        double v = static_cast<double>(k) * step;
        if (std::fabs(v) < step * 1e-9) v = 0;
        out.ticks.push_back({v, fmt(v), true});
    }
    return out;
}

double ipow(double base, int e) { return std::pow(base, e); }

// Ticks at powers of `base` (10 or 2); the range is rounded out to powers.
AxisTicks log_axis(double lo, double hi, double base, const LabelFormatter& fmt, const TickRequest& req) {
    const double lb = std::log(base);
    int elo = static_cast<int>(std::floor(std::log(lo) / lb));
    while (ipow(base, elo) > lo) --elo;        // guards against rounding in log():
    while (ipow(base, elo + 1) <= lo) ++elo;   // base^elo <= lo < base^(elo+1)
    int ehi = static_cast<int>(std::ceil(std::log(hi) / lb));
    while (ipow(base, ehi) < hi) ++ehi;
    while (ipow(base, ehi - 1) >= hi) --ehi;
    if (ehi <= elo) ehi = elo + 1;
    const int max_major = std::max(2, req.max_major);
    // Label every `every`-th power, aligned to multiples of `every`.
    int every = 1;
    auto count = [&](int k) {
        int n = 0;
        for (int e = elo; e <= ehi; ++e) n += (((e % k) + k) % k == 0) ? 1 : 0;
        return n;
    };
    while (count(every) > max_major) ++every;
    if (every > 1) {
        while (((elo % every) + every) % every != 0) --elo;  // range ends on labelled powers
        while (((ehi % every) + every) % every != 0) ++ehi;
    }
    const int span = ehi - elo;

    AxisTicks out;
    out.scale = base == 2.0 ? ScaleKind::Log2 : ScaleKind::Log10;
    out.lo = ipow(base, elo);
    out.hi = ipow(base, ehi);
    const bool decimal = base == 10.0;
    const bool label_minor = decimal && req.minor_labels && every == 1 && span <= 2;
    const bool minor_marks = decimal && every == 1 && span <= 6;
    for (int e = elo; e <= ehi; ++e) {
        const double p = ipow(base, e);
        const bool labelled = ((e % every) + every) % every == 0;
        if (labelled) out.ticks.push_back({p, fmt(p), true});
        else if (every > 1 && every <= 4) out.ticks.push_back({p, std::string(), false});
        if (e == ehi || !minor_marks) continue;
        for (int m = 2; m <= 9; ++m) {
            const double v = round_sig(m * p, 15);
            const bool label = label_minor && (m == 2 || m == 5);
            out.ticks.push_back({v, label ? fmt(v) : std::string(), false});
        }
    }
    return out;
}

}  // namespace

AxisTicks make_axis(const AxisOptions& options, double data_min, double data_max, const TickRequest& request) {
    const LabelFormatter fmt = options.format ? options.format : plain_labels();
    const bool empty = data_min > data_max;
    if (!empty && (!std::isfinite(data_min) || !std::isfinite(data_max)))
        throw std::invalid_argument("make_axis: data must be finite");
    double lo = 0;
    double hi = 0;
    bool have = false;
    auto take = [&](double v) {
        if (!have) { lo = hi = v; have = true; }
        else { lo = std::min(lo, v); hi = std::max(hi, v); }
    };
    if (!empty) { take(data_min); take(data_max); }
    if (options.min) take(*options.min);
    if (options.max) take(*options.max);

    if (is_log(options.scale)) {
        if (!have) { lo = 1; hi = options.scale == ScaleKind::Log2 ? 2 : 10; }
        if (!(lo > 0)) throw std::invalid_argument("make_axis: a log axis needs positive values");
        return log_axis(lo, hi, options.scale == ScaleKind::Log2 ? 2.0 : 10.0, fmt, request);
    }
    if (options.include_zero) take(0.0);
    if (!have) { lo = 0; hi = 1; }
    if (options.binary_ticks) {
        // Nice steps in the binary unit the labels will show.
        const double mag = std::max(std::fabs(lo), std::fabs(hi));
        double unit = 1;
        while (unit * 1024 <= mag && unit < 0x1p60) unit *= 1024;
        AxisTicks t = linear_axis(lo / unit, hi / unit, [](double) { return std::string(); }, request);
        t.lo *= unit;
        t.hi *= unit;
        for (auto& tick : t.ticks) {
            tick.value *= unit;
            tick.label = fmt(tick.value);
        }
        // Multiplying back by a power of two is exact: the range still holds the data.
        return t;
    }
    return linear_axis(lo, hi, fmt, request);
}

}  // namespace fasim::plot
