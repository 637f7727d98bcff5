// How the simulator models each kernel that fa-validate (cuda/) and torch_sdpa.py time: which
// tile program, which matrix-product mode, tensor cores or not, and what the run recorded of the
// kernel (its tiles, FA1's Q splits, its registers). One table and one request builder, used
// wherever a measurement is put beside a prediction (fa-validate, the predicted-vs-measured
// figure, lesson 09, the CI test against cuda/results/), so that they cannot disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "algorithms/algorithm.hpp"
#include "model/runtime_model.hpp"

namespace fasim {

struct KernelModel {
    const Algorithm* algo = nullptr;
    MatmulMode matmul = MatmulMode::tiled;
    ModelOptions options;  // tensor_cores: false for fa-sim's CUDA-core kernels
    // Registers per thread known for a kernel whose runs do not record them (PyTorch's); 0 = none.
    int registers_per_thread = 0;
};

// nullopt for a kernel name the table does not know.
std::optional<KernelModel> model_of_measured_kernel(std::string_view kernel, DType dtype);

// What a measurement recorded of the attention kernel it timed (fa-validate's "launches", the last
// one: fa1's init kernel comes first). 0 = not recorded.
struct MeasuredLaunch {
    std::int64_t Br = 0, Bc = 0;
    std::int64_t q_splits = 0;     // fa1_tc: blocks per batch*head
    int registers_per_thread = 0;  // what ptxas allocated
};

// The "launches" of one fa-validate result (JSON); all zero when there are none (torch_sdpa.py).
MeasuredLaunch measured_launch(const nlohmann::json& result);

// The tile request that simulates the kernel as it ran: its tiles and Q splits (not for standard
// attention, whose GEMM tiles are the model's), its registers (recorded, else the table's).
TileRequest measured_tile_request(const KernelModel& model, const MeasuredLaunch& launch);

}  // namespace fasim
