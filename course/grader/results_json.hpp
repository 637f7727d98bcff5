// Gradescope's results.json (gradescope-autograders.readthedocs.io, "Autograder Specifications"):
// top-level score and output, stdout_visibility, and tests[] with name, score, max_score, visibility
// and output. Every record (the top level and each test) carries the tool's version and commit in
// extra_data, so that a regrade can tell which grader scored it. Nothing in it depends on the time
// or the machine: the same submission and seed give the same bytes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "grading.hpp"

namespace fasim::course {

nlohmann::json results_json(const Grade& grade);
// The record when the submission did not compile: score 0, the compiler's messages as output.
nlohmann::json build_failure_json(const std::string& assignment, const std::string& build_log);
// results.json's text as fa-grade writes it (two-space indent, a final newline): the same bytes from
// fa-grade and from the Python module's grader (fasim.course).
std::string results_text(const nlohmann::json& results);
// What fa-grade prints beside it: one line per test ("  8 /  8  O equals exact attention: ..."), then the total.
std::string score_table(const Grade& grade);

}  // namespace fasim::course
