// The functional side of the module: an algorithm's tile program run on the user's numbers (NumPy
// arrays in and out), its backward, and its trace as a list of steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <pybind11/pybind11.h>

namespace fasim::python {

// What the functional calls share besides the arrays.
struct RunArgs {
    bool causal = false;
    std::string dtype = "fp16";
    std::optional<std::int64_t> Br, Bc, q_splits, kv_splits;
};

// Q [batch, heads, N, d], K and V [batch, kv_heads, Nk, d] (kv_heads dividing heads) -> {"O", "lse", the
// tiles, the traffic and FLOPs of the run}. `program` (None: the algorithm's own) is a Python tile program
// (fasim.tile) run in place of the algorithm's, with its tiles; in run_backward and trace(pass 'bwd') it
// replaces the backward's program, after the algorithm's own forward.
pybind11::object run(const std::string& algo, const pybind11::handle& Q, const pybind11::handle& K,
                     const pybind11::handle& V, const RunArgs& args, const pybind11::handle& gpu,
                     const pybind11::handle& program);

// The forward, then the backward, on the same inputs and the output gradient dO (Q's shape) ->
// {"dQ", "dK", "dV", the backward's tiles, traffic and FLOPs}.
pybind11::object run_backward(const std::string& algo, const pybind11::handle& Q, const pybind11::handle& K,
                              const pybind11::handle& V, const pybind11::handle& dO, const RunArgs& args,
                              const pybind11::handle& gpu, const pybind11::handle& program);

// Every step of the run (pass "fwd") or of the backward (pass "bwd", dO required), as dicts.
pybind11::object trace(const std::string& algo, const pybind11::handle& Q, const pybind11::handle& K,
                       const pybind11::handle& V, const pybind11::handle& dO, const RunArgs& args,
                       const pybind11::handle& gpu, const std::string& pass, const pybind11::handle& program);

}  // namespace fasim::python
