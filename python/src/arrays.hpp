// NumPy arrays in and out of the module, through the buffer protocol and numpy's Python functions
// (no NumPy C API: any NumPy version works). Attention tensors are [batch, heads, rows, cols];
// the executors take them as batch·heads row-major matrices, head after head.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "attention_reference.hpp"
#include "precision.hpp"
#include "problem/dtype.hpp"

namespace fasim::python {

struct HeadArrays {
    std::int64_t batch = 0, heads = 0, rows = 0, cols = 0;
    std::vector<reference::Matrix> matrices;  // batch·heads matrices of rows x cols
};

// `value` (anything numpy.asarray takes) as a 4-D float64 array; `name` ("Q") and `layout`
// ("[batch, heads, N, d]") name it in the UsageError for a wrong shape, a value that is not a number,
// or a non-finite element.
HeadArrays read_heads(pybind11::handle value, const std::string& name, const std::string& layout);

// Rounds every element to the storage dtype (through fp32, as a GPU stores it); a finite value that the
// dtype cannot hold (fp16 above 65504) is a UsageError naming the element.
void round_to_dtype(HeadArrays& a, const std::string& name, DType dtype);

// batch·heads matrices of rows x cols as a float64 array [batch, heads, rows, cols].
pybind11::object to_numpy(const std::vector<reference::Matrix>& heads, std::int64_t batch, std::int64_t heads_per_batch);
// batch·heads vectors of n as a float64 array [batch, heads, n].
pybind11::object to_numpy(const std::vector<reference::Vector>& heads, std::int64_t batch, std::int64_t heads_per_batch);
// One fp32 tile, as a float32 array of its shape.
pybind11::object to_numpy(const reference::MatrixF& tile);

}  // namespace fasim::python
