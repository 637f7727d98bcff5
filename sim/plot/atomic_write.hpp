// Writing a file so that readers never see it half-written.
//
// The contents go to a temporary file in the same directory, which is flushed
// and then renamed over the target: the target is either the old file or the
// complete new one, never a mix, even when the write fails midway.
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

}  // namespace fasim::plot
