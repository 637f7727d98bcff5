// The tile programs FASIM_SUBMISSION registered in this executable, by assignment id.
#pragma once

#include <map>
#include <string>

#include "submission.hpp"

namespace fasim::course {

const std::map<std::string, TileProgram, std::less<>>& submissions();

}  // namespace fasim::course
