// Measured kernel timings from Python (fasim.measured): the committed result files (cuda/results/, packaged
// with the module) read and predicted by sim/figures/measurements.hpp, the code lesson 09 runs.
#pragma once

#include <pybind11/pybind11.h>

namespace fasim::python {

// Adds the submodule `measured` to the compiled module.
void bind_measured_api(pybind11::module_& m);

}  // namespace fasim::python
