// Tests of sim/plot: SVG writer, axes, charts, atomic writes, PNG fallback,
// terminal bars.
#include <catch2/catch.hpp>

#include "../common/test_files.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <clocale>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "plot/atomic_write.hpp"
#include "plot/axis.hpp"
#include "plot/chart.hpp"
#include "plot/png_convert.hpp"
#include "plot/svg_document.hpp"
#include "plot/terminal_bars.hpp"
#include "xml_check.hpp"

namespace fs = std::filesystem;
using namespace fasim::test;
using namespace fasim::plot;

namespace {





std::vector<double> seq(double a, double step, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(a + step * i);
    return v;
}

// Every chart type once, as the tests below draw them.
std::vector<Chart> sample_charts() {
    std::vector<Chart> charts;
    {
        Chart c("Lines <&> \"quoted\" 'title'");
        c.set_subtitle("subtitle & more");
        c.set_caption("A100-SXM4-40GB, B=1, H=16, d=64, fp16, non-causal");
        c.x_axis() = {ScaleKind::Log2, "sequence length N", tokens_labels()};
        c.y_axis() = {ScaleKind::Log10, "HBM traffic", si_labels("B")};
        c.add_line(LineSeries("standard", {512, 1024, 2048, 4096}, {1e7, 4e7, 1.6e8, 6.4e8}));
        c.add_line(LineSeries("FA2", {512, 1024, 2048, 4096}, {5e6, 1e7, 2e7, 4e7}).with_style(LineStyle::Dashed));
        c.add_vertical_marker(VerticalMarker(3000, "S and P exceed HBM here"));
        charts.push_back(c);
    }
    {
        Chart c("Scatter with y = x");
        c.x_axis() = {ScaleKind::Log10, "measured", seconds_labels()};
        c.y_axis() = {ScaleKind::Log10, "predicted", seconds_labels()};
        c.set_equal_xy_range(true);
        c.add_identity_line(IdentityLine(0.2));
        c.add_scatter(ScatterSeries("kernels", {1e-4, 3e-4, 1e-3}, {1.1e-4, 2.5e-4, 1.3e-3}));
        charts.push_back(c);
    }
    {
        Chart c("Stacked bars");
        StackedBars b;
        b.categories = {"standard", "FA1", "FA2"};
        b.stacks = {"Q", "K, V", "S, P"};
        b.values = {{1, 2, 1}, {2, 2, 4}, {8, 0, 0}};
        c.set_stacked_bars(b);
        c.y_axis() = {ScaleKind::Linear, "bytes", si_labels("B")};
        charts.push_back(c);
    }
    {
        Chart c("Timeline");
        Timeline t;
        t.rows = {"SM 0", "SM 1", "SM 2"};
        t.categories = {"wave 1", "wave 2"};
        t.segments = {{0, 0, 1, 0, "b0"}, {1, 0, 0.9, 0, "b1"}, {2, 0, 0.95, 0, "b2"}, {0, 1, 2, 1, "b3"}};
        c.set_timeline(t);
        c.x_axis() = {ScaleKind::Linear, "time (µs)"};
        charts.push_back(c);
    }
    {
        Chart c("Band");
        c.add_band(Band("min–max", {1, 2, 3}, {0.5, 1.5, 2.5}, {1.5, 2.5, 3.5}));
        c.add_line(LineSeries("median", {1, 2, 3}, {1, 2, 3}).with_marker(Marker::None));
        charts.push_back(c);
    }
    return charts;
}

}  // namespace

// ---- SVG writer -------------------------------------------------------------------

