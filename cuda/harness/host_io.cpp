#include "harness/host_io.hpp"

#include <cstring>
#include <stdexcept>

#include "precision.hpp"

namespace fasim {

std::uint64_t mix_seed(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

std::vector<unsigned char> to_storage(const std::vector<reference::Matrix>& heads, DType dtype) {
    const std::size_t e = static_cast<std::size_t>(dtype_bytes(dtype));
    std::size_t n = 0;
    for (const auto& A : heads) n += static_cast<std::size_t>(A.size());
    std::vector<unsigned char> out(n * e);
    std::size_t at = 0;
    for (const auto& A : heads)
        for (Eigen::Index i = 0; i < A.size(); ++i, at += e) {
            const float f = static_cast<float>(A.data()[i]);  // row-major, as on the device
            if (dtype == DType::fp32) {
                std::memcpy(&out[at], &f, 4);
            } else {
                const std::uint16_t h =
                    dtype == DType::fp16 ? reference::float_to_fp16_bits(f) : reference::float_to_bf16_bits(f);
                std::memcpy(&out[at], &h, 2);
            }
        }
    return out;
}

std::vector<double> download_storage(const DeviceBuffer& buffer, std::size_t offset, std::size_t count, DType dtype) {
    const std::size_t e = static_cast<std::size_t>(dtype_bytes(dtype));
    if ((offset + count) * e > buffer.bytes()) throw std::out_of_range("download_storage: beyond the buffer");
    std::vector<unsigned char> bytes(count * e);
    CUDA_CHECK(cudaMemcpy(bytes.data(), buffer.as<unsigned char>() + offset * e, bytes.size(), cudaMemcpyDeviceToHost));
    std::vector<double> out(count);
    for (std::size_t i = 0; i < count; ++i) {
        if (dtype == DType::fp32) {
            float f;
            std::memcpy(&f, &bytes[i * 4], 4);
            out[i] = f;
        } else {
            std::uint16_t h;
            std::memcpy(&h, &bytes[i * 2], 2);
            out[i] = dtype == DType::fp16 ? reference::fp16_bits_to_float(h) : reference::bf16_bits_to_float(h);
        }
    }
    return out;
}

std::vector<float> download_floats(const DeviceBuffer& buffer, std::size_t offset, std::size_t count) {
    if ((offset + count) * sizeof(float) > buffer.bytes()) throw std::out_of_range("download_floats: beyond the buffer");
    std::vector<float> v(count);
    CUDA_CHECK(cudaMemcpy(v.data(), buffer.as<float>() + offset, count * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
}

void upload(const DeviceBuffer& buffer, const std::vector<unsigned char>& bytes) {
    if (bytes.size() > buffer.bytes()) throw std::out_of_range("upload: more bytes than the buffer holds");
    CUDA_CHECK(cudaMemcpy(buffer.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
}

void poison(const DeviceBuffer& buffer) {
    if (buffer) CUDA_CHECK(cudaMemset(buffer.get(), 0xff, buffer.bytes()));
}

}  // namespace fasim
