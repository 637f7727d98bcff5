#include "plot/chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "common/errors.hpp"
#include "plot/atomic_write.hpp"
#include "plot/svg_document.hpp"

namespace fasim::plot {

// ---- palette, text metrics, wrapping ------------------------------------------

std::string palette_color(std::size_t i) { return std::string(kOkabeIto[i % kOkabeIto.size()]); }

namespace {

// Decodes one UTF-8 code point at s[i] (advancing i); invalid bytes count as U+FFFD.
char32_t next_code_point(std::string_view s, std::size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    int len = 1;
    char32_t cp = b0;
    if (b0 >= 0xF0) { len = 4; cp = b0 & 0x07u; }
    else if (b0 >= 0xE0) { len = 3; cp = b0 & 0x0Fu; }
    else if (b0 >= 0xC0) { len = 2; cp = b0 & 0x1Fu; }
    else if (b0 >= 0x80) { ++i; return 0xFFFD; }
    if (i + static_cast<std::size_t>(len) > s.size()) { i = s.size(); return 0xFFFD; }
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0x3Fu);
    i += static_cast<std::size_t>(len);
    return cp;
}

// Advance widths of DejaVu Sans in em (rounded from the font's metrics).
double char_em(char32_t c) {
    if (c >= '0' && c <= '9') return 0.636;
    if (c >= 'a' && c <= 'z') {
        static constexpr double lower[26] = {0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278,
                                             0.278, 0.579, 0.278, 0.974, 0.634, 0.612, 0.635, 0.635, 0.411,
                                             0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525};
        return lower[c - 'a'];
    }
    if (c >= 'A' && c <= 'Z') {
        static constexpr double upper[26] = {0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295,
                                             0.295, 0.656, 0.557, 0.863, 0.748, 0.787, 0.603, 0.787, 0.695,
                                             0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685};
        return upper[c - 'A'];
    }
    switch (c) {
        case ' ': case '.': case ',': case 0xB7: return 0.318;
        case ':': case ';': case '/': case '\\': return 0.337;
        case '-': return 0.361;
        case '(': case ')': case '[': case ']': case '{': case '}': return 0.390;
        case '\'': return 0.275;
        case '"': return 0.460;
        case '!': case '|': return 0.400;
        case '?': return 0.531;
        case '_': return 0.500;
        case '%': return 0.950;
        case '&': return 0.780;
        case '#': case '$': case '*': return 0.636;
        case '@': return 1.000;
        case '=': case '+': case '<': case '>': case '~': case 0xD7: case 0xB1: case 0x2212: return 0.838;
        case 0xB5: return 0.636;  // µ
        case 0x2014: case 0x2026: return 1.000;
        case 0x2013: return 0.500;
        default: break;
    }
    if (c >= 0x2580 && c <= 0x259F) return 0.602;  // block elements
    if (c >= 0x2E80) return 1.0;                    // CJK and wider: full em
    return 0.62;
}

}  // namespace

double estimate_text_width(std::string_view text, double size, bool bold) {
    double em = 0;
    std::size_t i = 0;
    while (i < text.size()) em += char_em(next_code_point(text, i));
    return em * size * (bold ? 1.08 : 1.0);
}

std::vector<std::string> wrap_text(std::string_view text, double size, double max_width, bool bold) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t nl = text.find('\n', start);
        if (nl == std::string_view::npos) nl = text.size();
        const std::string_view para = text.substr(start, nl - start);
        std::string cur;
        std::size_t p = 0;
        bool any_word = false;
        while (p < para.size()) {
            while (p < para.size() && para[p] == ' ') ++p;
            if (p >= para.size()) break;
            std::size_t q = para.find(' ', p);
            if (q == std::string_view::npos) q = para.size();
            const std::string word(para.substr(p, q - p));
            any_word = true;
            if (cur.empty()) {
                cur = word;
            } else if (estimate_text_width(cur + " " + word, size, bold) <= max_width) {
                cur += " " + word;
            } else {
                lines.push_back(cur);
                cur = word;
            }
            p = q;
        }
        if (any_word) lines.push_back(cur);
        else if (nl < text.size()) lines.emplace_back();  // blank line between paragraphs
        if (nl >= text.size()) break;
        start = nl + 1;
    }
    return lines;
}

// ---- Chart setters ---------------------------------------------------------------

Chart::Chart(std::string title, double width, double height)
    : title_(std::move(title)), width_(width), height_(height) {}

Chart& Chart::set_title(std::string title) { title_ = std::move(title); return *this; }
Chart& Chart::set_subtitle(std::string subtitle) { subtitle_ = std::move(subtitle); return *this; }
Chart& Chart::set_caption(std::string caption) { caption_ = std::move(caption); return *this; }
Chart& Chart::set_size(double width, double height) { width_ = width; height_ = height; return *this; }
Chart& Chart::set_legend(LegendPosition position) { legend_ = position; return *this; }
Chart& Chart::set_grid(bool on) { grid_ = on; return *this; }
Chart& Chart::set_equal_xy_range(bool on) { equal_xy_ = on; return *this; }

std::size_t Chart::add_line(LineSeries series) {
    lines_.push_back(std::move(series));
    order_.push_back({SeriesKind::Line, lines_.size() - 1});
    return order_.size() - 1;
}
std::size_t Chart::add_scatter(ScatterSeries series) {
    scatters_.push_back(std::move(series));
    order_.push_back({SeriesKind::Scatter, scatters_.size() - 1});
    return order_.size() - 1;
}
std::size_t Chart::add_band(Band band) {
    bands_.push_back(std::move(band));
    order_.push_back({SeriesKind::Band, bands_.size() - 1});
    return order_.size() - 1;
}
void Chart::add_identity_line(IdentityLine line) { identity_.push_back(std::move(line)); }
void Chart::add_vertical_marker(VerticalMarker marker) { vmarkers_.push_back(std::move(marker)); }
void Chart::set_stacked_bars(StackedBars bars) { bars_ = std::move(bars); has_bars_ = true; }
void Chart::set_timeline(Timeline timeline) { timeline_ = std::move(timeline); has_timeline_ = true; }

void Chart::save_svg(const std::filesystem::path& path) const { atomic_write_file(path, to_svg()); }

// ---- rendering ------------------------------------------------------------------

namespace {

constexpr double kPad = 16;
constexpr double kTitleSize = 18;
constexpr double kSubtitleSize = 13;
constexpr double kCaptionSize = 11.5;
constexpr double kAxisLabelSize = 13;
constexpr double kTickSize = 11.5;
constexpr double kLegendSize = 12;
constexpr double kTickLen = 5;
constexpr double kMarkerLabelSize = 11.5;
constexpr double kMarkerRow = 16;
constexpr const char* kAxisColor = "#333333";
constexpr const char* kGridMajor = "#e3e3e3";
constexpr const char* kGridMinor = "#f1f1f1";
constexpr const char* kReferenceColor = "#555555";

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

std::string scale_name(ScaleKind s) {
    switch (s) {
        case ScaleKind::Log10: return "log10";
        case ScaleKind::Log2: return "log2";
        case ScaleKind::Linear: break;
    }
    return "linear";
}

std::string num(double v) { return format_plain(v, 6); }

// Tick labels use a true minus sign.
std::string typeset(std::string s) {
    if (!s.empty() && s[0] == '-') s = "\xE2\x88\x92" + s.substr(1);
    return s;
}

struct Rect {
    double x = 0, y = 0, w = 0, h = 0;
    bool contains(Point p) const { return p.x >= x && p.x <= x + w && p.y >= y && p.y <= y + h; }
};

std::string fnv_hex(std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ull;
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 8; ++i) out += digits[(h >> (60 - 4 * i)) & 0xF];
    return out;
}