TEST_CASE("xml_escape escapes markup and replaces what XML forbids", "[plot][svg]") {
    CHECK(xml_escape("<&>\"'") == "&lt;&amp;&gt;&quot;&apos;");
    CHECK(xml_escape("plain text 123") == "plain text 123");
    CHECK(xml_escape("2.5 \xC2\xB5s") == "2.5 \xC2\xB5s");                  // valid UTF-8 kept
    CHECK(xml_escape(std::string("a\x01" "b")) == "a\xEF\xBF\xBD" "b");   // control char -> U+FFFD
    CHECK(xml_escape("bad \xFF byte") == "bad \xEF\xBF\xBD byte");           // invalid UTF-8 -> U+FFFD
    CHECK(xml_escape("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");             // overlong encoding
    CHECK(xml_escape("tab\tnewline\n") == "tab\tnewline\n");
}

TEST_CASE("format_number is compact and deterministic", "[plot][svg]") {
    CHECK(format_number(12.5) == "12.5");
    CHECK(format_number(100.0) == "100");
    CHECK(format_number(1.0 / 3.0) == "0.33");
    CHECK(format_number(-0.0) == "0");
    CHECK(format_number(-0.001) == "0");
    CHECK(format_number(-2.25) == "-2.25");
    CHECK(format_number(0.125, 3) == "0.125");
    CHECK(format_number(1234567.891) == "1234567.89");
    CHECK(format_number(std::nan("")) == "0");
}

TEST_CASE("SvgDocument writes well-formed SVG with a title and the font stack", "[plot][svg]") {
    SvgDocument doc(800, 500, "a <title> & more");
    doc.rect(0, 0, 10, 10, {{"fill", "#fff"}});
    doc.begin_group({{"class", "g"}});
    doc.text(1, 2, "x < y & \"z\"");
    doc.comment("a -- comment with -- dashes-");
    doc.end_group();
    const std::string svg = doc.str();
    const auto d = parse_ok(svg);
    REQUIRE(d.count("title") == 1);
    CHECK(d.with_attr("font-family", std::string(kFontFamily)).size() >= 2);  // root and the text
    for (const auto& e : d.elements)
        if (e.name == "title") CHECK(e.text == "a <title> & more");
    for (const auto& e : d.elements)
        if (e.name == "text") CHECK(e.text == "x < y & \"z\"");
    SvgDocument open(10, 10, "t");
    open.begin_group();
    CHECK_THROWS_AS(open.str(), std::logic_error);
}

// ---- axes and formatters ---------------------------------------------------------------

TEST_CASE("label formatters", "[plot][axis]") {
    CHECK(format_plain(512) == "512");
    CHECK(format_plain(0.25) == "0.25");
    CHECK(format_plain(0.1 + 0.2) == "0.3");
    CHECK(format_plain(1e6) == "1e6");
    CHECK(format_plain(2.5e-5) == "2.5e-5");
    CHECK(format_plain(-3) == "-3");
    CHECK(format_si(1.5e9, "B") == "1.5 GB");
    CHECK(format_si(512, "B") == "512 B");
    CHECK(format_si(16000) == "16k");
    CHECK(format_si(512) == "512");
    CHECK(format_si(0.5) == "0.5");                 // no milli without a unit
    CHECK(format_si(999999, "B") == "1 MB");        // rounding moves to the next prefix
    CHECK(format_si(2.18104e9, "B") == "2.181 GB");
    CHECK(format_si(312e12, "FLOP/s") == "312 TFLOP/s");
    CHECK(format_binary(4096) == "4 Ki");
    CHECK(format_binary(4096, "B") == "4 KiB");
    CHECK(format_binary(1536, "B") == "1.5 KiB");
    CHECK(format_binary(512) == "512");
    CHECK(format_binary(40.0 * 1024 * 1024 * 1024, "B") == "40 GiB");
    CHECK(format_seconds(1e-3) == "1 ms");
    CHECK(format_seconds(2.5e-6) == "2.5 \xC2\xB5s");
    CHECK(format_seconds(90) == "90 s");
    CHECK(format_seconds(0) == "0 s");
    CHECK(format_tokens(16384) == "16k");
    CHECK(format_tokens(1048576) == "1M");
    CHECK(format_tokens(512) == "512");
    CHECK(format_percent(0.25) == "25%");
    CHECK(si_labels("B")(2e9) == "2 GB");
}

TEST_CASE("nice_step picks 1-2-5 steps", "[plot][axis]") {
    CHECK(nice_step(0.7) == Approx(1));
    CHECK(nice_step(1.0) == Approx(1));
    CHECK(nice_step(1.2) == Approx(2));
    CHECK(nice_step(3) == Approx(5));
    CHECK(nice_step(7) == Approx(10));
    CHECK(nice_step(0.013) == Approx(0.02));
    CHECK(nice_step(4.9e9) == Approx(5e9));
}

TEST_CASE("axis ranges always contain the data", "[plot][axis]") {
    std::mt19937_64 rng(12345);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int trial = 0; trial < 3000; ++trial) {
        const double mag = std::pow(10.0, std::floor(unit(rng) * 30) - 15);
        double a = (unit(rng) * 2 - 1) * mag;
        double b = (unit(rng) * 2 - 1) * mag * (unit(rng) < 0.1 ? 1e-6 : 1.0) + a * (unit(rng) < 0.2 ? 1 : 0);
        if (trial % 17 == 0) b = a;  // a single value
        const double lo = std::min(a, b), hi = std::max(a, b);
        const int max_major = 2 + trial % 9;
        for (ScaleKind kind : {ScaleKind::Linear, ScaleKind::Log10, ScaleKind::Log2}) {
            double dlo = lo, dhi = hi;
            if (is_log(kind)) {
                dlo = std::fabs(lo) + mag * 1e-3;
                dhi = std::fabs(hi) + mag * 1e-3;
                if (dlo > dhi) std::swap(dlo, dhi);
            }
            AxisOptions o(kind, "x");
            o.include_zero = trial % 5 == 0;
            o.binary_ticks = kind == ScaleKind::Linear && trial % 7 == 0;
            const AxisTicks t = make_axis(o, dlo, dhi, {max_major, true});
            INFO("trial " << trial << " kind " << static_cast<int>(kind) << " data [" << dlo << ", " << dhi
                          << "] range [" << t.lo << ", " << t.hi << "]");
            REQUIRE(t.lo <= dlo);
            REQUIRE(t.hi >= dhi);
            REQUIRE(t.lo < t.hi);
            REQUIRE(!t.ticks.empty());
            std::size_t majors = 0;
            for (std::size_t i = 0; i < t.ticks.size(); ++i) {
                REQUIRE(t.contains(t.ticks[i].value));
                if (i) REQUIRE(t.ticks[i].value > t.ticks[i - 1].value);
                majors += t.ticks[i].major ? 1 : 0;
            }
            if (kind == ScaleKind::Linear) REQUIRE(majors <= static_cast<std::size_t>(std::max(3, max_major)));
        }
    }
}

