// Text helpers for the lessons: 80-column wrapping (UTF-8 aware), the small prose
// format lessons are written in, tables, and number formatting.
//
// Prose format (renders the same in a terminal and as Markdown in a notebook):
//   - blocks are separated by a blank line;
//   - a block whose lines all start with four spaces is shown verbatim
//     (a code block in Markdown);
//   - a block whose first line starts with "- " is a bullet list (continuation
//     lines of an item are indented by two spaces);
//   - any other block is a paragraph, re-flowed to the width;
//   - `backticks` mark code: kept in Markdown, dropped in the terminal.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "common/count.hpp"

namespace fasim::lessons {

inline constexpr int kWidth = 80;

// Display width of a UTF-8 string (code points; every character lessons use is one column).
int display_width(const std::string& s);

// Greedy word wrap: first line prefixed by `first`, the others by `rest`.
std::vector<std::string> wrap(const std::string& text, int width, const std::string& first = "",
                              const std::string& rest = "");

// Prints prose (format above) wrapped to kWidth.
void print_prose(std::ostream& out, const std::string& prose);

// Prints a computed paragraph (one block, re-flowed) with an optional hanging indent.
void print_para(std::ostream& out, const std::string& text, const std::string& first = "",
                const std::string& rest = "");

// Hard-wraps every line of pre-formatted text that is wider than kWidth, continuing it
// on the next line under its own indentation plus four spaces.
std::string fit_lines(const std::string& text, int width = kWidth);

// A plain table: header row, a rule, rows; columns separated by two spaces.
class Table {
public:
    // align: one letter per column, 'l' or 'r'.
    Table(std::vector<std::string> headers, std::string align);
    void row(std::vector<std::string> cells);
    void print(std::ostream& out, int indent = 2) const;

private:
    std::vector<std::string> headers_;
    std::string align_;
    std::vector<std::vector<std::string>> rows_;
};

// 268435456 -> "268,435,456"
std::string grouped(std::int64_t v);
std::string grouped(Count v);  // every digit, past 64 bits too
// Shortest of %.*g that reads well: num(0.5) "0.5", num(1234.5678, 4) "1235".
std::string num(double v, int significant = 4);
// Fixed decimals: fixed(3.14159, 2) "3.14".
std::string fixed(double v, int decimals);
// "12.3%"
std::string percent(double fraction, int decimals = 1);

}  // namespace fasim::lessons
