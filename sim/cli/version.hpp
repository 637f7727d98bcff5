// fa-sim's version, for --version of fa-sim and the lesson executables: CMake's project() version
// and, when it was built from a git checkout, the commit ("-dirty" when tracked files differed from
// it). Written at every build by sim/cli/version.cmake (sim/CMakeLists.txt), so a rebuild after a
// commit reports the new one.
#pragma once

#include <string>

namespace fasim {

// "0.1.0 (git b0b597a1c2d3)" or "0.1.0 (git b0b597a1c2d3-dirty)"; "0.1.0" when git was not available.
std::string version_text();

}  // namespace fasim