TEST_CASE("axis limits the user asks for are widened to hold the data", "[plot][axis]") {
    AxisOptions o(ScaleKind::Linear, "y");
    o.min = 0;
    o.max = 10;
    const AxisTicks t = make_axis(o, 2, 37);
    CHECK(t.lo <= 0);
    CHECK(t.hi >= 37);
    const AxisTicks z = make_axis(AxisOptions(ScaleKind::Linear, "y"), 0.1, 0.7);
    CHECK(z.lo == Approx(0.1).margin(0.1));
    AxisOptions iz(ScaleKind::Linear, "y");
    iz.include_zero = true;
    CHECK(make_axis(iz, 5, 7).lo == 0);
}

TEST_CASE("linear ticks are evenly spaced 1-2-5 multiples", "[plot][axis]") {
    const AxisTicks t = make_axis(AxisOptions(ScaleKind::Linear, "x"), 0, 9.3, {6, true});
    REQUIRE(t.ticks.size() >= 3);
    const double step = t.ticks[1].value - t.ticks[0].value;
    CHECK(step == Approx(2));
    for (const auto& tick : t.ticks) CHECK(std::fmod(tick.value, step) == Approx(0).margin(1e-9));
    CHECK(t.ticks.front().label == "0");
    CHECK(t.ticks.back().label == "10");
}

TEST_CASE("binary ticks step in whole binary units", "[plot][axis]") {
    AxisOptions o(ScaleKind::Linear, "traffic", binary_labels("B"));
    o.binary_ticks = true;
    const AxisTicks t = make_axis(o, 0, 16.4 * 1048576, {6, true});
    std::vector<std::string> labels;
    for (const auto& tick : t.ticks) labels.push_back(tick.label);
    CHECK(labels == std::vector<std::string>{"0 B", "5 MiB", "10 MiB", "15 MiB", "20 MiB"});
}

TEST_CASE("log10 ticks are decades, with 2 and 5 labelled over small ranges", "[plot][axis]") {
    const AxisTicks wide = make_axis(AxisOptions(ScaleKind::Log10, "bytes"), 3.3, 4.2e6, {10, true});
    CHECK(wide.lo == 1);
    CHECK(wide.hi == 1e7);
    for (const auto& tick : wide.ticks) {
        const double e = std::log10(tick.value);
        if (tick.major) CHECK(e == Approx(std::round(e)).margin(1e-12));
        if (!tick.major) CHECK(tick.label.empty());  // 7 decades: no minor labels
    }
    std::size_t majors = 0;
    for (const auto& tick : wide.ticks) majors += tick.major ? 1 : 0;
    CHECK(majors == 8);

    const AxisTicks small = make_axis(AxisOptions(ScaleKind::Log10, "x"), 1.5, 80, {10, true});
    std::vector<std::string> labels;
    for (const auto& tick : small.ticks)
        if (!tick.label.empty()) labels.push_back(tick.label);
    CHECK(labels == std::vector<std::string>{"1", "2", "5", "10", "20", "50", "100"});

    // Many decades on a short axis: every other decade is labelled, still decades.
    const AxisTicks many = make_axis(AxisOptions(ScaleKind::Log10, "x"), 1e-6, 1e9, {6, true});
    for (const auto& tick : many.ticks) {
        const double e = std::log10(tick.value);
        CHECK(e == Approx(std::round(e)).margin(1e-9));
        if (!tick.label.empty()) CHECK(static_cast<long>(std::lround(e)) % 3 == 0);
    }
}

