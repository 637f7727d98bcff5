#include "model/measured_kernels.hpp"

namespace fasim {

std::optional<KernelModel> model_of_measured_kernel(std::string_view kernel, DType dtype) {
    KernelModel m;
    m.options.tensor_cores = false;  // fa-sim's own kernels compute on the CUDA cores...
    if (kernel == "standard_naive") {
        m.algo = &algorithm("standard");
        m.matmul = MatmulMode::naive;
    } else if (kernel == "standard_tiled") {
        m.algo = &algorithm("standard");
    } else if (kernel == "standard_cublas" || kernel == "torch_math") {
        m.algo = &algorithm("standard");  // cuBLAS GEMMs: large tiles; tensor cores for fp16/bf16 inputs
        m.options.tensor_cores = dtype != DType::fp32;
        m.matmul = MatmulMode::library;
    } else if (kernel == "tiled" || kernel == "fa1" || kernel == "fa2") {
        m.algo = &algorithm(kernel);
    } else if (kernel == "fa2_tc") {
        m.algo = &algorithm("fa2");  // ...except the tensor-core FA2s (fa-sim's and PyTorch's)
        m.options.tensor_cores = true;
    } else if (kernel == "torch_flash") {
        m.algo = &algorithm("fa2");
        m.options.tensor_cores = true;
        // PyTorch 2.11's flash_fwd_kernel on sm_90, d = 64 and 128: 255 registers per thread, two
        // 4-warp blocks per SM (ncu launch__registers_per_thread, cuda/results/2026-11-25-h200/profile*/raw_torch_flash.csv).
        m.registers_per_thread = 255;
    } else if (kernel == "fa1_tc") {
        m.algo = &algorithm("fa1");  // ...and fa-sim's tensor-core FA1
        m.options.tensor_cores = true;
    } else {
        return std::nullopt;
    }
    return m;
}

MeasuredLaunch measured_launch(const nlohmann::json& result) {
    MeasuredLaunch l;
    const auto launches = result.find("launches");
    if (launches == result.end() || !launches->is_array() || launches->empty() || !launches->back().is_object()) return l;
    const nlohmann::json& main = launches->back();
    auto integer = [&](const char* key) -> std::int64_t {
        const auto it = main.find(key);
        return it != main.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
    };
    l.Br = integer("Br");
    l.Bc = integer("Bc");
    l.q_splits = integer("q_splits");
    l.registers_per_thread = static_cast<int>(integer("registers_per_thread"));
    return l;
}

TileRequest measured_tile_request(const KernelModel& model, const MeasuredLaunch& launch) {
    TileRequest req;
    req.matmul = model.matmul;
    if (model.algo->tunable_tiles) {
        if (launch.Br > 0) req.Br = launch.Br;
        if (launch.Bc > 0) req.Bc = launch.Bc;
        if (model.algo->q_splits && launch.q_splits > 1) req.q_splits = launch.q_splits;
        req.registers_per_thread = launch.registers_per_thread > 0 ? launch.registers_per_thread : model.registers_per_thread;
    }
    return req;
}

}  // namespace fasim
