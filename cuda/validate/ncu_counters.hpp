// Reading hardware counters of one configuration with Nsight Compute, and putting
// the simulator's bytes for the same level beside them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/simulation.hpp"

namespace fasim {

// Bytes of one kernel at each level. L2 is read at two points: where the SMs exchange sectors with
// the L2 fabric (l1tex__m_xbar2l1tex_read_sectors / l1tex__m_l1tex2xbar_write_sectors: what the
// simulator's L2 level counts) and at the L2 slices (lts__t_sectors_srcunit_tex_*), which on Hopper
// see fewer read sectors than the SMs requested: the L2 request coalescer (LRC) merges identical
// reads issued close together by different SMs (docs/model.md).
struct NcuKernel {
    std::string name;
    double dram_read = 0, dram_write = 0;  // bytes
    double l2_read = 0, l2_write = 0;      // bytes: sectors between the SMs and L2, x 32
    double l2_slice_read = 0, l2_slice_write = 0;  // bytes: sectors looked up in the L2 slices, x 32
    double smem = -1;                      // bytes of shared-memory loads and stores (-1: metric unavailable)
    bool flush = false;                    // the read-only L2 flush of the profiling harness
};

struct NcuMeasurement {
    std::vector<NcuKernel> kernels;
    std::string error;  // why nothing was measured
    std::string command;
};

// Runs `ncu --cache-control none --replay-mode application` on the child (fa-validate --profile-one),
// which flushes L2 by reading before and after the kernels (kernels before the first flush are set-up,
// e.g. the forward a backward kernel reads, and are not counted). The attention kernels' bytes are summed;
// the DRAM writes of the flush that follows them are their write-back of dirty lines, added to their
// DRAM writes (a write-back L2 holds up to its size in dirty data when a kernel ends).
// Metrics: dram__bytes_read/write.sum, l1tex__m_xbar2l1tex_read_sectors.sum,
// l1tex__m_l1tex2xbar_write_sectors.sum, lts__t_sectors_srcunit_tex_op_read/write.sum,
// smsp__sass_data_bytes_mem_shared.sum (dropped if this ncu lacks it).
NcuMeasurement run_ncu(const std::string& ncu, const std::string& child_command);
// Parses `ncu --csv --page raw --print-units base` output (exposed for tests).
NcuMeasurement parse_ncu_csv(const std::string& text);

nlohmann::json ncu_json(const NcuMeasurement& m, const AlgorithmResult& predicted);
std::string ncu_summary(const NcuMeasurement& m, const AlgorithmResult& predicted);

}  // namespace fasim
