// A minimal, dependency-free SVG writer.
//
// Everything that reaches the file goes through xml_escape() (text and attribute
// values) or format_number() (coordinates), so the output is well-formed XML and
// byte-identical for the same input on every machine and locale.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fasim::plot {

// The font stack of every <text> element we write.
inline constexpr std::string_view kFontFamily = "DejaVu Sans, Arial, sans-serif";

// Escapes &, <, >, " and ' for use in XML text and attribute values. Characters
// XML 1.0 forbids (control characters other than tab, LF, CR) and invalid UTF-8
// bytes become U+FFFD, so the result is always well-formed.
std::string xml_escape(std::string_view text);

// Compact, locale-independent number: at most `max_decimals` digits after the
// point, trailing zeros and a trailing point removed, "-0" written as "0".
// 12.5 -> "12.5", 100.0 -> "100", 1/3 -> "0.33". Non-finite values -> "0"
// (callers reject non-finite data before drawing; see Chart).
std::string format_number(double value, int max_decimals = 2);

// An attribute list written in the given order (deterministic output).
using Attrs = std::vector<std::pair<std::string, std::string>>;

struct Point {
    double x = 0;
    double y = 0;
};

enum class TextAnchor { Start, Middle, End };

struct TextStyle {
    double size = 12;
    TextAnchor anchor = TextAnchor::Start;
    bool bold = false;
    bool italic = false;
    std::string fill = "#222222";
    double rotate_deg = 0;          // rotation about (x, y)
    std::string baseline;           // "", "middle", "hanging", ... (dominant-baseline)
    bool halo = false;              // white outline under the glyphs (labels over data)
    Attrs extra;                    // e.g. {"class", "tick-label"}
};

class SvgDocument {
public:
    SvgDocument(double width, double height, std::string title);

    double width() const { return width_; }
    double height() const { return height_; }

    void rect(double x, double y, double w, double h, const Attrs& attrs = {});
    void line(double x1, double y1, double x2, double y2, const Attrs& attrs = {});
    void polyline(const std::vector<Point>& points, const Attrs& attrs = {});
    void polygon(const std::vector<Point>& points, const Attrs& attrs = {});
    void circle(double cx, double cy, double r, const Attrs& attrs = {});
    void path(const std::string& d, const Attrs& attrs = {});
    void text(double x, double y, std::string_view content, const TextStyle& style = {});

    // Definitions (<defs>): a rectangular clip path with the given id.
    void clip_rect(const std::string& id, double x, double y, double w, double h);

    void begin_group(const Attrs& attrs = {});
    void end_group();

    // An XML comment; "--" inside is broken up so the comment stays well-formed.
    void comment(std::string_view text);

    // The whole document. Throws std::logic_error if a group was left open.
    std::string str() const;

private:
    void element(std::string_view name, const std::string& geometry, const Attrs& attrs);

    double width_;
    double height_;
    std::string title_;
    std::string defs_;
    std::string body_;
    int depth_ = 0;
};

}  // namespace fasim::plot
