#include "plot/atomic_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <system_error>

#include "common/errors.hpp"

namespace fasim::plot {

namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
    std::string s(1, '"');  // (built by append: g++ 12 -Wrestrict misfires on "\"" + string)
    s.append(p.string()).append(1, '"');
    return s;
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

fs::path directory_of(const fs::path& target) {
    fs::path dir = target.parent_path();
    return dir.empty() ? fs::path(".") : dir;
}

// An open directory: every later step (create, rename, remove) goes through it, so a directory renamed
// or moved meanwhile takes the temporary file with it and the clean-up still finds it.
struct Directory {
    int fd = -1;
    Directory() = default;
    Directory(const Directory&) = delete;
    Directory& operator=(const Directory&) = delete;
    ~Directory() {
        if (fd >= 0) ::close(fd);
    }
};

// Opens `dir` (the directory of `target`, which names the file in messages) or throws the UsageError
// that says why not.
void open_directory(Directory& d, const fs::path& target, const fs::path& dir) {
    d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d.fd >= 0) return;
    const int err = errno;
    const std::string head = "cannot write " + quoted(target) + ": ";
    switch (err) {
        case ENOENT:
            throw usage_error(head + "the directory " + quoted(dir) + " does not exist", "the output directory must exist",
                              "create it (mkdir -p " + dir.string() + ") or choose another output directory");
        case ENOTDIR:
            throw usage_error(head + quoted(dir) + " is not a directory", "the output path must lie in a directory",
                              "choose an output path inside a directory");
        case ENAMETOOLONG:
            throw usage_error(head + "the directory " + quoted(dir) + " cannot be opened (" + errno_text(err) + ")",
                              "the path must be shorter than the file system allows", "choose a shorter output path");
        case ELOOP:
            throw usage_error(head + "the directory " + quoted(dir) + " cannot be opened (" + errno_text(err) + ")",
                              "the path's symbolic links must lead to a directory",
                              "fix the symbolic-link loop or choose another output directory");
        default:
            throw usage_error(head + "the directory " + quoted(dir) + " cannot be opened (" + errno_text(err) + ")",
                              "the output directory must be readable and writable",
                              "check its permissions or choose another output directory");
    }
}

// The error for a directory that refused a new file: a fix that fits the cause.
[[noreturn]] void not_writable(const fs::path& dir, int err, const std::string& head) {
    const bool denied = err == EACCES || err == EPERM;
    const std::string what = head + "the directory " + quoted(dir) + (denied ? " is not writable (" : " does not accept new files (") +
                             errno_text(err) + ")";
    if (err == ENAMETOOLONG)
        throw usage_error(head + "the file name is too long for the directory " + quoted(dir) + " (" + errno_text(err) + ")",
                          "a file name must be shorter than the file system allows (usually 255 bytes)", "choose a shorter name");
    if (err == EROFS)
        throw usage_error(what, "the output directory must be on a writable file system", "choose another output directory");
    if (err == ENOSPC || err == EDQUOT)
        throw usage_error(what, "the output directory's disk must have free space",
                          "free some disk space or choose another output directory");
    struct stat st {};
    const bool owned = ::stat(dir.c_str(), &st) == 0 && st.st_uid == ::geteuid() && ::geteuid() != 0;
    if (denied && owned && (st.st_mode & S_IWUSR) == 0)
        throw usage_error(what, "the output directory must be writable",
                          "make it writable (chmod u+w " + dir.string() + ") or choose another output directory");
    throw usage_error(what, "the output directory must accept new files (a special file system such as /proc or /sys, or "
                            "one owned by someone else, does not)",
                      "choose another output directory, e.g. one in your home directory");
}

// A temporary file in the open directory, removed again unless released.
struct TempFile {
    const Directory* dir = nullptr;
    std::string name;  // relative to dir
    int fd = -1;
    ~TempFile() {
        if (fd >= 0) ::close(fd);
        if (!name.empty()) ::unlinkat(dir->fd, name.c_str(), 0);
    }
};

// ".<file>.tmp-XXXXXX" with a random suffix, created exclusively (mkstemp's contract, relative to the
// directory handle). Returns errno on failure.
int create_temp(TempFile& t, const Directory& d, const std::string& file) {
    static std::atomic<unsigned> counter{0};
    std::mt19937_64 rng(static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                        (static_cast<std::uint64_t>(::getpid()) << 32) ^ counter.fetch_add(1));
    static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    int err = EEXIST;
    for (int attempt = 0; attempt < 100 && err == EEXIST; ++attempt) {
        std::string name(1, '.');  // (built by append: g++ 12 -Wrestrict misfires on "." + string)
        name.append(file.substr(0, 200)).append(".tmp-");  // within the usual 255-byte limit on a name
        for (int i = 0; i < 6; ++i) name += kChars[rng() % (sizeof kChars - 1)];
        const int fd = ::openat(d.fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            t.dir = &d;
            t.name = name;
            t.fd = fd;
            return 0;
        }
        err = errno;
    }
    return err;
}

