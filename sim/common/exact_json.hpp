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
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/count.hpp"

namespace fasim {

inline constexpr std::uint8_t kCountSubtype = 0xFA;  // the binary subtype of a Count placeholder

// nlohmann's conversion (found by argument-dependent lookup): json j = count; j = {{"matmul", count}}.
void to_json(nlohmann::json& j, const Count& c);
// j.get<Count>(): an integer or a placeholder; throws nlohmann::json::type_error otherwise.
void from_json(const nlohmann::json& j, Count& c);

// True for a Count placeholder (a Count beyond 64 bits).
bool is_count_placeholder(const nlohmann::json& j);
// The Count an integer or a placeholder holds; throws nlohmann::json::type_error for anything else.
Count count_from_json(const nlohmann::json& j);
// True for a JSON integer of any size: number_integer, number_unsigned or a placeholder.
bool is_exact_integer(const nlohmann::json& j);

// doc.dump(indent) with every placeholder written as its digits, a bare JSON integer (identical to
// dump() when the document holds none). Strings must be valid UTF-8, as for dump().
std::string json_text(const nlohmann::json& doc, int indent = -1);

// nlohmann::json::parse(text), except that an integer literal beyond 64 bits becomes a placeholder
// holding its exact digits. Throws nlohmann::json::parse_error on malformed text.
nlohmann::json parse_json_exact(std::string_view text);

}  // namespace fasim
