// fasim::Count (common/count.hpp) and its JSON (common/exact_json.hpp): exact arithmetic past 64 bits,
// every digit printed, JSON written and read back without loss.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/count.hpp"
#include "common/exact_json.hpp"

using namespace fasim;
using nlohmann::json;

namespace {
constexpr Count pow2(int e) { return Count::from_raw(int128_t{1} << e); }
}  // namespace

TEST_CASE("Count: 128-bit arithmetic, digits and limits", "[count]") {
    // 2^74 = 4 B H N Nk d at N = Nk = 2^24, B H = 2^16, d = 256.
    const Count flops = Count(4) * 65536 * (std::int64_t{1} << 24) * (std::int64_t{1} << 24) * 256;
    CHECK(flops == pow2(74));
    CHECK(flops.to_string() == "18889465931478580854784");
    CHECK(to_string(pow2(64)) == "18446744073709551616");
    CHECK(to_string(pow2(66)) == "73786976294838206464");  // standard attention's S at the limits, in bytes
    CHECK(to_string(Count(0)) == "0");
    CHECK(to_string(Count(-12345)) == "-12345");
    CHECK(to_string(Count::from_raw(std::numeric_limits<int128_t>::min())) == "-170141183460469231731687303715884105728");
    CHECK(to_string(Count::from_raw(std::numeric_limits<int128_t>::max())) == "170141183460469231731687303715884105727");
    std::ostringstream s;
    s << pow2(100);
    CHECK(s.str() == "1267650600228229401496703205376");

    // Mixed with 64-bit integers, compared, divided.
    CHECK(pow2(74) / pow2(10) == pow2(64));
    CHECK(pow2(74) % 1000 == 784);
    CHECK(pow2(64) > std::numeric_limits<std::int64_t>::max());
    CHECK(std::int64_t{1} < pow2(64));
    CHECK(pow2(64) - 1 == Count(std::numeric_limits<std::uint64_t>::max()));
    Count sum;
    for (int i = 0; i < 4; ++i) sum += std::numeric_limits<std::int64_t>::max();
    CHECK(sum == Count(std::numeric_limits<std::int64_t>::max()) * 4);
    CHECK(to_double(pow2(74)) == 0x1p74);
    CHECK(static_cast<double>(Count(3)) == 3.0);

    // Narrowing is checked; overflow of 128 bits throws instead of wrapping.
    CHECK(Count(42).to_int64() == 42);
    CHECK(pow2(62).fits_int64());
    CHECK_FALSE(pow2(63).fits_int64());
    CHECK_THROWS_AS(pow2(63).to_int64(), std::overflow_error);
    CHECK_THROWS_AS(pow2(64) * pow2(64), std::overflow_error);
    CHECK_THROWS_AS(Count::from_raw(std::numeric_limits<int128_t>::max()) + 1, std::overflow_error);
    CHECK_THROWS_AS(Count(1) / 0, std::domain_error);

    // Parsing what to_string wrote.
    for (const Count c : {Count(0), Count(-1), pow2(64), pow2(74) + 7, Count::from_raw(std::numeric_limits<int128_t>::min()),
                          Count::from_raw(std::numeric_limits<int128_t>::max())}) {
        CAPTURE(c);
        REQUIRE(parse_count(c.to_string()).has_value());
        CHECK(*parse_count(c.to_string()) == c);
    }
    CHECK_FALSE(parse_count("").has_value());
    CHECK_FALSE(parse_count("-").has_value());
    CHECK_FALSE(parse_count("1.5").has_value());
    CHECK_FALSE(parse_count("1e30").has_value());
    CHECK_FALSE(parse_count("170141183460469231731687303715884105728").has_value());  // 2^127
}

TEST_CASE("Count in JSON: integers while 64 bits hold them, every digit beyond", "[count][json]") {
    // Within 64 bits: plain JSON integers, as before.
    const json small = {{"a", Count(5)}, {"b", Count(-7)}, {"c", pow2(63)}, {"d", pow2(64) - 1}};
    CHECK(small.at("a").is_number_integer());
    CHECK(small.at("c").is_number_unsigned());
    CHECK(small.dump() == R"({"a":5,"b":-7,"c":9223372036854775808,"d":18446744073709551615})");
    CHECK(json_text(small, 2) == small.dump(2));

    // Beyond: a placeholder in the tree, written as a bare integer with all its digits.
    const Count big = pow2(74) + 123;  // 18889465931478580854907
    json doc = {{"flops", {{"matmul", big}, {"nonmatmul", Count(3)}}},
                {"list", json::array({pow2(66), Count(1), -pow2(70)})},
                {"name", "fa2"},
                {"ratio", 0.5}};
    CHECK(is_count_placeholder(doc["flops"]["matmul"]));
    CHECK(is_exact_integer(doc["flops"]["matmul"]));
    CHECK_FALSE(is_count_placeholder(doc["flops"]["nonmatmul"]));
    const std::string compact = json_text(doc);
    CHECK(compact == R"({"flops":{"matmul":18889465931478580854907,"nonmatmul":3},)"
                     R"("list":[73786976294838206464,1,-1180591620717411303424],"name":"fa2","ratio":0.5})");
    const std::string pretty = json_text(doc, 2);
    CHECK(pretty.find("\"matmul\": 18889465931478580854907,\n") != std::string::npos);

    // Read back exactly: the digits return as placeholders, equal to what was written.
    for (const std::string& text : {compact, pretty}) {
        const json back = parse_json_exact(text);
        CHECK(back == doc);
        CHECK(count_from_json(back["flops"]["matmul"]) == big);
        CHECK(back["list"][0].get<Count>() == pow2(66));
        CHECK(back["list"][2].get<Count>() == -pow2(70));
        CHECK(back["flops"]["nonmatmul"].get<Count>() == 3);
        CHECK(back["ratio"].get<double>() == 0.5);
        CHECK(json_text(back, 2) == pretty);
        // nlohmann's own parser would round the big number to a double.
        CHECK(json::parse(text)["flops"]["matmul"].is_number_float());
    }
    CHECK(parse_json_exact("1.5e3").get<double>() == 1500.0);
    CHECK_THROWS_AS(parse_json_exact("[1e400]"), json::out_of_range);  // as json::parse
}

TEST_CASE("json_text: a document's own strings cannot pass for a count", "[count][json]") {
    // A string holding the marker json_text uses for its placeholders stays a string.
    const std::string lookalike = "\x01" "fasim-count-0:0";
    const json doc = {{"a", lookalike}, {"b", pow2(80)}, {"\x01" "fasim-count-1:0", lookalike}};
    const std::string text = json_text(doc);
    CHECK(text.find("\"b\":1208925819614629174706176") != std::string::npos);
    const json back = parse_json_exact(text);
    CHECK(back.at("a") == lookalike);
    CHECK(back.at("\x01" "fasim-count-1:0") == lookalike);
    CHECK(back.at("b").get<Count>() == pow2(80));
    // Malformed text is refused as by json::parse.
    CHECK_THROWS_AS(parse_json_exact("{\"a\": 1"), json::parse_error);
    CHECK_THROWS_AS(parse_json_exact("[1, 2,]"), json::parse_error);
    CHECK_THROWS_AS(count_from_json(json("12")), json::type_error);
    CHECK_THROWS_AS(count_from_json(json(1.0)), json::type_error);
}
