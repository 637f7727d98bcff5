// Charts rendered to SVG: lines, scatter, stacked bars, timelines, reference
// lines and bands, with titles, wrapped captions, axes, grid and a legend that
// is placed where it does not cover data.
//
// Every drawn data mark carries data-series="K" (and class "series-K"), K being
// the series index that add_line/add_scatter/add_band return, the stack index
// of stacked bars, or the category index of a timeline. Lines without markers
// draw one <polyline class="line series-K-line"> with one vertex per point.
//
//   Chart c("HBM traffic vs sequence length");
//   c.set_caption("A100-SXM4-40GB, B=1, H=16, d=64, fp16, non-causal");
//   c.x_axis() = {ScaleKind::Log10, "sequence length N", tokens_labels()};
//   c.y_axis() = {ScaleKind::Log10, "HBM traffic", si_labels("B")};
//   c.add_line(LineSeries("FA2", xs, ys));
//   c.save_svg("traffic.svg");
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plot/axis.hpp"

namespace fasim::plot {

// Okabe & Ito (2008), "Color Universal Design": distinguishable with every
// common colour-vision deficiency. Ordered for series: blue first, yellow
// (weak on white) last.
inline constexpr std::array<std::string_view, 8> kOkabeIto = {
    "#0072B2",  // blue
    "#E69F00",  // orange
    "#009E73",  // bluish green
    "#D55E00",  // vermillion
    "#CC79A7",  // reddish purple
    "#56B4E9",  // sky blue
    "#000000",  // black
    "#F0E442",  // yellow
};
// The i-th palette colour (wraps around).
std::string palette_color(std::size_t i);

// Approximate advance width of `text` in DejaVu Sans at `size` px (used for layout).
double estimate_text_width(std::string_view text, double size, bool bold = false);
// Greedy word wrap to `max_width` px; '\n' starts a new line. Words longer than a line stay whole.
std::vector<std::string> wrap_text(std::string_view text, double size, double max_width, bool bold = false);

enum class LineStyle { Solid, Dashed, Dotted };
enum class Marker { Auto, None, Circle, Square, Triangle, Diamond };
enum class LegendPosition { Auto, TopLeft, TopRight, BottomLeft, BottomRight, OutsideRight, Hidden };

// The structs below have constructors for the required fields and with_*()
// setters for the rest, e.g. LineSeries("FA2", n, bytes).with_style(LineStyle::Dashed).
// (g++ 12 warns about designated initializers that leave fields out.)

struct LineSeries {
    LineSeries() = default;
    LineSeries(std::string name_, std::vector<double> x_, std::vector<double> y_)
        : name(std::move(name_)), x(std::move(x_)), y(std::move(y_)) {}
    LineSeries& with_style(LineStyle s) { style = s; return *this; }
    LineSeries& with_marker(Marker m) { marker = m; return *this; }
    LineSeries& with_color(std::string c) { color = std::move(c); return *this; }
    LineSeries& with_width(double w) { width = w; return *this; }

    std::string name;
    std::vector<double> x;
    std::vector<double> y;
    LineStyle style = LineStyle::Solid;
    Marker marker = Marker::Auto;   // Auto: a different shape per series
    std::string color;              // empty: palette colour of the series index
    double width = 2;
};

struct ScatterSeries {
    ScatterSeries() = default;
    ScatterSeries(std::string name_, std::vector<double> x_, std::vector<double> y_)
        : name(std::move(name_)), x(std::move(x_)), y(std::move(y_)) {}
    ScatterSeries& with_marker(Marker m) { marker = m; return *this; }
    ScatterSeries& with_color(std::string c) { color = std::move(c); return *this; }
    ScatterSeries& with_size(double r) { size = r; return *this; }

    std::string name;
    std::vector<double> x;
    std::vector<double> y;
    Marker marker = Marker::Auto;
    std::string color;
    double size = 4.5;              // marker radius in px
};

// A shaded area between lo(x) and hi(x), e.g. an error band.
struct Band {
    Band() = default;
    Band(std::string name_, std::vector<double> x_, std::vector<double> lo_, std::vector<double> hi_)
        : name(std::move(name_)), x(std::move(x_)), lo(std::move(lo_)), hi(std::move(hi_)) {}
    Band& with_color(std::string c) { color = std::move(c); return *this; }
    Band& with_opacity(double o) { opacity = o; return *this; }

