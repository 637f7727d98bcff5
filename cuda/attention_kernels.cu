// Host side of the CUDA kernels: problem validation, tensor allocation, tile choice and dispatch.
// See attention_kernels.hpp for the API and what each algorithm writes.
#include "attention_kernels.hpp"

#include <cmath>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "common/check.hpp"
#include "kernels/launchers.hpp"
#include "kernels/smem_layouts.hpp"

namespace fasim {

using cuda_detail::fa1_smem_layout;
using cuda_detail::flash_smem_layout;

const char* cuda_algo_name(CudaAlgo algo) {
    switch (algo) {
        case CudaAlgo::standard_naive: return "standard_naive";
        case CudaAlgo::standard_tiled: return "standard_tiled";
        case CudaAlgo::standard_cublas: return "standard_cublas";
        case CudaAlgo::tiled: return "tiled";
        case CudaAlgo::fa1: return "fa1";
        case CudaAlgo::fa2: return "fa2";
        case CudaAlgo::fa1_tc: return "fa1_tc";
        case CudaAlgo::fa2_tc: return "fa2_tc";
    }
    return "?";
}

std::optional<CudaAlgo> parse_cuda_algo(std::string_view name) {
    for (CudaAlgo a : kAllCudaAlgos) {
        if (name == cuda_algo_name(a)) return a;
    }
    return std::nullopt;
}

namespace {

bool is_standard(CudaAlgo a) {
    return a == CudaAlgo::standard_naive || a == CudaAlgo::standard_tiled || a == CudaAlgo::standard_cublas;
}

std::size_t elem_bytes(DType t) { return static_cast<std::size_t>(dtype_bytes(t)); }

void require(bool ok, const std::string& what, const std::string& allowed, const std::string& fix) {
    if (!ok) throw std::invalid_argument(what + ": " + allowed + ". Fix: " + fix);
}

// Opt-in shared memory per block of the current device (cached per device).
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

void check_buffer(const DeviceBuffer& buf, std::size_t need, const char* name, CudaAlgo algo) {
    if (!buf || buf.bytes() < need) {
        throw std::invalid_argument(std::string(cuda_algo_name(algo)) + ": tensor " + name + " has " +
                                    std::to_string(buf.bytes()) + " bytes, needs " + std::to_string(need) +
                                    ". Fix: allocate the tensors with allocate_tensors(problem, algo).");
    }
}

}  // namespace

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
}

std::string cuda_algo_unsupported(CudaAlgo algo, const CudaProblem& p) {
    if (algo == CudaAlgo::fa2_tc) return cuda_detail::fa2_tc_unsupported_reason(p.dtype, p.d);
    if (algo == CudaAlgo::fa1_tc) return cuda_detail::fa1_tc_unsupported_reason(p.dtype, p.d);
    return {};
}

TileChoice fa2_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const int e = static_cast<int>(elem_bytes(dtype));
    TileChoice t;
    t.Br = d <= 64 ? 128 : (d <= 128 ? 128 : 64);
    t.Bc = d <= 64 ? 128 : 64;
    bool halve_bc = true;
    while (flash_smem_layout(t.Br, t.Bc, d, e).total > smem_per_block) {
        if ((halve_bc && t.Bc > 8) || t.Br <= 16) {
            if (t.Bc <= 8) {
                throw std::invalid_argument("fa2/tiled: no tile fits in " + std::to_string(smem_per_block) +
                                            " bytes of shared memory per block (d = " + std::to_string(d) + ")");
            }
            t.Bc /= 2;
        } else {
            t.Br /= 2;
        }
        halve_bc = !halve_bc;
    }
    t.smem_bytes = flash_smem_layout(t.Br, t.Bc, d, e).total;
    return t;
}