TEST_CASE("log2 ticks are powers of two", "[plot][axis]") {
    const AxisTicks t = make_axis(AxisOptions(ScaleKind::Log2, "N", tokens_labels()), 512, 65536, {12, true});
    std::vector<std::string> labels;
    for (const auto& tick : t.ticks) labels.push_back(tick.label);
    CHECK(labels == std::vector<std::string>{"512", "1k", "2k", "4k", "8k", "16k", "32k", "64k"});
    CHECK_THROWS_AS(make_axis(AxisOptions(ScaleKind::Log2, "N"), 0, 10), std::invalid_argument);
}

// ---- charts --------------------------------------------------------------------------

TEST_CASE("every chart is well-formed XML with a title", "[plot][chart]") {
    for (const Chart& c : sample_charts()) {
        const std::string svg = c.to_svg();
        const auto d = parse_ok(svg);
        CHECK(d.elements.front().name == "svg");
        CHECK(d.elements.front().attrs.at("width") == "800");
        CHECK(d.elements.front().attrs.at("height") == "500");
        CHECK(d.count("title") == 1);
        for (const auto& e : d.elements)
            if (e.name == "text") CHECK(e.attrs.at("font-family") == kFontFamily);
    }
}

TEST_CASE("titles with <&> are escaped and read back unchanged", "[plot][chart]") {
    const Chart c = sample_charts().front();
    const std::string svg = c.to_svg();
    CHECK(svg.find("<title>Lines &lt;&amp;&gt; &quot;quoted&quot; &apos;title&apos;</title>") != std::string::npos);
    const auto d = parse_ok(svg);
    bool found = false;
    for (const auto* e : d.with_class("title")) found = found || e->text == "Lines <&> \"quoted\" 'title'";
    CHECK(found);
    for (const auto* e : d.with_class("subtitle")) CHECK(e->text == "subtitle & more");
}

TEST_CASE("charts are deterministic", "[plot][chart]") {
    const auto a = sample_charts();
    const auto b = sample_charts();
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_svg() == b[i].to_svg());
    // A locale with a decimal comma must not leak into the numbers, where one exists.
    if (std::setlocale(LC_ALL, "de_DE.UTF-8") != nullptr) {
        for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].to_svg() == b[i].to_svg());
        std::setlocale(LC_ALL, "C");
    }
}