    std::string name;
    std::vector<double> x;
    std::vector<double> lo;
    std::vector<double> hi;
    std::string color;
    double opacity = 0.18;
};

// The diagonal y = x across the plot, optionally with a shaded relative band
// y ∈ [x·(1−e), x·(1+e)] (e = relative_band, e.g. 0.2 for ±20%).
struct IdentityLine {
    IdentityLine() = default;
    explicit IdentityLine(double relative_band_, std::string name_ = "y = x", std::string band_name_ = {})
        : name(std::move(name_)), relative_band(relative_band_), band_name(std::move(band_name_)) {}

    std::string name = "y = x";
    double relative_band = 0;
    std::string band_name;          // empty: "±20%" style name from relative_band
};

// A vertical line at x with a label near the top, e.g. "S and P exceed HBM here".
struct VerticalMarker {
    VerticalMarker() = default;
    VerticalMarker(double x_, std::string label_, std::string color_ = "#444444")
        : x(x_), label(std::move(label_)), color(std::move(color_)) {}

    double x = 0;
    std::string label;
    std::string color = "#444444";
};

// categories × stacks; values[stack][category] >= 0. Stack 0 sits at the bottom.
struct StackedBars {
    std::vector<std::string> categories;
    std::vector<std::string> stacks;
    std::vector<std::vector<double>> values;
    std::vector<std::string> colors;  // per stack; empty: palette
    bool show_totals = true;          // total above each bar, in the y axis format
};

struct TimelineSegment {
    TimelineSegment() = default;
    TimelineSegment(std::size_t row_, double start_, double end_, std::size_t category_, std::string label_ = {})
        : row(row_), start(start_), end(end_), category(category_), label(std::move(label_)) {}

    std::size_t row = 0;              // index into Timeline::rows
    double start = 0;                 // [start, end)
    double end = 0;
    std::size_t category = 0;         // index into Timeline::categories (colour, legend)
    std::string label;                // drawn inside the bar when it fits
};

// Horizontal interval bars: rows (top to bottom) × [start, end) segments, e.g.
// which SM runs which thread block in which wave. The x axis is x_axis().
struct Timeline {
    std::vector<std::string> rows;
    std::vector<std::string> categories;
    std::vector<TimelineSegment> segments;
    std::vector<std::string> colors;  // per category; empty: palette
};

class Chart {
public:
    explicit Chart(std::string title = {}, double width = 800, double height = 500);

    Chart& set_title(std::string title);
    Chart& set_subtitle(std::string subtitle);   // under the title; wrapped
    Chart& set_caption(std::string caption);     // under the plot; wrapped, '\n' for new lines
    Chart& set_size(double width, double height);
    Chart& set_legend(LegendPosition position);
    Chart& set_grid(bool on);
    // Same range and scale on x and y (predicted-vs-measured plots with y = x).
    Chart& set_equal_xy_range(bool on);

    AxisOptions& x_axis() { return x_axis_; }
    AxisOptions& y_axis() { return y_axis_; }
    const AxisOptions& x_axis() const { return x_axis_; }
    const AxisOptions& y_axis() const { return y_axis_; }

    // Each returns the series index K used in data-series="K".
    std::size_t add_line(LineSeries series);
    std::size_t add_scatter(ScatterSeries series);
    std::size_t add_band(Band band);
    void add_identity_line(IdentityLine line = {});
    void add_vertical_marker(VerticalMarker marker);
    void set_stacked_bars(StackedBars bars);
    void set_timeline(Timeline timeline);

    // The SVG document. Throws fasim::UsageError for data it cannot draw
    // (mismatched lengths, non-finite values, values <= 0 on a log axis,
    // negative stacked values, bars or a timeline mixed with x/y series, ...).
    std::string to_svg() const;
    // to_svg() written atomically (see atomic_write.hpp).
    void save_svg(const std::filesystem::path& path) const;

private:
    friend struct ChartRenderer;
    enum class SeriesKind { Line, Scatter, Band };
    struct SeriesRef {
        SeriesKind kind;
        std::size_t index;
    };

    std::string title_;
    std::string subtitle_;
    std::string caption_;
    double width_;
    double height_;
    LegendPosition legend_ = LegendPosition::Auto;
    bool grid_ = true;
    bool equal_xy_ = false;
    AxisOptions x_axis_;
    AxisOptions y_axis_;
    std::vector<LineSeries> lines_;
    std::vector<ScatterSeries> scatters_;
    std::vector<Band> bands_;
    std::vector<SeriesRef> order_;        // series index K -> series
    std::vector<IdentityLine> identity_;
    std::vector<VerticalMarker> vmarkers_;
    bool has_bars_ = false;
    StackedBars bars_;
    bool has_timeline_ = false;
    Timeline timeline_;
};

}  // namespace fasim::plot
