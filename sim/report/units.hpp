// Human-readable numbers for reports: traffic in decimal units (MB = 1e6 B, as
// Nsight Compute and the papers print), capacities in binary units (MiB).
#pragma once

#include <cstdint>
#include <string>

namespace fasim::units {

std::string bytes(double b);          // "100.9 MB"
std::string capacity(double b);       // "40 MiB"
std::string count(double n);          // "2.15e11" style with SI suffix: "215 G"
std::string flops(double f);          // "215 GFLOP"
std::string rate(double per_s, const char* unit);  // "1.56 TB/s"
std::string seconds(double s);        // "451 us", "1.23 ms"
std::string ratio(double r);          // "12.3x"
std::string fixed(double v, int decimals);

}  // namespace fasim::units
