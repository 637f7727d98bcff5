// RAII owner of one device allocation (cudaMalloc; never managed memory). Move-only.
// Host-only header.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "common/check.hpp"

namespace fasim {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
        if (bytes_ > 0) CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
    }
    ~DeviceBuffer() { reset(); }

    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& other) noexcept
        : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
    DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
        if (this != &other) {
            reset();
            ptr_ = std::exchange(other.ptr_, nullptr);
            bytes_ = std::exchange(other.bytes_, 0);
        }
        return *this;
    }

    // Frees now (errors are ignored here: a destructor must not throw, and a sticky
    // error will surface at the next checked call).
    void reset() noexcept {
        if (ptr_ != nullptr) (void)cudaFree(ptr_);
        ptr_ = nullptr;
        bytes_ = 0;
    }

    void* get() const { return ptr_; }
    template <typename T>
    T* as() const { return static_cast<T*>(ptr_); }
    std::size_t bytes() const { return bytes_; }
    explicit operator bool() const { return ptr_ != nullptr; }

private:
    void* ptr_ = nullptr;
    std::size_t bytes_ = 0;
};

}  // namespace fasim
