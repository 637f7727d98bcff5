// Writing a file so that readers never see it half-written.
//
// The contents go to a temporary file in the same directory, which is flushed
// and then renamed over the target: the target is either the old file or the
// complete new one, never a mix, even when the write fails midway. The
// temporary file is made, renamed and (on any failure) removed through a handle
// on the directory, so that it is cleaned up even when the directory is renamed
// or moved while the file is written.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace fasim::plot {

// Writes `contents` to `path` atomically. Throws fasim::UsageError (naming the
// directory, what is wrong and a fix) when the directory is missing, is not a
// directory or cannot be written, or when writing fails (e.g. the disk is full).
void atomic_write_file(const std::filesystem::path& path, std::string_view contents);

// As above, with the contents produced by `writer`. If `writer` throws, the
// temporary file is removed, the old file is left as it was, and the exception
// propagates.
void atomic_write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& writer);

// Checks, before any work is done, that files can be written into `dir`: it exists, is a directory
// and accepts a new file (a temporary file is created there and removed again, so read-only file
// systems, /proc and missing permissions are all caught). Throws fasim::UsageError with one line and
// a fix that fits the cause (chmod only for a directory the user owns). `flag` names the option in
// the message, e.g. "--plot".
void check_output_directory(const std::filesystem::path& dir, std::string_view flag);

}  // namespace fasim::plot
