// cuda-check: runs every CUDA attention kernel on fresh random inputs and compares it with the
// float64 reference, using the project's tolerance rule (reference/TOLERANCES.md: check_tolerance for
// O, check_lse for LSE). fp32 must in addition have a relative error ||O - O_exact|| / ||O_exact||
// of at most 1e-4. A backward kernel (standard_cublas_bwd, fa2_bwd, fa2_bwd_tc) runs after its forward
// kernel on the same tensors, with a random output gradient dO; each of dQ, dK, dV is held to the
// gradients' rule (reference/attention_backward.hpp: check_gradient, 2x a naive backward's error in
// the same storage dtype) and, in fp32, to the same 1e-4 relative error. With grouped K/V heads (KV < H)
// dQ is checked per query head against the float64 backward with its group's K and V, and dK, dV per K/V
// head against the sum over the group's query heads of their float64 dK, dV, with the per-head floors of
// the rule summed too (reference/TOLERANCES.md, "Gradients").
//
//   cuda-check                     the full grid: N in {1, 37, 128, 300, 1024}, Nk = N and Nk != N,
//                                  d in {64, 128}, causal or not, fp32/fp16/bf16, every algorithm; then
//                                  decode shapes: N in {1, 3, 64, 100} x Nk in {1, 77, 1000, 4097}, H = 8
//                                  with KV = 8, 2, 1 K/V heads, batch 1 and 2, fp16/bf16, causal where
//                                  N <= Nk; 32 query heads over 1 and 2 K/V heads and 20 query rows (two
//                                  key groups in flash_decoding); and flash_decoding with its split count forced;
//                                  grouped training shapes (H = 4 over KV = 2 and 1, N = Nk and not, causal or
//                                  not) for the kernels that take grouped K/V heads (fa2_tc, fa2_bwd_tc). The
//                                  backward kernels skip the decode shapes with KV < H (their grouped cases are
//                                  the training shapes: the decode ones would triple the CPU references)
//   cuda-check --small             a few tiny problems per algorithm (for compute-sanitizer)
//   cuda-check --algo fa2 --dtype fp16 --seed 1234 --max-n 300
//
// A problem an algorithm has no kernel for is skipped, not failed, with one line saying why: fa1_tc
// and fa2_tc (tensor cores) have no fp32 and no d = 32 variant, and need compute capability 8.0+; only
// flash_decoding, fa2_tc and fa2_bwd_tc take grouped K/V heads (KV < H), only flash_decoding a forced split
// count, and it refuses causal masking with N > Nk. With grouped K/V heads the reference of each query head
// uses its group's K and V.
//
// Every output buffer is poisoned (all bits set: NaN in every dtype) before each run, so an element
// a kernel fails to write shows up as NaN and fails. Prints one row per (problem, algorithm), then
// the failures and an "N passed, M failed" line. Exit codes: 0 all passed, 1 a failure, 2 usage
// error, 77 no CUDA device (CTest reads 77 as skipped).
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include "common/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <future>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "attention_backward.hpp"
#include "attention_kernels.hpp"
#include "attention_reference.hpp"
#include "common/check.hpp"
#include "inputs.hpp"
#include "precision.hpp"

