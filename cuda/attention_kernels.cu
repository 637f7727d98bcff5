// Host side of the CUDA kernels: problem validation, tensor allocation, tile choice and dispatch.
// See attention_kernels.hpp for the API and what each algorithm writes.
#include "attention_kernels.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/check.hpp"
#include "kernels/launchers.hpp"

namespace fasim {

namespace {

// The launch table: catalog name -> the entry its kernel file registered.
std::map<std::string, cuda_detail::RegisteredKernel, std::less<>>& launch_table() {
    static std::map<std::string, cuda_detail::RegisteredKernel, std::less<>> table;
    return table;
}

}  // namespace

namespace cuda_detail {

KernelRegistration::KernelRegistration(std::string_view catalog_name, KernelEntry entry, KernelTiles tiles) {
    const KernelVariant* k = find_kernel(catalog_name);
    if (k == nullptr || !k->in_repository ||
        !launch_table().emplace(std::string(catalog_name), RegisteredKernel{entry, tiles}).second) {
        std::fprintf(stderr, "fasim_cuda: kernel '%.*s' is %s\n", static_cast<int>(catalog_name.size()), catalog_name.data(),
                     k == nullptr || !k->in_repository ? "not a row of this repository in sim/kernels/kernel_catalog.cpp"
                                                       : "registered twice");
        std::abort();
    }
}

RegisteredKernel registered_kernel(std::string_view catalog_name) {
    const auto it = launch_table().find(catalog_name);
    return it == launch_table().end() ? RegisteredKernel{} : it->second;
}

std::vector<std::string> registered_kernel_names() {
    std::vector<std::string> names;
    for (const auto& [name, kernel] : launch_table()) names.push_back(name);
    return names;
}

}  // namespace cuda_detail

std::vector<const KernelVariant*> cuda_kernels() {
    std::vector<const KernelVariant*> out;
    for (const KernelVariant& k : kernel_catalog())
        if (k.in_repository) out.push_back(&k);
    return out;
}

std::string cuda_kernel_names() {
    std::string s;
    for (const KernelVariant* k : cuda_kernels()) s += (s.empty() ? "" : ", ") + std::string(k->name);
    return s;
}

const KernelVariant& cuda_kernel(std::string_view name) {
    const KernelVariant* k = find_kernel(name);
    if (k == nullptr || !k->in_repository)
        throw std::invalid_argument("'" + std::string(name) + "' is not one of fa-sim's CUDA kernels: choose " +
                                    cuda_kernel_names() + ". Fix: pass one of those names");
    return *k;
}

namespace {

std::size_t elem_bytes(DType t) { return static_cast<std::size_t>(dtype_bytes(t)); }

void require(bool ok, const std::string& what, const std::string& allowed, const std::string& fix) {
    if (!ok) throw std::invalid_argument(what + ": " + allowed + ". Fix: " + fix);
}

}  // namespace

namespace cuda_detail {

std::size_t device_smem_per_block() {
    static std::mutex mutex;
    static std::map<int, std::size_t> cache;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(device);
    if (it != cache.end()) return it->second;
    int optin = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const std::size_t bytes = static_cast<std::size_t>(optin);
    cache.emplace(device, bytes);
    return bytes;
}

int device_sm_count() {
    static std::mutex mutex;
    static std::map<int, int> cache;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(device);
    if (it != cache.end()) return it->second;
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    cache.emplace(device, sms);
    return sms;
}

int device_compute_capability() {
    int device = 0;
    int major = 0;
    int minor = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return 10 * major + minor;
}

void check_buffer(const DeviceBuffer& buf, std::size_t need, const char* name, std::string_view kernel) {
    if (!buf || buf.bytes() < need) {
        throw std::invalid_argument(std::string(kernel) + ": tensor " + name + " has " + std::to_string(buf.bytes()) +
                                    " bytes, needs " + std::to_string(need) +
                                    ". Fix: allocate the tensors with allocate_tensors(problem, kernel).");
    }
}

FlashArgs flash_args(const CudaProblem& p, const DeviceTensors& t, std::string_view kernel) {
    const std::size_t e = elem_bytes(p.dtype), BH = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.H);
    const std::size_t BKV = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.kv_heads());
    const std::size_t q_bytes = BH * static_cast<std::size_t>(p.N) * static_cast<std::size_t>(p.d) * e;
    const std::size_t kv_bytes = BKV * static_cast<std::size_t>(p.Nk) * static_cast<std::size_t>(p.d) * e;
    check_buffer(t.Q, q_bytes, "Q", kernel);
    check_buffer(t.K, kv_bytes, "K", kernel);
    check_buffer(t.V, kv_bytes, "V", kernel);
    check_buffer(t.O, q_bytes, "O", kernel);
    FlashArgs f;
    f.dtype = p.dtype;
    f.d = p.d;
    f.Q = t.Q.get();
    f.K = t.K.get();
    f.V = t.V.get();
    f.O = t.O.get();
    f.BH = p.B * p.H;
    f.H = p.H;
    f.KV = p.kv_heads();
    f.N = p.N;
    f.Nk = p.Nk;
    f.causal = p.causal;
    f.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d)));
    return f;
}

