#include "plot/terminal_bars.hpp"

#include <algorithm>
#include <cmath>

#include "common/errors.hpp"

namespace fasim::plot {

namespace {

// Splits UTF-8 into code-point substrings (invalid bytes stand alone).
std::vector<std::string> code_points(const std::string& s) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 1;
        if (i + len > s.size()) len = 1;
        for (std::size_t k = 1; k < len; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) { len = 1; break; }
        out.push_back(s.substr(i, len));
        i += len;
    }
    return out;
}

std::string repeat(const std::string& s, std::size_t n) {
    std::string out;
    out.reserve(s.size() * n);
    for (std::size_t i = 0; i < n; ++i) out += s;
    return out;
}

// Cuts text to at most `cols` columns, marking the cut with an ellipsis.
std::string fit(const std::string& text, std::size_t cols, bool unicode) {
    const auto cps = code_points(text);
    if (cps.size() <= cols) return text;
    const std::string ell = unicode ? "\xE2\x80\xA6" : "...";
    const std::size_t ell_w = unicode ? 1 : 3;
    std::string out;
    const std::size_t keep = cols > ell_w ? cols - ell_w : cols;
    for (std::size_t i = 0; i < keep; ++i) out += cps[i];
    return cols > ell_w ? out + ell : out;
}

}  // namespace

std::size_t display_width(const std::string& text) { return code_points(text).size(); }

std::string ascii_fold(const std::string& text) {
    std::string out;
    for (const auto& cp : code_points(text)) {
        if (cp.size() == 1 && static_cast<unsigned char>(cp[0]) < 0x80) out += cp;
        else if (cp == "\xC2\xB5" || cp == "\xCE\xBC") out += 'u';          // µ, μ
        else if (cp == "\xE2\x88\x92" || cp == "\xE2\x80\x93" || cp == "\xE2\x80\x94") out += '-';  // − – —
        else if (cp == "\xE2\x80\xA6") out += "...";                         // …
        else if (cp == "\xC2\xB1") out += "+/-";                             // ±
        else if (cp == "\xC3\x97") out += 'x';                               // ×
        else if (cp == "\xC2\xB7") out += '*';                               // ·
        else if (cp == "\xE2\x89\xA4") out += "<=";                          // ≤
        else if (cp == "\xE2\x89\xA5") out += ">=";                          // ≥
        else if (cp == "\xC2\xA0") out += ' ';                               // no-break space
        else out += '?';
    }
    return out;
}

std::string terminal_bars(const std::vector<TerminalBar>& bars, const TerminalBarsOptions& options) {
    if (options.width < 24)
        throw usage_error("terminal bar width " + std::to_string(options.width) + " is too small",
                          "the width must be at least 24 columns", "use a wider terminal or the default 80");
    const auto width = static_cast<std::size_t>(options.width);
    const bool uni = options.unicode;
    auto text = [uni](const std::string& s) { return uni ? s : ascii_fold(s); };

    double max_value = 0;
    for (const auto& b : bars) {
        if (!std::isfinite(b.value) || b.value < 0)
            throw usage_error("bar " + std::string("\"") + b.label + "\" has value " + format_plain(b.value),
                              "bar values must be finite and >= 0", "show signed values as a table instead");
        max_value = std::max(max_value, b.value);
    }

    std::vector<std::string> labels, values;
    std::size_t label_w = 0, value_w = 0;
    for (const auto& b : bars) {
        labels.push_back(text(b.label));
        std::string v = b.value_text;
        if (v.empty()) v = options.format ? options.format(b.value) : format_plain(b.value, 4);
        values.push_back(text(v));
        label_w = std::max(label_w, display_width(labels.back()));
        value_w = std::max(value_w, display_width(values.back()));
    }
    label_w = std::min(label_w, width / 3);
    value_w = std::min(value_w, width / 4);
    const std::size_t bar_w = width - label_w - value_w - 2;

    std::string out;
    if (!options.title.empty()) out += fit(text(options.title), width, uni) + "\n";
    static const std::string partial[8] = {"", "\xE2\x96\x8F", "\xE2\x96\x8E", "\xE2\x96\x8D",
                                           "\xE2\x96\x8C", "\xE2\x96\x8B", "\xE2\x96\x8A", "\xE2\x96\x89"};
    static const std::string full = "\xE2\x96\x88";
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const std::string label = fit(labels[i], label_w, uni);
        const std::string value = fit(values[i], value_w, uni);
        std::string bar;
        std::size_t bar_cols = 0;
        const double f = max_value > 0 ? bars[i].value / max_value : 0;
        if (uni) {
            auto eighths = static_cast<std::size_t>(std::llround(f * static_cast<double>(bar_w) * 8));
            if (eighths == 0 && bars[i].value > 0) eighths = 1;  // visible, however small
            bar = repeat(full, eighths / 8) + partial[eighths % 8];
            bar_cols = eighths / 8 + (eighths % 8 ? 1 : 0);
        } else {
            auto cols = static_cast<std::size_t>(std::llround(f * static_cast<double>(bar_w)));
            if (cols == 0 && bars[i].value > 0) {
                bar = ".";
                bar_cols = 1;
            } else {
                bar = std::string(cols, '#');
                bar_cols = cols;
            }
        }
        out += std::string(label_w - display_width(label), ' ') + label + " " + bar +
               std::string(bar_w - bar_cols, ' ') + " " + std::string(value_w - display_width(value), ' ') + value +
               "\n";
    }
    return out;
}

}  // namespace fasim::plot
