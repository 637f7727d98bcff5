#include "course_api.hpp"

#include <cstdint>
#include <memory>
#include <string>

#include <pybind11/stl.h>

#include "assignments.hpp"
#include "cli/version.hpp"
#include "common/errors.hpp"
#include "grading.hpp"
#include "json_values.hpp"
#include "results_json.hpp"
#include "tile_api.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

namespace fasim::python {

namespace {

const course::Assignment& assignment_arg(const std::string& id) {
    const course::Assignment* a = course::find_assignment(id);
    if (!a)
        throw usage_error("assignment='" + id + "' is unknown", "it must be one of " + course::assignment_ids(),
                          "pass one of those (fasim.course.assignments() lists them)");
    return *a;
}

py::dict assignment_dict(const course::Assignment& a) {
    py::list shapes;
    for (const course::GradedShape& s : a.shapes)
        shapes.append(py::dict("label"_a = s.label, "N"_a = s.N, "Nk"_a = s.Nk, "heads"_a = s.heads,
                               "kv_heads"_a = s.kv_heads == 0 ? s.heads : s.kv_heads, "causal"_a = s.causal,
                               "kv_splits"_a = s.kv_splits));
    return py::dict("id"_a = a.id, "title"_a = a.title, "reference"_a = a.reference_id, "max_score"_a = a.max_score(),
                    "d"_a = course::kHeadDim, "dtype"_a = "fp16", "shapes"_a = shapes, "output_points"_a = a.output_points,
                    "closed_form_points"_a = a.closed_form_points, "reference_counts_points"_a = a.reference_counts_points);
}

// A Python exception as the grader's output shows it: the exception, then the submission's own frames
// (file name, line, function, source), innermost last, without the module's frames. File names without
// their folders, so that the same submission gives the same results.json wherever it is graded.
std::string describe(const py::error_already_set& e) {
    const py::module_ tb = py::module_::import("traceback");
    std::string text;
    for (const py::handle& line : tb.attr("format_exception_only")(e.type(), e.value())) text += py::str(line).cast<std::string>();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const py::module_ os = py::module_::import("os");
    const std::string package = py::str(os.attr("path").attr("dirname")(py::module_::import("fasim").attr("__file__")));
    std::string frames;
    for (const py::handle& f : tb.attr("extract_tb")(e.trace())) {
        const std::string file = py::str(f.attr("filename"));
        if (file.rfind(package, 0) == 0) continue;
        frames += "\n  File \"" + py::str(os.attr("path").attr("basename")(file)).cast<std::string>() + "\", line " +
                  py::str(f.attr("lineno")).cast<std::string>() + ", in " + py::str(f.attr("name")).cast<std::string>();
        const std::string source = py::str(f.attr("line"));
        if (!source.empty() && source != "None") frames += ": " + source;
    }
    return text + (frames.empty() ? "" : "\n  where (innermost last):" + frames);
}

// Ctrl-C (or sys.exit) while a submission runs: thrown past the grader, which catches std::exception
// only, and raised again once grade() is out of it.
struct Interrupted {
    std::shared_ptr<py::error_already_set> error;
};

// The submission as the grader's program: a Python exception becomes a std::exception whose text is
// describe()'s (the grader catches std::exception and reports "your program stopped: <text>").
course::ProgramFn graded_program(const py::object& program) {
    PythonProgramFn fn = python_program(program);
    return [fn](Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
        try {
            fn(x, p, cfg);
        } catch (py::error_already_set& e) {
            if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit))
                throw Interrupted{std::make_shared<py::error_already_set>(std::move(e))};
            throw std::runtime_error(describe(e));
        }
    };
}

const char* kGradeDoc = R"(Grade a Python tile program as fa-grade grades a C++ one (the same grader, course/grader/).

grade(assignment, program, seed=1): assignment is 'fa2_forward', 'fa2_backward' or 'flash_decoding';
program(x, p, cfg) a tile program (fasim.tile). The functional executor runs it on fresh random inputs
(drawn from the seed) and checks its outputs against float64 attention; the counting executor checks its
HBM traffic against the reference algorithm's closed form and its program's counts.

Returns {"results": Gradescope's results.json as a dict, "text": that file's text as fa-grade writes it,
"table": the per-test lines fa-grade prints, "score", "max_score"}.)";

}  // namespace

void bind_course_api(py::module_& parent) {
    py::module_ m = parent.def_submodule("course", "fa-grade's grader for Python tile programs (fasim.course).");
    m.def(
        "assignments",
        [] {
            py::list out;
            for (const course::Assignment& a : course::assignments()) out.append(assignment_dict(a));
            return out;
        },
        "The assignments, their shapes and points (fa-grade --list).");
    m.def(
        "grade",
        [](const std::string& assignment, const py::object& program, std::int64_t seed) {
            const course::Assignment& a = assignment_arg(assignment);
            if (!PyCallable_Check(program.ptr()))
                throw usage_error("program is a " + std::string(py::str(program.get_type().attr("__name__"))),
                                  "it must be a function program(x, p, cfg)", "pass the function itself, not its result");
            if (seed < 0)
                throw usage_error("seed=" + std::to_string(seed) + " is out of range", "a seed is 0..9223372036854775807",
                                  "pass a non-negative integer");
            course::Grade g;
            try {
                g = course::grade(a, graded_program(program), static_cast<std::uint64_t>(seed));
            } catch (Interrupted& stop) {
                throw std::move(*stop.error);
            }
            const nlohmann::json results = course::results_json(g);
            return py::dict("results"_a = to_python(results), "text"_a = course::results_text(results),
                            "table"_a = course::score_table(g), "score"_a = g.score(), "max_score"_a = g.max_score());
        },
        kGradeDoc, "assignment"_a, "program"_a, "seed"_a = 1);
    m.def(
        "build_failure",
        [](const std::string& assignment, const std::string& log) {
            const nlohmann::json results = course::build_failure_json(assignment_arg(assignment).id, log);
            return py::dict("results"_a = to_python(results), "text"_a = course::results_text(results));
        },
        "assignment"_a, "log"_a,
        "The record of a submission that could not be loaded (fa-grade --build-log): score 0, the error as output.");
    m.def("version", &version_text, "The grader's version and commit, as every record carries it.");
}

}  // namespace fasim::python
