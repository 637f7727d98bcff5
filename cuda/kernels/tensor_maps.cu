// Tensor maps for the copy engine (kernels/tensor_maps.hpp).
#include "kernels/tensor_maps.hpp"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "common/check.hpp"

namespace fasim::cuda_detail {

namespace {

// cuTensorMapEncodeTiled, from the driver through the runtime (no link against libcuda).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(const char* kernel) {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found{};
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
        return found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn) : nullptr;
    }();
    if (encode == nullptr)
        throw std::runtime_error(std::string(kernel) + ": the driver has no cuTensorMapEncodeTiled (it needs a CUDA 12 driver or newer)");
    return encode;
}

}  // namespace

CUtensorMap tensor_map_16bit(const char* kernel, const void* data, int BH, int rows, int d, int box_rows, DType dtype) {
    CUtensorMap map{};
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(BH)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(d) * 2, static_cast<cuuint64_t>(rows) * d * 2};
    const cuuint32_t box[3] = {kTensorMapBoxCols, static_cast<cuuint32_t>(box_rows), 1};
    const cuuint32_t element_strides[3] = {1, 1, 1};
    const CUresult r = tensor_map_encoder(kernel)(
        &map, dtype == DType::fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3,
        const_cast<void*>(data), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error(std::string(kernel) + ": cuTensorMapEncodeTiled failed (CUresult " +
                                 std::to_string(static_cast<int>(r)) + ") for a " + std::to_string(BH) + " x " +
                                 std::to_string(rows) + " x " + std::to_string(d) + " tensor");
    return map;
}

}  // namespace fasim::cuda_detail
