// Reading hardware counters of one configuration with Nsight Compute, and putting
// the simulator's bytes for the same level beside them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/simulation.hpp"

namespace fasim {

struct NcuKernel {
    std::string name;
    double dram_read = 0, dram_write = 0;  // bytes
    double l2_read = 0, l2_write = 0;      // bytes: L2 sectors requested by the SMs x 32
    double smem = -1;                      // bytes of shared-memory loads and stores (-1: metric unavailable)
};

struct NcuMeasurement {
    std::vector<NcuKernel> kernels;
    std::string error;  // why nothing was measured
    std::string command;
};

// The metrics: dram__bytes_read.sum, dram__bytes_write.sum, lts__t_sectors_srcunit_tex_op_read.sum,
// lts__t_sectors_srcunit_tex_op_write.sum, smsp__sass_data_bytes_mem_shared.sum (dropped if this ncu lacks it).
NcuMeasurement run_ncu(const std::string& ncu, const std::string& child_command);
// Parses `ncu --csv --page raw --print-units base` output (exposed for tests).
NcuMeasurement parse_ncu_csv(const std::string& text);

nlohmann::json ncu_json(const NcuMeasurement& m, const AlgorithmResult& predicted);
std::string ncu_summary(const NcuMeasurement& m, const AlgorithmResult& predicted);

}  // namespace fasim
