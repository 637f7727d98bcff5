#include "model/measured_kernels.hpp"

namespace fasim {

std::optional<KernelModel> model_of_measured_kernel(std::string_view kernel, DType dtype) {
    KernelModel m;
    m.options.tensor_cores = false;  // fa-sim's own kernels compute on the CUDA cores...
    if (kernel == "standard_naive") {
        m.algo = Algo::standard;
        m.matmul = MatmulMode::naive;
    } else if (kernel == "standard_tiled") {
        m.algo = Algo::standard;
    } else if (kernel == "standard_cublas" || kernel == "torch_math") {
        m.algo = Algo::standard;  // cuBLAS GEMMs: tensor cores and large tiles for fp16/bf16 inputs
        m.options.tensor_cores = dtype != DType::fp32;
        // fp32 keeps the 64x64 tiles: cuBLAS's fp32 kernels have not been profiled (README of cuda/results).
        if (dtype != DType::fp32) m.matmul = MatmulMode::library;
    } else if (kernel == "tiled" || kernel == "fa1" || kernel == "fa2") {
        m.algo = *parse_algo(std::string(kernel));
    } else if (kernel == "fa2_tc" || kernel == "torch_flash") {
        m.algo = Algo::fa2;  // ...except the tensor-core FA2s (fa-sim's and PyTorch's)
        m.options.tensor_cores = true;
    } else if (kernel == "fa1_tc") {
        m.algo = Algo::fa1;  // ...and fa-sim's tensor-core FA1
        m.options.tensor_cores = true;
    } else {
        return std::nullopt;
    }
    return m;
}

}  // namespace fasim
