// Runs a lesson program non-interactively and captures its exit code and output.
#pragma once

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace fasim::test {

struct Run {
    int exit_code = -1;
    std::string out, err;
};

inline std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

inline Run run(const std::string& command) {
    static int counter = 0;
    const std::string base = "/tmp/fasim_lesson_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    const int status = std::system((command + " >" + base + ".out 2>" + base + ".err </dev/null").c_str());
    Run r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(base + ".out");
    r.err = read_file(base + ".err");
    std::remove((base + ".out").c_str());
    std::remove((base + ".err").c_str());
    return r;
}

inline std::string lesson(int n, const std::string& args = "") {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d", n);
    return std::string(FASIM_BINARY_DIR) + "/lessons/lesson-" + buf + (args.empty() ? "" : " " + args);
}

// The instructors' program: the answer keys (lesson-answers NN [flags] [--json], lesson-answers all).
inline std::string lesson_answers(const std::string& args) {
    return std::string(FASIM_BINARY_DIR) + "/lessons/lesson-answers " + args;
}

inline nlohmann::json lesson_json(int n, const std::string& args = "") {
    const Run r = run(lesson(n, "--json " + args));
    if (r.exit_code != 0) throw std::runtime_error("lesson " + std::to_string(n) + " --json failed: " + r.err);
    return nlohmann::json::parse(r.out);
}

// Display width in code points (every character the lessons print is one column wide).
inline int width(const std::string& line) {
    int w = 0;
    for (unsigned char c : line)
        if ((c & 0xC0) != 0x80) ++w;
    return w;
}

}  // namespace fasim::test