TileChoice fa1_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const int e = static_cast<int>(elem_bytes(dtype));
    const long long M = static_cast<long long>(smem_per_block) / e;  // elements
    auto fits = [&](int Br, int Bc) { return fa1_smem_layout(Br, Bc, d, e).total <= smem_per_block; };
    TileChoice t;
    t.Bc = static_cast<int>((M + 4LL * d - 1) / (4LL * d));  // ceil(M / 4d)
    t.Br = t.Bc < d ? t.Bc : d;
    if (!fits(t.Br, t.Bc)) {
        t.Bc = static_cast<int>(M / (4LL * d));  // floor(M / 4d)
        t.Br = t.Bc < d ? t.Bc : d;
    }
    while (t.Bc > 1 && !fits(t.Br, t.Bc)) {  // beyond the paper: the kernel's own buffers do not fit
        --t.Bc;
        t.Br = t.Bc < d ? t.Bc : d;
    }
    if (t.Bc < 1 || !fits(t.Br, t.Bc)) {
        throw std::invalid_argument("fa1: no tile fits in " + std::to_string(smem_per_block) +
                                    " bytes of shared memory per block (d = " + std::to_string(d) + ")");
    }
    t.smem_bytes = fa1_smem_layout(t.Br, t.Bc, d, e).total;
    return t;
}

DeviceTensors allocate_tensors(const CudaProblem& p, CudaAlgo algo) {
    validate_problem(p);
    const std::size_t e = elem_bytes(p.dtype);
    const std::size_t bh = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.H);
    const std::size_t q_elems = bh * static_cast<std::size_t>(p.N) * static_cast<std::size_t>(p.d);
    const std::size_t kv_elems = bh * static_cast<std::size_t>(p.Nk) * static_cast<std::size_t>(p.d);
    const std::size_t rows = bh * static_cast<std::size_t>(p.N);
    DeviceTensors t;
    t.Q = DeviceBuffer(q_elems * e);
    t.K = DeviceBuffer(kv_elems * e);
    t.V = DeviceBuffer(kv_elems * e);
    t.O = DeviceBuffer(q_elems * e);
    if (algo == CudaAlgo::tiled || algo == CudaAlgo::fa2 || algo == CudaAlgo::fa2_tc) {
        t.LSE = DeviceBuffer(rows * sizeof(float));
    }
    if (algo == CudaAlgo::fa1 || algo == CudaAlgo::fa1_tc) {
        t.m = DeviceBuffer(rows * sizeof(float));
        t.l = DeviceBuffer(rows * sizeof(float));
        if (p.dtype != DType::fp32) t.O_acc = DeviceBuffer(q_elems * sizeof(float));
    }
    if (is_standard(algo)) {
        const std::size_t s_elems = rows * static_cast<std::size_t>(p.Nk);
        t.S = DeviceBuffer(s_elems * e);
        t.P = DeviceBuffer(s_elems * e);
    }
    return t;
}

