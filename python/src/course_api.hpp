// fa-grade's grader for Python tile programs (fasim.course): the assignments, grade() through the same
// C++ grader (course/grader/) as fa-grade, and the same results.json.
#pragma once

#include <pybind11/pybind11.h>

namespace fasim::python {

// Adds the submodule `course` to the compiled module.
void bind_course_api(pybind11::module_& m);

}  // namespace fasim::python
