#include "results_json.hpp"

#include <iomanip>
#include <sstream>

#include "cli/version.hpp"

namespace fasim::course {

namespace {

nlohmann::json provenance(const std::string& assignment) {
    return {{"tool", "fa-grade"}, {"version", version_text()}, {"assignment", assignment}};
}

}  // namespace

nlohmann::json results_json(const Grade& grade) {
    nlohmann::json tests = nlohmann::json::array();
    for (const GradedTest& t : grade.tests)
        tests.push_back({{"name", t.name},
                         {"score", t.score},
                         {"max_score", t.max_score},
                         {"visibility", "visible"},
                         {"output", t.output},
                         {"extra_data", provenance(grade.assignment)}});
    nlohmann::json extra = provenance(grade.assignment);
    extra["seed"] = grade.seed;
    return {{"score", grade.score()},
            {"output", "fa-grade " + version_text() + ": assignment " + grade.assignment + ", seed " + std::to_string(grade.seed) +
                           ", " + std::to_string(grade.tests.size()) + " tests"},
            {"stdout_visibility", "visible"},
            {"visibility", "visible"},
            {"extra_data", extra},
            {"tests", tests}};
}

nlohmann::json build_failure_json(const std::string& assignment, const std::string& build_log) {
    nlohmann::json test = {{"name", "the submission compiles"},
                           {"score", 0},
                           {"max_score", 0},
                           {"visibility", "visible"},
                           {"output", build_log},
                           {"extra_data", provenance(assignment)}};
    return {{"score", 0},
            {"output", "fa-grade " + version_text() + ": assignment " + assignment +
                           ": the submission did not compile, so nothing was graded (the compiler's messages are below)"},
            {"stdout_visibility", "visible"},
            {"visibility", "visible"},
            {"extra_data", provenance(assignment)},
            {"tests", nlohmann::json::array({test})}};
}

std::string results_text(const nlohmann::json& results) { return results.dump(2) + "\n"; }

std::string score_table(const Grade& grade) {
    std::ostringstream table;
    for (const GradedTest& t : grade.tests)
        table << std::setw(3) << t.score << " / " << std::setw(2) << t.max_score << "  " << t.name << "\n";
    table << "total " << grade.score() << " / " << grade.max_score() << " (fa-grade " << version_text() << ", seed " << grade.seed
          << ")\n";
    return table.str();
}

}  // namespace fasim::course
