#include "plot/svg_document.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <system_error>

namespace fasim::plot {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    unsigned min_cp = 0;
    unsigned cp = 0;
    if (b0 < 0x80) return 1;
    if ((b0 & 0xE0) == 0xC0) { len = 2; cp = b0 & 0x1Fu; min_cp = 0x80; }
    else if ((b0 & 0xF0) == 0xE0) { len = 3; cp = b0 & 0x0Fu; min_cp = 0x800; }
    else if ((b0 & 0xF8) == 0xF0) { len = 4; cp = b0 & 0x07u; min_cp = 0x10000; }
    else return 0;
    if (i + len > s.size()) return 0;
    for (std::size_t k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min_cp || cp > 0x10FFFF) return 0;           // overlong or out of range
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;           // surrogates
    if (cp == 0xFFFE || cp == 0xFFFF) return 0;           // not XML characters
    return len;
}

const char* anchor_name(TextAnchor a) {
    switch (a) {
        case TextAnchor::Start: return "start";
        case TextAnchor::Middle: return "middle";
        case TextAnchor::End: return "end";
    }
    return "start";
}

std::string attrs_string(const Attrs& attrs) {
    std::string out;
    for (const auto& [key, value] : attrs) {
        out += ' ';
        out += key;  // attribute names are ours, never user text
        out += "=\"";
        out += xml_escape(value);
        out += '"';
    }
    return out;
}

std::string points_string(const std::vector<Point>& points) {
    std::string out;
    for (std::size_t i = 0; i < points.size(); ++i) {
        if (i) out += ' ';
        out += format_number(points[i].x);
        out += ',';
        out += format_number(points[i].y);
    }
    return out;
}

}  // namespace

std::string xml_escape(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 16);
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80) {
            switch (c) {
                case '&': out += "&amp;"; break;
                case '<': out += "&lt;"; break;
                case '>': out += "&gt;"; break;
                case '"': out += "&quot;"; break;
                case '\'': out += "&apos;"; break;
                case '\t': case '\n': case '\r': out += c; break;
                default:
                    if (u < 0x20 || u == 0x7F) out += kReplacement;
                    else out += c;
            }
            ++i;
            continue;
        }
        const std::size_t len = utf8_sequence_length(text, i);
        if (len == 0) {
            out += kReplacement;
            ++i;
        } else {
            out.append(text.substr(i, len));
            i += len;
        }
    }
    return out;
}

std::string format_number(double value, int max_decimals) {
    if (!std::isfinite(value)) return "0";
    if (max_decimals < 0) max_decimals = 0;
    if (max_decimals > 12) max_decimals = 12;
    std::array<char, 400> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), value,
                                   std::chars_format::fixed, max_decimals);
    if (res.ec != std::errc{}) return "0";
    std::string s(buf.data(), res.ptr);
    if (s.find('.') != std::string::npos) {
        while (!s.empty() && s.back() == '0') s.pop_back();
        if (!s.empty() && s.back() == '.') s.pop_back();
    }
    if (s == "-0") s = "0";
    return s;
}

SvgDocument::SvgDocument(double width, double height, std::string title)
    : width_(width), height_(height), title_(std::move(title)) {}

void SvgDocument::element(std::string_view name, const std::string& geometry, const Attrs& attrs) {
    body_ += '<';
    body_ += name;
    body_ += geometry;
    body_ += attrs_string(attrs);
    body_ += "/>\n";
}

void SvgDocument::rect(double x, double y, double w, double h, const Attrs& attrs) {
    element("rect",
            " x=\"" + format_number(x) + "\" y=\"" + format_number(y) + "\" width=\"" +
                format_number(w < 0 ? 0 : w) + "\" height=\"" + format_number(h < 0 ? 0 : h) + "\"",
            attrs);
}

