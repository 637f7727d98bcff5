// PyTorch's math attention backend as fa-sim models it (sim/algorithms/torch_math_attention.cpp and
// its backward): the kernels ATen launches, what each moves, and the FP32 rate its products run at.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {

AlgorithmResult run(const AttentionProblem& p, PassSelection pass = PassSelection::fwd, const GpuSpec& gpu = a100()) {
    return simulate(algorithm("torch_math"), pass, p, gpu, TileRequest{}, ModelOptions{});
}

std::vector<std::string> kernel_names(const AlgorithmResult& r) {
    std::vector<std::string> names;
    for (const KernelRecord& k : r.kernels) names.push_back(k.desc.name);
    return names;
}

Count tensor_bytes(const AlgorithmResult& r, const std::string& name) {
    for (const TensorBytes& t : r.hbm.tensors)
        if (t.name == name) return t.read + t.write;
    return 0;
}

}  // namespace

TEST_CASE("PyTorch's math backend: every kernel moves what the closed form counts, forward and backward, ragged, "
          "causal, Nq != Nk, every dtype", "[torch_math][closed-form]") {
    struct Shape {
        std::int64_t N, Nk, d;
        DType t;
        bool causal;
    };
    for (const Shape s : {Shape{4096, 4096, 64, DType::fp16, false}, {1000, 1000, 128, DType::bf16, true},
                          {300, 700, 64, DType::fp32, false}, {2048, 2048, 64, DType::fp16, true},
                          {77, 129, 32, DType::fp16, true}, {512, 100000, 64, DType::fp16, false}}) {
        CAPTURE(s.N, s.Nk, s.d, dtype_name(s.t), s.causal);
        const AttentionProblem p = problem(s.N, s.d, 4, s.t, s.causal, s.Nk);
        for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd}) {
            const AlgorithmResult r = run(p, pass);
            const ClosedForm f = r.algo->closed_form(p, r.tiles);
            REQUIRE(f.hbm);
            CHECK(r.hbm.read_bytes() == f.hbm->read);
            CHECK(r.hbm.write_bytes() == f.hbm->write);
            CHECK(r.matmul_flops == *f.matmul_flops);
        }
    }
}

TEST_CASE("PyTorch's math backend launches ATen's kernels in its order: fp16 copied to fp32 first, both GEMMs in "
          "fp32, the weights copied back too", "[torch_math][kernels]") {
    const AlgorithmResult half = run(problem(2048, 64));
    CHECK(kernel_names(half) == std::vector<std::string>{"copy_q_fp32", "copy_k_fp32", "copy_v_fp32", "mul_q", "mul_k",
                                                         "gemm_qk", "softmax", "isneginf", "all_rows", "fill_zero",
                                                         "where_rows", "copy_attn_half", "gemm_pv", "copy_o_half"});
    // fp32 inputs are used as they are: no copies either way.
    const AlgorithmResult single = run(problem(2048, 64, 16, DType::fp32));
    CHECK(kernel_names(single) == std::vector<std::string>{"mul_q", "mul_k", "gemm_qk", "softmax", "isneginf", "all_rows",
                                                           "fill_zero", "where_rows", "gemm_pv"});
    // The causal mask is built once for every head before the first GEMM and added after it.
    const std::vector<std::string> causal = kernel_names(run(problem(2048, 64, 16, DType::fp16, true)));
    const auto at = [&](const char* k) { return std::find(causal.begin(), causal.end(), k) - causal.begin(); };
    CHECK(at("mask_ones") < at("mask_tril"));
    CHECK(at("mask_where") < at("gemm_qk"));
    CHECK(at("add_mask") == at("gemm_qk") + 1);
    CHECK(causal.size() == half.kernels.size() + 4);
}

TEST_CASE("PyTorch's math backend with 16-bit inputs moves 36 bytes per score (48 with the causal mask) after its "
          "first GEMM: S, P and the weights all in fp32", "[torch_math][bytes]") {
    // d = 64: the weights are read once by the second GEMM (one 64-column output tile).
    for (const bool causal : {false, true}) {
        CAPTURE(causal);
        const AttentionProblem p = problem(4096, 64, 8, DType::fp16, causal);
        const AlgorithmResult r = run(p);
        const Count scores = Count(p.batch_heads()) * p.N * p.Nk;
        // S: written, read by softmax and isneginf (and by the mask's add, which writes it again); P: written,
        // read by where; the flags: written, read by all(); attn: written, read by the GEMM and the copy; the
        // 16-bit weights: written.
        CHECK(tensor_bytes(r, "S") == (causal ? 20 : 12) * scores);
        CHECK(tensor_bytes(r, "P") == 8 * scores);
        CHECK(tensor_bytes(r, "neg_inf_flags") == 2 * scores);
        CHECK(tensor_bytes(r, "attn") == 12 * scores);
        CHECK(tensor_bytes(r, "attn_out") == 2 * scores);
        // The mask: read by every head, written once (ones, tril, where) for all of them.
        if (causal) CHECK(tensor_bytes(r, "mask") == 4 * scores + 4 * Count(p.N) * p.Nk);
    }
}

TEST_CASE("PyTorch's math backend multiplies on the CUDA cores at the measured SGEMM rate, whatever the storage dtype",
          "[torch_math][runtime]") {
    const GpuSpec& h200 = find_gpu_preset("H200");
    const AttentionProblem p = problem(4096, 64, 128);
    const AlgorithmResult r = run(p, PassSelection::fwd, h200);
    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
        if (r.kernels[i].desc.name.rfind("gemm_", 0) != 0) continue;
        CAPTURE(r.kernels[i].desc.name);
        const double fp32_seconds = to_double(r.kernels[i].matmul_flops) / h200.effective_fp32_flops();
        CHECK(r.timing[i].total_s >= fp32_seconds);
        CHECK(r.timing[i].total_s < 1.1 * fp32_seconds);  // both GEMMs bound by their FP32 work at this size
    }
    // Standard attention on cuBLAS's fp16 tensor-core GEMMs, the same problem, is several times faster.
    TileRequest library;
    library.matmul = MatmulMode::library;
    const AlgorithmResult standard = simulate(algorithm("standard"), p, h200, library);
    CHECK(r.time_s > 3 * standard.time_s);
}

TEST_CASE("PyTorch's math backend: --algo all leaves it out, --algo names it, and its backward is its family's",
          "[torch_math][registry]") {
    const std::vector<const Algorithm*> compared = compared_algorithms(Pass::forward);
    CHECK(std::none_of(compared.begin(), compared.end(), [](const Algorithm* a) { return a->id == "torch_math"; }));
    CHECK(find_algorithm("torch_math") != nullptr);
    REQUIRE(backward_of(algorithm("torch_math")) != nullptr);
    CHECK(backward_of(algorithm("torch_math"))->id == "torch_math_bwd");
    // Forward and backward: what the backward reads of the forward's tensors is held between the passes:
    // the fp32 weights, the row flags, the scaled q and k and V's fp32 copy.
    const AttentionProblem p = problem(1024, 64, 4);
    const AlgorithmResult both = run(p, PassSelection::fwd_bwd);
    const Count per_head = Count(p.N) * p.Nk * 4 + 3 * Count(p.N) * p.d * 4 + p.N;  // and the row flags
    CHECK(both.held_between_passes_bytes == per_head * p.batch_heads());
}
