// The one error type users see. Every message names the bad value, the allowed
// range and a fix; the CLI prints it on one line and exits with code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace fasim {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// "--N 0 is out of range: N must be 1..1048576. Fix: pass a positive sequence length."
inline UsageError usage_error(const std::string& what, const std::string& allowed, const std::string& fix) {
    return UsageError(what + ": " + allowed + ". Fix: " + fix);
}

}  // namespace fasim
