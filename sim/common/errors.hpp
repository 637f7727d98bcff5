// The one error type users see. Every message names the bad value, the allowed
// range and a fix; the CLI prints it on one line and exits with code 2.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace fasim {

// `s` with every control character (bytes 0x00-0x1f and 0x7f) written as a C escape (\n, \r, \t,
// \xNN), so that a value typed or read from a file (`--algo $'fa2\nx'`, a JSON key or string with a
// newline) cannot break an error message over lines or move the terminal's cursor. Other bytes,
// UTF-8 included, are kept. Applying it twice changes nothing. Every message path uses it: UsageError
// escapes its text when it is made, and the executables escape whatever else they print on stderr.
inline std::string escape_control(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u != 0x7f) {
            out += c;
            continue;
        }
        switch (c) {
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default: {
                static constexpr char kHex[] = "0123456789abcdef";
                out += "\\x";
                out += kHex[u >> 4];
                out += kHex[u & 0xf];
            }
        }
    }
    return out;
}

struct UsageError : std::runtime_error {
    explicit UsageError(const std::string& message) : std::runtime_error(escape_control(message)) {}
    explicit UsageError(const char* message) : UsageError(std::string(message)) {}
};

// "--N 0 is out of range: N must be 1..16777216. Fix: pass a positive sequence length."
inline UsageError usage_error(const std::string& what, const std::string& allowed, const std::string& fix) {
    return UsageError(what + ": " + allowed + ". Fix: " + fix);
}

}  // namespace fasim