TEST_CASE("every series draws one mark per data point", "[plot][chart]") {
    SECTION("lines and scatter") {
        Chart c("marks");
        const auto x = seq(1, 1, 7);
        c.add_line(LineSeries("a", x, seq(2, 3, 7)));
        c.add_line(LineSeries("b", x, seq(5, -0.5, 7)).with_style(LineStyle::Dotted));
        c.add_scatter(ScatterSeries("c", seq(0, 2, 11), seq(1, 1, 11)));
        c.add_line(LineSeries("d", x, seq(0, 1, 7)).with_marker(Marker::None));
        const auto d = parse_ok(c.to_svg());
        CHECK(d.count_attr("data-series", "0") == 7);
        CHECK(d.count_attr("data-series", "1") == 7);
        CHECK(d.count_attr("data-series", "2") == 11);
        CHECK(d.count_attr("data-series", "3") == 0);  // no markers: one polyline vertex per point
        const auto lines = d.with_class("series-3-line");
        REQUIRE(lines.size() == 1);
        const std::string pts = lines.front()->attrs.at("points");
        CHECK(std::count(pts.begin(), pts.end(), ',') == 7);
        CHECK(d.with_class("series-0").size() >= 7);  // class carries the series too
    }
    SECTION("stacked bars: one rectangle per category and stack") {
        Chart c("bars");
        StackedBars b;
        b.categories = {"a", "b", "c", "d", "e"};
        b.stacks = {"x", "y", "z"};
        b.values = {{1, 2, 3, 4, 5}, {0, 1, 0, 1, 0}, {5, 4, 3, 2, 1}};
        c.set_stacked_bars(b);
        const auto d = parse_ok(c.to_svg());
        for (const char* k : {"0", "1", "2"}) CHECK(d.count_attr("data-series", k) == 5);
        CHECK(d.with_class("bar-total").size() == 5);
    }
    SECTION("timeline: one bar per segment, coloured by category") {
        Chart c("timeline");
        Timeline t;
        for (int r = 0; r < 108; ++r) t.rows.push_back("SM " + std::to_string(r));
        t.categories = {"wave 1", "wave 2", "wave 3"};
        for (std::size_t b = 0; b < 256; ++b)
            t.segments.push_back({b % 108, static_cast<double>(b / 108), static_cast<double>(b / 108) + 0.9, b / 108});
        c.set_timeline(t);
        const auto d = parse_ok(c.to_svg());
        CHECK(d.count_attr("data-series", "0") == 108);
        CHECK(d.count_attr("data-series", "1") == 108);
        CHECK(d.count_attr("data-series", "2") == 40);
        CHECK(d.with_class("tick-label").size() < 108);  // row labels thinned to stay readable
    }
    SECTION("band, y = x and vertical marker are drawn") {
        const auto charts = sample_charts();
        const auto d0 = parse_ok(charts[0].to_svg());
        CHECK(d0.with_class("marker-label").size() == 1);
        const auto d1 = parse_ok(charts[1].to_svg());
        CHECK(d1.with_class("identity-line").size() == 1);
        CHECK(d1.with_class("identity-band").size() == 1);
        const auto d4 = parse_ok(charts[4].to_svg());
        CHECK(d4.count_attr("data-band", "0") == 1);
    }
}

TEST_CASE("the legend does not cover data", "[plot][chart]") {
    auto legend_rect = [](const xmlcheck::Document& d) {
        for (std::size_t i = 0; i < d.elements.size(); ++i) {
            const auto& g = d.elements[i];
            auto it = g.attrs.find("class");
            if (g.name == "g" && it != g.attrs.end() && it->second == "legend") {
                const auto& r = d.elements[i + 1];
                REQUIRE(r.name == "rect");
                return std::array<double, 4>{std::stod(r.attrs.at("x")), std::stod(r.attrs.at("y")),
                                             std::stod(r.attrs.at("width")), std::stod(r.attrs.at("height"))};
            }
        }
        FAIL("no legend");
        return std::array<double, 4>{};
    };
    auto inside = [](const std::array<double, 4>& r, double x, double y) {
        return x >= r[0] - 4 && x <= r[0] + r[2] + 4 && y >= r[1] - 4 && y <= r[1] + r[3] + 4;
    };
    // Data filling each corner in turn; the legend must pick an empty one.
    for (int corner = 0; corner < 4; ++corner) {
        Chart c("legend placement");
        std::vector<double> x, y;
        for (int i = 0; i <= 20; ++i)
            for (int j = 0; j <= 20; ++j) {
                const bool right = corner % 2 == 1, top = corner / 2 == 1;
                if ((i >= 10) == right && (j >= 10) == top) continue;  // leave one quadrant empty
                x.push_back(i);
                y.push_back(j);
            }
        c.add_scatter(ScatterSeries("points", x, y).with_size(3));
        c.add_line(LineSeries("line", {0, 20}, {0, 0}).with_marker(Marker::None));
        const auto d = parse_ok(c.to_svg());
        const auto r = legend_rect(d);
        for (const auto* m : d.with_attr("data-series", "0"))
            CHECK_FALSE(inside(r, std::stod(m->attrs.at("cx")), std::stod(m->attrs.at("cy"))));
    }
    // No empty corner: the legend moves outside the plot, right of it.
    Chart full("full");
    std::vector<double> x, y;
    for (int i = 0; i <= 30; ++i)
        for (int j = 0; j <= 30; ++j) {
            x.push_back(i);
            y.push_back(j);
        }
    full.add_scatter(ScatterSeries("everywhere", x, y).with_size(2));
    const auto d = parse_ok(full.to_svg());
    const auto r = legend_rect(d);
    for (const auto* m : d.with_attr("data-series", "0"))
        CHECK_FALSE(inside(r, std::stod(m->attrs.at("cx")), std::stod(m->attrs.at("cy"))));
}

