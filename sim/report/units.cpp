#include "report/units.hpp"

#include <cmath>
#include <cstdio>

namespace fasim::units {

namespace {

std::string si(double v, const char* unit) {
    // Up to yotta: 2^74 matmul FLOPs (B·H = 2^16, N = Nk = 2^24, d = 256) print as "18.9 ZFLOP".
    static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
    int i = 0;
    double a = std::fabs(v);
    while (a >= 999.95 && i < 8) {
        a /= 1000;
        v /= 1000;
        ++i;
    }
    char buf[64];
    if (i == 0 && std::fabs(v - std::round(v)) < 1e-9) std::snprintf(buf, sizeof buf, "%.0f %s", v, unit);
    else std::snprintf(buf, sizeof buf, a >= 99.95 ? "%.0f %s%s" : (a >= 9.995 ? "%.1f %s%s" : "%.2f %s%s"), v, prefixes[i], unit);
    std::string s(buf);
    while (!s.empty() && s.back() == ' ') s.pop_back();  // unitless counts: "215 G", not "215 G "
    return s;
}

}  // namespace

std::string bytes(double b) { return si(b, "B"); }

std::string capacity(double b) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB"};
    int i = 0;
    while (b >= 1024 && i < 7) {
        b /= 1024;
        ++i;
    }
    char buf[64];
    if (std::fabs(b - std::round(b)) < 1e-9) std::snprintf(buf, sizeof buf, "%.0f %s", b, units[i]);
    else std::snprintf(buf, sizeof buf, "%.1f %s", b, units[i]);
    return buf;
}

std::string count(double n) { return si(n, ""); }
std::string flops(double f) { return si(f, "FLOP"); }
std::string rate(double per_s, const char* unit) { return si(per_s, unit); }

std::string seconds(double s) {
    char buf[64];
    const double a = std::fabs(s);
    if (a >= 1) std::snprintf(buf, sizeof buf, "%.3g s", s);
    else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
    else if (a >= 1e-6) std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
    else std::snprintf(buf, sizeof buf, "%.3g ns", s * 1e9);
    return buf;
}

std::string ratio(double r) {
    char buf[64];
    std::snprintf(buf, sizeof buf, r >= 100 ? "%.0fx" : (r >= 10 ? "%.1fx" : "%.2fx"), r);
    return buf;
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

}  // namespace fasim::units