namespace {

using fasim::KernelVariant;
using fasim::CudaProblem;
using fasim::DType;
namespace ref = fasim::reference;

struct Case {
    CudaProblem problem;
    std::uint64_t seed = 0;
    bool decode_shape = false;  // one of the decode grid's shapes (few query rows, many keys)
};

struct AlgoRun {
    const KernelVariant* kernel = nullptr;
    std::string error;         // non-empty: the run threw
    std::string tiles;         // "Br x Bc" of the main kernel
    int splits = 0;            // flash_decoding: the splits of the keys it ran
    std::vector<double> O;     // [BH][N][d]
    std::vector<double> lse;   // [BH][N], empty when the algorithm has none
    std::vector<double> dQ, dK, dV;  // a backward kernel's gradients: [B*H][N][d], [B*KV][Nk][d]
    bool backward() const { return !kernel->forward_kernel.empty(); }
};

// What one case runs on: Q, K, V and the output gradient dO of every batch*head (with grouped K/V heads,
// the query heads of a group hold the same K and V).
struct CaseInputs {
    std::vector<ref::QKV> heads;
    std::vector<ref::Matrix> dO;
};

struct Row {
    const KernelVariant* kernel = nullptr;
    std::string tiles;
    int splits = 0;
    double error = 0, bound = 0, naive_error = 0, rel = 0;
    double lse_ratio = -1;  // worst LSE error / tolerance; -1: no LSE
    bool pass = false;
    std::string note;
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Storage bits of a matrix already representable in the dtype, appended to `out`.
void append_storage(const ref::Matrix& A, DType dtype, std::vector<unsigned char>& out) {
    for (Eigen::Index i = 0; i < A.rows(); ++i) {
        for (Eigen::Index j = 0; j < A.cols(); ++j) {
            const float f = static_cast<float>(A(i, j));
            if (dtype == DType::fp32) {
                unsigned char b[4];
                std::memcpy(b, &f, 4);
                out.insert(out.end(), b, b + 4);
            } else {
                const std::uint16_t h = dtype == DType::fp16 ? ref::float_to_fp16_bits(f) : ref::float_to_bf16_bits(f);
                unsigned char b[2];
                std::memcpy(b, &h, 2);
                out.insert(out.end(), b, b + 2);
            }
        }
    }
}

std::vector<double> from_storage(const std::vector<unsigned char>& bytes, DType dtype) {
    const std::size_t e = static_cast<std::size_t>(fasim::dtype_bytes(dtype));
    std::vector<double> out(bytes.size() / e);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (dtype == DType::fp32) {
            float f;
            std::memcpy(&f, &bytes[i * 4], 4);
            out[i] = f;
        } else {
            std::uint16_t h;
            std::memcpy(&h, &bytes[i * 2], 2);
            out[i] = dtype == DType::fp16 ? ref::fp16_bits_to_float(h) : ref::bf16_bits_to_float(h);
        }
    }
    return out;
}

std::vector<float> download_floats(const fasim::DeviceBuffer& buf, std::size_t n) {
    std::vector<float> v(n);
    CUDA_CHECK(cudaMemcpy(v.data(), buf.get(), n * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
}

void poison(const fasim::DeviceBuffer& b) {
    if (b) CUDA_CHECK(cudaMemset(b.get(), 0xff, b.bytes()));
}

// The query head (over B*H) whose K and V stand for K/V head kv_head (over B*KV): its group's first.
int group_leader(const CudaProblem& p, int kv_head) {
    return (kv_head / p.kv_heads()) * p.H + (kv_head % p.kv_heads()) * p.group_size();
}

CaseInputs make_inputs(const Case& c) {
    const CudaProblem& p = c.problem;
    CaseInputs in;
    for (int h = 0; h < p.B * p.H; ++h) {
        const std::uint64_t s = mix(c.seed + static_cast<std::uint64_t>(h));
        // A group reads its leader's K and V (the leader comes first); random_qkv's Q does not depend on Nk.
        const int leader = group_leader(p, (h / p.H) * p.kv_heads() + (h % p.H) / p.group_size());
        in.heads.push_back(ref::random_qkv(p.N, leader == h ? p.Nk : 1, p.d, s, p.dtype));
        if (leader != h) {
            in.heads.back().K = in.heads[static_cast<std::size_t>(leader)].K;
            in.heads.back().V = in.heads[static_cast<std::size_t>(leader)].V;
        }
        in.dO.push_back(ref::round_matrix(ref::random_normal(p.N, p.d, mix(s ^ 0xd0d0d0d0ull)), p.dtype));
    }
    return in;
}

// The storage bits of a device tensor as doubles.
std::vector<double> download(const fasim::DeviceBuffer& buf, DType dtype) {
    std::vector<unsigned char> bytes(buf.bytes());
    CUDA_CHECK(cudaMemcpy(bytes.data(), buf.get(), bytes.size(), cudaMemcpyDeviceToHost));
    return from_storage(bytes, dtype);
}

AlgoRun run_on_gpu(const KernelVariant& kernel, const CudaProblem& p, const std::vector<unsigned char>& q,
                   const std::vector<unsigned char>& k, const std::vector<unsigned char>& v,
                   const std::vector<unsigned char>& dO, cudaStream_t stream) {
    AlgoRun r;
    r.kernel = &kernel;
    fasim::DeviceTensors t;
    try {
        fasim::validate_problem(p);
        t = fasim::allocate_tensors(p, kernel);
    } catch (const std::invalid_argument& e) {  // a problem this algorithm cannot run: a failed row
        r.error = e.what();
        return r;
    }
    CUDA_CHECK(cudaMemcpy(t.Q.get(), q.data(), q.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t.K.get(), k.data(), k.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(t.V.get(), v.data(), v.size(), cudaMemcpyHostToDevice));
    for (const fasim::DeviceBuffer* b : {&t.O, &t.LSE, &t.O_partial, &t.LSE_partial, &t.m, &t.l, &t.S, &t.P, &t.dQ, &t.dK,
                                         &t.dV, &t.D, &t.dQ_acc, &t.dP, &t.dS, &t.dK_expanded, &t.dV_expanded})
        poison(*b);
    fasim::CudaLaunchInfo info;
    try {
        if (r.backward()) {  // the forward kernel's O and LSE (or P), then the backward from dO
            CUDA_CHECK(cudaMemcpy(t.dO.get(), dO.data(), dO.size(), cudaMemcpyHostToDevice));
            (void)fasim::run_attention(fasim::cuda_kernel(kernel.forward_kernel), p, t, stream);
        }
        info = fasim::run_attention(kernel, p, t, stream);
    } catch (const std::invalid_argument& e) {  // refused before launching (tile does not fit, ...)
        r.error = e.what();
        return r;
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaGetLastError());
    for (const auto& kl : info.kernels) {
        if (kl.name.rfind("fa", 0) == 0 || kl.name.rfind("tiled", 0) == 0 || kl.name.rfind("flash", 0) == 0) {
            if (kl.Br > 0 && kl.Bc > 0) r.tiles = std::to_string(kl.Br) + "x" + std::to_string(kl.Bc);
        }
        if (kl.kv_splits > 0) r.splits = kl.kv_splits;
    }
    if (r.backward()) {
        r.dQ = download(t.dQ, p.dtype);
        r.dK = download(t.dK, p.dtype);
        r.dV = download(t.dV, p.dtype);
        return r;
    }
    r.O = download(t.O, p.dtype);
    const std::size_t rows = static_cast<std::size_t>(p.B) * p.H * p.N;
    if (t.LSE) {  // tiled and FA2 store the LSE
        const std::vector<float> lse = download_floats(t.LSE, rows);
        r.lse.assign(lse.begin(), lse.end());
    } else if (t.m && t.l) {  // FA1 stores m and l
        const std::vector<float> m = download_floats(t.m, rows);
        const std::vector<float> l = download_floats(t.l, rows);
        r.lse.resize(rows);
        for (std::size_t i = 0; i < rows; ++i) {
            // l = 0 (a row that saw no key): LSE = -inf; NaN (unwritten) propagates.
            r.lse[i] = l[i] == 0.f ? -std::numeric_limits<double>::infinity()
                                   : static_cast<double>(m[i]) + std::log(static_cast<double>(l[i]));
        }
    }
    return r;
}

// Head h of a [BH][rows][cols] tensor.
ref::Matrix head_matrix(const std::vector<double>& t, std::size_t h, int rows, int cols) {
    ref::Matrix M(rows, cols);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) M(i, j) = t[(h * static_cast<std::size_t>(rows) + i) * cols + j];
    return M;
}

// A backward kernel's row: dQ of every query head, dK and dV of every K/V head against the float64 backward
// (the worst of them by error / bound is reported); in fp32 also their relative error. dQ: the gradients'
// rule (ref::check_gradient) with the head's group K and V. dK, dV of a K/V head: what the query heads of its
// group give summed (KV = H: one head, the same rule as dQ): the float64 sum against the kernel's, the naive
// backwards' sum rounded to the dtype (a plain backward stores the group's sum there) as the naive error, and
// the per-head floors summed (each term size and logit size as check_gradient takes them for its head).
Row check_gradients(const CudaProblem& p, const CaseInputs& in, const AlgoRun& run) {
    ref::AttentionOptions opt;
    opt.causal = p.causal;
    Row row;
    row.kernel = run.kernel;
    row.tiles = run.tiles;
    row.pass = true;
    double worst = -1;
    auto consider = [&](const char* name, const ref::GradientCheck& c, const ref::Matrix& got, const ref::Matrix& exact,
                        const std::string& where) {
        double ratio = c.bound > 0 ? c.error / c.bound : (c.error > 0 ? INFINITY : 0.0);
        if (std::isnan(ratio)) ratio = INFINITY;
        if (ratio > worst) {
            worst = ratio;
            row.error = c.error;
            row.bound = c.bound;
            row.naive_error = c.naive_error;
        }
        const double norm = exact.norm(), rel = norm > 0 ? (got - exact).norm() / norm : (got - exact).norm();
        row.rel = std::max(row.rel, std::isnan(rel) ? INFINITY : rel);
        if (!c.pass && row.pass) {
            row.pass = false;
            row.note = std::string(name) + " out of tolerance in " + where;
        }
    };
    struct HeadReference {
        ref::AttentionGradients exact, naive, terms;
        double logits = 0;
    };
    std::vector<HeadReference> refs;
    for (std::size_t h = 0; h < in.heads.size(); ++h) {
        const ref::QKV& x = in.heads[h];
        refs.push_back({ref::exact_attention_backward(x.Q, x.K, x.V, in.dO[h], opt),
                        ref::naive_attention_backward_in_precision(x.Q, x.K, x.V, in.dO[h], opt, p.dtype),
                        ref::gradient_term_sizes(x.Q, x.K, x.V, in.dO[h], opt), ref::largest_logit_terms(x.Q, x.K, opt)});
    }
    auto largest = [](const ref::Matrix& M) { return M.size() ? M.maxCoeff() : 0.0; };
    for (std::size_t h = 0; h < refs.size(); ++h) {
        const HeadReference& r = refs[h];
        const ref::Matrix got = head_matrix(run.dQ, h, p.N, p.d);
        consider("dQ", ref::check_gradient(got, r.exact.dQ, r.naive.dQ, r.logits, p.dtype, largest(r.terms.dQ)), got,
                 r.exact.dQ, "query head " + std::to_string(h));
    }
    const int G = p.group_size();
    for (int kv = 0; kv < p.B * p.kv_heads(); ++kv) {
        for (const auto& [name, part, values] : {std::tuple{"dK", &ref::AttentionGradients::dK, &run.dK},
                                                 std::tuple{"dV", &ref::AttentionGradients::dV, &run.dV}}) {
            ref::Matrix exact = ref::Matrix::Zero(p.Nk, p.d), naive = ref::Matrix::Zero(p.Nk, p.d);
            double floor = 0;
            for (int g = 0; g < G; ++g) {  // the group's query heads: b H + (kv % KV) G + g = kv G + g
                const HeadReference& r = refs[static_cast<std::size_t>(kv * G + g)];
                exact += r.exact.*part;
                naive += r.naive.*part;
                floor += ref::check_gradient(r.exact.*part, r.exact.*part, r.naive.*part, r.logits, p.dtype,
                                             largest(r.terms.*part))
                             .floor;
            }
            if (G > 1) naive = ref::round_matrix(naive, p.dtype);
            const ref::Matrix got = head_matrix(*values, static_cast<std::size_t>(kv), p.Nk, p.d);
            // The rule with the summed floor: check_gradient's error and naive error, its bound rebuilt.
            ref::GradientCheck c = ref::check_gradient(got, exact, naive, 0, p.dtype, 0);
            c.floor = floor;
            c.bound = (std::isfinite(c.naive_error) ? 2 * c.naive_error : 0.0) + c.floor;
            c.pass = got.allFinite() && c.error <= c.bound;
            consider(name, c, got, exact, (G > 1 ? "K/V head " : "head ") + std::to_string(kv));
        }
    }
    if (p.dtype == DType::fp32 && !(row.rel <= 1e-4) && row.pass) {
        row.pass = false;
        row.note = "fp32 relative error of a gradient above 1e-4";
    }
    return row;
}

std::vector<Row> check_case(const Case& c, const CaseInputs& in, const std::vector<AlgoRun>& runs) {
    const CudaProblem& p = c.problem;
    const std::vector<ref::QKV>& heads = in.heads;
    ref::AttentionOptions opt;
    opt.causal = p.causal;
    std::vector<ref::AttentionResult> exact;
    std::vector<ref::Matrix> naive;
    std::vector<double> es;
    for (const ref::QKV& x : heads) {
        exact.push_back(ref::exact_attention(x.Q, x.K, x.V, opt));
        naive.push_back(ref::naive_attention_in_precision(x.Q, x.K, x.V, opt, p.dtype));
        es.push_back(ref::logit_rounding_term(x.Q, x.K, x.V, opt, exact.back()));
    }
    std::vector<Row> rows;
    for (const AlgoRun& run : runs) {
        Row row;
        row.kernel = run.kernel;
        row.tiles = run.tiles;
        row.splits = run.splits;
        if (!run.error.empty()) {
            row.note = run.error;
            rows.push_back(row);
            continue;
        }
        if (run.backward()) {
            rows.push_back(check_gradients(p, in, run));
            continue;
        }
        row.pass = true;
        double worst = -1, diff2 = 0, ref2 = 0;
        for (std::size_t h = 0; h < heads.size(); ++h) {
            const ref::Matrix O = head_matrix(run.O, h, p.N, p.d);
            const ref::ToleranceCheck tc = ref::check_tolerance(O, exact[h].O, naive[h], es[h], p.dtype);
            double ratio = tc.bound > 0 ? tc.error / tc.bound : (tc.error > 0 ? INFINITY : 0.0);
            if (std::isnan(ratio)) ratio = INFINITY;
            if (ratio > worst) {  // report the worst head
                worst = ratio;
                row.error = tc.error;
                row.bound = tc.bound;
                row.naive_error = tc.naive_error;
            }
            if (!tc.pass) {
                if (row.pass || row.note.empty()) row.note = "O out of tolerance in head " + std::to_string(h);
                row.pass = false;
            }
            diff2 += (O - exact[h].O).squaredNorm();
            ref2 += exact[h].O.squaredNorm();
            if (!run.lse.empty()) {
                ref::Vector lse(p.N);
                for (int i = 0; i < p.N; ++i) lse(i) = run.lse[h * static_cast<std::size_t>(p.N) + i];
                const ref::LseCheck lc = ref::check_lse(lse, heads[h].Q, heads[h].K, opt, exact[h]);
                row.lse_ratio = std::max(row.lse_ratio, std::isnan(lc.worst_ratio) ? INFINITY : lc.worst_ratio);
                if (!lc.pass) {
                    row.pass = false;
                    if (row.note.empty()) {
                        row.note = "LSE out of tolerance in head " + std::to_string(h) + " row " +
                                   std::to_string(lc.first_bad_row);
                    }
                }
            }
        }
        row.rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
        if (std::isnan(row.rel)) row.rel = INFINITY;
        if (p.dtype == DType::fp32 && !(row.rel <= 1e-4)) {
            row.pass = false;
            if (row.note.empty()) row.note = "fp32 relative error above 1e-4";
        }
        rows.push_back(row);
    }
    return rows;
}

std::vector<Case> make_cases(bool small, int max_n, std::uint64_t base_seed, const std::vector<DType>& dtypes) {
    std::vector<CudaProblem> problems;
    std::size_t decode_begin = std::numeric_limits<std::size_t>::max();  // problems from here on: decode shapes
    if (small) {
        problems.push_back({1, 2, 37, 82, 64, DType::fp16, true});
        problems.push_back({1, 2, 70, 37, 128, DType::fp32, true});
        problems.push_back({1, 2, 128, 128, 64, DType::bf16, false});
        problems.push_back({2, 1, 20, 150, 32, DType::bf16, true});  // d = 32, two K/V tiles for fa2
        // d = 128, ragged N and Nk, 3 and 4 K/V tiles of 64: fa2_tc refills its double buffer
        problems.push_back({1, 1, 100, 200, 128, DType::bf16, true});
        // 32 heads: fa1_tc splits each head's 19 Q tiles over a few blocks (2-3 each, so its Q
        // prefetch buffer is refilled) and sees 3 K/V tiles of 256
        problems.push_back({2, 16, 300, 600, 64, DType::fp16, true});
        // flash_decoding: a group's 4 query heads packed as rows, 3 splits of 5 K/V tiles (both K/V buffers
        // refilled, a ragged last tile, the combine); and 3 causal rows of multi-query attention
        problems.push_back({2, 8, 1, 300, 128, DType::fp16, false, 2, 3});
        problems.push_back({1, 8, 3, 600, 64, DType::bf16, true, 1});
        // ... its warps in two key groups: 32 query heads of one K/V head packed as rows, and 20 causal rows
        problems.push_back({1, 32, 1, 300, 128, DType::fp16, false, 1});
        problems.push_back({1, 8, 20, 600, 64, DType::bf16, true, 2});
        // fa2_tc and fa2_bwd_tc with grouped K/V heads: 2 groups of 2 query heads in 2 batches (2 K/V tiles of
        // 128 for the backward, a ragged one; the sum kernel), and multi-query attention with 4 query heads
        problems.push_back({2, 4, 70, 200, 64, DType::fp16, true, 2});
        problems.push_back({1, 4, 37, 130, 128, DType::bf16, false, 1});
    } else {
        for (int N : {1, 37, 128, 300, 1024}) {
            const int Nk_other = N > 64 ? N / 2 + 3 : N + 45;
            for (int Nk : {N, Nk_other}) {
                for (int d : {64, 128}) {
                    for (bool causal : {false, true}) {
                        for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
                            problems.push_back({1, 2, N, Nk, d, dt, causal});
                        }
                    }
                }
            }
        }
        // Many heads: fa1_tc then runs 2 blocks per head (B*H = 100: q_splits = 264 slots / 100 on a
        // 132-SM GPU with 2 blocks per SM), each visiting every other Q tile, or one block per head
        // visiting all of them (B*H = 320).
        for (DType dt : {DType::fp16, DType::bf16}) {
            problems.push_back({4, 25, 300, 555, 64, dt, true});
            problems.push_back({2, 50, 257, 257, 128, dt, false});
            problems.push_back({8, 40, 200, 300, 64, dt, false});
        }
        // Grouped K/V heads on training shapes (fa2_tc, fa2_bwd_tc and, where it takes them, flash_decoding): 4
        // query heads over 2 K/V heads (GQA) and 1 (MQA), N = Nk and not (ragged against the 64- and 128-key
        // tiles); batch 2 and 8 query heads over 2 and 4 K/V heads; N = 1024 in two batches.
        for (const auto& [N, Nk] : {std::pair{37, 82}, {128, 128}, {300, 155}, {300, 300}})
            for (int KV : {2, 1})
                for (int d : {64, 128})
                    for (bool causal : {false, true})
                        for (DType dt : {DType::fp16, DType::bf16}) problems.push_back({1, 4, N, Nk, d, dt, causal, KV});
        for (int d : {64, 128}) {
            problems.push_back({2, 8, 200, 300, d, DType::bf16, true, 2});
            problems.push_back({2, 8, 200, 300, d, DType::fp16, false, 4});
            problems.push_back({2, 4, 1024, 1024, d, DType::fp16, true, 2});
            problems.push_back({2, 4, 1024, 515, d, DType::bf16, false, 1});
        }
        decode_begin = problems.size();
        // Decode shapes: few query rows against many keys (ragged against every tile), grouped K/V heads
        // (with N = 1 flash_decoding packs a group's query heads as rows), batch 1 and 2.
        for (int N : {1, 3, 64, 100})
            for (int Nk : {1, 77, 1000, 4097})
                for (int KV : {8, 2, 1})
                    for (bool causal : {false, true}) {
                        if (causal && N > Nk) continue;
                        for (int B : {1, 2})
                            for (int d : {64, 128})
                                for (DType dt : {DType::fp16, DType::bf16}) problems.push_back({B, 8, N, Nk, d, dt, causal, KV});
                    }
        // flash_decoding's warps in two key groups (17-32 rows per row head): MQA's 32 query heads packed
        // as rows, and 20 (causal) query rows, the second band ragged.
        for (int d : {64, 128})
            for (DType dt : {DType::fp16, DType::bf16}) {
                problems.push_back({1, 32, 1, 4097, d, dt, false, 1});
                problems.push_back({2, 32, 1, 1000, d, dt, false, 2});
                for (bool causal : {false, true}) problems.push_back({1, 8, 20, 1000, d, dt, causal, 8});
            }
        // flash_decoding's split count forced: one split (no combine kernel), a few (the last split
        // shorter), and one K/V tile per split.
        for (const CudaProblem& base : {CudaProblem{2, 8, 1, 4097, 0, DType::fp16, false, 2},
                                        CudaProblem{1, 8, 64, 1000, 0, DType::fp16, true, 8},
                                        CudaProblem{2, 8, 3, 4097, 0, DType::fp16, true, 1}})
            for (int d : {64, 128})
                for (DType dt : {DType::fp16, DType::bf16}) {
                    const int kv_tiles = (base.Nk + fasim::tile_rules::flash_decoding_bc(d) - 1) / fasim::tile_rules::flash_decoding_bc(d);
                    for (int splits : {1, 3, 7, kv_tiles}) {
                        CudaProblem p = base;
                        p.d = d;
                        p.dtype = dt;
                        p.kv_splits = splits;
                        problems.push_back(p);
                    }
                }
    }
    std::vector<Case> cases;
    for (std::size_t i = 0; i < problems.size(); ++i) {
        const CudaProblem& p = problems[i];
        if (std::find(dtypes.begin(), dtypes.end(), p.dtype) == dtypes.end() || p.N > max_n) continue;
        Case c;
        c.problem = p;
        c.decode_shape = i >= decode_begin;
        // The case's seed depends on the base seed and the problem only, so filters (--algo, --dtype,
        // --max-n) do not change the inputs of the cases they keep.
        std::uint64_t h = mix(base_seed);
        for (std::uint64_t v : {static_cast<std::uint64_t>(p.N), static_cast<std::uint64_t>(p.Nk),
                                static_cast<std::uint64_t>(p.d), static_cast<std::uint64_t>(p.causal),
                                static_cast<std::uint64_t>(p.dtype), static_cast<std::uint64_t>(p.B),
                                static_cast<std::uint64_t>(p.H), static_cast<std::uint64_t>(p.KV),
                                static_cast<std::uint64_t>(p.kv_splits)}) {
            h = mix(h ^ v);
        }
        c.seed = h;
        cases.push_back(c);
    }
    return cases;
}

std::string fmt(const char* f, double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, x);
    return buf;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"cuda-check: every CUDA attention kernel against the float64 reference"};
    bool small = false;
    bool quiet = false;
    int max_n = 1 << 30;
    std::uint64_t seed = 0;
    std::vector<std::string> algo_names;
    std::vector<std::string> dtype_names;
    app.add_flag("--small", small, "only a few tiny problems per algorithm (for compute-sanitizer)");
    app.add_flag("--quiet", quiet, "print only failures and the summary");
    app.add_option("--max-n", max_n, "skip problems with N above this (quicker runs)")->check(CLI::PositiveNumber);
    auto* seed_opt = app.add_option("--seed", seed, "base seed (default: fresh, printed)");
    std::vector<std::string> all_algo_names;
    for (const KernelVariant* k : fasim::cuda_kernels()) all_algo_names.emplace_back(k->name);
    app.add_option("--algo", algo_names, "kernels to check, by their kernel-catalog names (default: all)")
        ->check(CLI::IsMember(all_algo_names));
    app.add_option("--dtype", dtype_names, "storage dtypes to check (default: all)")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {  // one line, control characters escaped, exit code 2 (issue 25)
        std::fprintf(stderr, "cuda-check: error: %s: see cuda-check --help. Fix: correct the command line\n",
                     fasim::escape_control(e.what()).c_str());
        return 2;
    }

    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        (void)cudaGetLastError();
        std::printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    if (seed_opt->count() == 0) seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();

