#include "common/exact_json.hpp"

#include <limits>
#include <utility>
#include <vector>

namespace fasim {

using nlohmann::json;

namespace {

template <class Json>
bool holds_placeholder(const Json& j) {
    if (is_count_placeholder(j)) return true;
    if (j.is_structured())
        for (const Json& v : j)
            if (holds_placeholder(v)) return true;
    return false;
}

// A copy of j with every placeholder replaced by the string marker + its index in `digits`.
template <class Json>
Json with_markers(const Json& j, const std::string& marker, std::vector<std::string>& digits) {
    if (is_count_placeholder(j)) {
        const auto& bytes = j.get_binary();
        digits.emplace_back(bytes.begin(), bytes.end());
        return Json(marker + std::to_string(digits.size() - 1));
    }
    if (j.is_object()) {
        Json out = Json::object();
        for (const auto& [key, v] : j.items()) out[key] = with_markers(v, marker, digits);
        return out;
    }
    if (j.is_array()) {
        Json out = Json::array();
        for (const Json& v : j) out.push_back(with_markers(v, marker, digits));
        return out;
    }
    return j;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

template <class Json>
std::string text_of(const Json& doc, int indent) {
    if (!holds_placeholder(doc)) return doc.dump(indent);
    // Each placeholder becomes a string "<marker><index>", dumped by nlohmann as "\u0001fasim-count-K:<index>"
    // (the control character escaped), and that quoted string is then replaced by the digits. A string of
    // the document's own could read the same only by containing the marker: then the marker is found more
    // often than there are placeholders, and the next marker (K + 1) is tried.
    for (int nonce = 0;; ++nonce) {
        const std::string marker = "\x01" "fasim-count-" + std::to_string(nonce) + ":";
        std::vector<std::string> digits;
        const std::string text = with_markers(doc, marker, digits).dump(indent);
        std::string opening = Json(marker).dump();  // "\"\\u0001fasim-count-K:\""
        opening.pop_back();                         // without its closing quote: the index follows
        if (occurrences(text, opening) != digits.size()) continue;
        std::string out;
        out.reserve(text.size());
        std::size_t from = 0;
        for (std::size_t at = text.find(opening); at != std::string::npos; at = text.find(opening, from)) {
            const std::size_t index_at = at + opening.size();
            const std::size_t close = text.find('"', index_at);
            const std::size_t index = std::stoul(text.substr(index_at, close - index_at));
            out.append(text, from, at - from);
            out += digits.at(index);
            from = close + 1;
        }
        out.append(text, from, std::string::npos);
        return out;
    }
}

}  // namespace

std::string json_text(const json& doc, int indent) { return text_of(doc, indent); }
std::string json_text(const nlohmann::ordered_json& doc, int indent) { return text_of(doc, indent); }

namespace {

// nlohmann's DOM builder, except for integer literals beyond 64 bits: the lexer hands those over as
// doubles with their text, from which the placeholder takes the exact digits.
class ExactSax final : public nlohmann::json_sax<json> {
public:
    explicit ExactSax(json& root) : root_(root) {}

    bool null() override { return put(nullptr); }
    bool boolean(bool v) override { return put(v); }
    bool number_integer(number_integer_t v) override { return put(v); }
    bool number_unsigned(number_unsigned_t v) override { return put(v); }
    bool number_float(number_float_t v, const string_t& text) override {
        if (const auto c = parse_count(text)) return put(*c);  // digits only: an integer beyond 64 bits
        return put(v);
    }
    bool string(string_t& v) override { return put(std::move(v)); }
    bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
    bool start_object(std::size_t) override { return open(json::object()); }
    bool key(string_t& k) override {
        key_ = std::move(k);
        return true;
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(json::array()); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        // As json::parse: the exception with its type (a parse_error with the position, or out_of_range).
        if (const auto* pe = dynamic_cast<const json::parse_error*>(&e)) throw *pe;
        if (const auto* oe = dynamic_cast<const json::out_of_range*>(&e)) throw *oe;
        throw json::parse_error::create(101, 0, e.what(), nullptr);
    }

private:
    json* place(json v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        json& parent = *stack_.back();
        if (parent.is_array()) {
            parent.push_back(std::move(v));
            return &parent.back();
        }
        json& slot = parent[key_];
        slot = std::move(v);
        return &slot;
    }
    bool put(json v) {
        place(std::move(v));
        return true;
    }
    bool open(json v) {
        stack_.push_back(place(std::move(v)));
        return true;
    }
    bool close() {
        stack_.pop_back();
        return true;
    }

    json& root_;
    std::vector<json*> stack_;
    std::string key_;
};

}  // namespace

json parse_json_exact(std::string_view text) {
    json root;
    ExactSax sax(root);
    json::sax_parse(text, &sax);
    return root;
}

}  // namespace fasim
