// A small, strict XML 1.0 well-formedness checker for the SVG the plot library
// writes, plus a flat element list to count marks. Not a general XML parser: no
// DTDs, no CDATA, no processing instructions other than the XML declaration.
#pragma once

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace xmlcheck {

struct Element {
    std::string name;
    std::map<std::string, std::string> attrs;  // entity-decoded values
    std::string text;                          // decoded character data directly inside
    int depth = 0;
    std::size_t parent = static_cast<std::size_t>(-1);
};

struct Document {
    std::vector<Element> elements;  // document order

    std::size_t count(std::string_view name) const {
        std::size_t n = 0;
        for (const auto& e : elements) n += e.name == name ? 1 : 0;
        return n;
    }
    std::size_t count_attr(std::string_view attr, std::string_view value) const {
        std::size_t n = 0;
        for (const auto& e : elements) {
            auto it = e.attrs.find(std::string(attr));
            n += (it != e.attrs.end() && it->second == value) ? 1 : 0;
        }
        return n;
    }
    std::vector<const Element*> with_attr(std::string_view attr, std::string_view value) const {
        std::vector<const Element*> out;
        for (const auto& e : elements) {
            auto it = e.attrs.find(std::string(attr));
            if (it != e.attrs.end() && it->second == value) out.push_back(&e);
        }
        return out;
    }
    // Elements whose class attribute contains the word `cls`.
    std::vector<const Element*> with_class(std::string_view cls) const {
        std::vector<const Element*> out;
        for (const auto& e : elements) {
            auto it = e.attrs.find("class");
            if (it == e.attrs.end()) continue;
            std::string_view c = it->second;
            std::size_t p = 0;
            while (p <= c.size()) {
                std::size_t q = c.find(' ', p);
                if (q == std::string_view::npos) q = c.size();
                if (c.substr(p, q - p) == cls) {
                    out.push_back(&e);
                    break;
                }
                p = q + 1;
            }
        }
        return out;
    }
};

struct XmlError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class Parser {
public:
    explicit Parser(std::string_view s) : s_(s) {}

    Document parse() {
        check_utf8_and_chars();
        if (starts("<?xml")) {
            const auto end = s_.find("?>", i_);
            if (end == std::string_view::npos) fail("unterminated XML declaration");
            i_ = end + 2;
        }
        misc();
        if (i_ >= s_.size() || s_[i_] != '<') fail("no root element");
        element(0, static_cast<std::size_t>(-1));
        misc();
        if (i_ != s_.size()) fail("content after the root element");
        return std::move(doc_);
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw XmlError("XML error at byte " + std::to_string(i_) + ": " + what + " near \"" +
                       std::string(s_.substr(i_ < 20 ? 0 : i_ - 20, 60)) + "\"");
    }
    bool starts(std::string_view p) const { return s_.substr(i_, p.size()) == p; }

    void check_utf8_and_chars() {
        std::size_t i = 0;
        while (i < s_.size()) {
            const auto b = static_cast<unsigned char>(s_[i]);
            if (b < 0x80) {
                if (b < 0x20 && b != '\t' && b != '\n' && b != '\r') {
                    i_ = i;
                    fail("control character");
                }
                ++i;
                continue;
            }
            std::size_t len = (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
            if (len == 0 || i + len > s_.size()) {
                i_ = i;
                fail("invalid UTF-8");
            }
            unsigned cp = b & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
            for (std::size_t k = 1; k < len; ++k) {
                const auto c = static_cast<unsigned char>(s_[i + k]);
                if ((c & 0xC0) != 0x80) {
                    i_ = i;
                    fail("invalid UTF-8 continuation");
                }
                cp = (cp << 6) | (c & 0x3Fu);
            }
            const unsigned min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
            if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) {
                i_ = i;
                fail("code point not allowed in XML");
            }
            i += len;
        }
    }

    void skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
    }
    void comment() {
        i_ += 4;
        const auto end = s_.find("--", i_);
        if (end == std::string_view::npos) fail("unterminated comment");
        if (end + 2 >= s_.size() || s_[end + 2] != '>') {
            i_ = end;
            fail("\"--\" inside a comment");
        }
        i_ = end + 3;
    }
    void misc() {
        for (;;) {
            skip_ws();
            if (starts("<!--")) comment();
            else break;
        }
    }
    static bool name_start(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    }
    static bool name_char(char c) {
        return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
    }
    std::string name() {
        if (i_ >= s_.size() || !name_start(s_[i_])) fail("expected a name");
        const std::size_t start = i_;
        while (i_ < s_.size() && name_char(s_[i_])) ++i_;
        return std::string(s_.substr(start, i_ - start));
    }
    // Decodes an entity or character reference at s_[i_] == '&'.
    std::string reference() {
        const auto semi = s_.find(';', i_);
        if (semi == std::string_view::npos || semi - i_ > 10) fail("bad reference");
        const std::string_view ref = s_.substr(i_ + 1, semi - i_ - 1);
        i_ = semi + 1;
        if (ref == "amp") return "&";
        if (ref == "lt") return "<";
        if (ref == "gt") return ">";
        if (ref == "quot") return "\"";
        if (ref == "apos") return "'";
        if (!ref.empty() && ref[0] == '#') {
            unsigned long cp = 0;
            try {
                cp = ref.size() > 1 && ref[1] == 'x' ? std::stoul(std::string(ref.substr(2)), nullptr, 16)
                                                      : std::stoul(std::string(ref.substr(1)), nullptr, 10);
            } catch (...) {
                fail("bad character reference");
            }
            if (cp == 0 || cp > 0x10FFFF) fail("character reference out of range");
            std::string out;
            if (cp < 0x80) out += static_cast<char>(cp);
            else if (cp < 0x800) {
                out += static_cast<char>(0xC0 | (cp >> 6));
                out += static_cast<char>(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                out += static_cast<char>(0xE0 | (cp >> 12));
                out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
                out += static_cast<char>(0x80 | (cp & 0x3F));
            } else {
                out += static_cast<char>(0xF0 | (cp >> 18));
                out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
                out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
                out += static_cast<char>(0x80 | (cp & 0x3F));
            }
            return out;
        }
        fail("unknown entity &" + std::string(ref) + ";");
    }

    void element(int depth, std::size_t parent) {
        ++i_;  // '<'
        Element e;
        e.name = name();
        e.depth = depth;
        e.parent = parent;
        for (;;) {
            const std::size_t before = i_;
            skip_ws();
            if (i_ >= s_.size()) fail("unterminated start tag");
            if (s_[i_] == '/' || s_[i_] == '>') break;
            if (i_ == before) fail("attributes must be separated by white space");
            const std::string key = name();
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != '=') fail("expected '=' after attribute " + key);
            ++i_;
            skip_ws();
            if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("attribute value must be quoted");
            const char q = s_[i_++];
            std::string value;
            while (i_ < s_.size() && s_[i_] != q) {
                if (s_[i_] == '<') fail("'<' in an attribute value");
                if (s_[i_] == '&') value += reference();
                else value += s_[i_++];
            }
            if (i_ >= s_.size()) fail("unterminated attribute value");
            ++i_;
            if (!e.attrs.emplace(key, value).second) fail("duplicate attribute " + key);
        }
        const std::size_t index = doc_.elements.size();
        doc_.elements.push_back(e);
        if (s_[i_] == '/') {
            if (!starts("/>")) fail("expected '/>'");
            i_ += 2;
            return;
        }
        ++i_;  // '>'
        for (;;) {
            if (i_ >= s_.size()) fail("unclosed element <" + e.name + ">");
            if (starts("</")) {
                i_ += 2;
                const std::string closing = name();
                if (closing != e.name) fail("</" + closing + "> closes <" + e.name + ">");
                skip_ws();
                if (i_ >= s_.size() || s_[i_] != '>') fail("expected '>'");
                ++i_;
                return;
            }
            if (starts("<!--")) {
                comment();
            } else if (starts("<![CDATA[") || starts("<?") || starts("<!")) {
                fail("unsupported markup");
            } else if (s_[i_] == '<') {
                element(depth + 1, index);
            } else if (s_[i_] == '&') {
                doc_.elements[index].text += reference();
            } else {
                if (starts("]]>")) fail("\"]]>\" in character data");
                if (s_[i_] == '>') {
                    // Allowed by XML, but we always escape it.
                    fail("unescaped '>' in character data");
                }
                doc_.elements[index].text += s_[i_++];
            }
        }
    }

    std::string_view s_;
    std::size_t i_ = 0;
    Document doc_;
};

inline Document parse(std::string_view xml) { return Parser(xml).parse(); }

}  // namespace xmlcheck