Marker resolve_marker(Marker m, std::size_t index) {
    if (m != Marker::Auto) return m;
    static constexpr Marker cycle[] = {Marker::Circle, Marker::Square, Marker::Triangle, Marker::Diamond};
    return cycle[index % 4];
}

void draw_marker(SvgDocument& doc, Marker m, double cx, double cy, double r, const std::string& color,
                 Attrs attrs) {
    attrs.emplace_back("fill", color);
    attrs.emplace_back("stroke", "#ffffff");
    attrs.emplace_back("stroke-width", "1");
    switch (m) {
        case Marker::Square: {
            const double s = r * 0.9;
            doc.rect(cx - s, cy - s, 2 * s, 2 * s, attrs);
            break;
        }
        case Marker::Triangle: {
            const double s = r * 1.2;
            doc.polygon({{cx, cy - s}, {cx + s * 0.95, cy + s * 0.65}, {cx - s * 0.95, cy + s * 0.65}}, attrs);
            break;
        }
        case Marker::Diamond: {
            const double s = r * 1.2;
            doc.polygon({{cx, cy - s}, {cx + s * 0.8, cy}, {cx, cy + s}, {cx - s * 0.8, cy}}, attrs);
            break;
        }
        case Marker::Circle:
        case Marker::Auto:
        case Marker::None:
        default:
            doc.circle(cx, cy, r, attrs);
            break;
    }
}

const char* dash_array(LineStyle s) {
    switch (s) {
        case LineStyle::Dashed: return "7 4";
        case LineStyle::Dotted: return "1.5 3.5";
        case LineStyle::Solid: break;
    }
    return nullptr;
}

struct LegendEntry {
    enum Kind { LineKind, MarkerKind, BoxKind } kind = BoxKind;
    std::string name;
    std::string color;
    LineStyle style = LineStyle::Solid;
    Marker marker = Marker::None;
    double opacity = 1;
};

enum class Mode { XY, Bars, Timeline };

}  // namespace

struct ChartRenderer {
    const Chart& c;
    Mode mode = Mode::XY;
    double W = 800, H = 500;

    AxisOptions xo, yo;
    AxisTicks xt, yt;
    double xmin = 1, xmax = 0, ymin = 1, ymax = 0;  // data extents (min > max: none)

    std::vector<LegendEntry> legend;
    double legend_w = 0, legend_h = 0;
    bool legend_outside = false;
    Rect legend_box;
    bool show_legend = false;

    std::vector<std::string> title_lines, subtitle_lines, caption_lines;
    double pl = 0, pt = 0, pr = 0, pb = 0;  // plot box
    double caption_top = 0;
    double x_label_y = 0;
    bool rotate_categories = false;
    std::size_t category_every = 1;
    std::size_t row_every = 1;
    double tick_label_bottom = 0;

    std::string clip_id;

    explicit ChartRenderer(const Chart& chart) : c(chart) {}

    // ---------- validation and extents ----------
    void extend(double& lo, double& hi, double v) {
        if (lo > hi) { lo = hi = v; return; }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }

    void check_value(const std::string& series, const char* axis, std::size_t i, double v, bool log) {
        if (!std::isfinite(v)) {
            throw usage_error("series " + quoted(series) + " point " + std::to_string(i) + " has " + axis + " = " +
                                  num(v),
                              "plotted values must be finite numbers",
                              "drop or replace the non-finite points before plotting");
        }
        if (log && !(v > 0)) {
            throw usage_error("series " + quoted(series) + " point " + std::to_string(i) + " has " + axis + " = " +
                                  num(v) + " on a log axis",
                              "a log axis needs values > 0",
                              "use a linear " + std::string(axis) + " axis or leave out the points <= 0");
        }
    }

    void check_sizes(const std::string& series, std::size_t nx, std::size_t ny, const char* what) {
        if (nx != ny) {
            throw usage_error("series " + quoted(series) + " has " + std::to_string(nx) + " x values and " +
                                  std::to_string(ny) + " " + what,
                              "x and y must have the same length", "pass one y value per x value");
        }
    }

    void validate() {
        xo = c.x_axis_;
        yo = c.y_axis_;
        const bool xy = !c.order_.empty() || !c.identity_.empty();
        if (c.has_bars_ && c.has_timeline_)
            throw usage_error("a chart has both stacked bars and a timeline", "one of them per chart",
                              "draw them as two charts");
        if ((c.has_bars_ || c.has_timeline_) && xy)
            throw usage_error(std::string("a chart has ") + (c.has_bars_ ? "stacked bars" : "a timeline") +
                                  " and x/y series (lines, scatter, bands or y = x)",
                              "bars and timelines are drawn alone", "draw the x/y series in a separate chart");
        if (c.has_bars_ && !c.vmarkers_.empty())
            throw usage_error("a stacked-bar chart has a vertical marker", "markers need a numeric x axis",
                              "mark the category in its name or the caption instead");
        mode = c.has_bars_ ? Mode::Bars : c.has_timeline_ ? Mode::Timeline : Mode::XY;
        if (c.width_ < 200 || c.height_ < 150 || !std::isfinite(c.width_) || !std::isfinite(c.height_))
            throw usage_error("chart size " + num(c.width_) + "x" + num(c.height_) + " is too small",
                              "width >= 200 and height >= 150 px", "use the default 800x500");
        W = c.width_;
        H = c.height_;

        if (mode == Mode::Bars) validate_bars();
        else if (mode == Mode::Timeline) validate_timeline();
        else validate_xy();
        for (const auto& m : c.vmarkers_) {
            check_value("vertical marker " + quoted(m.label), "x", 0, m.x, is_log(xo.scale));
            extend(xmin, xmax, m.x);
        }
    }

