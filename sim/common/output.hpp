// Checked standard output: a program that wrote its report calls finish_stdout() before it exits,
// so that a write that failed (a full disk, `> /dev/full`, a closed file) is an error with a message
// instead of exit code 0 and a truncated file.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "common/errors.hpp"

namespace fasim {

// Flushes std::cout and stdout. If anything written to them was lost, prints one line on stderr
// ("PROGRAM: error: writing standard output failed (...)") and returns 2; else returns `rc`.
inline int finish_stdout(const std::string& program, int rc) {
    std::cout.flush();
    errno = 0;
    const bool flush_failed = std::fflush(stdout) != 0;
    const int err = errno;
    if (!flush_failed && !std::ferror(stdout) && std::cout.good()) return rc;
    // errno names the cause when the last flush failed (ENOSPC for > /dev/full); an earlier failed write
    // leaves only the stream's error flag.
    const std::string why = err != 0 ? " (" + std::string(std::strerror(err)) + ")" : std::string();
    std::cerr << escape_control(program + ": error: writing standard output failed" + why +
                                ": the output must be written completely, and part of it was lost. Fix: free space on "
                                "the disk it goes to, or send it to a file or pipe that accepts it")
              << std::endl;
    return 2;
}

}  // namespace fasim
