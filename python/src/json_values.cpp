#include "json_values.hpp"

#include <string>

namespace py = pybind11;

namespace fasim::python {

py::object to_python(const nlohmann::json& value) {
    using T = nlohmann::json::value_t;
    switch (value.type()) {
        case T::null: return py::none();
        case T::boolean: return py::bool_(value.get<bool>());
        case T::number_integer: return py::int_(value.get<std::int64_t>());
        case T::number_unsigned: return py::int_(value.get<std::uint64_t>());
        case T::number_float: return py::float_(value.get<double>());
        case T::string: return py::str(value.get_ref<const std::string&>());
        case T::array: {
            py::list list;
            for (const auto& v : value) list.append(to_python(v));
            return list;
        }
        case T::object: {
            py::dict dict;
            for (const auto& [key, v] : value.items()) dict[py::str(key)] = to_python(v);
            return dict;
        }
        case T::binary:
        case T::discarded: break;
    }
    return py::none();
}

}  // namespace fasim::python
