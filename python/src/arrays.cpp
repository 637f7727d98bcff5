#include "arrays.hpp"

#include <cmath>
#include <cstring>
#include <sstream>

#include "common/errors.hpp"

namespace py = pybind11;

namespace fasim::python {

namespace {

std::string shape_text(const std::vector<py::ssize_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + (shape.size() == 1 ? ",)" : ")");
}

std::string number_text(double v) {
    std::ostringstream s;
    s.precision(8);
    s << v;
    return s.str();
}

// "Q[0, 1, 5, 2]": element (row, col) of matrix `head` (an index over batch·heads) of a [B, H, rows, cols] array.
std::string element_name(const std::string& name, const HeadArrays& a, std::int64_t head, Eigen::Index row, Eigen::Index col) {
    return name + "[" + std::to_string(head / a.heads) + ", " + std::to_string(head % a.heads) + ", " + std::to_string(row) +
           ", " + std::to_string(col) + "]";
}

// A new array numpy.empty(shape, dtype) and a pointer to its (C-contiguous) data.
py::object empty_array(const std::vector<py::ssize_t>& shape, const char* dtype, void** data) {
    py::tuple t(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) t[i] = py::int_(shape[i]);
    py::object array = py::module_::import("numpy").attr("empty")(t, py::arg("dtype") = dtype);
    *data = py::buffer(array).request(true).ptr;
    return array;
}

}  // namespace

HeadArrays read_heads(py::handle value, const std::string& name, const std::string& layout) {
    py::object array;
    try {
        array = py::module_::import("numpy").attr("ascontiguousarray")(value, py::arg("dtype") = "float64");
    } catch (py::error_already_set& e) {
        throw usage_error(name + " is not an array of numbers (" + std::string(e.what()) + ")",
                          name + " must be a float array of shape " + layout,
                          "pass a numpy array, e.g. numpy.random.randn(1, 2, 64, 16)");
    }
    const py::buffer_info info = py::buffer(array).request();
    if (info.ndim != 4)
        throw usage_error(name + " has shape " + shape_text(info.shape) + " (" + std::to_string(info.ndim) + "-D)",
                          name + " must be 4-D: " + layout,
                          info.ndim == 2   ? "for one head's matrix pass " + name + "[None, None]"
                          : info.ndim == 3 ? "for a batch of one pass " + name + "[None]"
                                           : "reshape it to " + layout);
    HeadArrays a;
    a.batch = info.shape[0];
    a.heads = info.shape[1];
    a.rows = info.shape[2];
    a.cols = info.shape[3];
    if (a.batch < 1 || a.heads < 1 || a.rows < 1 || a.cols < 1)
        throw usage_error(name + " has shape " + shape_text(info.shape) + ", with an empty axis",
                          "every axis of " + layout + " must be at least 1", "pass a non-empty " + name);
    const auto* data = static_cast<const double*>(info.ptr);
    const std::int64_t per_head = a.rows * a.cols;
    for (std::int64_t h = 0; h < a.batch * a.heads; ++h) {
        a.matrices.emplace_back(Eigen::Map<const reference::Matrix>(data + h * per_head, a.rows, a.cols));
        const reference::Matrix& m = a.matrices.back();
        if (m.allFinite()) continue;
        for (Eigen::Index i = 0; i < m.rows(); ++i)
            for (Eigen::Index j = 0; j < m.cols(); ++j)
                if (!std::isfinite(m(i, j)))
                    throw usage_error(element_name(name, a, h, i, j) + " is " + number_text(m(i, j)),
                                      "inputs must be finite", "replace NaN and infinite values (numpy.nan_to_num), or mask "
                                                               "them out before calling");
    }
    return a;
}

void round_to_dtype(HeadArrays& a, const std::string& name, DType dtype) {
    for (std::size_t h = 0; h < a.matrices.size(); ++h) {
        const reference::Matrix rounded = reference::round_matrix(a.matrices[h], dtype);
        if (!rounded.allFinite()) {
            for (Eigen::Index i = 0; i < rounded.rows(); ++i)
                for (Eigen::Index j = 0; j < rounded.cols(); ++j)
                    if (!std::isfinite(rounded(i, j)))
                        throw usage_error(element_name(name, a, static_cast<std::int64_t>(h), i, j) + " = " +
                                              number_text(a.matrices[h](i, j)) + " overflows " + dtype_name(dtype),
                                          std::string(dtype_name(dtype)) + " holds magnitudes up to " +
                                              (dtype == DType::fp16 ? "65504" : "3.4e38"),
                                          "scale the input down, or use dtype='fp32' or 'bf16'");
        }
        a.matrices[h] = rounded;
    }
}

py::object to_numpy(const std::vector<reference::Matrix>& heads, std::int64_t batch, std::int64_t heads_per_batch) {
    const py::ssize_t rows = heads.empty() ? 0 : heads.front().rows(), cols = heads.empty() ? 0 : heads.front().cols();
    void* data = nullptr;
    py::object array = empty_array({batch, heads_per_batch, rows, cols}, "float64", &data);
    auto* out = static_cast<double*>(data);
    for (const reference::Matrix& m : heads) {
        std::memcpy(out, m.data(), static_cast<std::size_t>(m.size()) * sizeof(double));
        out += m.size();
    }
    return array;
}

py::object to_numpy(const std::vector<reference::Vector>& heads, std::int64_t batch, std::int64_t heads_per_batch) {
    const py::ssize_t n = heads.empty() ? 0 : heads.front().size();
    void* data = nullptr;
    py::object array = empty_array({batch, heads_per_batch, n}, "float64", &data);
    auto* out = static_cast<double*>(data);
    for (const reference::Vector& v : heads) {
        std::memcpy(out, v.data(), static_cast<std::size_t>(v.size()) * sizeof(double));
        out += v.size();
    }
    return array;
}

py::object to_numpy(const reference::MatrixF& tile) {
    void* data = nullptr;
    py::object array = empty_array({tile.rows(), tile.cols()}, "float32", &data);
    std::memcpy(data, tile.data(), static_cast<std::size_t>(tile.size()) * sizeof(float));
    return array;
}

}  // namespace fasim::python