namespace {
std::size_t row_bytes(const CudaProblem& p) {
    return static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.H) * static_cast<std::size_t>(p.N) * sizeof(float);
}
}  // namespace

void set_lse(FlashArgs& f, const CudaProblem& p, const DeviceTensors& t, std::string_view kernel) {
    check_buffer(t.LSE, row_bytes(p), "LSE", kernel);
    f.lse = t.LSE.as<float>();
}

void set_fa1_state(FlashArgs& f, const CudaProblem& p, const DeviceTensors& t, std::string_view kernel) {
    check_buffer(t.m, row_bytes(p), "m", kernel);
    check_buffer(t.l, row_bytes(p), "l", kernel);
    f.m = t.m.as<float>();
    f.l = t.l.as<float>();
    if (p.dtype != DType::fp32) {
        check_buffer(t.O_acc, row_bytes(p) * static_cast<std::size_t>(p.d), "O_acc", kernel);
        f.o_acc = t.O_acc.as<float>();
    }
}

BackwardArgs backward_args(const CudaProblem& p, const DeviceTensors& t, std::string_view kernel) {
    const std::size_t e = elem_bytes(p.dtype), BH = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.H);
    const std::size_t BKV = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.kv_heads());
    const std::size_t q_elems = BH * static_cast<std::size_t>(p.N) * static_cast<std::size_t>(p.d);
    const std::size_t kv_elems = BKV * static_cast<std::size_t>(p.Nk) * static_cast<std::size_t>(p.d);
    for (const auto& [buf, name] : {std::pair{&t.Q, "Q"}, {&t.O, "O"}, {&t.dO, "dO"}, {&t.dQ, "dQ"}})
        check_buffer(*buf, q_elems * e, name, kernel);
    for (const auto& [buf, name] : {std::pair{&t.K, "K"}, {&t.V, "V"}, {&t.dK, "dK"}, {&t.dV, "dV"}})
        check_buffer(*buf, kv_elems * e, name, kernel);
    check_buffer(t.LSE, row_bytes(p), "LSE", kernel);
    check_buffer(t.D, row_bytes(p), "D", kernel);
    check_buffer(t.dQ_acc, q_elems * sizeof(float), "dQ_acc", kernel);
    BackwardArgs b;
    if (p.grouped()) {  // each query head's dK, dV, summed over the group afterwards
        const std::size_t expanded = BH * static_cast<std::size_t>(p.Nk) * static_cast<std::size_t>(p.d) * e;
        check_buffer(t.dK_expanded, expanded, "dK_expanded", kernel);
        check_buffer(t.dV_expanded, expanded, "dV_expanded", kernel);
        b.dk_expanded = t.dK_expanded.get();
        b.dv_expanded = t.dV_expanded.get();
    }
    b.dtype = p.dtype;
    b.d = p.d;
    b.Q = t.Q.get();
    b.K = t.K.get();
    b.V = t.V.get();
    b.O = t.O.get();
    b.dO = t.dO.get();
    b.lse = t.LSE.as<float>();
    b.dQ = t.dQ.get();
    b.dK = t.dK.get();
    b.dV = t.dV.get();
    b.D = t.D.as<float>();
    b.dq_acc = t.dQ_acc.as<float>();
    b.BH = p.B * p.H;
    b.H = p.H;
    b.KV = p.kv_heads();
    b.N = p.N;
    b.Nk = p.Nk;
    b.causal = p.causal;
    b.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d)));
    return b;
}

