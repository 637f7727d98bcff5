// Axis scales, "nice" ticks and tick-label formatters.
//
// make_axis() turns a data extent into a range and ticks. The range always
// contains every data value (and the limits the user asked for): linear ranges
// are rounded out to multiples of a 1-2-5 step, log ranges to whole decades.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fasim::plot {

// Log10: ticks at decades (with 2 and 5 labelled when the range is small).
// Log2: ticks at powers of two, for N, block sizes and head dimensions.
enum class ScaleKind { Linear, Log10, Log2 };

inline bool is_log(ScaleKind s) { return s != ScaleKind::Linear; }

// Turns a tick value into its label.
using LabelFormatter = std::function<std::string(double)>;

// ---- formatting helpers (locale-independent, deterministic) ----------------

// All helpers round to `significant` significant digits and drop trailing zeros.
//
// Scientific notation only for very large/small magnitudes: 512, 0.25, 1e6, 2.5e-5.
std::string format_plain(double v, int significant = 6);
// SI prefixes (k M G T P E; with a unit also m µ n p): 16000 -> "16k",
// 1.5e9 with "B" -> "1.5 GB", 512 with "B" -> "512 B", 2e-6 with "s" -> "2 µs".
std::string format_si(double v, std::string_view unit = "", int significant = 4);
// Binary prefixes (Ki Mi Gi Ti Pi Ei): 4096 -> "4 Ki", 4096 with "B" -> "4 KiB", 512 -> "512".
std::string format_binary(double v, std::string_view unit = "", int significant = 4);
// Seconds with sub-second SI prefixes: 1e-3 -> "1 ms", 2.5e-6 -> "2.5 µs", 90 -> "90 s".
std::string format_seconds(double v, int significant = 4);
// Sequence lengths the way papers write them (k = 1024): 16384 -> "16k", 1048576 -> "1M",
// 512 -> "512". Meant for powers of two (ScaleKind::Log2); 10000 -> "9.766k".
std::string format_tokens(double v, int significant = 4);
// A fraction as a percentage: 0.25 -> "25%".
std::string format_percent(double fraction);

// The same helpers as LabelFormatter values, to pick one per axis.
LabelFormatter plain_labels();
LabelFormatter si_labels(std::string unit = "");
LabelFormatter binary_labels(std::string unit = "");
LabelFormatter seconds_labels();
LabelFormatter tokens_labels();
LabelFormatter percent_labels();

// ---- ticks ------------------------------------------------------------------

struct Tick {
    double value = 0;
    std::string label;   // empty: an unlabelled minor tick
    bool major = true;   // major ticks get a stronger grid line
};

struct AxisOptions {
    AxisOptions() = default;
    AxisOptions(ScaleKind scale_, std::string label_, LabelFormatter format_ = {})
        : scale(scale_), label(std::move(label_)), format(std::move(format_)) {}

    ScaleKind scale = ScaleKind::Linear;
    std::string label;                 // with unit, e.g. "HBM traffic (bytes)"
    LabelFormatter format;             // empty: format_plain
    std::optional<double> min;         // requested limits; widened to contain all data
    std::optional<double> max;
    bool include_zero = false;         // linear only: the range contains 0
    // Linear only: ticks at 1-2-5 steps of a power of 1024 (0, 4, 8, 12 MiB rather
    // than 0, 4.768, 9.537 MiB). Set it with binary_labels().
    bool binary_ticks = false;
};

struct TickRequest {
    int max_major = 6;                 // at most this many major ticks (linear: >= 3, log: >= 2)
    bool minor_labels = true;          // log10: label 2 and 5 when the range is small
};

struct AxisTicks {
    ScaleKind scale = ScaleKind::Linear;
    double lo = 0;
    double hi = 1;
    std::vector<Tick> ticks;           // ascending

    // Position of v along the axis: 0 at lo, 1 at hi.
    double fraction(double v) const;
    bool contains(double v) const;     // lo <= v <= hi (within rounding)
};

// Smallest 1, 2 or 5 × 10^k that is >= raw (raw > 0).
double nice_step(double raw);

// Range and ticks for data in [data_min, data_max] (both finite; for log scales, both > 0,
// else std::invalid_argument). An empty data set is passed as data_min > data_max.
AxisTicks make_axis(const AxisOptions& options, double data_min, double data_max,
                    const TickRequest& request = {});

}  // namespace fasim::plot