TEST_CASE("captions wrap to the chart width", "[plot][chart]") {
    Chart c("wrap");
    std::string caption = "A100-SXM4-40GB, B=1, H=16, d=64, fp16, non-causal.";
    for (int i = 0; i < 6; ++i) caption += " More configuration text that has to wrap onto further lines.";
    caption += "\nA new paragraph.";
    c.set_caption(caption);
    c.add_line(LineSeries("a", {1, 2}, {1, 2}));
    const auto d = parse_ok(c.to_svg());
    const auto lines = d.with_class("caption");
    REQUIRE(lines.size() >= 4);
    std::string joined;
    for (const auto* l : lines) {
        CHECK(estimate_text_width(l->text, 11.5) <= 800 - 32);
        joined += (joined.empty() ? "" : " ") + l->text;
    }
    CHECK(lines.back()->text == "A new paragraph.");
    CHECK(joined.find("A100-SXM4-40GB, B=1, H=16, d=64, fp16, non-causal.") == 0);
    CHECK(wrap_text("one two three", 12, 1000) == std::vector<std::string>{"one two three"});
    CHECK(wrap_text("a\n\nb", 12, 1000) == std::vector<std::string>{"a", "", "b"});
}

TEST_CASE("charts reject data they cannot draw with a UsageError", "[plot][chart]") {
    using fasim::UsageError;
    {
        Chart c;
        c.add_line(LineSeries("short", {1, 2, 3}, {1, 2}));
        CHECK_THROWS_AS(c.to_svg(), UsageError);
    }
    {
        Chart c;
        c.y_axis().scale = ScaleKind::Log10;
        c.add_line(LineSeries("zero", {1, 2}, {0, 1}));
        CHECK_THROWS_WITH(c.to_svg(), Catch::Contains("log axis") && Catch::Contains("Fix:"));
    }
    {
        Chart c;
        c.add_scatter(ScatterSeries("nan", {1, 2}, {std::nan(""), 1}));
        CHECK_THROWS_AS(c.to_svg(), UsageError);
    }
    {
        Chart c;
        StackedBars b;
        b.categories = {"a"};
        b.stacks = {"x"};
        b.values = {{-1}};
        c.set_stacked_bars(b);
        CHECK_THROWS_AS(c.to_svg(), UsageError);
        c.set_stacked_bars({});
        CHECK_THROWS_AS(c.to_svg(), UsageError);
    }
    {
        Chart c;
        StackedBars b;
        b.categories = {"a"};
        b.stacks = {"x"};
        b.values = {{1}};
        c.set_stacked_bars(b);
        c.add_line(LineSeries("a", {1}, {1}));
        CHECK_THROWS_AS(c.to_svg(), UsageError);
    }
    {
        Chart c;
        Timeline t;
        t.rows = {"SM 0"};
        t.categories = {"w"};
        t.segments = {{3, 0, 1, 0}};
        c.set_timeline(t);
        CHECK_THROWS_WITH(c.to_svg(), Catch::Contains("row 3"));
    }
    {
        Chart c;
        c.add_line(LineSeries("a", {1, 2}, {1, 2}));
        c.set_size(50, 50);
        CHECK_THROWS_AS(c.to_svg(), UsageError);
    }
}

TEST_CASE("an empty chart still renders", "[plot][chart]") {
    Chart c("empty");
    parse_ok(c.to_svg());
}

// ---- atomic write -------------------------------------------------------------------------

TEST_CASE("atomic_write_file writes and replaces files", "[plot][io]") {
    TempDir dir("atomic");
    const fs::path f = dir.path / "chart.svg";
    atomic_write_file(f, "first");
    CHECK(read_file(f) == "first");
    atomic_write_file(f, std::string_view("second, longer"));
    CHECK(read_file(f) == "second, longer");
    atomic_write_file(f, [](std::ostream& out) { out << "streamed"; });
    CHECK(read_file(f) == "streamed");
    // No temporary files are left behind.
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir.path)) n += e.is_regular_file() ? 1 : 0;
    CHECK(n == 1);
}

