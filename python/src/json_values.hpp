// JSON values (nlohmann::json, what the reports produce) as plain Python objects: dict, list, int,
// float, bool, str, None. The dicts the module returns are the documented schema, key for key.
#pragma once

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

namespace fasim::python {

pybind11::object to_python(const nlohmann::json& value);

}  // namespace fasim::python