CudaLaunchInfo run_standard(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream, GemmLauncher gemm,
                            std::string_view kernel) {
    const std::size_t e = elem_bytes(p.dtype);
    const int BH = p.B * p.H;
    const std::size_t q_bytes = static_cast<std::size_t>(BH) * p.N * p.d * e;
    const std::size_t kv_bytes = static_cast<std::size_t>(BH) * p.Nk * p.d * e;
    const std::size_t s_bytes = static_cast<std::size_t>(BH) * p.N * p.Nk * e;
    check_buffer(t.Q, q_bytes, "Q", kernel);
    check_buffer(t.K, kv_bytes, "K", kernel);
    check_buffer(t.V, kv_bytes, "V", kernel);
    check_buffer(t.O, q_bytes, "O", kernel);
    check_buffer(t.S, s_bytes, "S", kernel);
    check_buffer(t.P, s_bytes, "P", kernel);
    CudaLaunchInfo info;
    GemmArgs qk;  // S = scale * Q K^T
    qk.dtype = p.dtype;
    qk.A = t.Q.get();
    qk.B = t.K.get();
    qk.C = t.S.get();
    qk.M = p.N;
    qk.N = p.Nk;
    qk.K = p.d;
    qk.alpha = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d)));
    qk.strideA = static_cast<long long>(p.N) * p.d;
    qk.strideB = static_cast<long long>(p.Nk) * p.d;
    qk.strideC = static_cast<long long>(p.N) * p.Nk;
    qk.batch = BH;
    qk.trans_b = true;
    info.kernels.push_back(gemm(qk, stream));

    SoftmaxArgs sm;  // P = softmax(S)
    sm.dtype = p.dtype;
    sm.S = t.S.get();
    sm.P = t.P.get();
    sm.rows = static_cast<long long>(BH) * p.N;
    sm.N = p.N;
    sm.Nk = p.Nk;
    sm.causal = p.causal;
    sm.smem_per_block = device_smem_per_block();
    info.kernels.push_back(launch_softmax(sm, stream));

    GemmArgs pv;  // O = P V
    pv.dtype = p.dtype;
    pv.A = t.P.get();
    pv.B = t.V.get();
    pv.C = t.O.get();
    pv.M = p.N;
    pv.N = p.d;
    pv.K = p.Nk;
    pv.alpha = 1.f;
    pv.strideA = static_cast<long long>(p.N) * p.Nk;
    pv.strideB = static_cast<long long>(p.Nk) * p.d;
    pv.strideC = static_cast<long long>(p.N) * p.d;
    pv.batch = BH;
    pv.trans_b = false;
    info.kernels.push_back(gemm(pv, stream));
    return info;
}

}  // namespace cuda_detail

void validate_problem(const CudaProblem& p) {
    require(p.B >= 1, "B = " + std::to_string(p.B) + " is out of range", "B must be >= 1", "pass a positive batch");
    require(p.H >= 1, "H = " + std::to_string(p.H) + " is out of range", "H must be >= 1", "pass a positive head count");
    require(p.N >= 1 && p.N <= (1 << 24), "N = " + std::to_string(p.N) + " is out of range", "N must be 1..16777216",
            "pass a positive query length");
    require(p.Nk >= 1 && p.Nk <= (1 << 24), "Nk = " + std::to_string(p.Nk) + " is out of range",
            "Nk must be 1..16777216", "pass a positive key length");
    require(p.d == 32 || p.d == 64 || p.d == 128, "d = " + std::to_string(p.d) + " has no CUDA kernel",
            "d must be 32, 64 or 128", "pass d = 32, 64 or 128");
    const long long bh = static_cast<long long>(p.B) * p.H;
    require(bh <= 65535, "B*H = " + std::to_string(bh) + " is out of range",
            "B*H must be <= 65535 (grid y/z limit)", "use fewer heads or batches per call");
    require(p.KV >= 0 && p.KV <= p.H && (p.KV == 0 || p.H % p.KV == 0),
            "KV = " + std::to_string(p.KV) + " does not divide H = " + std::to_string(p.H),
            "KV must be a divisor of H (1: multi-query attention, H: multi-head attention; 0 means H)",
            "pass KV = 1, a divisor of H, or 0");
    require(p.kv_splits >= 0, "kv_splits = " + std::to_string(p.kv_splits) + " is out of range",
            "kv_splits must be >= 0 (0: the heuristic)", "pass 0, or the number of splits of the keys");
}

std::string cuda_kernel_unsupported(const KernelVariant& kernel, const CudaProblem& p) {
    if (std::string why = kernel.unsupported(p.dtype, p.d, "--algo"); !why.empty()) return why;
    const std::string name(kernel.name);
    const Algorithm& algo = algorithm(kernel.algorithm);
    if (p.grouped() && !kernel.grouped_kv)
        return name + " has no grouped-query kernel: KV = " + std::to_string(p.kv_heads()) + " K/V heads differ from H = " +
               std::to_string(p.H) + " query heads, and it reads one K/V head per query head. Fix: pass KV = H (or 0), "
               "or use --algo flash_decoding";
    if (p.kv_splits != 0 && !algo.kv_splits)
        return "kv_splits = " + std::to_string(p.kv_splits) + " does not apply to " + name +
               ": only flash_decoding splits the keys over blocks. Fix: pass kv_splits = 0, or use --algo flash_decoding";
    // A decoding kernel's rows all see keys: bottom-right causal masking with N > Nk would leave the first
    // N - Nk rows none, and generation never asks for that.
    if (algo.decoding && p.causal && p.N > p.Nk)
        return name + " refuses causal masking with N = " + std::to_string(p.N) + " > Nk = " + std::to_string(p.Nk) +
               ": causal needs N <= Nk (the first N - Nk rows would see no key). Fix: pass Nk >= N, drop causal, or use "
               "--algo fa2_tc";
    return {};
}