TEST_CASE("a failed write leaves the old file intact", "[plot][io]") {
    TempDir dir("atomic-fail");
    const fs::path f = dir.path / "chart.svg";
    write_file(f, "old contents");

    SECTION("the producer throws halfway") {
        CHECK_THROWS_AS(atomic_write_file(f, [](std::ostream& out) {
                            out << "half of the new ";
                            throw std::runtime_error("producer failed");
                        }),
                        std::runtime_error);
    }
    SECTION("the file system refuses the bytes (file size limit)") {
        // Writes past RLIMIT_FSIZE fail with EFBIG once SIGXFSZ is ignored.
        auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
        rlimit old{};
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
        rlimit small = old;
        small.rlim_cur = 4096;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        bool threw = false;
        std::string message;
        try {
            atomic_write_file(f, std::string(100000, 'x'));
        } catch (const fasim::UsageError& e) {
            threw = true;
            message = e.what();
        }
        ::setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
        CHECK(threw);
        CHECK_THAT(message, Catch::Contains(dir.path.string()) && Catch::Contains("Fix:"));
    }
    CHECK(read_file(f) == "old contents");
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir.path)) n += e.is_regular_file() ? 1 : 0;
    CHECK(n == 1);  // the temporary file was removed
}

TEST_CASE("a missing or unwritable directory is a UsageError naming it", "[plot][io]") {
    TempDir dir("atomic-dirs");
    const fs::path missing = dir.path / "no-such-dir";
    try {
        atomic_write_file(missing / "chart.svg", "x");
        FAIL("expected a UsageError");
    } catch (const fasim::UsageError& e) {
        const std::string m = e.what();
        CHECK_THAT(m, Catch::Contains(missing.string()) && Catch::Contains("does not exist") &&
                          Catch::Contains("Fix:") && Catch::Contains("mkdir -p"));
    }
    // A regular file where the directory should be.
    write_file(dir.path / "file", "x");
    CHECK_THROWS_WITH(atomic_write_file(dir.path / "file" / "chart.svg", "x"),
                      Catch::Contains("is not a directory") && Catch::Contains("Fix:"));
    // The path is itself a directory.
    CHECK_THROWS_AS(atomic_write_file(dir.path, "x"), fasim::UsageError);
    // Permissions (root may write anywhere, so only checked for other users).
    if (::geteuid() != 0) {
        const fs::path ro = dir.path / "read-only";
        fs::create_directories(ro);
        fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
        CHECK_THROWS_WITH(atomic_write_file(ro / "chart.svg", "x"),
                          Catch::Contains("not writable") && Catch::Contains(ro.string()) && Catch::Contains("Fix:"));
        fs::permissions(ro, fs::perms::owner_all);
    }
}

TEST_CASE("Chart::save_svg writes the same bytes as to_svg", "[plot][io]") {
    TempDir dir("save");
    const Chart c = sample_charts().front();
    c.save_svg(dir.path / "a.svg");
    CHECK(read_file(dir.path / "a.svg") == c.to_svg());
}

// ---- PNG conversion -------------------------------------------------------------------------

TEST_CASE("PNG conversion falls back to SVG only, never failing", "[plot][png]") {
    TempDir dir("png");
    const fs::path svg = dir.path / "a.svg";
    sample_charts().front().save_svg(svg);

    SECTION("no converter on the search path") {
        PngOptions o;
        o.search_path = dir.path.string();
        const PngResult r = convert_svg_to_png(svg, dir.path / "a.png", o);
        CHECK_FALSE(r.converted);
        CHECK_THAT(r.message, Catch::Contains("only SVG written") && Catch::Contains("librsvg2-bin"));
        CHECK_FALSE(fs::exists(dir.path / "a.png"));
    }
    SECTION("a `convert` that is not ImageMagick is not used") {
        const fs::path bin = dir.path / "bin";
        fs::create_directories(bin);
        write_file(bin / "convert", "#!/bin/sh\necho 'not the real one'\nexit 0\n");
        fs::permissions(bin / "convert", fs::perms::owner_all);
        PngOptions o;
        o.search_path = bin.string();
        const PngResult r = convert_svg_to_png(svg, dir.path / "a.png", o);
        CHECK_FALSE(r.converted);
        CHECK(r.tool.empty());
    }
    SECTION("a converter that fails is reported, not thrown") {
        const fs::path bin = dir.path / "bin2";
        fs::create_directories(bin);
        write_file(bin / "rsvg-convert", "#!/bin/sh\necho 'broken converter' >&2\nexit 3\n");
        fs::permissions(bin / "rsvg-convert", fs::perms::owner_all);
        PngOptions o;
        o.search_path = bin.string();
        const PngResult r = convert_svg_to_png(svg, dir.path / "a.png", o);
        CHECK_FALSE(r.converted);
        CHECK_THAT(r.message, Catch::Contains("only SVG written") && Catch::Contains("broken converter"));
    }
    SECTION("a missing SVG is reported, not thrown") {
        const PngResult r = convert_svg_to_png(dir.path / "missing.svg", dir.path / "b.png");
        CHECK_FALSE(r.converted);
    }
    SECTION("with rsvg-convert installed, a real PNG (paths with spaces and quotes)") {
        const char* path = std::getenv("PATH");
        if (!path || !find_executable("rsvg-convert", path)) {
            WARN("rsvg-convert not installed; skipping the real conversion");
            return;
        }
        const fs::path odd = dir.path / "a dir with 'quotes' & spaces";
        fs::create_directories(odd);
        fs::copy_file(svg, odd / "chart \"1\".svg");
        const PngResult r = convert_svg_to_png(odd / "chart \"1\".svg", odd / "chart \"1\".png");
        REQUIRE(r.converted);
        CHECK(r.tool == "rsvg-convert");
        const std::string png = read_file(odd / "chart \"1\".png");
        REQUIRE(png.size() > 24);
        CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
        // Width in the IHDR chunk: 800 px at the default scale 2.
        const auto byte = [&](std::size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(png[i])); };
        CHECK(((byte(16) << 24) | (byte(17) << 16) | (byte(18) << 8) | byte(19)) == 1600u);
    }
}