void check_not_directory(const Directory& d, const fs::path& target) {
    struct stat st {};
    if (::fstatat(d.fd, target.filename().c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode))
        throw usage_error("cannot write " + quoted(target) + ": it is a directory", "the output path must name a file",
                          "add a file name, e.g. " + (target / "figure.svg").string());
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
    if (target.filename().empty() || target.filename() == "." || target.filename() == "..")
        throw usage_error("cannot write " + quoted(target) + ": it names no file", "the output path must name a file",
                          "add a file name, e.g. " + (target / "figure.svg").string());
    // Write through a symlink to the file it names, as an ordinary write would.
    fs::path real = target;
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(target, ec))) {
        const fs::path resolved = fs::weakly_canonical(target, ec);
        if (!ec) real = resolved;
    }
    const fs::path dir = directory_of(real);
    Directory d;
    open_directory(d, real, dir);
    check_not_directory(d, real);
    const std::string file = real.filename().string();
    if (const long name_max = ::fpathconf(d.fd, _PC_NAME_MAX); name_max > 0 && file.size() > static_cast<std::size_t>(name_max))
        throw usage_error("cannot write " + quoted(target) + ": its file name is " + std::to_string(file.size()) + " bytes long",
                          "a file name in " + quoted(dir) + " may be at most " + std::to_string(name_max) + " bytes",
                          "choose a shorter name");

    TempFile tmp;
    if (const int err = create_temp(tmp, d, file); err != 0) not_writable(dir, err, "cannot write " + quoted(target) + ": ");

    // The temporary file is created 0600: keep the old file's mode, else the usual 0644.
    mode_t mode = 0644;
    struct stat st {};
    if (::fstatat(d.fd, file.c_str(), &st, 0) == 0) mode = st.st_mode & 07777;
    ::fchmod(tmp.fd, mode);

    write_all(tmp.fd, data, target, dir);
    if (::fsync(tmp.fd) != 0 && errno != EINVAL && errno != EROFS) {
        const int err = errno;
        throw usage_error("cannot write " + quoted(target) + ": flushing to " + quoted(dir) + " failed (" +
                              errno_text(err) + ")",
                          "the directory must be writable and have free space",
                          "free some disk space or choose another output directory");
    }
    const int fd = tmp.fd;
    tmp.fd = -1;
    if (::close(fd) != 0) {
        const int err = errno;
        throw usage_error("cannot write " + quoted(target) + ": closing the file in " + quoted(dir) + " failed (" +
                              errno_text(err) + ")",
                          "the directory must be writable and have free space",
                          "free some disk space or choose another output directory");
    }
    if (::renameat(d.fd, tmp.name.c_str(), d.fd, file.c_str()) != 0) {
        const int err = errno;
        throw usage_error("cannot write " + quoted(target) + ": replacing it in " + quoted(dir) + " failed (" +
                              errno_text(err) + ")",
                          "the output path must be a replaceable file in a writable directory",
                          "remove what is at that path or choose another output path");
    }
    tmp.name.clear();  // renamed: nothing to clean up
    // The directory may have been renamed or removed while the file was written: then the file is
    // complete, but not where the caller would say it is.
    struct stat by_handle {}, by_path {};
    if (::fstat(d.fd, &by_handle) != 0 || ::stat(dir.c_str(), &by_path) != 0 || by_handle.st_ino != by_path.st_ino ||
        by_handle.st_dev != by_path.st_dev) {
        throw usage_error("cannot write " + quoted(target) + ": the directory " + quoted(dir) +
                              " was moved or removed while the file was written",
                          "the output directory must stay in place until fa-sim is done",
                          "run the command again and leave the directory alone while it runs");
    }
}

}  // namespace

void atomic_write_file(const fs::path& path, std::string_view contents) { commit(path, contents); }

void atomic_write_file(const fs::path& path, const std::function<void(std::ostream&)>& writer) {
    // Check the directory first, so that an unwritable one is reported before work is done.
    {
        Directory d;
        open_directory(d, path, directory_of(path));
        check_not_directory(d, path);
    }
    std::ostringstream out;
    writer(out);  // if this throws, nothing has been touched
    commit(path, out.str());
}

void check_output_directory(const fs::path& dir, std::string_view flag) {
    const std::string subject = std::string(flag) + " " + quoted(dir) + ":";
    if (dir.empty())
        throw usage_error(std::string(flag) + " \"\" names no directory", "the output directory must be named",
                          "pass a directory, e.g. " + std::string(flag) + " figures");
    Directory d;
    // "cannot write" messages name a file; here the directory itself is the subject.
    d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d.fd < 0) {
        const int err = errno;
        if (err == ENOENT)
            throw usage_error(subject + " the directory does not exist", "the output directory must exist",
                              "create it (mkdir -p " + dir.string() + ") or choose another output directory");
        if (err == ENOTDIR)
            throw usage_error(subject + " it is not a directory", "the output path must be a directory",
                              "choose a directory, or remove the file at that path");
        if (err == ENAMETOOLONG)
            throw usage_error(subject + " it cannot be opened (" + errno_text(err) + ")",
                              "the path must be shorter than the file system allows", "choose a shorter path");
        if (err == ELOOP)
            throw usage_error(subject + " it cannot be opened (" + errno_text(err) + ")",
                              "the path's symbolic links must lead to a directory",
                              "fix the symbolic-link loop or choose another output directory");
        throw usage_error(subject + " it cannot be opened (" + errno_text(err) + ")",
                          "the output directory must be readable and writable",
                          "check its permissions or choose another output directory");
    }
    TempFile probe;
    if (const int err = create_temp(probe, d, "fa-sim-probe"); err != 0) not_writable(dir, err, subject + " ");
}

}  // namespace fasim::plot
