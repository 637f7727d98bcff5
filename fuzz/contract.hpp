// The contract every fuzz target checks (issue 25): an input is either accepted, and then the output
// holds no NaN or infinity, or refused with a fasim::UsageError (the executables' exit code 2) whose
// text is one line with no control character, naming what is wrong and a fix ("Fix: ..."). Any other
// exception is the executables' "internal error" (exit code 1) and a finding, as is a crash, a
// sanitizer report, a leak or a timeout.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace fasim::fuzz {

[[noreturn]] inline void violation(const std::string& what) {
    std::fprintf(stderr, "fuzz contract violated: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

// A refusal as the user sees it: "prog: error: <message>" on one line.
inline void check_refusal(const std::string& message) {
    if (message.empty()) violation("an empty error message");
    for (const char c : message) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) violation("a control character in the error message: " + escape_control(message));
    }
    if (message.find("Fix:") == std::string::npos) violation("an error message without a fix: " + message);
}

// Every number of a JSON output is finite (nlohmann writes NaN and inf as null; they must not be there).
inline void check_finite(const nlohmann::json& j, const std::string& where) {
    if (j.is_number_float() && !std::isfinite(j.get<double>())) violation(where + " is not finite");
    if (j.is_null()) violation(where + " is null (NaN or inf written by nlohmann)");
    if (j.is_object())
        for (const auto& [k, v] : j.items()) check_finite(v, where + "." + k);
    if (j.is_array())
        for (std::size_t i = 0; i < j.size(); ++i) check_finite(j[i], where + "[" + std::to_string(i) + "]");
}

inline void check_finite(double x, const std::string& where) {
    if (!std::isfinite(x)) violation(where + " = " + std::to_string(x) + " is not finite");
}

// Runs `body`, mapping its outcome onto the contract: returns normally (exit 0) or throws UsageError
// (exit 2); anything else is a finding.
template <typename F>
void run_contract(F&& body) {
    try {
        body();
    } catch (const UsageError& e) {
        check_refusal(e.what());
    } catch (const std::exception& e) {
        violation(std::string("internal error (exit code 1): ") + escape_control(e.what()));
    }
}

}  // namespace fasim::fuzz
