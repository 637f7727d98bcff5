// Moving tensors between the host's float64 matrices and the device's storage
// dtype (fp32, fp16 or bf16 bits), shared by cuda-check and fa-validate.
#pragma once

#include <cstdint>
#include <vector>

#include "attention_reference.hpp"
#include "common/device_buffer.hpp"
#include "problem/dtype.hpp"

namespace fasim {

// splitmix64: decorrelates per-head seeds derived from one base seed.
std::uint64_t mix_seed(std::uint64_t x);

// Storage bits of matrices already representable in the dtype, concatenated (heads in order).
std::vector<unsigned char> to_storage(const std::vector<reference::Matrix>& heads, DType dtype);
// The inverse for `count` elements starting at element `offset` of a device buffer.
std::vector<double> download_storage(const DeviceBuffer& buffer, std::size_t offset, std::size_t count, DType dtype);
std::vector<float> download_floats(const DeviceBuffer& buffer, std::size_t offset, std::size_t count);
void upload(const DeviceBuffer& buffer, const std::vector<unsigned char>& bytes);
// Fills a buffer with 0xff bytes (NaN in every dtype): unwritten outputs show up.
void poison(const DeviceBuffer& buffer);

}  // namespace fasim
