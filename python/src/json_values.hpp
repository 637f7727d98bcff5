// JSON values (nlohmann::json, what the reports produce) as plain Python objects: dict, list, int,
// float, bool, str, None. The dicts the module returns are the documented schema, key for key; counts
// beyond 64 bits (common/exact_json.hpp's placeholders) arrive as exact Python ints, as json.loads
// reads them from fa-sim --json.
#pragma once

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

namespace fasim::python {

pybind11::object to_python(const nlohmann::json& value);

}  // namespace fasim::python
