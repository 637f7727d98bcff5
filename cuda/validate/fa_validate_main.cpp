// fa-validate: runs the CUDA kernels of the four algorithms on fresh random inputs,
// checks them against the float64 reference, times them (warm-up, CUDA events,
// median, L2 flushed), and puts the simulator's prediction for the same GPU beside
// each measurement. With --ncu it reads DRAM, L2 and shared-memory bytes from
// Nsight Compute and puts the simulator's bytes for the same level beside them.
//
//   build/cuda/fa-validate                       the default grid (N 512..16384, d 64/128, causal or not, fp32)
//   build/cuda/fa-validate --ncu --out r.json    plus hardware counters, results to JSON
//   build/cuda/fa-validate --algo fa2,fa2_tc --dtype fp16,bf16   CUDA cores vs tensor cores
//   build/cuda/fa-validate --algo fa2_tc --dtype fp16 --pass bwd  the backward kernel of each (fa2_bwd_tc),
//                                                timed after one untimed forward; --pass fwd+bwd times both
//   build/cuda/fa-validate --pass bwd --algo fa2_bwd_tc --dtype fp16 --heads 16 --kv-heads 16,4,1
//                                                grouped K/V heads (KV dividing H) on the default grid: K and V of
//                                                B*KV heads, each checked row with its group's K/V, dK and dV of
//                                                sampled key rows summed over the group, predicted with kv_heads
//   build/cuda/fa-validate --grid decode         decode shapes: one query row, fp16, d = 128, H = 32 query heads
//                                                with KV = 32, 8, 1 K/V heads, batch 1, 8, 64, Nk 1024..131072
//                                                (flash_decoding; --Nk, --kv-heads, --batches change the lists),
//                                                with the K/V streaming bandwidth of each
//
// fa1_tc and fa2_tc (tensor cores) have no fp32 variant and need compute capability 8.0+: the
// configurations they cannot run are skipped with one note each (not counted as failures).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "attention_backward.hpp"
#include "attention_kernels.hpp"
#include "attention_reference.hpp"
#include "common/errors.hpp"
#include "common/exact_json.hpp"
#include "gpu/gpu_catalog.hpp"
#include "harness/host_io.hpp"
#include "harness/timing.hpp"
#include "inputs.hpp"
#include "kernels/launchers.hpp"
#include "model/kernel_setup.hpp"
#include "model/simulation.hpp"
#include "precision.hpp"
#include "validate/ncu_counters.hpp"

