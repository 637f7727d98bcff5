// Reading a small input file named on the command line (--gpu-file, --measured), with every way it
// can fail reported as a UsageError: one line naming the path, what is wrong, what is allowed and a
// fix. The path is looked up with error codes, never with the throwing std::filesystem calls, so a
// name too long for the file system or a symbolic-link loop is a message and exit code 2, not an
// "internal error".
#pragma once

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "common/errors.hpp"

namespace fasim {

// `what` names the file in messages ("--gpu-file \"x.json\""), `allowed` says what it must be ("a
// readable JSON file in format fa-sim-gpu/1"), `example_fix` ends the fix for a missing file.
// Files over `max_bytes` (and anything that is not a regular file: a directory, /dev/zero, a FIFO)
// are refused before they are read.
inline std::string read_input_file(const std::string& path, const std::string& what, const std::string& allowed,
                                   std::uintmax_t max_bytes, const std::string& example_fix) {
    namespace fs = std::filesystem;
    if (path.empty()) throw usage_error(what + " is empty", allowed, "pass the path of the file");
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
        const std::string why = ec == std::errc::filename_too_long ? "the path is longer than the file system allows"
                                : ec == std::errc::too_many_symbolic_link_levels
                                    ? "its symbolic links form a loop (or nest too deep)"
                                    : ec.message();
        throw usage_error(what + " cannot be looked up (" + ec.message() + ")", allowed,
                          std::string("check the path: ") + why);
    }
    if (ec || !fs::exists(st)) {
        throw usage_error(what + " does not exist", allowed,
                          "check the path (relative paths start from the current directory); " + example_fix);
    }
    if (!fs::is_regular_file(st)) {
        throw usage_error(what + " is not a regular file", allowed, "pass the path of the file itself");
    }
    const std::uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > max_bytes) {
        throw usage_error(what + " is " + std::to_string(size) + " bytes long",
                          allowed + " of at most " + std::to_string(max_bytes) + " bytes", "check that this is the right file");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const int err = errno;
        throw usage_error(what + " cannot be opened" +
                              (err != 0 ? " (" + std::error_code(err, std::generic_category()).message() + ")" : std::string()),
                          allowed, "check the file's read permission");
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw usage_error(what + " could not be read", allowed, "check the file and try again");
    std::string s = text.str();
    if (s.size() > max_bytes) {  // grew while it was read
        throw usage_error(what + " is more than " + std::to_string(max_bytes) + " bytes long",
                          allowed + " of at most " + std::to_string(max_bytes) + " bytes", "check that this is the right file");
    }
    return s;
}

}  // namespace fasim
