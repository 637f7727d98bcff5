// Counts (common/count.hpp) in JSON, without loss.
//
// nlohmann::json holds integers in 64 bits; a Count beyond them (2^74 matmul FLOPs) would become a
// double. So a Count goes into a json value as:
//   - an integer (number_integer, or number_unsigned from 2^63 to 2^64 - 1) when it fits: unchanged
//     for every value 64 bits hold;
//   - otherwise a placeholder nothing else produces: a binary value (parsing JSON text never makes
//     one) of subtype kCountSubtype holding the decimal digits.
// json_text() writes a document with every placeholder as a plain JSON integer, all its digits
// ("matmul": 18889465931478580854784); dump() would write the placeholder as {"bytes": [...]}, so a
// document that may hold counts is written with json_text(). parse_json_exact() reads such text back
// with integers beyond 64 bits as placeholders again (nlohmann::json::parse would round them to
// doubles), and count_from_json() turns either form into a Count.
//
// The functions take nlohmann::json and nlohmann::ordered_json (the lessons' records) alike.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/count.hpp"

namespace fasim {

inline constexpr std::uint8_t kCountSubtype = 0xFA;  // the binary subtype of a Count placeholder

// nlohmann's conversion (found by argument-dependent lookup): json j = count; j = {{"matmul", count}}.
template <class Json>
void to_json(Json& j, const Count& c) {
    if (c.fits_int64()) {
        j = c.to_int64();
    } else if (c > 0 && c <= Count(std::numeric_limits<std::uint64_t>::max())) {
        j = static_cast<std::uint64_t>(c.raw());
    } else {
        const std::string digits = c.to_string();
        j = Json::binary(typename Json::binary_t::container_type(digits.begin(), digits.end()), kCountSubtype);
    }
}

// True for a Count placeholder (a Count beyond 64 bits).
template <class Json>
bool is_count_placeholder(const Json& j) {
    return j.is_binary() && j.get_binary().has_subtype() && j.get_binary().subtype() == kCountSubtype;
}
// True for a JSON integer of any size: number_integer, number_unsigned or a placeholder.
template <class Json>
bool is_exact_integer(const Json& j) {
    return j.is_number_integer() || is_count_placeholder(j);
}
// The Count an integer or a placeholder holds; throws Json::type_error for anything else.
template <class Json>
Count count_from_json(const Json& j) {
    if (j.is_number_unsigned()) return Count(j.template get<std::uint64_t>());
    if (j.is_number_integer()) return Count(j.template get<std::int64_t>());
    if (is_count_placeholder(j)) {
        const auto& bytes = j.get_binary();
        if (const auto c = parse_count(std::string(bytes.begin(), bytes.end()))) return *c;
    }
    throw Json::type_error::create(302, "type must be an integer (a count), but is " + std::string(j.type_name()), &j);
}
// j.get<Count>(): an integer or a placeholder; throws Json::type_error otherwise.
template <class Json>
void from_json(const Json& j, Count& c) {
    c = count_from_json(j);
}

// doc.dump(indent) with every placeholder written as its digits, a bare JSON integer (identical to
// dump() when the document holds none). Strings must be valid UTF-8, as for dump().
std::string json_text(const nlohmann::json& doc, int indent = -1);
std::string json_text(const nlohmann::ordered_json& doc, int indent = -1);

// nlohmann::json::parse(text), except that an integer literal beyond 64 bits becomes a placeholder
// holding its exact digits. Throws nlohmann::json::parse_error on malformed text.
nlohmann::json parse_json_exact(std::string_view text);

}  // namespace fasim
