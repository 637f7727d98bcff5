#include "plot/atomic_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "common/errors.hpp"

namespace fasim::plot {

namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) { return "\"" + p.string() + "\""; }

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// Removes the temporary file unless released.
struct TempGuard {
    std::string path;
    int fd = -1;
    ~TempGuard() {
        if (fd >= 0) ::close(fd);
        if (!path.empty()) ::unlink(path.c_str());
    }
};

fs::path directory_of(const fs::path& target) {
    fs::path dir = target.parent_path();
    return dir.empty() ? fs::path(".") : dir;
}

void check_directory(const fs::path& target, const fs::path& dir) {
    std::error_code ec;
    const auto st = fs::status(dir, ec);
    if (ec || !fs::exists(st)) {
        throw usage_error("cannot write " + quoted(target) + ": the directory " + quoted(dir) + " does not exist",
                          "the output directory must exist",
                          "create it (mkdir -p " + dir.string() + ") or choose another output directory");
    }
    if (!fs::is_directory(st)) {
        throw usage_error("cannot write " + quoted(target) + ": " + quoted(dir) + " is not a directory",
                          "the output path must lie in a directory", "choose an output path inside a directory");
    }
    if (fs::is_directory(fs::status(target, ec))) {
        throw usage_error("cannot write " + quoted(target) + ": it is a directory",
                          "the output path must name a file", "add a file name, e.g. " +
                                                                   (target / "figure.svg").string());
    }
}

void write_all(int fd, std::string_view data, const fs::path& target, const fs::path& dir) {
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            throw usage_error("cannot write " + quoted(target) + ": writing into " + quoted(dir) + " failed (" +
                                  errno_text(err) + ")",
                              "the directory must be writable and have free space",
                              "free some disk space or choose another output directory");
        }
        done += static_cast<std::size_t>(n);
    }
}

void commit(const fs::path& target, std::string_view data) {
    // Write through a symlink to the file it names, as an ordinary write would.
    fs::path real = target;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(target, ec))) {
        const fs::path resolved = fs::weakly_canonical(target, ec);
        if (!ec) real = resolved;
    }
    const fs::path dir = directory_of(real);
    check_directory(real, dir);

    std::string name(1, '.');  // (built by append: g++ 12 -Wrestrict misfires on "." + string)
    name.append(real.filename().string()).append(".tmp-XXXXXX");
    std::string tmpl = (dir / name).string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    TempGuard guard;
    guard.fd = ::mkstemp(buf.data());
    if (guard.fd < 0) {
        const int err = errno;
        throw usage_error("cannot write " + quoted(target) + ": the directory " + quoted(dir) +
                              " is not writable (" + errno_text(err) + ")",
                          "the output directory must be writable",
                          "fix its permissions (chmod u+w " + dir.string() + ") or choose another output directory");
    }
    guard.path = buf.data();

    // mkstemp creates 0600; keep the old file's mode, else the usual 0644.
    mode_t mode = 0644;
    struct stat st {};
    if (::stat(real.c_str(), &st) == 0) mode = st.st_mode & 07777;
    ::fchmod(guard.fd, mode);

    write_all(guard.fd, data, target, dir);
    if (::fsync(guard.fd) != 0 && errno != EINVAL && errno != EROFS) {
        const int err = errno;
        throw usage_error("cannot write " + quoted(target) + ": flushing to " + quoted(dir) + " failed (" +
                              errno_text(err) + ")",
                          "the directory must be writable and have free space",
                          "free some disk space or choose another output directory");
    }
    const int fd = guard.fd;
    guard.fd = -1;
    if (::close(fd) != 0) {
        const int err = errno;
        throw usage_error("cannot write " + quoted(target) + ": closing the file in " + quoted(dir) + " failed (" +
                              errno_text(err) + ")",
                          "the directory must be writable and have free space",
                          "free some disk space or choose another output directory");
    }
    if (::rename(guard.path.c_str(), real.c_str()) != 0) {
        const int err = errno;
        throw usage_error("cannot write " + quoted(target) + ": replacing it in " + quoted(dir) + " failed (" +
                              errno_text(err) + ")",
                          "the output path must be a replaceable file in a writable directory",
                          "remove what is at that path or choose another output path");
    }
    guard.path.clear();  // renamed: nothing to clean up
}

}  // namespace

void atomic_write_file(const fs::path& path, std::string_view contents) { commit(path, contents); }

void atomic_write_file(const fs::path& path, const std::function<void(std::ostream&)>& writer) {
    // Check the directory first, so that an unwritable one is reported before work is done.
    check_directory(path, directory_of(path));
    std::ostringstream out;
    writer(out);  // if this throws, nothing has been touched
    commit(path, out.str());
}

}  // namespace fasim::plot