// ---- terminal bars ---------------------------------------------------------------------------

namespace {
std::vector<TerminalBar> golden_bars() {
    return {{"standard", 4.0, "4.00 GB"},
            {"FA1", 1.0, "1.00 GB"},
            {"FlashAttention-2", 0.5, "512 MB"},
            {"tiny", 0.001, "1 MB"},
            {"zero", 0, "0 B"}};
}
}  // namespace

TEST_CASE("terminal bars match the golden output (unicode)", "[plot][terminal]") {
    TerminalBarsOptions o;
    o.width = 40;
    o.title = "HBM traffic";
    const std::string expected =
        "HBM traffic\n"
        "     standard \u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588"
        "\u2588\u2588\u2588 4.00 GB\n"
        "          FA1 \u2588\u2588\u2588\u2588\u258C              1.00 GB\n"
        "FlashAttenti\u2026 \u2588\u2588\u258E                 512 MB\n"
        "         tiny \u258F                     1 MB\n"
        "         zero                        0 B\n";
    const std::string got = terminal_bars(golden_bars(), o);
    CHECK(got == expected);
    std::istringstream lines(got);
    std::string line;
    std::getline(lines, line);  // title
    while (std::getline(lines, line)) CHECK(display_width(line) == 40);
    CHECK(terminal_bars(golden_bars(), o) == got);  // deterministic
}

TEST_CASE("terminal bars match the golden output (ascii)", "[plot][terminal]") {
    TerminalBarsOptions o;
    o.width = 40;
    o.unicode = false;
    o.title = "HBM traffic \xE2\x80\x94 2.5 \xC2\xB5s";
    const std::string expected =
        "HBM traffic - 2.5 us\n"
        "     standard ################## 4.00 GB\n"
        "          FA1 #####              1.00 GB\n"
        "FlashAtten... ##                  512 MB\n"
        "         tiny .                     1 MB\n"
        "         zero                        0 B\n";
    const std::string got = terminal_bars(golden_bars(), o);
    CHECK(got == expected);
    for (unsigned char ch : got) CHECK(ch < 0x80);
}

TEST_CASE("terminal bars fit the width and reject bad input", "[plot][terminal]") {
    std::vector<TerminalBar> bars = {{"a", 3}, {"b", 1.5}, {"c", 0}};
    for (int width : {24, 50, 80, 132}) {
        TerminalBarsOptions o;
        o.width = width;
        o.format = si_labels("B");
        std::istringstream lines(terminal_bars(bars, o));
        std::string line;
        while (std::getline(lines, line)) CHECK(display_width(line) == static_cast<std::size_t>(width));
    }
    TerminalBarsOptions narrow;
    narrow.width = 10;
    CHECK_THROWS_AS(terminal_bars(bars, narrow), fasim::UsageError);
    CHECK_THROWS_AS(terminal_bars({{"neg", -1}}), fasim::UsageError);
    CHECK_THROWS_AS(terminal_bars({{"nan", std::nan("")}}), fasim::UsageError);
    CHECK(terminal_bars({}).empty());
}
