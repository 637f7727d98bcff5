// Storage precisions the product supports. Arithmetic is always fp32 or better
// (fp32 accumulation); the dtype says how tensors are stored in memory. The one header that the
// reference (reference/), the simulator and the CUDA kernels all share (target fasim_dtype).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fasim {

enum class DType { fp32, fp16, bf16 };

constexpr std::int64_t dtype_bytes(DType t) { return t == DType::fp32 ? 4 : 2; }

constexpr const char* dtype_name(DType t) {
    switch (t) {
        case DType::fp32: return "fp32";
        case DType::fp16: return "fp16";
        case DType::bf16: return "bf16";
    }
    return "?";
}

inline std::optional<DType> parse_dtype(std::string_view s) {
    if (s == "fp32") return DType::fp32;
    if (s == "fp16") return DType::fp16;
    if (s == "bf16") return DType::bf16;
    return std::nullopt;
}

}  // namespace fasim
