// SVG -> PNG with whatever converter the machine already has; never an error.
//
// Tried in order: rsvg-convert (Debian: librsvg2-bin), ImageMagick 7 `magick`,
// ImageMagick 6 `convert` — each only if `-version` says it is ImageMagick (a
// stand-in `convert` is skipped). Converters are run with fork/exec (no shell,
// so paths need no quoting) and a time limit; the PNG is written atomically.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace fasim::plot {

struct PngOptions {
    double scale = 2.0;           // 2: a 800x500 chart becomes a 1600x1000 PNG
    std::optional<std::string> search_path;  // directories like $PATH; unset: $PATH
    int timeout_seconds = 60;
};

struct PngResult {
    bool converted = false;       // true: `png` was written
    std::string tool;             // e.g. "rsvg-convert" (empty when none was used)
    std::filesystem::path png;
    std::string message;          // one line for the user, e.g. "wrote out.png (rsvg-convert)"
                                  // or "only SVG written: no SVG-to-PNG converter on PATH (...)"
};

// Full path of an executable named `name` in the ':'-separated `search_path`.
std::optional<std::filesystem::path> find_executable(std::string_view name, std::string_view search_path);

// Converts `svg` to `png`. Never throws for a missing converter or a failed
// conversion: `converted` is false and `message` says that only the SVG was written.
PngResult convert_svg_to_png(const std::filesystem::path& svg, const std::filesystem::path& png,
                             const PngOptions& options = {});

}  // namespace fasim::plot
