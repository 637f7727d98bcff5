// How the simulator models each kernel that fa-validate (cuda/) and torch_sdpa.py time: which
// tile program, which matrix-product mode, tensor cores or not. One table, used wherever a
// measurement is put beside a prediction (fa-validate, the predicted-vs-measured figure, the CI
// test against cuda/results/), so that they cannot disagree.
#pragma once

#include <optional>
#include <string_view>

#include "algorithms/algorithm.hpp"
#include "model/runtime_model.hpp"

namespace fasim {

struct KernelModel {
    Algo algo = Algo::fa2;
    MatmulMode matmul = MatmulMode::tiled;
    ModelOptions options;  // tensor_cores: false for fa-sim's CUDA-core kernels
};

// nullopt for a kernel name the table does not know.
std::optional<KernelModel> model_of_measured_kernel(std::string_view kernel, DType dtype);

}  // namespace fasim
