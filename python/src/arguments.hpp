// The module's keyword arguments as the simulator's types: the problem, the tile request, the GPU
// (a preset name or a Gpu handle), the algorithms and the pass. Bad values are UsageErrors with one
// line naming the value, what is allowed and a fix, like fa-sim's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "algorithms/algorithm.hpp"
#include "gpu/gpu_spec.hpp"
#include "model/runtime_model.hpp"
#include "model/simulation.hpp"
#include "problem/attention_problem.hpp"

namespace fasim::python {

struct ProblemArgs {
    std::int64_t N = 4096;
    std::optional<std::int64_t> Nk;        // None: N (self-attention)
    std::int64_t d = 64, heads = 16;
    std::optional<std::int64_t> kv_heads;  // None: heads (multi-head attention)
    std::int64_t batch = 1;
    std::string dtype = "fp16";
    bool causal = false;
};

struct TileArgs {
    std::optional<std::int64_t> Br, Bc, q_splits, kv_splits, registers;
    std::string matmul = "tiled";
    bool cuda_cores = false;
    std::string dq = "atomic";  // FA2's backward: 'atomic' or 'separate' (fa-sim --dq)
};

DType dtype_arg(const std::string& dtype);
AttentionProblem make_problem(const ProblemArgs& a);  // validated
TileRequest make_tile_request(const TileArgs& a);
ModelOptions make_model_options(const TileArgs& a);

// None: the default preset (A100-SXM4-40GB); a preset name (any case); a Gpu (load_gpu_file, gpu_from_dict).
GpuSpec gpu_arg(const pybind11::handle& gpu);

// The forward programs `algo` names and the passes to run: "fa2", "fa2_bwd" (fa2's backward), a list of
// ids, or "all" (as fa-sim --algo all picks them for this problem). pass: None (the forward, or the
// backward for a backward id), "fwd", "bwd" or "fwd+bwd".
struct Selection {
    std::vector<const Algorithm*> algos;
    PassSelection pass = PassSelection::fwd;
    bool several = false;  // "all" or a list: the answer is a whole report
};
Selection select_algorithms(const pybind11::handle& algo, const std::optional<std::string>& pass, const AttentionProblem& p,
                            bool sweep_of_nk = false);

// dq='separate' needs a backward pass of an algorithm that has the choice (fa2): UsageError otherwise.
void check_dq(const TileRequest& request, const Selection& s);

// One forward program by id, for the functional executor (a backward id names its forward: "fa2_bwd" is fa2).
const Algorithm& forward_algorithm(const std::string& id);

}  // namespace fasim::python
