// Event timing of GPU work on one stream.
//
//   TimingResult r = time_gpu([&](cudaStream_t s) { run_attention(algo, problem, tensors, s); }, stream);
//
// Warm-up runs first (module load, cuBLAS handle creation, first-touch effects stay out of the numbers);
// then `runs` timed runs, each preceded (outside the timed region) by an L2 flush: a read of a buffer
// of at least twice the device's L2 size, so that no run finds its inputs in L2. A read, not a
// write: a written buffer would leave L2 full of dirty lines whose write-back the timed kernel would
// pay for; a read evicts the previous run's dirty lines (their write-back happens here, outside the
// timed region) and leaves only clean lines behind. Each run is timed
// with CUDA events around the work alone. Reports the median, min and max in milliseconds.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "common/device_buffer.hpp"

namespace fasim {

struct TimingOptions {
    int warmup = 3;
    int runs = 20;
    bool flush_l2 = true;
};

struct TimingResult {
    double median_ms = 0;
    double min_ms = 0;
    double max_ms = 0;
    int runs = 0;
    std::vector<double> samples_ms;  // in run order
};

// Reads a buffer of at least 2x the L2 size of the current device (kernel "l2_flush_read_kernel":
// fa-validate's ncu mode finds it by that name and counts its DRAM writes as the write-back of the
// kernel profiled just before it).
class L2Flusher {
public:
    L2Flusher();
    void flush(cudaStream_t stream);
    std::size_t bytes() const { return buffer_.bytes(); }

private:
    DeviceBuffer buffer_;
    DeviceBuffer sink_;
    int sms_ = 1;
};

TimingResult time_gpu(const std::function<void(cudaStream_t)>& work, cudaStream_t stream,
                      const TimingOptions& options = {});

}  // namespace fasim