namespace {

using namespace fasim;
using nlohmann::json;

struct Config {
    const KernelVariant* kernel = nullptr;  // a forward kernel, or a backward one (catalog forward_kernel set)
    int N = 0, d = 0;
    bool causal = false;
    DType dtype = DType::fp32;
    bool with_forward = false;  // a backward kernel timed together with its forward kernel (--pass fwd+bwd)
    int KV = 0;                 // K/V heads (a divisor of H); 0 = H
};

bool is_backward(const KernelVariant& k) { return !k.forward_kernel.empty(); }
const KernelVariant& forward_of(const KernelVariant& k) { return cuda_kernel(k.forward_kernel); }

std::string describe(const Config& c) {
    const std::string name = c.with_forward ? std::string(c.kernel->forward_kernel) + "+" + std::string(c.kernel->name)
                                            : std::string(c.kernel->name);
    return name + " N=" + std::to_string(c.N) + " d=" + std::to_string(c.d) + " " + dtype_name(c.dtype) +
           (c.causal ? " causal" : "") + (c.KV > 0 ? " KV=" + std::to_string(c.KV) : "");
}

// The attention kernel of a launch (what a run records of it for the model): the last launch with a Q and a
// K/V tile (fa1's init kernel comes first; FA2 backward's dQ conversion, Br only, and its sum over grouped K/V
// heads, Bc only, come after), else the last (library GEMMs).
const CudaKernelLaunch* main_launch(const CudaLaunchInfo& launch) {
    for (auto it = launch.kernels.rbegin(); it != launch.kernels.rend(); ++it)
        if (it->Br > 0 && it->Bc > 0) return &*it;
    return launch.kernels.empty() ? nullptr : &launch.kernels.back();
}

// Two passes as one prediction: the kernels one after the other (fwd+bwd; each pass simulated with its
// own kernel's tiles, so the L2 starts cold for the backward, where the GPU may still hold the forward's O).
AlgorithmResult one_after_the_other(const AlgorithmResult& a, const AlgorithmResult& b) {
    AlgorithmResult r = b;
    r.kernels.insert(r.kernels.begin(), a.kernels.begin(), a.kernels.end());
    r.timing.insert(r.timing.begin(), a.timing.begin(), a.timing.end());
    r.hbm.add_by_name(a.hbm);
    r.l2.add_by_name(a.l2);
    r.dram.add_by_name(a.dram);
    r.smem_read += a.smem_read;
    r.smem_write += a.smem_write;
    r.matmul_flops += a.matmul_flops;
    r.nonmatmul_flops += a.nonmatmul_flops;
    r.ideal_matmul_flops += a.ideal_matmul_flops;
    r.time_s += a.time_s;
    return r;
}

// How the simulator models a kernel (sim/kernels/kernel_catalog.hpp, sim/model/kernel_setup.hpp: one table for
// fa-validate, the predicted-vs-measured figure and the CI test).
const KernelVariant& catalog_row(const Config& c) { return *c.kernel; }
const Algorithm& sim_algo(const Config& c) { return algorithm(catalog_row(c).algorithm); }

AttentionProblem sim_problem(const Config& c, int B, int H) {
    AttentionProblem p;
    p.batch = B;
    p.heads = H;
    p.N = c.N;
    p.Nk = c.N;
    p.d = c.d;
    p.dtype = c.dtype;
    p.causal = c.causal;
    p.kv_heads = c.KV > 0 ? c.KV : H;
    return p;
}

CudaProblem cuda_problem(const Config& c, int B, int H) { return {B, H, c.N, c.N, c.d, c.dtype, c.causal, c.KV}; }

// The query head whose inputs' K and V stand for query head h's K/V head: the first of its group (the inputs
// hold Q, K, V for every query head; a group reads its first head's K and V).
std::size_t kv_source(const CudaProblem& p, int h) {
    return static_cast<std::size_t>((h / p.H) * p.H + ((h % p.H) / p.group_size()) * p.group_size());
}

AlgorithmResult predict(const KernelVariant& k, const Config& c, int B, int H, const CudaLaunchInfo& launch,
                        const GpuSpec& gpu) {
    MeasuredLaunch recorded;
    if (const CudaKernelLaunch* main = main_launch(launch))
        recorded = {main->Br,         main->Bc, main->q_splits, main->registers_per_thread, main->block_threads / 32,
                    static_cast<std::int64_t>(main->dynamic_smem_bytes), main->kv_splits, main->one_address_per_tile};
    const AttentionProblem p = sim_problem(c, B, H);
    const KernelSetup s = kernel_setup(k, p, gpu, recorded);
    return simulate(*s.algorithm, p, gpu, s.tiles, s.options);
}

std::string gpu_preset_for(const std::string& device_name, std::size_t memory_bytes) {
    const std::string preset = preset_for_device(device_name, memory_bytes);
    if (preset.empty())
        throw std::runtime_error("no fa-sim preset matches the GPU '" + device_name + "': pass --gpu NAME or --gpu-file FILE");
    return preset;
}

std::string command_output(const std::string& cmd) {
    std::string out;
    if (FILE* f = popen(cmd.c_str(), "r")) {
        char buf[256];
        while (fgets(buf, sizeof buf, f)) out += buf;
        pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

// ---- correctness on sampled rows ---------------------------------------------------

struct Accuracy {
    bool pass = false;
    double error = 0, bound = 0, naive_error = 0, relative = 0;
    int rows = 0;
    int key_rows = 0;  // of those, key rows of dK and dV (a backward kernel)
};

// Each sampled row is checked against exact attention in float64 over the keys it
// may see (bottom-right causal: j <= i + Nk - N), and against naive attention in the
// storage precision (the flash-attention test rule, reference/TOLERANCES.md).
Accuracy check_rows(const Config& c, const CudaProblem& p, const std::vector<reference::QKV>& in, const DeviceTensors& t,
                    int heads, int samples) {
    std::vector<std::pair<int, int>> picks;  // (head, row)
    for (int h : {0, heads - 1})
        for (int s = 0; s < samples; ++s) picks.push_back({h, static_cast<int>((static_cast<long>(s) * (c.N - 1)) / std::max(1, samples - 1))});
    const long rows = static_cast<long>(picks.size());
    reference::Matrix alg(rows, c.d), exact(rows, c.d), naive(rows, c.d);
    double logit_term = 0;
    for (long r = 0; r < rows; ++r) {
        const auto [h, i] = picks[static_cast<std::size_t>(r)];
        const auto& qkv = in[static_cast<std::size_t>(h)];
        const auto& kv = in[kv_source(p, h)];      // the group's K and V
        const long keys = c.causal ? i + 1 : c.N;  // Nk = N here
        const reference::Matrix q = qkv.Q.row(i), K = kv.K.topRows(keys), V = kv.V.topRows(keys);
        const auto ex = reference::exact_attention(q, K, V, {});
        exact.row(r) = ex.O.row(0);
        naive.row(r) = reference::naive_attention_in_precision(q, K, V, {}, c.dtype).row(0);
        logit_term = std::max(logit_term, reference::logit_rounding_term(q, K, V, {}, ex));
        const auto got = download_storage(t.O, (static_cast<std::size_t>(h) * c.N + static_cast<std::size_t>(i)) * c.d,
                                          static_cast<std::size_t>(c.d), c.dtype);
        for (int j = 0; j < c.d; ++j) alg(r, j) = got[static_cast<std::size_t>(j)];
    }
    const auto chk = reference::check_tolerance(alg, exact, naive, logit_term, c.dtype);
    Accuracy a;
    a.rows = static_cast<int>(rows);
    a.error = chk.error;
    a.bound = chk.bound;
    a.naive_error = chk.naive_error;
    a.relative = chk.error / std::max(1e-300, exact.cwiseAbs().maxCoeff());
    a.pass = chk.pass && (c.dtype != DType::fp32 || a.relative <= 1e-4) && alg.allFinite();
    return a;
}

// dK and dV of sampled key rows J of one K/V head, summed over the query heads of its group, against float64,
// with the gradients' rule as cuda-check applies it to a group (reference/TOLERANCES.md, "Gradients"). Every
// row's softmax is needed, so each query head's rows are taken in blocks: S = scale Q K^T, exact P, O = P V,
// D = rowsum(dO o O), then for the keys J: dS = P (dP - D), dK_J = scale dS^T Q, dV_J = P^T dO. The naive
// error: P, dP and dS rounded to the dtype (what a plain backward stores), D from O rounded to the dtype, each
// head's dK_J, dV_J rounded, their sum rounded; the floor: each head's (check_gradient's, its term sizes and
// its largest logit terms over the keys J) summed.
struct KeyRowsReference {
    reference::Matrix exact_dK, exact_dV, naive_dK, naive_dV;
    double floor_dK = 0, floor_dV = 0;
};

KeyRowsReference key_rows_of_head(const reference::Matrix& Q, const reference::Matrix& K, const reference::Matrix& V,
                                  const reference::Matrix& dO, const std::vector<int>& J, bool causal, DType dtype) {
    using reference::Matrix;
    const long N = Q.rows(), Nk = K.rows(), d = Q.cols(), nj = static_cast<long>(J.size());
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    Matrix KJ(nj, d), VJ(nj, d);
    for (long j = 0; j < nj; ++j) {
        KJ.row(j) = K.row(J[static_cast<std::size_t>(j)]);
        VJ.row(j) = V.row(J[static_cast<std::size_t>(j)]);
    }
    Matrix dK = Matrix::Zero(nj, d), dV = Matrix::Zero(nj, d), ndK = Matrix::Zero(nj, d), ndV = Matrix::Zero(nj, d);
    Matrix tK = Matrix::Zero(nj, d), tV = Matrix::Zero(nj, d);  // term sizes (gradient_term_sizes)
    double logits = 0;
    constexpr long kBlock = 256;
    for (long i0 = 0; i0 < N; i0 += kBlock) {
        const long rows = std::min(kBlock, N - i0);
        const Matrix Qb = Q.middleRows(i0, rows), dOb = dO.middleRows(i0, rows);
        Matrix S = scale * (Qb * K.transpose());
        for (long r = 0; r < rows; ++r) {  // bottom-right causal: key k visible to row i iff k <= i + Nk - N
            const long last = causal ? i0 + r + Nk - N : Nk - 1;
            for (long k = std::max(0L, last + 1); k < Nk; ++k) S(r, k) = -INFINITY;
            const double m = S.row(r).maxCoeff();
            if (m == -INFINITY) {
                S.row(r).setZero();
                continue;
            }
            S.row(r) = (S.row(r).array() - m).exp();
            S.row(r) /= S.row(r).sum();
        }
        const Matrix& P = S;
        const Matrix O = P * V;
        const reference::Vector D = (dOb.array() * O.array()).rowwise().sum();
        const reference::Vector Dabs = (dOb.cwiseAbs().array() * O.cwiseAbs().array()).rowwise().sum();
        Matrix PJ(rows, nj);
        for (long j = 0; j < nj; ++j) PJ.col(j) = P.col(J[static_cast<std::size_t>(j)]);
        const Matrix dPJ = dOb * VJ.transpose();
        const Matrix dSJ = (PJ.array() * (dPJ.colwise() - D).array()).matrix();
        dK += scale * dSJ.transpose() * Qb;
        dV += PJ.transpose() * dOb;
        const Matrix PJn = reference::round_matrix(PJ, dtype), dPJn = reference::round_matrix(dPJ, dtype);
        // D from O stored in the dtype, as a FlashAttention backward forms it from the forward's output.
        const reference::Vector Dn = (dOb.array() * reference::round_matrix(O, dtype).array()).rowwise().sum();
        const Matrix dSJ_of_rounded = (PJn.array() * (dPJn.colwise() - Dn).array()).matrix();
        const Matrix dSJn = reference::round_matrix(dSJ_of_rounded, dtype);
        ndK += scale * dSJn.transpose() * Qb;
        ndV += PJn.transpose() * dOb;
        const Matrix dSabs = (PJ.array() * ((dOb.cwiseAbs() * VJ.cwiseAbs().transpose()).colwise() + Dabs).array()).matrix();
        tK += scale * dSabs.transpose() * Qb.cwiseAbs();
        tV += PJ.transpose() * dOb.cwiseAbs();
        logits = std::max(logits, scale * (Qb.cwiseAbs() * KJ.cwiseAbs().transpose()).maxCoeff());
    }
    KeyRowsReference r{dK, dV, reference::round_matrix(ndK, dtype), reference::round_matrix(ndV, dtype)};
    r.floor_dK = reference::check_gradient(dK, dK, r.naive_dK, logits, dtype, tK.maxCoeff()).floor;
    r.floor_dV = reference::check_gradient(dV, dV, r.naive_dV, logits, dtype, tV.maxCoeff()).floor;
    return r;
}

// The last K/V head (the largest batch and group offsets), `samples` key rows spread over [0, N): dK and dV
// against the group sums of key_rows_of_head, its query heads in parallel. Folds the worst into `a`.
void check_key_rows(const Config& c, const CudaProblem& p, const std::vector<reference::QKV>& in,
                    const std::vector<reference::Matrix>& dO, const DeviceTensors& t, int samples, Accuracy& a, double& worst) {
    std::vector<int> J;
    for (int s = 0; s < samples; ++s) {
        const int j = static_cast<int>((static_cast<long>(s) * (c.N - 1)) / std::max(1, samples - 1));
        if (J.empty() || J.back() != j) J.push_back(j);
    }
    const int kv = p.B * p.kv_heads() - 1, G = p.group_size();
    const auto& kvx = in[kv_source(p, kv * G)];
    std::vector<std::future<KeyRowsReference>> heads;
    for (int g = 0; g < G; ++g) {
        const std::size_t h = static_cast<std::size_t>(kv * G + g);
        heads.push_back(std::async(std::launch::async, key_rows_of_head, std::cref(in[h].Q), std::cref(kvx.K), std::cref(kvx.V),
                                   std::cref(dO[h]), std::cref(J), c.causal, c.dtype));
    }
    const long nj = static_cast<long>(J.size());
    KeyRowsReference sum{reference::Matrix::Zero(nj, c.d), reference::Matrix::Zero(nj, c.d),
                         reference::Matrix::Zero(nj, c.d), reference::Matrix::Zero(nj, c.d)};
    for (auto& f : heads) {
        const KeyRowsReference r = f.get();
        sum.exact_dK += r.exact_dK;
        sum.exact_dV += r.exact_dV;
        sum.naive_dK += r.naive_dK;
        sum.naive_dV += r.naive_dV;
        sum.floor_dK += r.floor_dK;
        sum.floor_dV += r.floor_dV;
    }
    for (const auto& [buf, exact, naive, floor] : {std::tuple{&t.dK, &sum.exact_dK, &sum.naive_dK, sum.floor_dK},
                                                   std::tuple{&t.dV, &sum.exact_dV, &sum.naive_dV, sum.floor_dV}}) {
        reference::Matrix got(nj, c.d);
        for (long j = 0; j < nj; ++j) {
            const std::size_t row = static_cast<std::size_t>(kv) * static_cast<std::size_t>(c.N) + static_cast<std::size_t>(J[static_cast<std::size_t>(j)]);
            const auto v = download_storage(*buf, row * static_cast<std::size_t>(c.d), static_cast<std::size_t>(c.d), c.dtype);
            for (int e = 0; e < c.d; ++e) got(j, e) = v[static_cast<std::size_t>(e)];
        }
        reference::GradientCheck chk =
            reference::check_gradient(got, *exact, G > 1 ? reference::round_matrix(*naive, c.dtype) : *naive, 0, c.dtype, 0);
        chk.floor = floor;
        chk.bound = (std::isfinite(chk.naive_error) ? 2 * chk.naive_error : 0.0) + chk.floor;
        chk.pass = got.allFinite() && chk.error <= chk.bound;
        a.rows += static_cast<int>(nj);
        a.key_rows += static_cast<int>(nj);
        a.pass = a.pass && chk.pass;
        const double ratio = chk.bound > 0 ? chk.error / chk.bound : 0;
        if (ratio > worst) {
            worst = ratio;
            a.error = chk.error;
            a.bound = chk.bound;
            a.naive_error = chk.naive_error;
        }
    }
}

// A backward kernel: dQ of the sampled rows against the float64 backward of those rows (dQ_i depends on
// row i alone: dQ_i = scale sum_j P_ij (dP_ij - D_i) K_j, K and V its group's) with the gradients' rule,
// and every element of dK and dV finite (the outputs were poisoned with NaN). dK and dV of a key need every
// row's softmax: up to N = key_rows_max_n sampled key rows of the last K/V head are checked too
// (check_key_rows, summed over its group); cuda-check compares them whole at smaller N.
Accuracy check_gradient_rows(const Config& c, const CudaProblem& p, const std::vector<reference::QKV>& in,
                             const std::vector<reference::Matrix>& dO, const DeviceTensors& t, int heads, int samples,
                             int key_rows_max_n) {
    Accuracy a;
    a.pass = true;
    double worst = -1;
    for (int h : {0, heads - 1})
        for (int s = 0; s < samples; ++s) {
            const int i = static_cast<int>((static_cast<long>(s) * (c.N - 1)) / std::max(1, samples - 1));
            const auto& qkv = in[static_cast<std::size_t>(h)];
            const auto& kv = in[kv_source(p, h)];      // the group's K and V
            const long keys = c.causal ? i + 1 : c.N;  // Nk = N here
            const reference::Matrix q = qkv.Q.row(i), K = kv.K.topRows(keys), V = kv.V.topRows(keys);
            const reference::Matrix g = dO[static_cast<std::size_t>(h)].row(i);
            const auto exact = reference::exact_attention_backward(q, K, V, g, {});
            const auto naive = reference::naive_attention_backward_in_precision(q, K, V, g, {}, c.dtype);
            const auto got = download_storage(t.dQ, (static_cast<std::size_t>(h) * c.N + static_cast<std::size_t>(i)) * c.d,
                                              static_cast<std::size_t>(c.d), c.dtype);
            reference::Matrix alg(1, c.d);
            for (int j = 0; j < c.d; ++j) alg(0, j) = got[static_cast<std::size_t>(j)];
            const double terms = reference::gradient_term_sizes(q, K, V, g, {}).dQ.maxCoeff();
            const auto chk =
                reference::check_gradient(alg, exact.dQ, naive.dQ, reference::largest_logit_terms(q, K, {}), c.dtype, terms);
            ++a.rows;
            a.pass = a.pass && chk.pass && alg.allFinite();
            // Relative to the size of dQ's terms: a row that sees one key has dQ = 0 exactly (2026-11-25-h100-b
            // failed such a row by dividing by max|dQ|).
            a.relative = std::max(a.relative, chk.error / std::max(1e-300, terms));
            const double ratio = chk.bound > 0 ? chk.error / chk.bound : 0;
            if (ratio > worst) {
                worst = ratio;
                a.error = chk.error;
                a.bound = chk.bound;
                a.naive_error = chk.naive_error;
            }
        }
    const std::size_t kv = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.kv_heads()) *
                           static_cast<std::size_t>(c.N) * static_cast<std::size_t>(c.d);
    for (const DeviceBuffer* b : {&t.dK, &t.dV})
        for (double x : download_storage(*b, 0, kv, c.dtype)) a.pass = a.pass && std::isfinite(x);
    if (c.N <= key_rows_max_n) check_key_rows(c, p, in, dO, t, samples, a, worst);
    if (c.dtype == DType::fp32 && a.relative > 1e-4) a.pass = false;
    return a;
}

// ---- one configuration ----------------------------------------------------------------

struct Outcome {
    Config config;
    Accuracy accuracy;
    TimingResult timing;
    AlgorithmResult predicted;
    std::string prediction_error;  // non-empty: the simulator has no prediction (e.g. a kernel it cannot model yet)
    CudaLaunchInfo launch;
    std::string error;
};

Outcome run_config(const Config& c, const std::vector<reference::QKV>& in, const std::vector<reference::Matrix>& dO,
                   int B, int H, const GpuSpec& gpu, const TimingOptions& topt, int samples, int key_rows_max_n) {
    Outcome o;
    o.config = c;
    const CudaProblem p = cuda_problem(c, B, H);
    // The simulator's prediction, apart: a problem it cannot model yet leaves the measurement standing.
    auto prediction = [&](const std::function<AlgorithmResult()>& f) {
        try {
            o.predicted = f();
        } catch (const std::exception& e) {
            o.prediction_error = e.what();
        }
    };
    try {
        validate_problem(p);
        DeviceTensors t = allocate_tensors(p, *c.kernel);
        std::vector<reference::Matrix> Q, K, V;
        for (const auto& x : in) Q.push_back(x.Q);
        for (int kh = 0; kh < p.B * p.kv_heads(); ++kh) {  // K/V head kh: its group's first query head's K and V
            const auto& x = in[kv_source(p, kh * p.group_size())];
            K.push_back(x.K);
            V.push_back(x.V);
        }
        upload(t.Q, to_storage(Q, c.dtype));
        upload(t.K, to_storage(K, c.dtype));
        upload(t.V, to_storage(V, c.dtype));
        for (const DeviceBuffer* b : {&t.O, &t.LSE, &t.O_partial, &t.LSE_partial, &t.dQ, &t.dK, &t.dV, &t.dK_expanded,
                                      &t.dV_expanded})
            poison(*b);
        if (!is_backward(*c.kernel)) {
            o.launch = run_attention(*c.kernel, p, t, nullptr);
            CUDA_CHECK(cudaDeviceSynchronize());
            o.accuracy = check_rows(c, p, in, t, B * H, samples);
            o.timing = time_gpu([&](cudaStream_t s) { run_attention(*c.kernel, p, t, s); }, nullptr, topt);
            prediction([&] { return predict(*c.kernel, c, B, H, o.launch, gpu); });
        } else {  // the forward kernel once (its O and LSE, or P), then the backward, checked, then timed
            const KernelVariant& fwd = forward_of(*c.kernel);
            upload(t.dO, to_storage(dO, c.dtype));
            const CudaLaunchInfo fwd_launch = run_attention(fwd, p, t, nullptr);
            o.launch = run_attention(*c.kernel, p, t, nullptr);
            CUDA_CHECK(cudaDeviceSynchronize());
            o.accuracy = check_gradient_rows(c, p, in, dO, t, B * H, samples, key_rows_max_n);
            o.timing = time_gpu(
                [&](cudaStream_t s) {
                    if (c.with_forward) run_attention(fwd, p, t, s);
                    run_attention(*c.kernel, p, t, s);
                },
                nullptr, topt);
            prediction([&] {
                const AlgorithmResult bwd = predict(*c.kernel, c, B, H, o.launch, gpu);
                return c.with_forward ? one_after_the_other(predict(fwd, c, B, H, fwd_launch, gpu), bwd) : bwd;
            });
            if (c.with_forward)
                o.launch.kernels.insert(o.launch.kernels.begin(), fwd_launch.kernels.begin(), fwd_launch.kernels.end());
        }
    } catch (const std::exception& e) {
        o.error = e.what();
        (void)cudaGetLastError();
    }
    return o;
}

json launches_json(const CudaLaunchInfo& launch) {
    json launches = json::array();
    for (const auto& l : launch.kernels) {
        launches.push_back({{"name", l.name}, {"grid", l.grid}, {"threads", l.block_threads},
                            {"dynamic_smem_bytes", l.dynamic_smem_bytes}, {"Br", l.Br}, {"Bc", l.Bc}});
        if (l.q_splits > 0) launches.back()["q_splits"] = l.q_splits;
        if (l.kv_splits > 0) launches.back()["kv_splits"] = l.kv_splits;
        if (l.registers_per_thread > 0) launches.back()["registers_per_thread"] = l.registers_per_thread;
        if (l.one_address_per_tile) launches.back()["tile_addresses"] = "one_per_tile";
        if (l.kv_copy_engine) launches.back()["kv_copies"] = "copy_engine";
    }
    return launches;
}

json predicted_kernels_json(const AlgorithmResult& r) {
    json kernels = json::array();
    for (std::size_t k = 0; k < r.kernels.size(); ++k) {
        const auto& kr = r.kernels[k];
        kernels.push_back({{"name", kr.desc.name}, {"predicted_s", r.timing[k].total_s}, {"bound", r.timing[k].bound},
                           {"dram_read_bytes", kr.dram.read_bytes()}, {"dram_write_bytes", kr.dram.write_bytes()},
                           {"l2_read_bytes", kr.l2.read_bytes()}, {"l2_write_bytes", kr.l2.write_bytes()},
                           {"smem_bytes", kr.smem_read + kr.smem_write}});
    }
    return kernels;
}

json outcome_json(const Outcome& o, int B, int H) {
    const Config& c = o.config;
    json j = {{"algo", std::string(c.kernel->name)}, {"sim_algo", std::string(sim_algo(c).id)}, {"N", c.N}, {"Nk", c.N},
              {"d", c.d}, {"dtype", dtype_name(c.dtype)}, {"causal", c.causal}, {"batch", B}, {"heads", H},
              {"kv_heads", c.KV > 0 ? c.KV : H}};
    if (is_backward(*c.kernel)) j["pass"] = c.with_forward ? "fwd+bwd" : "bwd";
    if (c.with_forward) j["forward_algo"] = std::string(c.kernel->forward_kernel);
    if (!o.error.empty()) {
        j["error"] = o.error;
        return j;
    }
    const double measured = o.timing.median_ms * 1e-3, predicted = o.predicted.time_s;
    const double flops = static_cast<double>(o.predicted.ideal_matmul_flops);
    j["measured_s"] = measured;
    j["measured_min_s"] = o.timing.min_ms * 1e-3;
    j["measured_max_s"] = o.timing.max_ms * 1e-3;
    j["runs"] = o.timing.runs;
    if (o.prediction_error.empty()) {
        j["predicted_s"] = predicted;
        j["error_pct"] = 100.0 * (predicted - measured) / measured;
        j["measured_tflops"] = flops / measured * 1e-12;
        j["measured_gbps_hbm_papers_sense"] = static_cast<double>(o.predicted.hbm.total()) / measured * 1e-9;
    } else {
        j["predicted_s"] = nullptr;
        j["prediction_error"] = o.prediction_error;
    }
    j["accuracy"] = {{"pass", o.accuracy.pass}, {"max_abs_error", o.accuracy.error}, {"allowed", o.accuracy.bound},
                     {"naive_error", o.accuracy.naive_error}, {"relative_error", o.accuracy.relative},
                     {"rows_checked", o.accuracy.rows}};
    if (is_backward(*c.kernel))
        j["accuracy"]["checked"] = o.accuracy.key_rows > 0
                                       ? "dQ of the rows checked; dK and dV of sampled key rows of the last K/V head, summed "
                                         "over its group; every dK and dV element finite"
                                       : "dQ of the rows checked; every dK and dV element finite";
    if (o.prediction_error.empty()) j["predicted_kernels"] = predicted_kernels_json(o.predicted);
    j["launches"] = launches_json(o.launch);
    return j;
}

std::vector<reference::QKV> make_inputs(int heads, int N, int d, DType dtype, std::uint64_t seed) {
    std::vector<reference::QKV> in;
    for (int h = 0; h < heads; ++h) in.push_back(reference::random_qkv(N, N, d, mix_seed(seed + static_cast<std::uint64_t>(h)), dtype));
    return in;
}

// The output gradient dO of every head, N(0, 1) in the storage dtype.
std::vector<reference::Matrix> make_output_gradients(int heads, int N, int d, DType dtype, std::uint64_t seed) {
    std::vector<reference::Matrix> dO;
    for (int h = 0; h < heads; ++h)
        dO.push_back(reference::round_matrix(reference::random_normal(N, d, mix_seed(~(seed + static_cast<std::uint64_t>(h)))), dtype));
    return dO;
}

// Child mode for Nsight Compute: one launch of one configuration, nothing else on the GPU.
int profile_one(const Config& c, int B, int H) {
    const CudaProblem p = cuda_problem(c, B, H);
    DeviceTensors t = allocate_tensors(p, *c.kernel);
    std::mt19937 rng(1);
    std::normal_distribution<double> normal;
    auto fill = [&](const DeviceBuffer& b, long rows, int heads) {
        std::vector<reference::Matrix> m;
        for (int h = 0; h < heads; ++h) {
            reference::Matrix x(rows, c.d);
            for (long i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
            m.push_back(reference::round_matrix(x, c.dtype));
        }
        upload(b, to_storage(m, c.dtype));
    };
    fill(t.Q, c.N, B * H);
    fill(t.K, c.N, B * p.kv_heads());
    fill(t.V, c.N, B * p.kv_heads());
    // A backward kernel reads what its forward kernel wrote: the forward runs first, before the first flush
    // (ncu_counters.cpp counts only the kernels after it).
    if (is_backward(*c.kernel)) {
        fill(t.dO, c.N, B * H);
        run_attention(forward_of(*c.kernel), p, t, nullptr);
    }
    // Read-only L2 flushes around the kernels (ncu runs with --cache-control none): the first evicts
    // the uploaded inputs, so the kernels start with a cold, clean L2; the second evicts the lines the
    // kernels left dirty, and its DRAM writes are their write-back (ncu_counters.cpp adds them).
    L2Flusher flusher;
    flusher.flush(nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    run_attention(*c.kernel, p, t, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    flusher.flush(nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}

// ---- the decode grid (--grid decode) ----------------------------------------------------------

struct DecodeConfig {
    const KernelVariant* kernel = nullptr;
    int B = 1, H = 32, KV = 32, Nk = 1024, d = 128;
    DType dtype = DType::fp16;
    int kv_splits = 0;  // 0: the kernel's heuristic
    CudaProblem problem() const { return CudaProblem{B, H, 1, Nk, d, dtype, false, KV, kv_splits}; }
};

std::string describe(const DecodeConfig& c) {
    return std::string(c.kernel->name) + " B=" + std::to_string(c.B) + " H=" + std::to_string(c.H) + " KV=" +
           std::to_string(c.KV) + " Nk=" + std::to_string(c.Nk) + " d=" + std::to_string(c.d) + " " + dtype_name(c.dtype) +
           (c.kv_splits > 0 ? " S=" + std::to_string(c.kv_splits) : "");
}

// Inputs too large to build on the host (the decode grid's K and V reach tens of GB): a block of N(0, 1)
// values in the storage dtype, 2^24 elements (every K/V head of the grid holds distinct keys), repeated
// over a buffer by device-to-device copies. The accuracy check reads back what the kernel read.
class RepeatedRandom {
public:
    RepeatedRandom(DType dtype, std::uint64_t seed) {
        const reference::Matrix block = reference::round_matrix(reference::random_normal(1 << 14, 1 << 10, seed), dtype);
        block_ = DeviceBuffer(static_cast<std::size_t>(block.size()) * static_cast<std::size_t>(dtype_bytes(dtype)));
        upload(block_, to_storage({block}, dtype));
    }
    void fill(const DeviceBuffer& dst) const {
        const std::size_t total = dst.bytes();
        std::size_t filled = std::min(total, block_.bytes());
        CUDA_CHECK(cudaMemcpy(dst.get(), block_.get(), filled, cudaMemcpyDeviceToDevice));
        while (filled < total) {  // doubling: log2(total / block) copies
            const std::size_t n = std::min(filled, total - filled);
            CUDA_CHECK(cudaMemcpy(dst.as<unsigned char>() + filled, dst.get(), n, cudaMemcpyDeviceToDevice));
            filled += n;
        }
    }

private:
    DeviceBuffer block_;
};

// Bytes a decode configuration allocates: Q, O, LSE, K, V and, at most, 128 splits' partial results.
std::size_t decode_bytes(const DecodeConfig& c) {
    const std::size_t e = static_cast<std::size_t>(dtype_bytes(c.dtype)), q_rows = static_cast<std::size_t>(c.B) * c.H;
    const std::size_t kv = static_cast<std::size_t>(c.B) * c.KV * static_cast<std::size_t>(c.Nk) * c.d * e;
    return 2 * kv + q_rows * (2 * c.d * e + 4) + 128 * q_rows * (c.d + 1) * 4;
}

// The sampled query heads of one query row each, against exact attention over their K/V head in float64
// and naive attention in the storage precision (O), and the LSE against its tolerance.
Accuracy check_decode_rows(const DecodeConfig& c, const DeviceTensors& t, int samples) {
    const CudaProblem p = c.problem();
    const int heads = p.B * p.H;
    std::vector<int> picks;
    for (int s = 0; s < samples; ++s) {
        const int h = static_cast<int>((static_cast<long>(s) * (heads - 1)) / std::max(1, samples - 1));
        if (picks.empty() || picks.back() != h) picks.push_back(h);
    }
    const long rows = static_cast<long>(picks.size());
    reference::Matrix alg(rows, c.d), exact(rows, c.d), naive(rows, c.d);
    double logit_term = 0;
    bool lse_pass = true;
    const auto matrix = [&](const DeviceBuffer& b, std::size_t offset, long r) {
        const std::vector<double> v = download_storage(b, offset, static_cast<std::size_t>(r) * c.d, c.dtype);
        return reference::Matrix(Eigen::Map<const reference::Matrix>(v.data(), r, c.d));
    };
    for (long r = 0; r < rows; ++r) {
        const int h = picks[static_cast<std::size_t>(r)];
        const int kv_head = (h / p.H) * p.kv_heads() + (h % p.H) / p.group_size();
        const std::size_t kv_offset = static_cast<std::size_t>(kv_head) * c.Nk * c.d;
        const reference::Matrix q = matrix(t.Q, static_cast<std::size_t>(h) * c.d, 1);
        const reference::Matrix K = matrix(t.K, kv_offset, c.Nk), V = matrix(t.V, kv_offset, c.Nk);
        const auto ex = reference::exact_attention(q, K, V, {});
        exact.row(r) = ex.O.row(0);
        naive.row(r) = reference::naive_attention_in_precision(q, K, V, {}, c.dtype).row(0);
        logit_term = std::max(logit_term, reference::logit_rounding_term(q, K, V, {}, ex));
        alg.row(r) = matrix(t.O, static_cast<std::size_t>(h) * c.d, 1).row(0);
        reference::Vector lse(1);
        lse(0) = download_floats(t.LSE, static_cast<std::size_t>(h), 1)[0];
        lse_pass = lse_pass && reference::check_lse(lse, q, K, {}, ex).pass;
    }
    const auto chk = reference::check_tolerance(alg, exact, naive, logit_term, c.dtype);
    Accuracy a;
    a.rows = static_cast<int>(rows);
    a.error = chk.error;
    a.bound = chk.bound;
    a.naive_error = chk.naive_error;
    a.relative = chk.error / std::max(1e-300, exact.cwiseAbs().maxCoeff());
    a.pass = chk.pass && lse_pass && alg.allFinite();
    return a;
}

struct DecodeOutcome {
    DecodeConfig config;
    Accuracy accuracy;
    TimingResult timing;
    CudaLaunchInfo launch;
    std::optional<AlgorithmResult> predicted;
    std::string prediction_error;  // why the simulator has no prediction (e.g. more heads than it takes)
    std::string error;
};

DecodeOutcome run_decode_config(const DecodeConfig& c, const RepeatedRandom& q_values, const RepeatedRandom& k_values,
                                const RepeatedRandom& v_values, const GpuSpec& gpu, const TimingOptions& topt, int samples) {
    DecodeOutcome o;
    o.config = c;
    const CudaProblem p = c.problem();
    try {
        DeviceTensors t = allocate_tensors(p, *c.kernel);
        q_values.fill(t.Q);
        k_values.fill(t.K);
        v_values.fill(t.V);
        for (const DeviceBuffer* b : {&t.O, &t.LSE, &t.O_partial, &t.LSE_partial}) poison(*b);
        o.launch = run_attention(*c.kernel, p, t, nullptr);
        CUDA_CHECK(cudaDeviceSynchronize());
        o.accuracy = check_decode_rows(c, t, samples);
        o.timing = time_gpu([&](cudaStream_t s) { run_attention(*c.kernel, p, t, s); }, nullptr, topt);
    } catch (const std::exception& e) {
        o.error = e.what();
        (void)cudaGetLastError();
        return o;
    }
    try {
        MeasuredLaunch recorded;
        if (const CudaKernelLaunch* main = main_launch(o.launch))
            recorded = {main->Br, main->Bc, main->q_splits, main->registers_per_thread, main->block_threads / 32,
                        static_cast<std::int64_t>(main->dynamic_smem_bytes), main->kv_splits, main->one_address_per_tile};
        AttentionProblem sp;
        sp.batch = c.B;
        sp.heads = c.H;
        sp.kv_heads = c.KV;
        sp.N = 1;
        sp.Nk = c.Nk;
        sp.d = c.d;
        sp.dtype = c.dtype;
        const KernelSetup s = kernel_setup(*c.kernel, sp, gpu, recorded);
        o.predicted = simulate(*s.algorithm, sp, gpu, s.tiles, s.options);
    } catch (const std::exception& e) {
        o.prediction_error = e.what();
    }
    return o;
}

// Bytes of K and V the configuration reads: each K/V head once.
double kv_bytes(const DecodeConfig& c) {
    return 2.0 * c.B * c.KV * static_cast<double>(c.Nk) * c.d * static_cast<double>(dtype_bytes(c.dtype));
}

json decode_json(const DecodeOutcome& o) {
    const DecodeConfig& c = o.config;
    json j = {{"algo", std::string(c.kernel->name)}, {"sim_algo", std::string(c.kernel->algorithm)}, {"grid", "decode"},
              {"N", 1}, {"Nk", c.Nk}, {"d", c.d}, {"dtype", dtype_name(c.dtype)}, {"causal", false}, {"batch", c.B},
              {"heads", c.H}, {"kv_heads", c.KV}};
    if (!o.error.empty()) {
        j["error"] = o.error;
        return j;
    }
    const CudaKernelLaunch* main = main_launch(o.launch);
    j["kv_splits"] = main != nullptr && main->kv_splits > 0 ? main->kv_splits : 1;
    const double measured = o.timing.median_ms * 1e-3;
    j["measured_s"] = measured;
    j["measured_min_s"] = o.timing.min_ms * 1e-3;
    j["measured_max_s"] = o.timing.max_ms * 1e-3;
    j["runs"] = o.timing.runs;
    j["kv_bytes"] = kv_bytes(c);
    j["kv_bandwidth_gbps"] = kv_bytes(c) / measured * 1e-9;
    if (o.predicted) {
        j["predicted_s"] = o.predicted->time_s;
        j["error_pct"] = 100.0 * (o.predicted->time_s - measured) / measured;
        j["measured_gbps_hbm_papers_sense"] = static_cast<double>(o.predicted->hbm.total()) / measured * 1e-9;
        j["predicted_kernels"] = predicted_kernels_json(*o.predicted);
    } else {
        j["predicted_s"] = nullptr;
        j["prediction_error"] = o.prediction_error;
    }
    j["accuracy"] = {{"pass", o.accuracy.pass}, {"max_abs_error", o.accuracy.error}, {"allowed", o.accuracy.bound},
                     {"naive_error", o.accuracy.naive_error}, {"relative_error", o.accuracy.relative},
                     {"rows_checked", o.accuracy.rows}, {"checked", "O and LSE of one query row per sampled query head"}};
    j["launches"] = launches_json(o.launch);
    return j;
}

struct DecodeGrid {
    std::vector<int> batches, kv_heads, Nks, ds;
    std::vector<DType> dtypes;
    int H = 32;
    std::vector<int> kv_splits = {0};  // 0: the kernel's heuristic
};

// The decode grid: every (head dim, dtype, K/V heads, batch, Nk, kernel). A configuration whose tensors do
// not fit the free device memory is skipped, saying so. Returns the failed configurations.
int run_decode_grid(const DecodeGrid& g, const std::vector<const KernelVariant*>& kernels,
                    const std::function<std::string(const KernelVariant*, const CudaProblem&)>& skip_reason,
                    const GpuSpec& gpu, const TimingOptions& topt, int samples, std::uint64_t seed, json& results) {
    std::printf("%-50s %9s %10s %10s %7s %6s %9s  %s\n", "configuration", "accuracy", "measured", "predicted", "error",
                "splits", "K/V GB/s", "predicted bound");
    int device = 0, l2_bytes = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    std::set<std::string> noted;
    int failures = 0;
    for (DType dtype : g.dtypes) {
        const RepeatedRandom q_values(dtype, mix_seed(seed)), k_values(dtype, mix_seed(seed + 1)),
            v_values(dtype, mix_seed(seed + 2));
        for (int d : g.ds)
            for (int KV : g.kv_heads)
                for (int B : g.batches)
                    for (int Nk : g.Nks)
                        for (int S : g.kv_splits)
                        for (const KernelVariant* k : kernels) {
                            const DecodeConfig c{k, B, g.H, KV, Nk, d, dtype, S};
                            if (const std::string why = skip_reason(k, c.problem()); !why.empty()) {
                                if (noted.insert(why).second) std::printf("skipped: %s\n", why.c_str());
                                continue;
                            }
                            std::size_t free = 0, total = 0;
                            CUDA_CHECK(cudaMemGetInfo(&free, &total));
                            // Beside the tensors: time_gpu's L2 flush buffer (2x L2) and 256 MiB of slack.
                            const std::size_t need = decode_bytes(c) + 2 * static_cast<std::size_t>(l2_bytes) + (256u << 20);
                            if (need > free) {
                                char why[160];
                                std::snprintf(why, sizeof why, "needs %.1f GB of device memory, %.1f GB are free",
                                              static_cast<double>(need) * 1e-9, static_cast<double>(free) * 1e-9);
                                std::printf("%-50s  skipped: %s\n", describe(c).c_str(), why);
                                results.push_back({{"algo", std::string(k->name)}, {"grid", "decode"}, {"N", 1}, {"Nk", Nk},
                                                   {"d", d}, {"dtype", dtype_name(dtype)}, {"causal", false}, {"batch", B},
                                                   {"heads", g.H}, {"kv_heads", KV}, {"skipped", why}});
                                continue;
                            }
                            const DecodeOutcome o = run_decode_config(c, q_values, k_values, v_values, gpu, topt, samples);
                            const json j = decode_json(o);
                            if (!o.error.empty()) {
                                std::printf("%-50s  error: %s\n", describe(c).c_str(), o.error.c_str());
                                ++failures;
                            } else {
                                failures += o.accuracy.pass ? 0 : 1;
                                char predicted[32] = "-", error[32] = "-";
                                if (o.predicted) {
                                    std::snprintf(predicted, sizeof predicted, "%.3fms", o.predicted->time_s * 1e3);
                                    std::snprintf(error, sizeof error, "%+.0f%%", j["error_pct"].get<double>());
                                }
                                std::printf("%-50s %9s %8.3fms %10s %7s %6d %9.0f  %s\n", describe(c).c_str(),
                                            o.accuracy.pass ? "ok" : "FAIL", o.timing.median_ms, predicted, error,
                                            j["kv_splits"].get<int>(), j["kv_bandwidth_gbps"].get<double>(),
                                            o.predicted ? o.predicted->longest_kernel().bound.c_str() : o.prediction_error.c_str());
                            }
                            results.push_back(j);
                            std::fflush(stdout);
                        }
    }
    return failures;
}

std::vector<int> parse_ints(const std::string& s) {
    std::vector<int> v;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');) v.push_back(std::stoi(item));
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"fa-validate: the CUDA kernels against the float64 reference, and the simulator against the GPU"};
    std::string ns = "512,1024,2048,4096,8192,16384", ds = "64,128", causal = "both", dtypes = "fp32", algos = "all";
    std::string out_path, gpu_name, profile, pass = "fwd", grid = "default";
    std::string nks = "1024,4096,16384,65536,131072", kv_heads = "32,8,1", batches = "1,8,64", kv_splits = "0";
    int B = 2, H = 8, runs = 10, warmup = 2, samples = 16, key_rows_max_n = 4096;
    std::uint64_t seed = std::random_device{}();
    bool ncu = false;
    std::string ncu_path = "ncu";
    app.add_option("--N", ns, "sequence lengths, comma separated (default 512..16384)")->type_name("INT,...");
    app.add_option("--d", ds, "head dimensions (default 64,128)")->type_name("INT,...");
    app.add_option("--causal", causal, "off, on or both (default both)");
    app.add_option("--dtype", dtypes, "storage dtypes, comma separated (default fp32)");
    app.add_option("--algo", algos, "kernels by their kernel-catalog names, comma separated: " + cuda_kernel_names() + "; or all");
    app.add_option("--pass", pass, "fwd (default), bwd (each kernel's backward kernel, timed after one untimed forward) "
                   "or fwd+bwd (forward and backward kernels timed together)")
        ->check(CLI::IsMember({"fwd", "bwd", "fwd+bwd"}));
    app.add_option("--batch", B, "batch (default 2)");
    app.add_option("--heads", H, "heads (default 8)");
    app.add_option("--runs", runs, "timed runs per configuration (median reported; default 10)");
    app.add_option("--warmup", warmup, "untimed runs first (default 2)");
    app.add_option("--sample-rows", samples, "rows per head checked against the float64 reference (default 16)");
    app.add_option("--seed", seed, "base seed of the random inputs (default: fresh, printed)");
    app.add_option("--gpu", gpu_name, "fa-sim GPU preset to predict with (default: matched to the device)");
    app.add_option("--out", out_path, "write every result to this JSON file");
    app.add_flag("--ncu", ncu, "also read DRAM/L2/shared-memory bytes with Nsight Compute (fp32, N >= 2048, d=64, non-causal)");
    app.add_option("--ncu-path", ncu_path, "the ncu executable (default: ncu on PATH)");
    app.add_option("--profile-one", profile, "internal: run one configuration once (under ncu)");
    app.add_option("--grid", grid, "default (N = Nk, --N, --batch, --heads) or decode (one query row against Nk keys, "
                   "--Nk, --kv-heads, --batches; defaults: fp16, d 128, 32 heads, --algo flash_decoding)")
        ->check(CLI::IsMember({"default", "decode"}));
    app.add_option("--Nk", nks, "decode grid: key lengths, comma separated (default 1024,4096,16384,65536,131072)")->type_name("INT,...");
    app.add_option("--kv-heads", kv_heads, "K/V head counts, divisors of --heads (decode grid default 32,8,1; default grid: "
                   "--heads, i.e. no grouping; KV < H needs a kernel that takes grouped K/V heads)")->type_name("INT,...");
    app.add_option("--key-rows-max-n", key_rows_max_n, "backward: dK and dV of sampled key rows (of the last K/V head, summed "
                   "over its group) are checked against float64 up to this N (default 4096; each costs two N x N x d "
                   "products per query head of the group on the host)");
    app.add_option("--batches", batches, "decode grid: batch sizes, comma separated (default 1,8,64)")->type_name("INT,...");
    app.add_option("--kv-splits", kv_splits, "decode grid: splits of the keys, comma separated, 0 for the kernel's heuristic "
                   "(default 0); a count past a problem's K/V tiles skips that problem, saying so")->type_name("INT,...");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {  // one line, control characters escaped, exit code 2 (issue 25)
        std::fprintf(stderr, "fa-validate: error: %s: see fa-validate --help. Fix: correct the command line\n",
                     fasim::escape_control(e.what()).c_str());
        return 2;
    }
    const bool decode = grid == "decode";
    if (decode) {
        if (app.count("--dtype") == 0) dtypes = "fp16";
        if (app.count("--d") == 0) ds = "128";
        if (app.count("--heads") == 0) H = 32;
        if (app.count("--algo") == 0) algos = "flash_decoding";
        if (pass != "fwd" || ncu || !profile.empty()) {
            std::fprintf(stderr, "fa-validate: --grid decode times the forward pass without ncu: drop --pass, --ncu and --profile-one\n");
            return 2;
        }
    }

    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    try {
        // The kernels of the pass: --algo names forward kernels, backward kernels or both; with --pass bwd or
        // fwd+bwd a forward kernel stands for its backward kernel(s) (catalog forward_kernel), and one with
        // none is noted and dropped; "all" is every kernel of the pass.
        std::vector<const KernelVariant*> asked, algo_list;
        if (algos == "all") {
            for (const KernelVariant* k : cuda_kernels())
                if (is_backward(*k) == (pass != "fwd")) asked.push_back(k);
        } else {
            for (std::stringstream ss(algos); std::getline(ss, algos, ',');) asked.push_back(&cuda_kernel(algos));
        }
        for (const KernelVariant* k : asked) {
            if (pass == "fwd" || is_backward(*k)) {
                algo_list.push_back(k);
                continue;
            }
            bool found = false;
            for (const KernelVariant* b : cuda_kernels())
                if (b->forward_kernel == k->name) {
                    algo_list.push_back(b);
                    found = true;
                }
            if (!found) std::printf("skipped: %s has no backward kernel in cuda/kernels/\n", std::string(k->name).c_str());
        }
        std::vector<DType> dtype_list;
        for (std::stringstream ss(dtypes); std::getline(ss, dtypes, ',');) {
            auto t = parse_dtype(dtypes);
            if (!t) throw std::invalid_argument("--dtype " + dtypes + " is not fp32, fp16 or bf16");
            dtype_list.push_back(*t);
        }
        // The default grid's K/V heads: --kv-heads, else H (no grouping).
        const std::vector<int> kv_list = decode || app.count("--kv-heads") > 0 ? parse_ints(kv_heads) : std::vector<int>{H};
        std::vector<bool> causal_list = causal == "on" ? std::vector<bool>{true}
                                      : causal == "off" ? std::vector<bool>{false}
                                                        : std::vector<bool>{false, true};

        if (!profile.empty()) {  // "algo,N,d,dtype,causal"
            std::vector<std::string> f;
            for (std::stringstream ss(profile); std::getline(ss, profile, ',');) f.push_back(profile);
            Config c{&cuda_kernel(f.at(0)), std::stoi(f.at(1)), std::stoi(f.at(2)), f.at(4) == "1", *parse_dtype(f.at(3)), false};
            return profile_one(c, B, H);
        }

        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        const std::string device = prop.name;
        const GpuSpec gpu = find_gpu_preset(gpu_name.empty() ? gpu_preset_for(device, prop.totalGlobalMem) : gpu_name);
        const std::string driver = command_output("nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null");
        char date[32];
        const std::time_t now = std::time(nullptr);
        std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
        std::string command;
        for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
        if (decode)
            std::printf("fa-validate --grid decode on %s (driver %s), predicted with the %s preset, H=%d, seed %llu, %s\n",
                        device.c_str(), driver.c_str(), gpu.name.c_str(), H, static_cast<unsigned long long>(seed), date);
        else
            std::printf("fa-validate on %s (driver %s), predicted with the %s preset, B=%d H=%d, seed %llu, %s\n",
                        device.c_str(), driver.c_str(), gpu.name.c_str(), B, H, static_cast<unsigned long long>(seed), date);

        // Configurations a kernel has no code for (the catalog's dtypes, head dims and compute capability):
        // skipped, noted once.
        const int cc = 10 * prop.major + prop.minor;
        auto skip_reason = [&](const KernelVariant* a, const CudaProblem& p) -> std::string {
            if (cc < a->min_compute_capability) {
                return std::string(a->name) + " needs compute capability " + std::to_string(a->min_compute_capability / 10) +
                       "." + std::to_string(a->min_compute_capability % 10) + "+; this GPU is " +
                       std::to_string(prop.major) + "." + std::to_string(prop.minor) + "; use --algo " +
                       std::string(a->algorithm);
            }
            if (std::string why = cuda_kernel_unsupported(*a, p); !why.empty()) return why;
            if (p.kv_splits > 0) {  // --kv-splits past the problem's K/V tiles: flash_decoding_layout says by how much
                try {
                    (void)cuda_detail::flash_decoding_layout(p, prop.multiProcessorCount);
                } catch (const std::invalid_argument& e) {
                    return e.what();
                }
            }
            return is_backward(*a) ? cuda_kernel_unsupported(forward_of(*a), p) : std::string();
        };
        std::set<std::string> noted;

        TimingOptions topt;
        topt.runs = runs;
        topt.warmup = warmup;
        json results = json::array();
        int failures = 0;
        if (decode) {
            const DecodeGrid g{parse_ints(batches), parse_ints(kv_heads), parse_ints(nks), parse_ints(ds), dtype_list, H,
                               parse_ints(kv_splits)};
            for (int S : g.kv_splits)
                if (S < 0) throw std::invalid_argument("--kv-splits " + std::to_string(S) + " is negative: pass 0 (the heuristic) or a "
                                                       "count of splits from 1 to the problem's K/V tiles");
            failures = run_decode_grid(g, algo_list, skip_reason, gpu, topt, samples, seed, results);
        } else {
            std::printf("%-32s %9s %10s %10s %7s %8s %9s  %s\n", "configuration", "accuracy", "measured", "predicted", "error",
                        "TFLOP/s", "GB/s", "predicted bound");
            for (int d : parse_ints(ds))
                for (int N : parse_ints(ns))
                    for (DType t : dtype_list) {
                        const std::uint64_t config_seed = seed + static_cast<std::uint64_t>(N) * 131 + static_cast<std::uint64_t>(d);
                        const auto inputs = make_inputs(B * H, N, d, t, config_seed);
                        const bool backward = std::any_of(algo_list.begin(), algo_list.end(),
                                                          [](const KernelVariant* k) { return is_backward(*k); });
                        const auto output_gradients =
                            backward ? make_output_gradients(B * H, N, d, t, config_seed) : std::vector<reference::Matrix>{};
                        for (int KV : kv_list)
                        for (bool cz : causal_list)
                            for (const KernelVariant* a : algo_list) {
                                Config c{a, N, d, cz, t, pass == "fwd+bwd"};
                                c.KV = KV == H ? 0 : KV;
                                if (const std::string why = skip_reason(a, cuda_problem(c, B, H)); !why.empty()) {
                                    if (noted.insert(why).second) std::printf("skipped: %s\n", why.c_str());
                                    continue;
                                }
                                const Outcome o = run_config(c, inputs, output_gradients, B, H, gpu, topt, samples, key_rows_max_n);
                                json j = outcome_json(o, B, H);
                                if (!o.error.empty()) {
                                    std::printf("%-32s  error: %s\n", describe(c).c_str(), o.error.c_str());
                                    ++failures;
                                } else if (!o.prediction_error.empty()) {
                                    failures += o.accuracy.pass ? 0 : 1;
                                    std::printf("%-32s %9s %8.3fms %10s %7s %8s %9s  no prediction: %s\n", describe(c).c_str(),
                                                o.accuracy.pass ? "ok" : "FAIL", o.timing.median_ms, "-", "-", "-", "-",
                                                o.prediction_error.c_str());
                                } else {
                                    failures += o.accuracy.pass ? 0 : 1;
                                    std::printf("%-32s %9s %8.3fms %8.3fms %+6.0f%% %8.2f %9.0f  %s\n", describe(c).c_str(),
                                                o.accuracy.pass ? "ok" : "FAIL", o.timing.median_ms,
                                                o.predicted.time_s * 1e3, j["error_pct"].get<double>(),
                                                j["measured_tflops"].get<double>(), j["measured_gbps_hbm_papers_sense"].get<double>(),
                                                o.predicted.longest_kernel().bound.c_str());
                                }
                                if (ncu && t == DType::fp32 && N >= 2048 && d == 64 && !cz && a->products != Products::library_gemm &&
                                    o.error.empty() && o.prediction_error.empty() && !c.with_forward && c.KV == 0) {
                                    const std::string child = std::string(argv[0]) + " --batch " + std::to_string(B) +
                                                              " --heads " + std::to_string(H) + " --profile-one " +
                                                              std::string(a->name) + "," + std::to_string(N) + "," +
                                                              std::to_string(d) + ",fp32,0";
                                    const NcuMeasurement m = run_ncu(ncu_path, child);
                                    j["ncu"] = ncu_json(m, o.predicted);
                                    std::printf("    ncu: %s\n", ncu_summary(m, o.predicted).c_str());
                                }
                                results.push_back(j);
                                std::fflush(stdout);
                            }
                    }
        }
        if (!out_path.empty()) {
            json doc = {{"schema_version", 1}, {"gpu", device}, {"gpu_preset", gpu.name}, {"driver", driver},
                        {"date", date}, {"command", command}, {"seed", seed}, {"batch", B}, {"heads", H},
                        {"timing", {{"warmup", warmup}, {"runs", runs}, {"statistic", "median"}, {"l2_flushed", true}}},
                        {"results", results}};
            if (decode) {  // each result names its batch and K/V heads
                doc.erase("batch");
                doc["grid"] = "decode";
            }
            std::ofstream(out_path) << fasim::json_text(doc, 1) << '\n';  // counts with every digit
        }
        std::printf("%d configuration(s) failed\n", failures);
        return failures == 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fa-validate: error: %s\n", fasim::escape_control(e.what()).c_str());
        return 2;
    }
}
