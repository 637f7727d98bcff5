#include "submission_registry.hpp"

#include <stdexcept>

namespace fasim::course {

namespace {
// A function-local static: registrations run during static initialisation, in any order.
std::map<std::string, TileProgram, std::less<>>& registry() {
    static std::map<std::string, TileProgram, std::less<>> r;
    return r;
}
}  // namespace

bool register_submission(std::string_view assignment, TileProgram program) {
    auto [it, inserted] = registry().emplace(std::string(assignment), program);
    if (!inserted) throw std::logic_error("two FASIM_SUBMISSION lines for assignment " + std::string(assignment));
    return true;
}

const std::map<std::string, TileProgram, std::less<>>& submissions() { return registry(); }

}  // namespace fasim::course
