// Runs a command line and captures its exit code, stdout and stderr.
#pragma once

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace fasim::test {

struct CommandResult {
    int exit_code = -1;
    std::string out, err;
};

inline std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

inline CommandResult run_command(const std::string& command) {
    static int counter = 0;
    const std::string base = "/tmp/fasim_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    const int status = std::system((command + " >" + base + ".out 2>" + base + ".err </dev/null").c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(base + ".out");
    r.err = slurp(base + ".err");
    std::remove((base + ".out").c_str());
    std::remove((base + ".err").c_str());
    return r;
}

inline std::string fa_sim(const std::string& args) { return std::string(FASIM_BINARY_DIR) + "/sim/fa-sim " + args; }

}  // namespace fasim::test
