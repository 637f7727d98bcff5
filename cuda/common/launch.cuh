// Launch helpers.
//
//   launch_kernel(name, kernel, grid, block, smem, stream, args...)
//       checks the configuration against the device limits, launches, and checks the launch
//       (CUDA_CHECK_LAUNCH); raises the kernel's dynamic shared-memory limit first when smem > 48 KB.
//       Returns the kernel's registers per thread (what ptxas allocated; the simulator's occupancy
//       uses it for the kernel it models).
//   dynamic_smem()   (device) the block's dynamic shared memory, 16-byte aligned.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/check.hpp"

namespace fasim::cuda_detail {

__device__ __forceinline__ unsigned char* dynamic_smem() {
    extern __shared__ __align__(16) unsigned char fasim_dynamic_smem[];
    return fasim_dynamic_smem;
}

// cudaFuncSetAttribute(MaxDynamicSharedMemorySize) once per (device, kernel, size); needed above 48 KB.
inline void ensure_dynamic_smem(const void* kernel, std::size_t bytes) {
    if (bytes <= 48u * 1024u) return;
    static std::mutex mutex;
    static std::map<std::pair<int, const void*>, std::size_t> raised;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> lock(mutex);
    std::size_t& done = raised[{device, kernel}];
    if (done >= bytes) return;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    done = bytes;
}

// Registers per thread of a compiled kernel (cudaFuncGetAttributes), once per (device, kernel).
inline int kernel_registers(const void* kernel) {
    static std::mutex mutex;
    static std::map<std::pair<int, const void*>, int> known;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = known.find({device, kernel});
    if (it != known.end()) return it->second;
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    known[{device, kernel}] = attributes.numRegs;
    return attributes.numRegs;
}

template <typename... KArgs, typename... Args>
int launch_kernel(const char* name, void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem_bytes,
                   cudaStream_t stream, Args&&... args) {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535u || grid.z > 65535u ||
        block.x * block.y * block.z == 0 || block.x * block.y * block.z > 1024u) {
        throw std::runtime_error(std::string("launch of ") + name + ": bad configuration grid (" +
                                 std::to_string(grid.x) + "," + std::to_string(grid.y) + "," +
                                 std::to_string(grid.z) + ") block " + std::to_string(block.x * block.y * block.z) +
                                 ": grid.y and grid.z must be 1..65535 (batch*heads too large?)");
    }
    ensure_dynamic_smem(reinterpret_cast<const void*>(kernel), smem_bytes);
    const int registers = kernel_registers(reinterpret_cast<const void*>(kernel));
    kernel<<<grid, block, smem_bytes, stream>>>(std::forward<Args>(args)...);
    CUDA_CHECK_LAUNCH(name, stream);
    return registers;
}

}  // namespace fasim::cuda_detail