    void validate_xy() {
        if (c.equal_xy_ && xo.scale != yo.scale)
            throw usage_error("set_equal_xy_range with a " + scale_name(xo.scale) + " x axis and a " +
                                  scale_name(yo.scale) + " y axis",
                              "both axes must have the same scale", "set the same ScaleKind on x_axis() and y_axis()");
        const bool xlog = is_log(xo.scale);
        const bool ylog = is_log(yo.scale);
        for (const auto& s : c.lines_) {
            check_sizes(s.name, s.x.size(), s.y.size(), "y values");
            for (std::size_t i = 0; i < s.x.size(); ++i) {
                check_value(s.name, "x", i, s.x[i], xlog);
                check_value(s.name, "y", i, s.y[i], ylog);
                extend(xmin, xmax, s.x[i]);
                extend(ymin, ymax, s.y[i]);
            }
        }
        for (const auto& s : c.scatters_) {
            check_sizes(s.name, s.x.size(), s.y.size(), "y values");
            for (std::size_t i = 0; i < s.x.size(); ++i) {
                check_value(s.name, "x", i, s.x[i], xlog);
                check_value(s.name, "y", i, s.y[i], ylog);
                extend(xmin, xmax, s.x[i]);
                extend(ymin, ymax, s.y[i]);
            }
        }
        for (const auto& b : c.bands_) {
            check_sizes(b.name, b.x.size(), b.lo.size(), "lower values");
            check_sizes(b.name, b.x.size(), b.hi.size(), "upper values");
            for (std::size_t i = 0; i < b.x.size(); ++i) {
                check_value(b.name, "x", i, b.x[i], xlog);
                check_value(b.name, "lower y", i, b.lo[i], ylog);
                check_value(b.name, "upper y", i, b.hi[i], ylog);
                extend(xmin, xmax, b.x[i]);
                extend(ymin, ymax, b.lo[i]);
                extend(ymin, ymax, b.hi[i]);
            }
        }
        for (const auto& id : c.identity_) {
            if (!std::isfinite(id.relative_band) || id.relative_band < 0 || id.relative_band >= 1)
                throw usage_error("y = x band of " + num(id.relative_band), "the relative band must be in [0, 1)",
                                  "pass e.g. 0.2 for a ±20% band");
        }
    }

    void validate_bars() {
        const auto& b = c.bars_;
        if (b.categories.empty() || b.stacks.empty())
            throw usage_error("stacked bars with " + std::to_string(b.categories.size()) + " categories and " +
                                  std::to_string(b.stacks.size()) + " stacks",
                              "at least one category and one stack", "fill categories and stacks");
        if (b.values.size() != b.stacks.size())
            throw usage_error("stacked bars have " + std::to_string(b.values.size()) + " value rows for " +
                                  std::to_string(b.stacks.size()) + " stacks",
                              "values[stack][category]: one row per stack", "pass one row per stack");
        if (is_log(yo.scale))
            throw usage_error("stacked bars on a log y axis", "stacked bars need a linear y axis",
                              "use ScaleKind::Linear (stack heights on a log axis mislead)");
        extend(ymin, ymax, 0.0);
        for (std::size_t k = 0; k < b.categories.size(); ++k) {
            double total = 0;
            for (std::size_t s = 0; s < b.stacks.size(); ++s) {
                if (b.values[s].size() != b.categories.size())
                    throw usage_error("stack " + quoted(b.stacks[s]) + " has " + std::to_string(b.values[s].size()) +
                                          " values for " + std::to_string(b.categories.size()) + " categories",
                                      "one value per category", "pad missing values with 0");
                const double v = b.values[s][k];
                if (!std::isfinite(v) || v < 0)
                    throw usage_error("stack " + quoted(b.stacks[s]) + " category " + quoted(b.categories[k]) +
                                          " has value " + num(v),
                                      "stacked values must be finite and >= 0", "plot signed data as lines instead");
                total += v;
            }
            // Headroom for the total printed above the bar.
            extend(ymin, ymax, b.show_totals ? total * 1.06 : total);
        }
    }

    void validate_timeline() {
        const auto& t = c.timeline_;
        if (t.rows.empty())
            throw usage_error("a timeline with no rows", "at least one row", "name the rows, e.g. \"SM 0\"");
        if (is_log(xo.scale))
            throw usage_error("a timeline on a log x axis", "timelines need a linear x axis", "use ScaleKind::Linear");
        for (std::size_t i = 0; i < t.segments.size(); ++i) {
            const auto& s = t.segments[i];
            const std::string what = "timeline segment " + std::to_string(i);
            if (s.row >= t.rows.size())
                throw usage_error(what + " has row " + std::to_string(s.row),
                                  "rows are 0.." + std::to_string(t.rows.size() - 1), "add the row or fix the index");
            if (s.category >= std::max<std::size_t>(t.categories.size(), 1) ||
                (t.categories.empty() && s.category != 0))
                throw usage_error(what + " has category " + std::to_string(s.category),
                                  "categories are 0.." + std::to_string(t.categories.empty() ? 0 : t.categories.size() - 1),
                                  "add the category or fix the index");
            if (!std::isfinite(s.start) || !std::isfinite(s.end) || s.end < s.start)
                throw usage_error(what + " spans [" + num(s.start) + ", " + num(s.end) + ")",
                                  "start and end finite with start <= end", "swap or fix the bounds");
            extend(xmin, xmax, s.start);
            extend(xmin, xmax, s.end);
        }
    }

    // ---------- legend ----------
    std::string series_color(std::size_t k, const std::string& given) const {
        return given.empty() ? palette_color(k) : given;
    }
    // Auto markers cycle over the series that draw markers (bands do not).
    Marker series_marker(std::size_t k, Marker m) const {
        std::size_t n = 0;
        for (std::size_t i = 0; i < k; ++i) n += c.order_[i].kind == Chart::SeriesKind::Band ? 0 : 1;
        return resolve_marker(m, n);
    }

    void build_legend() {
        legend.clear();
        if (mode == Mode::XY) {
            for (std::size_t k = 0; k < c.order_.size(); ++k) {
                const auto& ref = c.order_[k];
                LegendEntry e;
                if (ref.kind == Chart::SeriesKind::Line) {
                    const auto& s = c.lines_[ref.index];
                    e = {LegendEntry::LineKind, s.name, series_color(k, s.color), s.style, series_marker(k, s.marker), 1};
                } else if (ref.kind == Chart::SeriesKind::Scatter) {
                    const auto& s = c.scatters_[ref.index];
                    e = {LegendEntry::MarkerKind, s.name, series_color(k, s.color), LineStyle::Solid,
                         series_marker(k, s.marker), 1};
                } else {
                    const auto& b = c.bands_[ref.index];
                    e = {LegendEntry::BoxKind, b.name, series_color(k, b.color), LineStyle::Solid, Marker::None,
                         std::clamp(b.opacity * 1.6, 0.15, 1.0)};
                }
                if (!e.name.empty()) legend.push_back(e);
            }
            for (const auto& id : c.identity_) {
                if (id.relative_band > 0) {
                    std::string name = id.band_name;
                    if (name.empty()) name = "\xC2\xB1" + format_plain(id.relative_band * 100, 4) + "%";
                    legend.push_back({LegendEntry::BoxKind, name, kReferenceColor, LineStyle::Solid, Marker::None, 0.2});
                }
                if (!id.name.empty())
                    legend.push_back({LegendEntry::LineKind, id.name, kReferenceColor, LineStyle::Dashed, Marker::None, 1});
            }
        } else if (mode == Mode::Bars) {
            const auto& b = c.bars_;
            // Top of the stack first, as the eye reads the bar.
            for (std::size_t s = b.stacks.size(); s-- > 0;) {
                const std::string color = s < b.colors.size() && !b.colors[s].empty() ? b.colors[s] : palette_color(s);
                legend.push_back({LegendEntry::BoxKind, b.stacks[s], color, LineStyle::Solid, Marker::None, 1});
            }
        } else {
            const auto& t = c.timeline_;
            for (std::size_t k = 0; k < t.categories.size(); ++k)
                legend.push_back({LegendEntry::BoxKind, t.categories[k], category_color(k), LineStyle::Solid,
                                  Marker::None, 1});
        }
        legend_w = 0;
        for (const auto& e : legend) legend_w = std::max(legend_w, estimate_text_width(e.name, kLegendSize));
        legend_w += 8 + 26 + 6 + 10;
        legend_h = static_cast<double>(legend.size()) * 18 + 10;
        show_legend = !legend.empty() && c.legend_ != LegendPosition::Hidden;
    }

