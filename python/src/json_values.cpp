#include "json_values.hpp"

#include <string>

#include "common/exact_json.hpp"

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
        case T::binary:  // a count beyond 64 bits (common/exact_json.hpp): an exact Python int from its digits
            if (fasim::is_count_placeholder(value)) {
                const std::string digits = fasim::count_from_json(value).to_string();
                PyObject* number = PyLong_FromString(digits.c_str(), nullptr, 10);
                if (!number) throw py::error_already_set();
                return py::reinterpret_steal<py::object>(number);
            }
            break;
        case T::discarded: break;
    }
    return py::none();
}

}  // namespace fasim::python
