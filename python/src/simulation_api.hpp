// The counting side of the module: simulate, sweep, and the catalogs (algorithms, kernels, GPUs),
// each answering with the dicts of fa-sim's JSON (docs/output-schema.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "arguments.hpp"

namespace fasim::python {

// One algorithm: its ALGORITHM object with "schema_version", "gpu" and "problem" added. Several ("all",
// a list): the whole fa-sim --json document. algo None: fa2. kernel: a kernel of the catalog, modelled as
// fa-sim --kernel models it (its algorithm, tiles, products and registers).
pybind11::object simulate(const pybind11::handle& algo, const ProblemArgs& problem, const TileArgs& tiles,
                          const pybind11::handle& gpu, const std::optional<std::string>& pass,
                          const std::optional<std::string>& kernel = std::nullopt);

// fa-sim --json --sweep: parameter "N" (Nk with it, for self-attention) or "Nk", over `values`.
pybind11::object sweep(const pybind11::handle& algo, const std::string& parameter,
                       const std::optional<std::vector<std::int64_t>>& values, const ProblemArgs& problem,
                       const TileArgs& tiles, const pybind11::handle& gpu, const std::optional<std::string>& pass);

pybind11::object algorithms_list();  // fa-sim --list-kernels --json's "algorithms"
pybind11::object kernels_list();     // ... and its "kernels"
pybind11::object gpu_dict(const pybind11::handle& gpu);  // the GPU file of a preset or a Gpu (docs/gpu-file.md)
GpuSpec gpu_from_dict(const pybind11::handle& spec);     // a GPU file's object, as a dict

}  // namespace fasim::python
