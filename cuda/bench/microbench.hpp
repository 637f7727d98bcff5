// Microbenchmarks of the ceilings the runtime model needs, shared by peak-rates (prints them) and
// fa-calibrate (writes a GPU file from them). Each runs on device 0 and returns a rate measured there;
// they throw std::runtime_error on a CUDA error (common/check.hpp).
//   ffma         fp32 fused multiply-add on the CUDA cores, FLOP/s (2 per FFMA)
//   mma.sync     m16n8k16 fp16 / bf16 products with fp32 accumulation, FLOP/s (sm_80 and later): the
//                instruction FlashAttention-2 and cuda/kernels/fa2_tensor_core.cu issue; on Hopper it
//                does not reach the wgmma rate that cuBLAS uses, hence a ceiling of its own
//   exp2         ex2.approx.f32 (MUFU.EX2) results per second: the softmax's exponentials
//   L2 requests  ld.global.cg reads served by L2, a warp's 32 lanes spread over 32, 4, 2 or 1 lines per
//                load: the L2 looks up a request per line a load touches (cuda/results/README.md)
//   L2 read      bytes per second re-reading a buffer of 3/4 of L2 with 16-byte ld.global.cg loads
//   copy         device-to-device cudaMemcpyAsync of 1 GiB, best of 10, read + write bytes per second
//   DRAM streams bytes per second every SM reads (ld.global.cg, 4 16-byte loads in flight per thread) or
//                writes (16-byte stores) over 1 GiB once per launch: the two directions apart, where the copy
//                mixes them half and half (a GEMM writing S or reading P streams one way)
//   read once   seconds to read `bytes` once from DRAM, every SM reading, as fa-validate times a kernel: CUDA
//                events around the launch alone, L2 flushed before each run, median of 20. What one pass over
//                a decode step's K and V of that size costs at least, launch and ramp included
//   DRAM latency seconds per dependent load missing L2 (a random cycle over 4 x L2)
//   one block    bytes per second one block of `threads` threads streams from DRAM with 4 16-byte loads
//                in flight per thread: with the latency, the bytes in flight it sustains (Little's law)
//   launch       seconds per launch of 1000 empty kernels back to back
//   SM clock     cycles per second (clock64 over %globaltimer) of blocks running the mma.sync loop: on the
//                whole GPU once the clock has settled under that load, or as one block on an idle GPU
//   wgmma        Hopper's warpgroup products (sm_90a builds), FLOP/s, in fa2_wgmma's shapes: m64nNk16 with N = 64 or
//                128, A from shared memory (ss) or registers (rs), two warpgroups per SM each keeping one group of 4
//                in flight; 0 where the build or the GPU has no wgmma
//   warp slots   where the first warps of blocks sharing an SM land: per SM, how many of them the busiest
//                scheduler holds (1: one per scheduler; blocks_per_sm: all on one), and the time of a
//                launch whose first warps alone run FFMA chains (it grows with that count)
#pragma once

#include <cstddef>
#include <vector>

namespace fasim::bench {

struct L2Rate {
    int lines_per_load;
    double requests_per_s, sectors_per_s;
};

double ffma_flops_per_s(int sms);
double mma_sync_flops_per_s(int sms, bool bf16);
double exp2_per_s(int sms);
std::vector<L2Rate> l2_request_rates(int sms);  // 32, 4, 2 and 1 lines per warp load
double l2_read_bytes_per_s(int sms, std::size_t l2_bytes);
double copy_bytes_per_s();
double dram_stream_bytes_per_s(int sms, bool write);
double dram_read_once_seconds(int sms, std::size_t bytes, std::size_t l2_bytes);
double dram_latency_s(std::size_t l2_bytes);
double one_block_stream_bytes_per_s(int threads);
double launch_overhead_s();
double sm_clock_under_mma_hz(int sms, bool whole_gpu);

double wgmma_flops_per_s(int sms, int n, bool registers_a);

struct WarpSlots {
    int blocks_per_sm;  // asked for
    int fits;           // what the occupancy calculator gave for the shared memory chosen (the rest 0 unless equal)
    double first_warps_on_busiest_scheduler, schedulers_with_first_warps, seconds;
};
WarpSlots warp_slots(int sms, int blocks_per_sm, int threads);

}  // namespace fasim::bench
