// Error checking for every CUDA runtime call and every kernel launch.
//
//   CUDA_CHECK(cudaMalloc(&p, n));      throws std::runtime_error "file:line: CUDA error <name> (<text>) in <expr>"
//   CUDA_CHECK_LAUNCH("fa2", stream);   after a launch: the launch error, and with FASIM_CUDA_SYNC=1 in the
//                                       environment also the kernel's own fault (synchronizes the stream), so
//                                       that an illegal address is blamed on the launch that caused it.
//
// Host-only header: usable from .cpp files compiled by the host compiler.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace fasim::cuda_detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": CUDA error " +
                             cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") in " + what);
}

// True when FASIM_CUDA_SYNC is set to something other than "0": every launch is followed by a
// stream synchronization (slow; for debugging and for compute-sanitizer runs).
inline bool sync_after_launch() {
    static const bool on = [] {
        const char* v = std::getenv("FASIM_CUDA_SYNC");
        return v != nullptr && std::string(v) != "0" && std::string(v) != "";
    }();
    return on;
}

inline void check_launch(const char* kernel_name, cudaStream_t stream, const char* file, int line) {
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        throw_cuda_error(err, (std::string("launch of ") + kernel_name).c_str(), file, line);
    }
    if (sync_after_launch()) {
        const cudaError_t err2 = cudaStreamSynchronize(stream);
        if (err2 != cudaSuccess) {
            throw_cuda_error(err2, (std::string("kernel ") + kernel_name).c_str(), file, line);
        }
    }
}

}  // namespace fasim::cuda_detail

#define CUDA_CHECK(expr)                                                               \
    do {                                                                               \
        const cudaError_t fasim_err_ = (expr);                                         \
        if (fasim_err_ != cudaSuccess) {                                               \
            ::fasim::cuda_detail::throw_cuda_error(fasim_err_, #expr, __FILE__, __LINE__); \
        }                                                                              \
    } while (0)

#define CUDA_CHECK_LAUNCH(kernel_name, stream) \
    ::fasim::cuda_detail::check_launch((kernel_name), (stream), __FILE__, __LINE__)