CudaLaunchInfo run_attention(CudaAlgo algo, const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    validate_problem(p);
    if (const std::string why = cuda_algo_unsupported(algo, p); !why.empty()) throw std::invalid_argument(why);
    const std::size_t e = elem_bytes(p.dtype);
    const int BH = p.B * p.H;
    const std::size_t q_bytes = static_cast<std::size_t>(BH) * p.N * p.d * e;
    const std::size_t kv_bytes = static_cast<std::size_t>(BH) * p.Nk * p.d * e;
    const std::size_t row_bytes = static_cast<std::size_t>(BH) * p.N * sizeof(float);
    check_buffer(t.Q, q_bytes, "Q", algo);
    check_buffer(t.K, kv_bytes, "K", algo);
    check_buffer(t.V, kv_bytes, "V", algo);
    check_buffer(t.O, q_bytes, "O", algo);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d)));
    const std::size_t smem = device_smem_per_block();

    CudaLaunchInfo info;
    if (is_standard(algo)) {
        const std::size_t s_bytes = static_cast<std::size_t>(BH) * p.N * p.Nk * e;
        check_buffer(t.S, s_bytes, "S", algo);
        check_buffer(t.P, s_bytes, "P", algo);
        auto gemm = [&](const cuda_detail::GemmArgs& g) {
            switch (algo) {
                case CudaAlgo::standard_naive: return cuda_detail::launch_gemm_naive(g, stream);
                case CudaAlgo::standard_tiled: return cuda_detail::launch_gemm_tiled(g, stream);
                default: return cuda_detail::launch_gemm_cublas(g, stream);
            }
        };
        cuda_detail::GemmArgs qk;  // S = scale * Q K^T
        qk.dtype = p.dtype;
        qk.A = t.Q.get();
        qk.B = t.K.get();
        qk.C = t.S.get();
        qk.M = p.N;
        qk.N = p.Nk;
        qk.K = p.d;
        qk.alpha = scale;
        qk.strideA = static_cast<long long>(p.N) * p.d;
        qk.strideB = static_cast<long long>(p.Nk) * p.d;
        qk.strideC = static_cast<long long>(p.N) * p.Nk;
        qk.batch = BH;
        qk.trans_b = true;
        info.kernels.push_back(gemm(qk));

        cuda_detail::SoftmaxArgs sm;  // P = softmax(S)
        sm.dtype = p.dtype;
        sm.S = t.S.get();
        sm.P = t.P.get();
        sm.rows = static_cast<long long>(BH) * p.N;
        sm.N = p.N;
        sm.Nk = p.Nk;
        sm.causal = p.causal;
        sm.smem_per_block = smem;
        info.kernels.push_back(cuda_detail::launch_softmax(sm, stream));

        cuda_detail::GemmArgs pv;  // O = P V
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
        info.kernels.push_back(gemm(pv));
        return info;
    }

    cuda_detail::FlashArgs f;
    f.dtype = p.dtype;
    f.d = p.d;
    f.Q = t.Q.get();
    f.K = t.K.get();
    f.V = t.V.get();
    f.O = t.O.get();
    f.BH = BH;
    f.N = p.N;
    f.Nk = p.Nk;
    f.causal = p.causal;
    f.scale = scale;
    switch (algo) {
        case CudaAlgo::tiled:
        case CudaAlgo::fa2: {
            check_buffer(t.LSE, row_bytes, "LSE", algo);
            f.lse = t.LSE.as<float>();
            const TileChoice tc = fa2_tiles(p.d, p.dtype, smem);
            f.Br = tc.Br;
            f.Bc = tc.Bc;
            info.kernels.push_back(algo == CudaAlgo::fa2 ? cuda_detail::launch_fa2(f, stream)
                                                         : cuda_detail::launch_tiled_two_pass(f, stream));
            return info;
        }
        case CudaAlgo::fa1:
        case CudaAlgo::fa1_tc: {
            check_buffer(t.m, row_bytes, "m", algo);
            check_buffer(t.l, row_bytes, "l", algo);
            f.m = t.m.as<float>();
            f.l = t.l.as<float>();
            if (p.dtype != DType::fp32) {
                check_buffer(t.O_acc, q_bytes / e * sizeof(float), "O_acc", algo);
                f.o_acc = t.O_acc.as<float>();
            }
            if (algo == CudaAlgo::fa1_tc) {  // fixed tiles (fa1_tensor_core.cu), no tile choice
                info.kernels = cuda_detail::launch_fa1_tc(f, stream);
                return info;
            }
            const TileChoice tc = fa1_tiles(p.d, p.dtype, smem);
            f.Br = tc.Br;
            f.Bc = tc.Bc;
            info.kernels = cuda_detail::launch_fa1(f, stream);
            return info;
        }
        case CudaAlgo::fa2_tc: {  // fixed 64x64 tiles (fa2_tensor_core.cu), no tile choice
            check_buffer(t.LSE, row_bytes, "LSE", algo);
            f.lse = t.LSE.as<float>();
            info.kernels.push_back(cuda_detail::launch_fa2_tc(f, stream));
            return info;
        }
        default: break;
    }
    throw std::invalid_argument("unknown CUDA algorithm");
}

}  // namespace fasim
