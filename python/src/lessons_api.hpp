// The lessons (lessons/lesson_NN.cpp) inside the module (fasim.lessons): a notebook grades its exercises
// and reads a lesson's results without running a lesson program in a subprocess.
#pragma once

#include <pybind11/pybind11.h>

namespace fasim::python {

// Adds the submodule `lessons` to the compiled module (empty when the build has no lessons).
void bind_lessons_api(pybind11::module_& m);

}  // namespace fasim::python
