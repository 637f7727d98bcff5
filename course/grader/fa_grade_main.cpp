// fa-grade: grades the tile program(s) linked into this executable (FASIM_SUBMISSION) and writes
// Gradescope's results.json. Built once per submission by fasim_add_submission (course/CMakeLists.txt);
// the bare fa-grade (no submission) lists the assignments and writes the record of a submission that
// did not compile (--build-log).
//
//   fa-grade-mine --results results.json           grade the one submission in the executable
//   fa-grade --build-log build.txt --assignment fa2_forward --results results.json
#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "assignments.hpp"
#include "cli/version.hpp"
#include "common/errors.hpp"
#include "grading.hpp"
#include "plot/atomic_write.hpp"
#include "results_json.hpp"
#include "submission_registry.hpp"

namespace {

using namespace fasim;
using namespace fasim::course;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw usage_error("--build-log " + path + " cannot be read", "it must be an existing, readable file",
                          "pass the file the compiler's output was written to");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const Assignment& assignment_named(const std::string& id) {
    const Assignment* a = find_assignment(id);
    if (!a)
        throw usage_error("--assignment " + id + " is unknown", "it must be one of " + assignment_ids(),
                          "pass one of those (fa-grade --list shows them)");
    return *a;
}

void write_results(const std::string& path, const nlohmann::json& results) {
    const std::string text = results_text(results);
    if (path == "-") std::cout << text;
    else plot::atomic_write_file(path, text);
}

void list_assignments() {
    for (const Assignment& a : assignments()) {
        std::cout << a.id << ": " << a.title << " (" << a.max_score() << " points; the reference is fa-sim's " << a.reference_id
                  << ")\n";
        for (const GradedShape& s : a.shapes) std::cout << "  shape: " << s.label << "\n";
    }
}

int run(int argc, char** argv) {
    CLI::App app{"fa-grade: grades a student's tile program and writes Gradescope's results.json"};
    std::string assignment, results = "results.json", build_log;
    std::int64_t seed = 1;
    bool list = false, version = false;
    app.add_option("--assignment", assignment, "which assignment to grade (default: the one submission linked in)")->type_name("NAME");
    app.add_option("--seed", seed, "seed of the random inputs (the same seed gives the same results.json)")->type_name("INT");
    app.add_option("--results", results, "where results.json goes ('-': stdout)")->type_name("FILE");
    app.add_option("--build-log", build_log, "write the record of a submission that did not compile, with this compiler output")
        ->type_name("FILE");
    app.add_flag("--list", list, "list the assignments, their shapes and points");
    app.add_flag("--version", version, "print the version and commit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        throw UsageError(std::string(e.what()) + ". Fix: see fa-grade --help");
    }
    if (seed < 0)
        throw usage_error("--seed " + std::to_string(seed) + " is out of range", "a seed is 0..9223372036854775807",
                          "pass a non-negative integer");
    if (version) {
        std::cout << "fa-grade " << version_text() << "\n";
        return 0;
    }
    if (list) {
        list_assignments();
        return 0;
    }
    if (!build_log.empty()) {
        if (assignment.empty())
            throw usage_error("--build-log without --assignment", "the record names the assignment",
                              "pass --assignment " + assignment_ids());
        write_results(results, build_failure_json(assignment_named(assignment).id, read_file(build_log)));
        return 0;
    }
    const auto& linked = submissions();
    if (linked.empty())
        throw usage_error("this fa-grade has no submission linked in", "a grader executable is built per submission",
                          "build one with fasim_add_submission (course/CMakeLists.txt), or pass --build-log or --list");
    if (assignment.empty()) {
        if (linked.size() != 1)
            throw usage_error(std::to_string(linked.size()) + " submissions are linked in", "--assignment chooses one",
                              "pass --assignment with one of them");
        assignment = linked.begin()->first;
    }
    const Assignment& a = assignment_named(assignment);
    const auto it = linked.find(a.id);
    if (it == linked.end())
        throw usage_error("--assignment " + a.id + " has no submission in this executable",
                          "FASIM_SUBMISSION(\"" + a.id + "\", program) must be in a file it was built from",
                          "add that line to your tile program's file");
    const Grade g = grade(a, it->second, static_cast<std::uint64_t>(seed));
    (results == "-" ? std::cerr : std::cout) << score_table(g);  // stdout carries the JSON then
    write_results(results, results_json(g));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const fasim::UsageError& e) {
        std::cerr << "fa-grade: error: " << e.what() << '\n';
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "fa-grade: internal error: " << fasim::escape_control(e.what()) << '\n';
        return 1;
    }
}
