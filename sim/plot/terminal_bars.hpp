// Horizontal bar charts for the terminal report.
//
//       standard ████████████████████████████████████████████▌  4.29 GB
//            FA1 ███████████▊                                   1.13 GB
//            FA2 ██▏                                             201 MB
//
// Labels are right-aligned against the bars, values right-aligned at the end of
// the line; every line is exactly `width` columns (code points). Bars use
// Unicode eighth blocks (▏▎▍▌▋▊▉█) or, with unicode = false, '#' and plain ASCII
// text (µ -> u, − -> -, … -> ...). The caller decides unicode (e.g. from
// isatty(fileno(stdout))). Same input -> same string.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "plot/axis.hpp"

namespace fasim::plot {

struct TerminalBar {
    TerminalBar() = default;
    TerminalBar(std::string label_, double value_, std::string value_text_ = {})
        : label(std::move(label_)), value(value_), value_text(std::move(value_text_)) {}

    std::string label;
    double value = 0;          // >= 0; bars are scaled to the largest value
    std::string value_text;    // shown at the end of the line; empty: options.format(value)
};

struct TerminalBarsOptions {
    int width = 80;            // columns per line, >= 24
    bool unicode = true;
    std::string title;         // an optional first line
    LabelFormatter format;     // for values without value_text; empty: 4 significant digits
};

// Throws fasim::UsageError for a width below 24 or a negative or non-finite value.
std::string terminal_bars(const std::vector<TerminalBar>& bars, const TerminalBarsOptions& options = {});

// The number of code points in UTF-8 text (its terminal width for the text we print).
std::size_t display_width(const std::string& text);
// Replaces the non-ASCII characters our labels use by ASCII ('?' for others).
std::string ascii_fold(const std::string& text);

}  // namespace fasim::plot
