// Files for tests: a scratch directory, reading and writing whole files, and an
// SVG that must be well-formed XML. Shared by the plot and figure tests.
#pragma once

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../plot/xml_check.hpp"

namespace fasim::test {

namespace fs = std::filesystem;

// A fresh, empty directory under the build tree, removed at the end of the test
// (permissions restored first, for tests that make it unwritable).
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name) {
        path = fs::path(FASIM_BINARY_DIR) / "test-tmp" / (name + "-" + std::to_string(::getpid()));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path, ec);
    }
};

inline std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_file(const fs::path& p, const std::string& s) {
    std::ofstream out(p, std::ios::binary);
    out << s;
}

inline xmlcheck::Document parse_ok(const std::string& svg) {
    try {
        return xmlcheck::parse(svg);
    } catch (const xmlcheck::XmlError& e) {
        FAIL(e.what());
    }
    return {};
}

}  // namespace fasim::test