void SvgDocument::line(double x1, double y1, double x2, double y2, const Attrs& attrs) {
    element("line",
            " x1=\"" + format_number(x1) + "\" y1=\"" + format_number(y1) + "\" x2=\"" +
                format_number(x2) + "\" y2=\"" + format_number(y2) + "\"",
            attrs);
}

void SvgDocument::polyline(const std::vector<Point>& points, const Attrs& attrs) {
    element("polyline", " points=\"" + points_string(points) + "\"", attrs);
}

void SvgDocument::polygon(const std::vector<Point>& points, const Attrs& attrs) {
    element("polygon", " points=\"" + points_string(points) + "\"", attrs);
}

void SvgDocument::circle(double cx, double cy, double r, const Attrs& attrs) {
    element("circle",
            " cx=\"" + format_number(cx) + "\" cy=\"" + format_number(cy) + "\" r=\"" +
                format_number(r) + "\"",
            attrs);
}

void SvgDocument::path(const std::string& d, const Attrs& attrs) {
    element("path", " d=\"" + xml_escape(d) + "\"", attrs);
}

void SvgDocument::text(double x, double y, std::string_view content, const TextStyle& style) {
    std::string t = "<text x=\"" + format_number(x) + "\" y=\"" + format_number(y) + "\"";
    t += " font-family=\"" + xml_escape(kFontFamily) + "\"";
    t += " font-size=\"" + format_number(style.size) + "\"";
    if (style.anchor != TextAnchor::Start) t += std::string(" text-anchor=\"") + anchor_name(style.anchor) + "\"";
    if (style.bold) t += " font-weight=\"bold\"";
    if (style.italic) t += " font-style=\"italic\"";
    if (!style.baseline.empty()) t += " dominant-baseline=\"" + xml_escape(style.baseline) + "\"";
    t += " fill=\"" + xml_escape(style.fill) + "\"";
    if (style.halo) t += " stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";
    if (style.rotate_deg != 0) {
        t += " transform=\"rotate(" + format_number(style.rotate_deg) + " " + format_number(x) + " " +
             format_number(y) + ")\"";
    }
    t += attrs_string(style.extra);
    t += '>';
    t += xml_escape(content);
    t += "</text>\n";
    body_ += t;
}

void SvgDocument::clip_rect(const std::string& id, double x, double y, double w, double h) {
    defs_ += "<clipPath id=\"" + xml_escape(id) + "\"><rect x=\"" + format_number(x) + "\" y=\"" +
             format_number(y) + "\" width=\"" + format_number(w) + "\" height=\"" + format_number(h) +
             "\"/></clipPath>\n";
}

void SvgDocument::begin_group(const Attrs& attrs) {
    body_ += "<g" + attrs_string(attrs) + ">\n";
    ++depth_;
}

void SvgDocument::end_group() {
    if (depth_ == 0) throw std::logic_error("SvgDocument::end_group without begin_group");
    body_ += "</g>\n";
    --depth_;
}

void SvgDocument::comment(std::string_view text) {
    std::string t = xml_escape(text);
    std::string safe;
    for (char c : t) {
        if (c == '-' && !safe.empty() && safe.back() == '-') safe += ' ';
        safe += c;
    }
    if (!safe.empty() && safe.back() == '-') safe += ' ';
    body_ += "<!-- " + safe + " -->\n";
}

std::string SvgDocument::str() const {
    if (depth_ != 0) throw std::logic_error("SvgDocument::str with an unclosed group");
    std::string out;
    out.reserve(body_.size() + defs_.size() + 512);
    out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + format_number(width_) +
           "\" height=\"" + format_number(height_) + "\" viewBox=\"0 0 " + format_number(width_) + " " +
           format_number(height_) + "\" font-family=\"" + xml_escape(kFontFamily) + "\">\n";
    out += "<title>" + xml_escape(title_) + "</title>\n";
    if (!defs_.empty()) out += "<defs>\n" + defs_ + "</defs>\n";
    out += body_;
    out += "</svg>\n";
    return out;
}

}  // namespace fasim::plot
