#include "common/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fasim::lessons {

namespace {

std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> lines;
    std::string line;
    std::istringstream in(s);
    while (std::getline(in, line)) lines.push_back(line);
    return lines;
}

std::vector<std::string> split_words(const std::string& s) {
    std::vector<std::string> words;
    std::istringstream in(s);
    std::string w;
    while (in >> w) words.push_back(w);
    return words;
}

std::string strip_backticks(std::string s) {
    s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
    return s;
}

std::string trim(const std::string& s) {
    const auto a = s.find_first_not_of(' ');
    if (a == std::string::npos) return "";
    return s.substr(a, s.find_last_not_of(' ') - a + 1);
}

}  // namespace

int display_width(const std::string& s) {
    int w = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++w;
    return w;
}

std::vector<std::string> wrap(const std::string& text, int width, const std::string& first, const std::string& rest) {
    std::vector<std::string> out;
    std::string line = first;
    bool empty = true;
    for (const std::string& w : split_words(text)) {
        if (!empty && display_width(line) + 1 + display_width(w) > width) {
            out.push_back(line);
            line = rest;
            empty = true;
        }
        line += (empty ? "" : " ") + w;
        empty = false;
    }
    if (!empty || out.empty()) out.push_back(line);
    return out;
}

void print_para(std::ostream& out, const std::string& text, const std::string& first, const std::string& rest) {
    for (const auto& l : wrap(text, kWidth, first, rest)) out << l << '\n';
}

void print_prose(std::ostream& out, const std::string& prose) {
    const auto lines = split_lines(prose);
    std::vector<std::vector<std::string>> blocks(1);
    for (const auto& l : lines) {
        if (trim(l).empty()) {
            if (!blocks.back().empty()) blocks.emplace_back();
        } else {
            blocks.back().push_back(l);
        }
    }
    if (blocks.back().empty()) blocks.pop_back();
    bool first_block = true;
    for (const auto& b : blocks) {
        if (!first_block) out << '\n';
        first_block = false;
        const bool verbatim = std::all_of(b.begin(), b.end(), [](const std::string& l) { return l.rfind("    ", 0) == 0; });
        if (verbatim) {
            for (const auto& l : b) out << l << '\n';
        } else if (b.front().rfind("- ", 0) == 0) {
            std::string item;
            auto flush = [&] {
                if (!item.empty()) print_para(out, strip_backticks(item), "- ", "  ");
                item.clear();
            };
            for (const auto& l : b) {
                if (l.rfind("- ", 0) == 0) {
                    flush();
                    item = l.substr(2);
                } else {
                    item += ' ';
                    item += trim(l);
                }
            }
            flush();
        } else {
            std::string para;
            for (const auto& l : b) {
                if (!para.empty()) para += ' ';
                para += trim(l);
            }
            print_para(out, strip_backticks(para));
        }
    }
}

std::string fit_lines(const std::string& text, int width) {
    std::string out;
    for (const auto& l : split_lines(text)) {
        if (display_width(l) <= width) {
            out += l + '\n';
            continue;
        }
        const std::size_t lead = l.find_first_not_of(' ');
        const std::string indent(lead == std::string::npos ? 0 : lead, ' ');
        for (const auto& w : wrap(l.substr(indent.size()), width, indent, indent + "    ")) out += w + '\n';
    }
    return out;
}

Table::Table(std::vector<std::string> headers, std::string align) : headers_(std::move(headers)), align_(std::move(align)) {
    align_.resize(headers_.size(), 'r');
}

void Table::row(std::vector<std::string> cells) {
    cells.resize(headers_.size());
    rows_.push_back(std::move(cells));
}

void Table::print(std::ostream& out, int indent) const {
    std::vector<int> w(headers_.size(), 0);
    for (std::size_t c = 0; c < headers_.size(); ++c) {
        w[c] = display_width(headers_[c]);
        for (const auto& r : rows_) w[c] = std::max(w[c], display_width(r[c]));
    }
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s(static_cast<std::size_t>(indent), ' ');
        for (std::size_t c = 0; c < cells.size(); ++c) {
            const std::string pad(static_cast<std::size_t>(w[c] - display_width(cells[c])), ' ');
            if (c) s += "  ";
            s += align_[c] == 'l' ? cells[c] + pad : pad + cells[c];
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        out << s << '\n';
    };
    line(headers_);
    std::vector<std::string> rule;
    for (int x : w) rule.emplace_back(static_cast<std::size_t>(x), '-');
    line(rule);
    for (const auto& r : rows_) line(r);
}

std::string grouped(std::int64_t v) { return grouped(Count(v)); }

std::string grouped(Count v) {
    std::string digits = (v < 0 ? -v : v).to_string(), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return (v < 0 ? "-" : "") + out;
}

std::string num(double v, int significant) {
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", significant, v);
    return buf;
}

std::string fixed(double v, int decimals) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    std::string s = buf;
    if (s == "-0" || s.rfind("-0.", 0) == 0) {  // no "-0.00"
        bool zero = std::all_of(s.begin() + 1, s.end(), [](char c) { return c == '0' || c == '.'; });
        if (zero) s.erase(0, 1);
    }
    return s;
}

std::string percent(double fraction, int decimals) { return fixed(100.0 * fraction, decimals) + "%"; }

}  // namespace fasim::lessons
