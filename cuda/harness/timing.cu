// Event timing with warm-up, L2 flushing and the median of several runs. See timing.hpp.
#include "harness/timing.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/check.hpp"

namespace fasim {

namespace {

// Destroys the two events even when the timed work throws.
struct EventPair {
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    EventPair() {
        CUDA_CHECK(cudaEventCreate(&start));
        CUDA_CHECK(cudaEventCreate(&stop));
    }
    ~EventPair() {
        (void)cudaEventDestroy(start);
        (void)cudaEventDestroy(stop);
    }
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;
};

// Every thread sums strided 16-byte words; the sum is stored only in the impossible case that it
// equals `never`, so the loads cannot be optimised away and nothing is written.
__global__ void l2_flush_read_kernel(const int4* __restrict__ buffer, std::size_t words, int never, int* sink) {
    int acc = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words; i += stride) {
        const int4 v = __ldcg(buffer + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == never) *sink = acc;
}

}  // namespace

L2Flusher::L2Flusher() {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    int l2 = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    const std::size_t bytes = std::max<std::size_t>(2u * static_cast<std::size_t>(l2), 64u << 20);
    buffer_ = DeviceBuffer(bytes);
    sink_ = DeviceBuffer(sizeof(int));
    CUDA_CHECK(cudaMemset(buffer_.get(), 0, bytes));  // defined contents: all zero, so acc is 0
    CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush(cudaStream_t stream) {
    l2_flush_read_kernel<<<static_cast<unsigned>(sms_ * 8), 256, 0, stream>>>(
        static_cast<const int4*>(buffer_.get()), buffer_.bytes() / sizeof(int4), /*never=*/1, static_cast<int*>(sink_.get()));
    CUDA_CHECK(cudaGetLastError());
}

TimingResult time_gpu(const std::function<void(cudaStream_t)>& work, cudaStream_t stream,
                      const TimingOptions& options) {
    if (options.runs < 1 || options.warmup < 0) {
        throw std::invalid_argument("time_gpu: runs must be >= 1 and warmup >= 0");
    }
    for (int i = 0; i < options.warmup; ++i) work(stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));

    L2Flusher flusher;
    EventPair ev;
    TimingResult r;
    r.runs = options.runs;
    for (int i = 0; i < options.runs; ++i) {
        if (options.flush_l2) flusher.flush(stream);
        CUDA_CHECK(cudaEventRecord(ev.start, stream));
        work(stream);
        CUDA_CHECK(cudaEventRecord(ev.stop, stream));
        CUDA_CHECK(cudaEventSynchronize(ev.stop));
        float ms = 0.f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, ev.start, ev.stop));
        r.samples_ms.push_back(static_cast<double>(ms));
    }
    std::vector<double> sorted = r.samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    r.median_ms = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    r.min_ms = sorted.front();
    r.max_ms = sorted.back();
    return r;
}

}  // namespace fasim
