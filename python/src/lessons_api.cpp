#include "lessons_api.hpp"

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "common/errors.hpp"

namespace py = pybind11;
using namespace pybind11::literals;

#ifdef FASIM_PYTHON_LESSONS
#define FASIM_LESSON(n) int lesson_##n##_main(int argc, char** argv);
#include "lesson_list.inc"
#undef FASIM_LESSON
#endif

namespace fasim::python {

namespace {

struct Entry {
    int number;
    int (*main)(int, char**);
};

const std::vector<Entry>& entries() {
#ifdef FASIM_PYTHON_LESSONS
#define FASIM_LESSON(n) Entry{1##n - 100, &lesson_##n##_main},
    static const std::vector<Entry> e{
#include "lesson_list.inc"
    };
#undef FASIM_LESSON
#else
    static const std::vector<Entry> e;
#endif
    return e;
}

// std::cout and std::cerr into strings while it lives (the lessons print to them).
class Capture {
public:
    Capture() : out_(std::cout.rdbuf(out_text.rdbuf())), err_(std::cerr.rdbuf(err_text.rdbuf())) {}
    ~Capture() {
        std::cout.rdbuf(out_);
        std::cerr.rdbuf(err_);
    }
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;
    std::ostringstream out_text, err_text;

private:
    std::streambuf* out_;
    std::streambuf* err_;
};

py::tuple run_lesson(int number, const std::vector<std::string>& args) {
    const Entry* entry = nullptr;
    std::string numbers;
    for (const Entry& e : entries()) {
        numbers += (numbers.empty() ? "" : ", ") + std::to_string(e.number);
        if (e.number == number) entry = &e;
    }
    if (!entry)
        throw usage_error("lesson " + std::to_string(number) + " is not in this module",
                          numbers.empty() ? "this build has no lessons (FASIM_LESSONS=OFF)" : "lessons are " + numbers,
                          numbers.empty() ? "build the module with the lessons (scripts/build.sh, or pip install .)"
                                          : "pass one of those numbers");
    for (const std::string& a : args)
        if (a == "--step" || a.rfind("--export-notebook", 0) == 0)
            throw usage_error("the lesson option " + a + " from Python", "it is for the lesson program in a terminal",
                              "run the lesson program for that");
    char name[16];
    std::snprintf(name, sizeof name, "lesson-%02d", number);
    std::vector<std::string> argv_text{name};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    int rc = 0;
    std::string out, err;
    {
        py::gil_scoped_release unlocked;  // a lesson may simulate for seconds
        Capture capture;
        rc = entry->main(static_cast<int>(argv_text.size()), argv.data());
        std::cout.flush();
        out = capture.out_text.str();
        err = capture.err_text.str();
    }
    return py::make_tuple(rc, out, err);
}

}  // namespace

void bind_lessons_api(py::module_& parent) {
    py::module_ m = parent.def_submodule("lessons", "The lessons' programs, run inside the module (fasim.lessons).");
    m.def(
        "numbers",
        [] {
            std::vector<int> n;
            for (const Entry& e : entries()) n.push_back(e.number);
            return n;
        },
        "The lessons this module holds.");
    m.def("run", &run_lesson, "number"_a, "args"_a,
          "Runs lesson-NN with these arguments in this process: (exit code, what it printed, its errors).");
}

}  // namespace fasim::python