    std::string category_color(std::size_t k) const {
        const auto& t = c.timeline_;
        return k < t.colors.size() && !t.colors[k].empty() ? t.colors[k] : palette_color(k);
    }
    std::string stack_color(std::size_t s) const {
        const auto& b = c.bars_;
        return s < b.colors.size() && !b.colors[s].empty() ? b.colors[s] : palette_color(s);
    }

    // ---------- layout ----------
    double max_label_width(const AxisTicks& t) const {
        double w = 0;
        for (const auto& tick : t.ticks)
            if (!tick.label.empty()) w = std::max(w, estimate_text_width(typeset(tick.label), kTickSize));
        return w;
    }

    // Do consecutive labels along x overlap?
    bool x_labels_fit(const AxisTicks& t, double x0, double x1) const {
        double prev_right = -1e300;
        for (const auto& tick : t.ticks) {
            if (tick.label.empty()) continue;
            const double x = x0 + t.fraction(tick.value) * (x1 - x0);
            const double w = estimate_text_width(typeset(tick.label), kTickSize);
            if (x - w / 2 < prev_right + 10) return false;
            prev_right = x + w / 2;
        }
        return true;
    }
    bool y_labels_fit(const AxisTicks& t, double y0, double y1) const {
        double prev = 1e300;
        for (const auto& tick : t.ticks) {
            if (tick.label.empty()) continue;
            const double y = y1 - t.fraction(tick.value) * (y1 - y0);
            if (prev - y < kTickSize + 5) return false;
            prev = y;
        }
        return true;
    }

    // Two ticks with the same label (a formatter with too few digits for a narrow
    // range) would lie; fall back to plain numbers with more digits.
    static bool distinct_labels(const AxisTicks& t) {
        std::string prev;
        bool first = true;
        for (const auto& tick : t.ticks) {
            if (tick.label.empty()) continue;
            if (!first && tick.label == prev) return false;
            prev = tick.label;
            first = false;
        }
        return true;
    }

    AxisTicks fit_axis(const AxisOptions& o, double lo, double hi, double length, bool horizontal, double a,
                       double b) const {
        AxisTicks t = fit_axis_with(o, lo, hi, length, horizontal, a, b);
        if (distinct_labels(t)) return t;
        AxisOptions plain = o;
        plain.format = [](double v) { return format_plain(v, 12); };
        return fit_axis_with(plain, lo, hi, length, horizontal, a, b);
    }

    AxisTicks fit_axis_with(const AxisOptions& o, double lo, double hi, double length, bool horizontal, double a,
                            double b) const {
        const int start = std::clamp(static_cast<int>(length / (horizontal ? 75.0 : 45.0)) + 1, 2, 12);
        AxisTicks best;
        for (bool minor : {true, false}) {
            for (int n = start; n >= 2; --n) {
                AxisTicks t = make_axis(o, lo, hi, {n, minor});
                const bool fit = horizontal ? x_labels_fit(t, a, b) : y_labels_fit(t, a, b);
                if (fit) return t;
                best = std::move(t);
            }
        }
        return best;
    }

    void equalize_xy() {
        if (mode == Mode::XY && c.equal_xy_) {
            const double lo = std::min(xmin <= xmax ? xmin : ymin, ymin <= ymax ? ymin : xmin);
            const double hi = std::max(xmin <= xmax ? xmax : ymax, ymin <= ymax ? ymax : xmax);
            xmin = ymin = lo;
            xmax = ymax = hi;
            if (xo.min || yo.min) {
                const double m = std::min(xo.min.value_or(yo.min.value_or(0)), yo.min.value_or(xo.min.value_or(0)));
                xo.min = yo.min = m;
            }
            if (xo.max || yo.max) {
                const double m = std::max(xo.max.value_or(yo.max.value_or(0)), yo.max.value_or(xo.max.value_or(0)));
                xo.max = yo.max = m;
            }
        }
    }