    std::vector<const KernelVariant*> algos;
    for (const auto& n : algo_names) algos.push_back(&fasim::cuda_kernel(n));
    if (algos.empty()) algos = fasim::cuda_kernels();
    std::vector<DType> dtypes;
    for (const auto& n : dtype_names) dtypes.push_back(*fasim::parse_dtype(n));
    if (dtypes.empty()) dtypes = {DType::fp32, DType::fp16, DType::bf16};

    try {
        int dev = 0;
        CUDA_CHECK(cudaGetDevice(&dev));
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
        int driver = 0;
        CUDA_CHECK(cudaDriverGetVersion(&driver));
        std::printf("device: %s (sm_%d%d, %d SMs, %zu KB shared memory per block opt-in), driver %d\n", prop.name,
                    prop.major, prop.minor, prop.multiProcessorCount, prop.sharedMemPerBlockOptin / 1024, driver);
        std::printf("seed: %llu   (replay with --seed %llu)\n", static_cast<unsigned long long>(seed),
                    static_cast<unsigned long long>(seed));

        std::vector<Case> cases = make_cases(small, max_n, seed, dtypes);
        // Problems an algorithm has no kernel for: skipped (not failed), each reason printed once.
        const int cc = 10 * prop.major + prop.minor;
        auto skip_reason = [&](const KernelVariant* a, const Case& c) -> std::string {
            const CudaProblem& p = c.problem;
            if (cc < a->min_compute_capability) {
                return std::string(a->name) + " needs compute capability " + std::to_string(a->min_compute_capability / 10) +
                       "." + std::to_string(a->min_compute_capability % 10) + "+; this GPU is " +
                       std::to_string(prop.major) + "." + std::to_string(prop.minor) + "; use --algo " +
                       std::string(a->algorithm);
            }
            if (std::string why = fasim::cuda_kernel_unsupported(*a, p); !why.empty()) return why;
            if (!a->forward_kernel.empty() && c.decode_shape && p.grouped())
                return std::string(a->name) + " is checked with grouped K/V heads on the training shapes, not on the decode "
                       "shapes with KV < H (their float64 backwards would triple the check's time)";
            if (!a->forward_kernel.empty())  // a backward kernel runs after its forward kernel
                return fasim::cuda_kernel_unsupported(fasim::cuda_kernel(a->forward_kernel), p);
            return {};
        };
        int skipped = 0;
        {
            std::vector<std::string> reasons;
            for (const Case& c : cases) {
                for (const KernelVariant* a : algos) {
                    const std::string why = skip_reason(a, c);
                    if (why.empty()) continue;
                    ++skipped;
                    if (std::find(reasons.begin(), reasons.end(), why) == reasons.end()) reasons.push_back(why);
                }
            }
            for (const std::string& why : reasons) std::printf("skipped: %s\n", why.c_str());
            // A case no selected algorithm runs needs no inputs and no reference.
            cases.erase(std::remove_if(cases.begin(), cases.end(),
                                       [&](const Case& c) {
                                           return std::all_of(algos.begin(), algos.end(), [&](const KernelVariant* a) {
                                               return !skip_reason(a, c).empty();
                                           });
                                       }),
                        cases.end());
        }
        cudaStream_t stream = nullptr;
        CUDA_CHECK(cudaStreamCreate(&stream));

        std::printf("\n%-16s %-5s %2s %3s %3s %5s %5s %4s %-6s %-8s %6s %10s %10s %10s %7s %9s %10s  %s\n", "algo", "dtype",
                    "B", "H", "KV", "N", "Nk", "d", "causal", "tiles", "splits", "max_err", "bound", "naive_err", "ratio",
                    "lse_ratio", "rel_err", "status");
        int passed = 0;
        int failed = 0;
        std::vector<std::string> failures;
        const std::size_t batch = std::max(1u, std::thread::hardware_concurrency());
        for (std::size_t c0 = 0; c0 < cases.size(); c0 += batch) {
            const std::size_t c1 = std::min(cases.size(), c0 + batch);
            std::vector<CaseInputs> inputs(c1 - c0);
            std::vector<std::vector<AlgoRun>> runs(c1 - c0);
            // Inputs on the CPU, one case per thread; then GPU work on this thread, in order.
            std::vector<std::future<CaseInputs>> made;
            for (std::size_t ci = c0; ci < c1; ++ci) made.push_back(std::async(std::launch::async, make_inputs, std::cref(cases[ci])));
            for (std::size_t ci = c0; ci < c1; ++ci) {
                const Case& c = cases[ci];
                inputs[ci - c0] = made[ci - c0].get();
                std::vector<unsigned char> q, k, v, dO;
                for (const ref::QKV& x : inputs[ci - c0].heads) append_storage(x.Q, c.problem.dtype, q);
                for (int kh = 0; kh < c.problem.B * c.problem.kv_heads(); ++kh) {
                    const ref::QKV& x = inputs[ci - c0].heads[static_cast<std::size_t>(group_leader(c.problem, kh))];
                    append_storage(x.K, c.problem.dtype, k);
                    append_storage(x.V, c.problem.dtype, v);
                }
                for (const ref::Matrix& g : inputs[ci - c0].dO) append_storage(g, c.problem.dtype, dO);
                for (const KernelVariant* a : algos) {
                    if (skip_reason(a, c).empty()) {
                        runs[ci - c0].push_back(run_on_gpu(*a, c.problem, q, k, v, dO, stream));
                    }
                }
            }
            // References and comparisons on the CPU, one case per thread.
            std::vector<std::future<std::vector<Row>>> futures;
            for (std::size_t ci = c0; ci < c1; ++ci) {
                futures.push_back(std::async(std::launch::async, check_case, std::cref(cases[ci]),
                                             std::cref(inputs[ci - c0]), std::cref(runs[ci - c0])));
            }
            for (std::size_t ci = c0; ci < c1; ++ci) {
                const CudaProblem& p = cases[ci].problem;
                for (const Row& r : futures[ci - c0].get()) {
                    char line[512];
                    std::snprintf(line, sizeof line,
                                  "%-16s %-5s %2d %3d %3d %5d %5d %4d %-6s %-8s %6s %10.3e %10.3e %10.3e %7.3f %9s %10.3e  %s%s%s",
                                  std::string(r.kernel->name).c_str(), fasim::dtype_name(p.dtype), p.B, p.H, p.kv_heads(), p.N,
                                  p.Nk, p.d, p.causal ? "yes" : "no", r.tiles.empty() ? "-" : r.tiles.c_str(),
                                  r.splits > 0 ? std::to_string(r.splits).c_str() : "-", r.error, r.bound,
                                  r.naive_error, r.bound > 0 ? r.error / r.bound : 0.0,
                                  r.lse_ratio < 0 ? "-" : fmt("%.3f", r.lse_ratio).c_str(), r.rel,
                                  r.pass ? "PASS" : "FAIL", r.note.empty() ? "" : "  ", r.note.c_str());
                    if (!quiet || !r.pass) std::printf("%s\n", line);
                    if (r.pass) {
                        ++passed;
                    } else {
                        ++failed;
                        failures.push_back(std::string(line) + "  (case seed " + std::to_string(cases[ci].seed) + ")");
                    }
                }
            }
            std::fflush(stdout);
        }
        CUDA_CHECK(cudaStreamDestroy(stream));
        if (!failures.empty()) {
            std::printf("\nfailures:\n");
            for (const auto& f : failures) std::printf("%s\n", f.c_str());
        }
        if (skipped > 0) {
            std::printf("\n%d passed, %d failed, %d skipped (no kernel for them, see above)\n", passed, failed,
                        skipped);
        } else {
            std::printf("\n%d passed, %d failed\n", passed, failed);
        }
        return failed == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "cuda-check: %s\n", fasim::escape_control(e.what()).c_str());
        return 1;
    }
}
