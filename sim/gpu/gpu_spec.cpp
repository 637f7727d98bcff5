// Rates the runtime model uses: a ceiling measured on a real card where the preset
// has one, else the datasheet number. See gpu_spec.hpp.
#include "gpu_spec.hpp"

#include <cstdio>

namespace fasim {

namespace {

// A probe measured at d = 64 and d = 128 (the head dims the kernels are built for): which of the two a kernel
// at head dimension d takes, where both were measured.
bool nearer_d64(int d) { return d <= 64 + (128 - 64) / 2; }

// The measured value where present (> 0), else the datasheet value.
double prefer_measured(double measured_value, double datasheet_value) {
    return measured_value > 0 ? measured_value : datasheet_value;
}

}  // namespace

double GpuSpec::effective_fp32_flops() const {
    const double fraction = model.fp32_peak_fraction > 0 ? model.fp32_peak_fraction : 1.0;
    return prefer_measured(measured.fp32_flops, fraction * fp32_flops);
}

double GpuSpec::effective_hbm_bandwidth() const {
    return prefer_measured(measured.hbm_bandwidth, hbm_bandwidth);
}

double GpuSpec::effective_sfu_ops() const {
    return prefer_measured(measured.sfu_ops, sfu_ops);
}

double GpuSpec::l2_request_rate() const {
    return prefer_measured(measured.l2_requests, l2_bandwidth / model.l2_bytes_per_request);
}

const std::vector<double>& GpuSpec::Model::fa2_step_issue(int d) const {
    if (fa2_step_issue_d64.empty()) return fa2_step_issue_d128;
    if (fa2_step_issue_d128.empty()) return fa2_step_issue_d64;
    return nearer_d64(d) ? fa2_step_issue_d64 : fa2_step_issue_d128;
}

double GpuSpec::Model::fa2_bwd_step_issue(int d) const {
    if (fa2_bwd_step_issue_d64 <= 0) return fa2_bwd_step_issue_d128;
    if (fa2_bwd_step_issue_d128 <= 0) return fa2_bwd_step_issue_d64;
    return nearer_d64(d) ? fa2_bwd_step_issue_d64 : fa2_bwd_step_issue_d128;
}

double GpuSpec::step_issue_fraction(const std::vector<double>& table, double n) {
    if (table.empty() || !(n > 0)) return 0;
    if (n >= static_cast<double>(table.size())) return table.back();
    const auto below = static_cast<std::size_t>(n);  // entries hold n = 1, 2, ...: entry i is n = i + 1
    const double lo = below == 0 ? 0.0 : table[below - 1];
    return lo + (n - static_cast<double>(below)) * (table[below] - lo);
}

std::string GpuSpec::measured_ceilings_text() const {
    std::string out;
    auto add = [&](double v, const char* what, double scale, const char* unit) {
        if (!(v > 0)) return;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.3g %s", out.empty() ? "" : ", ", what, v / scale, unit);
        out += buf;
    };
    add(measured.hbm_bandwidth, "copy", 1e12, "TB/s");
    add(measured.tensor_fp16_flops, "GEMM fp16", 1e12, "TFLOP/s");
    add(measured.tensor_bf16_flops, "GEMM bf16", 1e12, "TFLOP/s");
    add(measured.mma_sync_fp16_flops, "mma.sync fp16", 1e12, "TFLOP/s");
    add(measured.mma_sync_bf16_flops, "mma.sync bf16", 1e12, "TFLOP/s");
    add(measured.fp32_flops, "FP32", 1e12, "TFLOP/s");
    add(measured.sfu_ops, "exp2", 1e12, "T/s");
    add(measured.l2_requests, "L2 requests", 1e9, "G/s");
    return out;
}

double GpuSpec::matmul_flops(DType dtype) const {
    switch (dtype) {
        case DType::fp16:
            if (measured.tensor_fp16_flops > 0) return measured.tensor_fp16_flops;
            // A GPU without fp16 tensor cores multiplies on the CUDA cores.
            return tensor_fp16_flops > 0 ? tensor_fp16_flops : effective_fp32_flops();
        case DType::bf16:
            if (measured.tensor_bf16_flops > 0) return measured.tensor_bf16_flops;
            // No bf16 tensor cores (T4, sm_75): bf16 operands are converted to fp32 and
            // multiplied on the CUDA cores, at the fp32 rate.
            return tensor_bf16_flops > 0 ? tensor_bf16_flops : effective_fp32_flops();
        case DType::fp32:
            // fp32 storage runs on the CUDA cores (no TF32), as the fp32 kernels in cuda/ do.
            return effective_fp32_flops();
    }
    return effective_fp32_flops();
}

double GpuSpec::mma_sync_flops(DType dtype) const {
    const double measured_rate = dtype == DType::fp16 ? measured.mma_sync_fp16_flops
                               : dtype == DType::bf16 ? measured.mma_sync_bf16_flops
                                                      : 0.0;
    if (measured_rate > 0) return measured_rate;
    const double datasheet = dtype == DType::fp16 ? tensor_fp16_flops : dtype == DType::bf16 ? tensor_bf16_flops : 0.0;
    // Not a share of a measured library rate: cuBLAS (wgmma) and mma.sync are different instructions.
    return datasheet > 0 ? model.mma_sync_peak_fraction * datasheet : matmul_flops(dtype);
}

}  // namespace fasim
