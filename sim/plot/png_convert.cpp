#include "plot/png_convert.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "plot/atomic_write.hpp"
#include "plot/svg_document.hpp"

namespace fasim::plot {

namespace fs = std::filesystem;

namespace {

struct RunResult {
    bool started = false;
    bool timed_out = false;
    int exit_code = -1;
    std::string output;  // stdout and stderr together (first 64 KiB)
};

// Runs argv[0] (a full path) with the given arguments, stdin from /dev/null,
// stdout+stderr captured, killed after `timeout_s`.
RunResult run_process(const std::vector<std::string>& argv, int timeout_s) {
    RunResult r;
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    int pipefd[2];
    if (::pipe(pipefd) != 0) return r;
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(pipefd[0]);
        ::close(pipefd[1]);
        return r;
    }
    if (pid == 0) {
        // Child: only async-signal-safe calls from here on.
        const int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, 0);
        ::dup2(pipefd[1], 1);
        ::dup2(pipefd[1], 2);
        ::close(pipefd[0]);
        ::close(pipefd[1]);
        ::execv(args[0], args.data());
        ::_exit(127);
    }
    ::close(pipefd[1]);
    r.started = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    char buf[4096];
    bool open = true;
    while (open) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            r.timed_out = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd p{pipefd[0], POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (n < 0 && errno != EINTR) break;
        if (n <= 0) continue;
        const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            open = false;
        } else if (r.output.size() < 65536) {
            r.output.append(buf, static_cast<std::size_t>(got));
        }
    }
    ::close(pipefd[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!r.timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    return r;
}

std::string first_line(const std::string& s) {
    std::string line = s.substr(0, s.find('\n'));
    if (line.size() > 200) line = line.substr(0, 200) + "...";
    return line;
}

bool is_imagemagick(const fs::path& exe) {
    const RunResult r = run_process({exe.string(), "-version"}, 10);
    return r.started && r.exit_code == 0 && r.output.find("Version: ImageMagick") != std::string::npos;
}

}  // namespace

std::optional<fs::path> find_executable(std::string_view name, std::string_view search_path) {
    std::size_t start = 0;
    while (start <= search_path.size()) {
        std::size_t end = search_path.find(':', start);
        if (end == std::string_view::npos) end = search_path.size();
        // An empty PATH entry means the current directory.
        const std::string dir = end > start ? std::string(search_path.substr(start, end - start)) : std::string(1, '.');
        const fs::path candidate = fs::path(dir) / std::string(name);
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        if (end >= search_path.size()) break;
        start = end + 1;
    }
    return std::nullopt;
}

PngResult convert_svg_to_png(const fs::path& svg, const fs::path& png, const PngOptions& options) {
    PngResult result;
    result.png = png;
    std::error_code ec;
    if (!fs::is_regular_file(svg, ec)) {
        result.message = "only SVG written: " + svg.string() + " is not a readable file, so no PNG was made";
        return result;
    }
    std::string search;
    if (options.search_path) search = *options.search_path;
    else if (const char* env = std::getenv("PATH")) search = env;

    const double scale = options.scale > 0 ? options.scale : 1.0;
    // The converter writes into a private temporary directory; the PNG then goes to its place with
    // atomic_write_file. Nothing is left behind in the output directory on any failure (nor when it is
    // renamed meanwhile), and the temporary directory is removed on every path out of here.
    const fs::path tmp_root = fs::temp_directory_path(ec);
    std::string tmpl = ((ec ? fs::path("/tmp") : tmp_root) / "fa-sim-png-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
        result.message = "only SVG written (" + svg.string() + "): no temporary directory for the PNG converter (" +
                         std::error_code(errno, std::generic_category()).message() + ")";
        return result;
    }
    struct RemoveDir {
        fs::path dir;
        ~RemoveDir() {
            std::error_code ignored;
            fs::remove_all(dir, ignored);
        }
    } remove_tmp{tmpl};
    const fs::path tmp = remove_tmp.dir / "out.png";

    struct Candidate {
        std::string name;
        bool needs_imagemagick;
    };
    std::string failures;
    for (const Candidate& cand : {Candidate{"rsvg-convert", false}, Candidate{"magick", true},
                                  Candidate{"convert", true}}) {
        const auto exe = find_executable(cand.name, search);
        if (!exe) continue;
        if (cand.needs_imagemagick && !is_imagemagick(*exe)) continue;
        std::vector<std::string> argv;
        if (cand.name == "rsvg-convert") {
            argv = {exe->string(), "--format=png", "--zoom=" + format_number(scale, 3),
                    "--background-color=white", "--output=" + tmp.string(), svg.string()};
        } else {
            argv = {exe->string(), "-density", format_number(96 * scale, 1), "-background", "white",
                    svg.string(), "png:" + tmp.string()};
        }
        const RunResult r = run_process(argv, options.timeout_seconds);
        const bool ok = r.started && !r.timed_out && r.exit_code == 0 && fs::is_regular_file(tmp, ec) &&
                        fs::file_size(tmp, ec) > 0;
        if (ok) {
            std::ifstream in(tmp, std::ios::binary);
            std::ostringstream bytes;
            bytes << in.rdbuf();
            if (!in.bad() && !bytes.str().empty()) {
                try {
                    atomic_write_file(png, bytes.str());
                } catch (const std::exception& e) {
                    result.message = "only SVG written (" + svg.string() + "): " + e.what();
                    return result;
                }
                result.converted = true;
                result.tool = cand.name;
                result.message = "wrote " + png.string() + " (" + cand.name + ")";
                return result;
            }
        }
        ::unlink(tmp.c_str());
        if (!failures.empty()) failures += "; ";
        failures += cand.name + (r.timed_out ? " timed out" : " failed");
        if (!r.output.empty()) failures += ": " + first_line(r.output);
    }
    if (failures.empty()) {
        result.message = "only SVG written (" + svg.string() +
                         "): no SVG-to-PNG converter on PATH; for PNGs install rsvg-convert "
                         "(Debian/Ubuntu: apt-get install librsvg2-bin)";
    } else {
        result.message = "only SVG written (" + svg.string() + "): " + failures;
    }
    return result;
}

}  // namespace fasim::plot