DeviceTensors allocate_tensors(const CudaProblem& p, const KernelVariant& kernel) {
    validate_problem(p);
    const std::size_t e = elem_bytes(p.dtype);
    const std::size_t bh = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.H);
    const std::size_t bkv = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.kv_heads());
    const std::size_t q_elems = bh * static_cast<std::size_t>(p.N) * static_cast<std::size_t>(p.d);
    const std::size_t kv_elems = bkv * static_cast<std::size_t>(p.Nk) * static_cast<std::size_t>(p.d);
    const std::size_t rows = bh * static_cast<std::size_t>(p.N);
    DeviceTensors t;
    t.Q = DeviceBuffer(q_elems * e);
    t.K = DeviceBuffer(kv_elems * e);
    t.V = DeviceBuffer(kv_elems * e);
    t.O = DeviceBuffer(q_elems * e);
    // What each algorithm's tile program stores besides O (sim/algorithms/).
    const std::string_view algo = kernel.algorithm;
    if (algo == "tiled" || algo == "fa2" || algo == "flash_decoding") t.LSE = DeviceBuffer(rows * sizeof(float));
    if (algo == "flash_decoding") {  // the splits' fp32 partial results, for the splits this device runs
        const cuda_detail::FlashDecodingLayout L = cuda_detail::flash_decoding_layout(p, cuda_detail::device_sm_count());
        if (L.splits > 1) {
            const std::size_t partial_rows = rows * static_cast<std::size_t>(L.splits);
            t.O_partial = DeviceBuffer(partial_rows * static_cast<std::size_t>(p.d) * sizeof(float));
            t.LSE_partial = DeviceBuffer(partial_rows * sizeof(float));
        }
    }
    if (algo == "fa1") {
        t.m = DeviceBuffer(rows * sizeof(float));
        t.l = DeviceBuffer(rows * sizeof(float));
        if (p.dtype != DType::fp32) t.O_acc = DeviceBuffer(q_elems * sizeof(float));
    }
    const std::size_t s_elems = rows * static_cast<std::size_t>(p.Nk);
    if (algo == "standard" || algo == "standard_bwd") {
        t.S = DeviceBuffer(s_elems * e);
        t.P = DeviceBuffer(s_elems * e);
    }
    // The backward (sim/algorithms/*_backward.cpp): dO in, dQ, dK, dV out, and each program's own tensors.
    if (algo == "standard_bwd" || algo == "fa2_bwd") {
        t.dO = DeviceBuffer(q_elems * e);
        t.dQ = DeviceBuffer(q_elems * e);
        t.dK = DeviceBuffer(kv_elems * e);
        t.dV = DeviceBuffer(kv_elems * e);
    }
    if (algo == "standard_bwd") {
        t.dP = DeviceBuffer(s_elems * e);
        t.dS = DeviceBuffer(s_elems * e);
    }
    if (algo == "fa2_bwd") {
        t.LSE = DeviceBuffer(rows * sizeof(float));
        t.D = DeviceBuffer(rows * sizeof(float));
        t.dQ_acc = DeviceBuffer(q_elems * sizeof(float));
        if (p.grouped()) {  // dK, dV per query head before the sum over the group (B*H heads, as Q)
            const std::size_t expanded = bh * static_cast<std::size_t>(p.Nk) * static_cast<std::size_t>(p.d) * e;
            t.dK_expanded = DeviceBuffer(expanded);
            t.dV_expanded = DeviceBuffer(expanded);
        }
    }
    return t;
}

CudaLaunchInfo run_attention(const KernelVariant& kernel, const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    validate_problem(p);
    if (const std::string why = cuda_kernel_unsupported(kernel, p); !why.empty()) throw std::invalid_argument(why);
    const cuda_detail::KernelEntry entry = cuda_detail::registered_kernel(kernel.name).entry;
    if (entry == nullptr)
        throw std::logic_error("the catalog's kernel " + std::string(kernel.name) + " registered no launcher in cuda/kernels/");
    return entry(p, t, stream);
}

}  // namespace fasim