    void layout(bool outside) {
        legend_outside = outside && show_legend;
        const double text_w = W - 2 * kPad;
        title_lines = c.title_.empty() ? std::vector<std::string>{} : wrap_text(c.title_, kTitleSize, text_w, true);
        subtitle_lines = c.subtitle_.empty() ? std::vector<std::string>{} : wrap_text(c.subtitle_, kSubtitleSize, text_w);
        caption_lines = c.caption_.empty() ? std::vector<std::string>{} : wrap_text(c.caption_, kCaptionSize, text_w);

        double top = kPad;
        top += static_cast<double>(title_lines.size()) * 23;
        top += static_cast<double>(subtitle_lines.size()) * 17;
        top += (title_lines.empty() && subtitle_lines.empty()) ? 6 : 14;
        const double top_base = top;
        std::size_t label_rows = c.vmarkers_.empty() ? 0 : 1;

        const double caption_h = caption_lines.empty() ? 0 : static_cast<double>(caption_lines.size()) * 15 + 10;
        const double x_label_h = xo.label.empty() ? 0 : kAxisLabelSize + 8;
        const double y_label_w = yo.label.empty() ? 0 : kAxisLabelSize + 12;
        const double right_extra = legend_outside ? legend_w + 16 : 0;

        double x_ticks_h = kTickSize + 8;
        double right_margin = 24;
        for (int iter = 0; iter < 3; ++iter) {
            // Marker labels sit in a strip above the plot, never over data.
            pt = top_base + static_cast<double>(label_rows) * kMarkerRow;
            pb = H - kPad - caption_h - x_label_h - x_ticks_h - kTickLen;
            if (pb - pt < 60) pb = pt + 60;
            // y axis
            double y_tick_w = 0;
            if (mode == Mode::Timeline) {
                const auto& rows = c.timeline_.rows;
                const double row_h = (pb - pt) / static_cast<double>(rows.size());
                row_every = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil((kTickSize + 3) / row_h)));
                for (std::size_t r = 0; r < rows.size(); r += row_every)
                    y_tick_w = std::max(y_tick_w, estimate_text_width(rows[r], kTickSize));
            } else {
                yt = fit_axis(yo, ymin, ymax, pb - pt, false, pt, pb);
                y_tick_w = max_label_width(yt);
            }
            pl = kPad + y_label_w + y_tick_w + kTickLen + 6;
            // x axis
            pr = W - right_margin - right_extra;
            if (pr - pl < 80) pr = pl + 80;
            if (mode == Mode::Bars) {
                const auto& cats = c.bars_.categories;
                const double slot = (pr - pl) / static_cast<double>(cats.size());
                double maxw = 0;
                for (const auto& s : cats) maxw = std::max(maxw, estimate_text_width(s, kTickSize));
                rotate_categories = maxw > slot - 8;
                category_every = 1;
                if (rotate_categories) {
                    category_every = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil((kTickSize + 4) / slot)));
                    x_ticks_h = maxw * std::sin(0.6109) + kTickSize * std::cos(0.6109) + 10;
                    x_ticks_h = std::min(x_ticks_h, (H - pt) * 0.35);
                } else {
                    x_ticks_h = kTickSize + 8;
                }
                right_margin = 24;
            } else {
                xt = fit_axis(xo, xmin, xmax, pr - pl, true, pl, pr);
                double last_w = 0;
                for (const auto& tick : xt.ticks)
                    if (!tick.label.empty() && xt.fraction(tick.value) > 0.999)
                        last_w = estimate_text_width(typeset(tick.label), kTickSize);
                right_margin = std::max(24.0, last_w / 2 + 8);
                pr = W - right_margin - right_extra;
                if (pr - pl < 80) pr = pl + 80;
                x_ticks_h = kTickSize + 8;
            }
            std::size_t rows = 0;
            for (const auto& ml : marker_labels()) rows = std::max(rows, ml.row + 1);
            label_rows = rows;
        }
        tick_label_bottom = pb + kTickLen + x_ticks_h;
        x_label_y = tick_label_bottom + kAxisLabelSize;
        caption_top = H - kPad - caption_h + 10;
    }

    double X(double v) const { return pl + xt.fraction(v) * (pr - pl); }
    double Y(double v) const { return pb - yt.fraction(v) * (pb - pt); }

    // ---------- geometry helpers shared by drawing and legend placement ----------
    struct BarRect { std::size_t stack, category; Rect r; };
    std::vector<BarRect> bar_rects() const {
        std::vector<BarRect> out;
        const auto& b = c.bars_;
        const double slot = (pr - pl) / static_cast<double>(b.categories.size());
        const double bw = std::min(slot * 0.62, 90.0);
        for (std::size_t k = 0; k < b.categories.size(); ++k) {
            double acc = 0;
            const double cx = pl + slot * (static_cast<double>(k) + 0.5);
            for (std::size_t s = 0; s < b.stacks.size(); ++s) {
                const double v = b.values[s][k];
                const double y0 = Y(acc);
                const double y1 = Y(acc + v);
                out.push_back({s, k, {cx - bw / 2, y1, bw, y0 - y1}});
                acc += v;
            }
        }
        return out;
    }
    std::vector<std::pair<Rect, std::string>> bar_totals() const {
        std::vector<std::pair<Rect, std::string>> out;
        const auto& b = c.bars_;
        if (!b.show_totals) return out;
        const LabelFormatter fmt = yo.format ? yo.format : plain_labels();
        const double slot = (pr - pl) / static_cast<double>(b.categories.size());
        for (std::size_t k = 0; k < b.categories.size(); ++k) {
            double total = 0;
            for (std::size_t s = 0; s < b.stacks.size(); ++s) total += b.values[s][k];
            const std::string label = typeset(fmt(total));
            const double w = estimate_text_width(label, 10.5);
            if (w > slot - 4) return {};  // totals would run into each other: leave them all out
            const double cx = pl + slot * (static_cast<double>(k) + 0.5);
            out.push_back({{cx - w / 2, Y(total) - 16, w, 12}, label});
        }
        return out;
    }
    Rect timeline_rect(const TimelineSegment& s, double* row_h_out = nullptr) const {
        const double row_h = (pb - pt) / static_cast<double>(c.timeline_.rows.size());
        if (row_h_out) *row_h_out = row_h;
        const double gap = row_h >= 4 ? std::min(row_h * 0.18, 4.0) : 0;
        const double y = pt + row_h * static_cast<double>(s.row) + gap / 2;
        return {X(s.start), y, X(s.end) - X(s.start), row_h - gap};
    }
    // Labels of vertical markers, in rows above the plot (row 0 nearest to it).
    // A label goes to the right of its line (to the left near the right edge).
    // Each line rises to its own label, so a label is lifted above the labels of
    // lines it spans, kept below the labels whose span its own line crosses, and
    // never overlaps another label in its row.
    struct MarkerLabel { Rect box; double tx; TextAnchor anchor; std::size_t row; };
    std::vector<MarkerLabel> marker_labels() const {
        const std::size_t n = c.vmarkers_.size();
        std::vector<MarkerLabel> out(n);
        std::vector<double> xs(n), x0s(n), ws(n);
        for (std::size_t i = 0; i < n; ++i) {
            xs[i] = X(c.vmarkers_[i].x);
            ws[i] = estimate_text_width(c.vmarkers_[i].label, kMarkerLabelSize);
            x0s[i] = xs[i] + 4;
            out[i].anchor = TextAnchor::Start;
            if (x0s[i] + ws[i] > W - kPad && xs[i] - 4 - ws[i] >= kPad) {
                x0s[i] = xs[i] - 4 - ws[i];
                out[i].anchor = TextAnchor::End;
            }
        }
        std::vector<std::size_t> order(n);
        for (std::size_t i = 0; i < n; ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return xs[a] > xs[b]; });
        std::vector<std::size_t> placed;
        auto spans = [&](std::size_t label, double x) { return x >= x0s[label] - 3 && x <= x0s[label] + ws[label] + 3; };
        for (std::size_t i : order) {
            auto labels_clash = [&](std::size_t r) {
                for (std::size_t j : placed)
                    if (out[j].row == r && x0s[i] < x0s[j] + ws[j] + 8 && x0s[i] + ws[i] > x0s[j] - 8) return true;
                return false;
            };
            auto lines_clash = [&](std::size_t r) {
                for (std::size_t j : placed) {
                    if (spans(i, xs[j]) && r <= out[j].row) return true;  // j's line would cross my label
                    if (spans(j, xs[i]) && r >= out[j].row) return true;  // my line would cross j's label
                }
                return false;
            };
            std::size_t row = 0;
            bool found = false;
            for (std::size_t r = 0; r < n + 1 && !found; ++r)
                if (!labels_clash(r) && !lines_clash(r)) { row = r; found = true; }
            if (!found)
                while (labels_clash(row)) ++row;
            out[i].row = row;
            placed.push_back(i);
        }
        for (std::size_t i = 0; i < n; ++i) {
            const double baseline = pt - 5 - kMarkerRow * static_cast<double>(out[i].row);
            out[i].box = {x0s[i], baseline - kMarkerLabelSize, ws[i], kMarkerLabelSize + 3};
            out[i].tx = out[i].anchor == TextAnchor::Start ? x0s[i] : x0s[i] + ws[i];
        }
        return out;
    }
    std::vector<Point> identity_points(double factor) const {
        std::vector<Point> pts;
        const int n = 96;
        for (int i = 0; i <= n; ++i) {
            const double f = static_cast<double>(i) / n;
            double v;
            if (is_log(xt.scale)) v = std::pow(10.0, std::log10(xt.lo) + f * (std::log10(xt.hi) - std::log10(xt.lo)));
            else v = xt.lo + f * (xt.hi - xt.lo);
            const double yv = v * factor;
            if (is_log(yt.scale) && !(yv > 0)) continue;
            pts.push_back({X(v), Y(yv)});
        }
        return pts;
    }

    // ---------- legend placement ----------
    static void sample_segment(std::vector<Point>& out, Point a, Point b) {
        const double len = std::hypot(b.x - a.x, b.y - a.y);
        const int n = std::max(1, static_cast<int>(len / 3));
        for (int i = 0; i <= n; ++i) {
            const double f = static_cast<double>(i) / n;
            out.push_back({a.x + f * (b.x - a.x), a.y + f * (b.y - a.y)});
        }
    }
    static void sample_rect(std::vector<Point>& out, const Rect& r) {
        for (double y = r.y; y <= r.y + r.h + 0.01; y += std::max(1.0, std::min(4.0, r.h)))
            for (double x = r.x; x <= r.x + r.w + 0.01; x += std::max(1.0, std::min(4.0, r.w))) out.push_back({x, y});
        out.push_back({r.x + r.w, r.y + r.h});
    }
    static void sample_area(std::vector<Point>& out, const std::vector<Point>& upper, const std::vector<Point>& lower) {
        for (std::size_t i = 0; i + 1 < upper.size() && i + 1 < lower.size(); ++i) {
            const double x0 = upper[i].x, x1 = upper[i + 1].x;
            const int n = std::max(1, static_cast<int>(std::fabs(x1 - x0) / 4));
            for (int k = 0; k <= n; ++k) {
                const double f = static_cast<double>(k) / n;
                const double x = x0 + f * (x1 - x0);
                const double yu = upper[i].y + f * (upper[i + 1].y - upper[i].y);
                const double yl = lower[i].y + f * (lower[i + 1].y - lower[i].y);
                for (double y = std::min(yu, yl); y <= std::max(yu, yl); y += 4) out.push_back({x, y});
            }
        }
    }

    std::vector<Point> obstacles() const {
        std::vector<Point> pts;
        if (mode == Mode::XY) {
            for (const auto& s : c.lines_) {
                for (std::size_t i = 0; i < s.x.size(); ++i) {
                    const Point p{X(s.x[i]), Y(s.y[i])};
                    for (double dx : {-5.0, 0.0, 5.0})
                        for (double dy : {-5.0, 0.0, 5.0}) pts.push_back({p.x + dx, p.y + dy});
                    if (i + 1 < s.x.size()) sample_segment(pts, p, {X(s.x[i + 1]), Y(s.y[i + 1])});
                }
            }
            for (const auto& s : c.scatters_)
                for (std::size_t i = 0; i < s.x.size(); ++i) {
                    const Point p{X(s.x[i]), Y(s.y[i])};
                    for (double dx : {-s.size, 0.0, s.size})
                        for (double dy : {-s.size, 0.0, s.size}) pts.push_back({p.x + dx, p.y + dy});
                }
            for (const auto& b : c.bands_) {
                std::vector<Point> up, lo;
                for (std::size_t i = 0; i < b.x.size(); ++i) {
                    up.push_back({X(b.x[i]), Y(b.hi[i])});
                    lo.push_back({X(b.x[i]), Y(b.lo[i])});
                }
                sample_area(pts, up, lo);
            }
            for (const auto& id : c.identity_) {
                const auto line = identity_points(1.0);
                for (std::size_t i = 0; i + 1 < line.size(); ++i) sample_segment(pts, line[i], line[i + 1]);
                if (id.relative_band > 0)
                    sample_area(pts, identity_points(1 + id.relative_band), identity_points(1 - id.relative_band));
            }
        } else if (mode == Mode::Bars) {
            for (const auto& br : bar_rects()) sample_rect(pts, br.r);
            for (const auto& [r, label] : bar_totals()) sample_rect(pts, r);
        } else {
            for (const auto& s : c.timeline_.segments) sample_rect(pts, timeline_rect(s));
        }
        for (std::size_t i = 0; i < c.vmarkers_.size(); ++i) {
            const double x = X(c.vmarkers_[i].x);
            sample_segment(pts, {x, pt}, {x, pb});
        }
        // Keep only what lies in the plot.
        std::vector<Point> in;
        for (const auto& p : pts)
            if (p.x >= pl - 1 && p.x <= pr + 1 && p.y >= pt - 1 && p.y <= pb + 1) in.push_back(p);
        return in;
    }

    Rect corner_box(LegendPosition p) const {
        const double inset = 10;
        switch (p) {
            case LegendPosition::TopLeft: return {pl + inset, pt + inset, legend_w, legend_h};
            case LegendPosition::BottomLeft: return {pl + inset, pb - inset - legend_h, legend_w, legend_h};
            case LegendPosition::BottomRight: return {pr - inset - legend_w, pb - inset - legend_h, legend_w, legend_h};
            case LegendPosition::TopRight:
            default: return {pr - inset - legend_w, pt + inset, legend_w, legend_h};
        }
    }

    void place_legend() {
        if (!show_legend) {
            layout(false);
            return;
        }
        const LegendPosition want = c.legend_;
        if (want == LegendPosition::OutsideRight) {
            layout(true);
            legend_box = {pr + 16, pt, legend_w, legend_h};
            return;
        }
        layout(false);
        if (want != LegendPosition::Auto) {
            legend_box = corner_box(want);
            return;
        }
        const auto pts = obstacles();
        std::optional<Rect> best;
        std::size_t best_score = std::numeric_limits<std::size_t>::max();
        for (LegendPosition p : {LegendPosition::TopRight, LegendPosition::TopLeft, LegendPosition::BottomRight,
                                 LegendPosition::BottomLeft}) {
            const Rect r = corner_box(p);
            if (r.w > (pr - pl) * 0.6 || r.h > (pb - pt) * 0.7) continue;  // too big to sit inside
            const Rect grown{r.x - 4, r.y - 4, r.w + 8, r.h + 8};
            std::size_t score = 0;
            for (const auto& q : pts) score += grown.contains(q) ? 1 : 0;
            if (score < best_score) {
                best_score = score;
                best = r;
            }
        }
        if (best && best_score == 0) {
            legend_box = *best;
            return;
        }
        layout(true);
        legend_box = {pr + 16, pt, legend_w, legend_h};
    }

    // ---------- drawing ----------
    // Minor grid lines help over a few decades and only clutter beyond.
    static bool minor_grid(const AxisTicks& t) { return is_log(t.scale) && t.hi / t.lo <= 1000.5; }

    void draw_grid_and_axes(SvgDocument& doc) const {
        doc.begin_group({{"class", "grid"}});
        if (c.grid_) {
            if (mode != Mode::Bars) {  // categories get no vertical grid
                for (const auto& t : xt.ticks) {
                    if (!t.major && !minor_grid(xt)) continue;
                    const double x = X(t.value);
                    doc.line(x, pt, x, pb, {{"stroke", t.major ? kGridMajor : kGridMinor}, {"stroke-width", "1"}});
                }
            }
            if (mode != Mode::Timeline) {
                for (const auto& t : yt.ticks) {
                    if (!t.major && !minor_grid(yt)) continue;
                    const double y = Y(t.value);
                    doc.line(pl, y, pr, y, {{"stroke", t.major ? kGridMajor : kGridMinor}, {"stroke-width", "1"}});
                }
            }
        }
        doc.end_group();
    }

    void draw_axes(SvgDocument& doc) const {
        doc.begin_group({{"class", "axes"}});
        doc.line(pl, pb, pr, pb, {{"stroke", kAxisColor}, {"stroke-width", "1"}});
        doc.line(pl, pt, pl, pb, {{"stroke", kAxisColor}, {"stroke-width", "1"}});
        TextStyle tick_style;
        tick_style.size = kTickSize;
        tick_style.fill = "#333333";
        // x ticks
        if (mode == Mode::Bars) {
            const auto& cats = c.bars_.categories;
            const double slot = (pr - pl) / static_cast<double>(cats.size());
            for (std::size_t k = 0; k < cats.size(); ++k) {
                const double x = pl + slot * (static_cast<double>(k) + 0.5);
                doc.line(x, pb, x, pb + kTickLen, {{"stroke", kAxisColor}});
                if (k % category_every) continue;
                TextStyle s = tick_style;
                s.extra = {{"class", "tick-label x"}};
                if (rotate_categories) {
                    s.anchor = TextAnchor::End;
                    s.rotate_deg = -35;
                    doc.text(x + 3, pb + kTickLen + kTickSize, cats[k], s);
                } else {
                    s.anchor = TextAnchor::Middle;
                    doc.text(x, pb + kTickLen + kTickSize + 3, cats[k], s);
                }
            }
        } else {
            for (const auto& t : xt.ticks) {
                const double x = X(t.value);
                doc.line(x, pb, x, pb + (t.major ? kTickLen : 3), {{"stroke", kAxisColor}});
                if (t.label.empty()) continue;
                TextStyle s = tick_style;
                s.anchor = TextAnchor::Middle;
                s.extra = {{"class", "tick-label x"}};
                doc.text(x, pb + kTickLen + kTickSize + 3, typeset(t.label), s);
            }
        }
        // y ticks
        if (mode == Mode::Timeline) {
            const auto& rows = c.timeline_.rows;
            const double row_h = (pb - pt) / static_cast<double>(rows.size());
            for (std::size_t r = 0; r < rows.size(); r += row_every) {
                const double y = pt + row_h * (static_cast<double>(r) + 0.5);
                doc.line(pl - kTickLen, y, pl, y, {{"stroke", kAxisColor}});
                TextStyle s = tick_style;
                s.anchor = TextAnchor::End;
                s.extra = {{"class", "tick-label y"}};
                doc.text(pl - kTickLen - 3, y + kTickSize * 0.36, rows[r], s);
            }
        } else {
            for (const auto& t : yt.ticks) {
                const double y = Y(t.value);
                doc.line(pl - (t.major ? kTickLen : 3), y, pl, y, {{"stroke", kAxisColor}});
                if (t.label.empty()) continue;
                TextStyle s = tick_style;
                s.anchor = TextAnchor::End;
                s.extra = {{"class", "tick-label y"}};
                doc.text(pl - kTickLen - 3, y + kTickSize * 0.36, typeset(t.label), s);
            }
        }
        // axis labels
        TextStyle ls;
        ls.size = kAxisLabelSize;
        ls.anchor = TextAnchor::Middle;
        ls.fill = "#222222";
        if (!xo.label.empty()) {
            ls.extra = {{"class", "axis-label x"}};
            doc.text((pl + pr) / 2, x_label_y, xo.label, ls);
        }
        if (!yo.label.empty()) {
            ls.rotate_deg = -90;
            ls.extra = {{"class", "axis-label y"}};
            doc.text(kPad + kAxisLabelSize - 2, (pt + pb) / 2, yo.label, ls);
        }
        doc.end_group();
    }

    void draw_xy(SvgDocument& doc) const {
        // Areas and references first, clipped to the plot.
        doc.begin_group({{"class", "references"}, {"clip-path", "url(#" + clip_id + ")"}});
        for (std::size_t k = 0; k < c.order_.size(); ++k) {
            if (c.order_[k].kind != Chart::SeriesKind::Band) continue;
            const auto& b = c.bands_[c.order_[k].index];
            std::vector<std::size_t> idx(b.x.size());
            for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
            std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t q) { return b.x[a] < b.x[q]; });
            std::vector<Point> poly;
            for (std::size_t i : idx) poly.push_back({X(b.x[i]), Y(b.hi[i])});
            for (auto it = idx.rbegin(); it != idx.rend(); ++it) poly.push_back({X(b.x[*it]), Y(b.lo[*it])});
            doc.polygon(poly, {{"class", "band series-" + std::to_string(k)},
                               {"data-band", std::to_string(k)},
                               {"fill", series_color(k, b.color)},
                               {"fill-opacity", format_number(b.opacity, 3)},
                               {"stroke", "none"}});
        }
        for (const auto& id : c.identity_) {
            if (id.relative_band > 0) {
                auto poly = identity_points(1 + id.relative_band);
                auto lower = identity_points(1 - id.relative_band);
                for (auto it = lower.rbegin(); it != lower.rend(); ++it) poly.push_back(*it);
                doc.polygon(poly, {{"class", "identity-band"}, {"fill", kReferenceColor}, {"fill-opacity", "0.12"},
                                   {"stroke", "none"}});
            }
            doc.polyline(identity_points(1.0), {{"class", "identity-line"},
                                                {"fill", "none"},
                                                {"stroke", kReferenceColor},
                                                {"stroke-width", "1.3"},
                                                {"stroke-dasharray", "6 4"}});
        }
        doc.end_group();
        draw_vertical_marker_lines(doc);

        for (std::size_t k = 0; k < c.order_.size(); ++k) {
            const auto& ref = c.order_[k];
            const std::string ks = std::to_string(k);
            if (ref.kind == Chart::SeriesKind::Line) {
                const auto& s = c.lines_[ref.index];
                const std::string color = series_color(k, s.color);
                doc.begin_group({{"class", "series series-" + ks}, {"data-name", s.name}});
                std::vector<Point> pts;
                for (std::size_t i = 0; i < s.x.size(); ++i) pts.push_back({X(s.x[i]), Y(s.y[i])});
                Attrs la{{"class", "line series-" + ks + "-line"}, {"fill", "none"}, {"stroke", color},
                         {"stroke-width", format_number(s.width)}, {"stroke-linejoin", "round"},
                         {"stroke-linecap", "round"}};
                if (const char* d = dash_array(s.style)) la.emplace_back("stroke-dasharray", d);
                doc.polyline(pts, la);
                const Marker m = series_marker(k, s.marker);
                if (m != Marker::None)
                    for (std::size_t i = 0; i < pts.size(); ++i)
                        draw_marker(doc, m, pts[i].x, pts[i].y, 3.6, color,
                                    {{"class", "mark series-" + ks}, {"data-series", ks}, {"data-index", std::to_string(i)}});
                doc.end_group();
            } else if (ref.kind == Chart::SeriesKind::Scatter) {
                const auto& s = c.scatters_[ref.index];
                const std::string color = series_color(k, s.color);
                const Marker m = series_marker(k, s.marker);
                doc.begin_group({{"class", "series series-" + ks}, {"data-name", s.name}});
                for (std::size_t i = 0; i < s.x.size(); ++i)
                    draw_marker(doc, m == Marker::None ? Marker::Circle : m, X(s.x[i]), Y(s.y[i]), s.size, color,
                                {{"class", "mark series-" + ks}, {"data-series", ks}, {"data-index", std::to_string(i)},
                                 {"fill-opacity", "0.9"}});
                doc.end_group();
            }
        }
    }

    void draw_vertical_marker_lines(SvgDocument& doc) const {
        if (c.vmarkers_.empty()) return;
        const auto labels = marker_labels();
        doc.begin_group({{"class", "vertical-markers"}});
        for (std::size_t i = 0; i < c.vmarkers_.size(); ++i) {
            const auto& m = c.vmarkers_[i];
            const double x = X(m.x);
            // Up to the top of its label, so the label reads as belonging to the line.
            const double top = labels[i].box.y + 2;
            doc.line(x, top, x, pb, {{"stroke", m.color}, {"stroke-width", "1.4"}, {"stroke-dasharray", "4 3"}});
        }
        doc.end_group();
    }

    void draw_vertical_marker_labels(SvgDocument& doc) const {
        const auto labels = marker_labels();
        for (std::size_t i = 0; i < labels.size(); ++i) {
            TextStyle s;
            s.size = kMarkerLabelSize;
            s.anchor = labels[i].anchor;
            s.fill = c.vmarkers_[i].color;
            s.extra = {{"class", "marker-label"}};
            doc.text(labels[i].tx, pt - 5 - kMarkerRow * static_cast<double>(labels[i].row), c.vmarkers_[i].label, s);
        }
    }

    void draw_bars(SvgDocument& doc) const {
        doc.begin_group({{"class", "bars"}});
        for (const auto& br : bar_rects()) {
            const std::string ks = std::to_string(br.stack);
            doc.rect(br.r.x, br.r.y, br.r.w, br.r.h,
                     {{"class", "mark series-" + ks}, {"data-series", ks}, {"data-index", std::to_string(br.category)},
                      {"fill", stack_color(br.stack)}, {"stroke", "#ffffff"}, {"stroke-width", "0.8"}});
        }
        for (const auto& [r, label] : bar_totals()) {
            TextStyle s;
            s.size = 10.5;
            s.anchor = TextAnchor::Middle;
            s.fill = "#333333";
            s.extra = {{"class", "bar-total"}};
            doc.text(r.x + r.w / 2, r.y + 10, label, s);
        }
        doc.end_group();
    }

    void draw_timeline(SvgDocument& doc) const {
        const auto& t = c.timeline_;
        doc.begin_group({{"class", "timeline"}});
        for (std::size_t i = 0; i < t.segments.size(); ++i) {
            const auto& s = t.segments[i];
            double row_h = 0;
            const Rect r = timeline_rect(s, &row_h);
            const std::string ks = std::to_string(s.category);
            Attrs a{{"class", "mark series-" + ks}, {"data-series", ks}, {"data-index", std::to_string(i)},
                    {"fill", category_color(s.category)}};
            if (r.w > 3 && r.h > 3) {
                a.emplace_back("stroke", "#ffffff");
                a.emplace_back("stroke-width", "0.6");
            }
            doc.rect(r.x, r.y, r.w, r.h, a);
            if (!s.label.empty() && r.h >= 11) {
                const double fs = std::min(10.5, r.h - 2);
                if (estimate_text_width(s.label, fs) + 4 <= r.w) {
                    TextStyle ts;
                    ts.size = fs;
                    ts.anchor = TextAnchor::Middle;
                    const std::string col = category_color(s.category);
                    ts.fill = (col == "#F0E442" || col == "#56B4E9" || col == "#E69F00") ? "#000000" : "#ffffff";
                    ts.extra = {{"class", "segment-label"}};
                    doc.text(r.x + r.w / 2, r.y + r.h / 2 + fs * 0.36, s.label, ts);
                }
            }
        }
        doc.end_group();
        draw_vertical_marker_lines(doc);
    }

    void draw_legend(SvgDocument& doc) const {
        if (!show_legend) return;
        const Rect& r = legend_box;
        doc.begin_group({{"class", "legend"}});
        doc.rect(r.x, r.y, r.w, r.h, {{"fill", "#ffffff"}, {"fill-opacity", "0.92"}, {"stroke", "#cccccc"},
                                      {"stroke-width", "1"}, {"rx", "3"}});
        for (std::size_t i = 0; i < legend.size(); ++i) {
            const auto& e = legend[i];
            const double cy = r.y + 5 + 18 * static_cast<double>(i) + 9;
            const double sx = r.x + 8;
            switch (e.kind) {
                case LegendEntry::LineKind: {
                    Attrs a{{"stroke", e.color}, {"stroke-width", "2"}, {"stroke-linecap", "round"}};
                    if (const char* d = dash_array(e.style)) a.emplace_back("stroke-dasharray", d);
                    doc.line(sx, cy, sx + 26, cy, a);
                    if (e.marker != Marker::None) draw_marker(doc, e.marker, sx + 13, cy, 3.6, e.color, {});
                    break;
                }
                case LegendEntry::MarkerKind:
                    draw_marker(doc, e.marker == Marker::None ? Marker::Circle : e.marker, sx + 13, cy, 4.5, e.color, {});
                    break;
                case LegendEntry::BoxKind:
                    doc.rect(sx + 4, cy - 6, 18, 12, {{"fill", e.color}, {"fill-opacity", format_number(e.opacity, 3)}});
                    break;
            }
            TextStyle s;
            s.size = kLegendSize;
            s.fill = "#222222";
            doc.text(sx + 26 + 6, cy + kLegendSize * 0.36, e.name, s);
        }
        doc.end_group();
    }

    std::string render() {
        validate();
        equalize_xy();
        if (mode == Mode::Bars) xt = {};
        if (mode == Mode::Timeline) yt = {};
        build_legend();
        place_legend();
        clip_id = "fasim-clip-" + fnv_hex(c.title_ + "|" + c.subtitle_ + "|" + num(W) + "x" + num(H));

        SvgDocument doc(W, H, c.title_.empty() ? std::string("chart") : c.title_);
        doc.clip_rect(clip_id, pl, pt, pr - pl, pb - pt);
        doc.rect(0, 0, W, H, {{"fill", "#ffffff"}});

        double y = kPad;
        for (const auto& line : title_lines) {
            TextStyle s;
            s.size = kTitleSize;
            s.bold = true;
            s.fill = "#111111";
            s.extra = {{"class", "title"}};
            y += 18;
            doc.text(kPad, y, line, s);
            y += 5;
        }
        for (const auto& line : subtitle_lines) {
            TextStyle s;
            s.size = kSubtitleSize;
            s.fill = "#444444";
            s.extra = {{"class", "subtitle"}};
            y += 14;
            doc.text(kPad, y, line, s);
            y += 3;
        }

        draw_grid_and_axes(doc);
        if (mode == Mode::XY) draw_xy(doc);
        else if (mode == Mode::Bars) draw_bars(doc);
        else draw_timeline(doc);
        draw_axes(doc);
        draw_vertical_marker_labels(doc);
        draw_legend(doc);

        double cy = caption_top;
        for (const auto& line : caption_lines) {
            TextStyle s;
            s.size = kCaptionSize;
            s.fill = "#555555";
            s.extra = {{"class", "caption"}};
            cy += 12;
            doc.text(kPad, cy, line, s);
            cy += 3;
        }
        return doc.str();
    }
};

std::string Chart::to_svg() const {
    ChartRenderer r(*this);
    return r.render();
}

}  // namespace fasim::plot
