// Standard attention on the naive GEMM (--matmul naive): every thread reads the operands of its own
// output from global memory, one k at a time (cuda/kernels/standard_gemm_naive.cu). What the SMs ask
// of L2 is then each warp load's own sectors and lines (machine/sectors.hpp), not the tile's: the
// closed forms below are the warp's geometry (2 rows x 16 columns of threads), and the H200 counts
// exactly them (tests/cuda/test_results_agreement.cpp). Such loads touch one sector per line, so the
// L2's request rate, not its bandwidth, bounds them (docs/model.md, "L2 requests").
#include <catch2/catch.hpp>

#include "machine/sectors.hpp"
#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {

AlgorithmResult naive(const AttentionProblem& p, const GpuSpec& gpu) {
    TileRequest req;
    req.matmul = MatmulMode::naive;
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    return simulate(algorithm("standard"), p, gpu, req, cuda_cores);
}

}  // namespace

TEST_CASE("L2 requests of a region: sectors and 128-byte lines, per access", "[l2][closed-form]") {
    const GlobalTensor t{"K", 1, 64, 64, 4, 16, 16};  // 64 x 64 fp32: 256-byte rows
    // Whole rows: one span, 2 lines a row.
    const Region rows = view(t, 0).rows(0, 4);
    CHECK(l2_requests(rows).sector_bytes == 4 * 256);
    CHECK(l2_requests(rows).requests == 8);
    // 16 columns from column 8: 64 bytes from byte 32 of each row, 2 sectors, in one line.
    const Region part = view(t, 0).tile(0, 4, 8, 16);
    CHECK(l2_requests(part).sector_bytes == 4 * 64);
    CHECK(l2_requests(part).requests == 4);
    // The same 16 columns loaded an element at a time (the naive GEMM walking down k): 16 loads per
    // row, a sector and a line each.
    CHECK(l2_requests(part, 1).sector_bytes == 4 * 16 * 32);
    CHECK(l2_requests(part, 1).requests == 4 * 16);
    // Loads of 8 consecutive elements from column 28: bytes 112..143 and 144..175 of each row; the
    // first crosses a line boundary (2 sectors, 2 lines), the second does not (2 sectors, 1 line).
    const Region cross = view(t, 0).tile(0, 1, 28, 16);
    CHECK(l2_requests(cross, 8).sector_bytes == 4 * 32);
    CHECK(l2_requests(cross, 8).requests == 3);
    // Rows that do not start on a line (48 fp32 elements, 192 bytes): each row's own span.
    const GlobalTensor odd{"Q", 1, 8, 48, 4, 8, 48};
    CHECK(l2_requests(view(odd, 0).tile(0, 2, 0, 16)).requests == 1 + 1);  // bytes 0..63 and 192..255
    const Region straddle = view(odd, 0).tile(0, 1, 24, 16);                  // bytes 96..159
    CHECK(l2_requests(straddle).requests == 2);
    CHECK(l2_requests(straddle).sector_bytes == 64);
}

TEST_CASE("naive GEMM: per block of 8 warps and k, S = QK^T asks L2 for 144 sectors in 144 lines, O = PV for 32 "
          "(fp32) or 24 (fp16) sectors in 24 lines",
          "[standard][naive][closed-form]") {
    for (auto [N, d, t] : {std::tuple{1024L, 64L, DType::fp32}, {512L, 128L, DType::fp16}, {1024L, 64L, DType::bf16}}) {
        CAPTURE(N, d, dtype_name(t));
        const auto p = problem(N, d, 2, t);
        const AlgorithmResult r = naive(p, find_gpu_preset("H200"));
        REQUIRE(r.kernels.size() == 3);
        const KernelRecord &qk = r.kernels[0], &pv = r.kernels[2];
        const std::int64_t BH = p.batch_heads(), e = p.elem_bytes();
        const std::int64_t qk_block_steps = BH * (N / 16) * (N / 16) * d, pv_block_steps = BH * (N / 16) * (d / 16) * N;
        CHECK(qk.l2.read_bytes() == 144 * 32 * qk_block_steps);
        CHECK(qk.l2_read_requests == 144 * qk_block_steps);
        CHECK(read_of(qk.l2, "Q") == 16 * 32 * qk_block_steps);  // 8 warps x 2 rows
        const std::int64_t v_sectors = 16 * e / 32;                          // 16 consecutive elements of a row of V
        CHECK(pv.l2.read_bytes() == (16 + 8 * v_sectors) * 32 * pv_block_steps);
        CHECK(pv.l2_read_requests == 24 * pv_block_steps);
        // What the threads ask for is unchanged: every thread its operands, 2 m n k elements.
        CHECK(read_of(qk.hbm, "Q") + read_of(qk.hbm, "K") == 2 * BH * N * N * d * e);
        // The L2 model sees each tile once per k-step: DRAM reads Q and K once.
        CHECK(qk.dram.read_bytes() == 2 * BH * N * d * e);
    }
}

TEST_CASE("naive GEMM: a tile of S half as wide as the L2 model's pieces is still written to DRAM in full",
          "[standard][naive][l2]") {
    // The naive GEMM stores S in 16 x 16 tiles; S is tracked in pieces gcd(k-step, tile width) wide,
    // so the second 16 columns of a 32-column piece are not taken for already written (they were, with
    // 32-wide pieces: half of S never reached DRAM).
    const auto p = problem(2048, 64, 4, DType::fp32);
    const AlgorithmResult r = naive(p, find_gpu_preset("H200"));
    const std::int64_t s_bytes = p.batch_heads() * p.N * p.Nk * p.elem_bytes();
    CHECK(r.kernels[0].dram.write_bytes() == s_bytes);
}

TEST_CASE("naive GEMM: bound by L2 requests, at the measured request rate (H200) or l2_bandwidth / 64 B",
          "[standard][naive][runtime]") {
    const auto p = problem(2048, 64, 16, DType::fp32);
    GpuSpec h200 = find_gpu_preset("H200");
    REQUIRE(h200.measured.l2_requests == 1.44e11);
    const AlgorithmResult r = naive(p, h200);
    const KernelTiming& qk = r.timing[0];
    CHECK(qk.bound.find("L2 requests") != std::string::npos);
    // The requests take longer than the sectors at the L2 bandwidth: one sector per line is 32 bytes
    // per request, against 62 bytes per request at which the two limits meet.
    const KernelRecord& k = r.kernels[0];
    CHECK(qk.l2_requests_s == Approx(static_cast<double>(k.l2_requests()) / 1.44e11));
    CHECK(qk.l2_requests_s > static_cast<double>(k.l2.total()) / h200.l2_bandwidth);
    CHECK(qk.total_s >= qk.l2_requests_s);
    // Without a measured rate: l2_bandwidth / 64 B.
    GpuSpec unmeasured = h200;
    unmeasured.measured.l2_requests = 0;
    CHECK(unmeasured.l2_request_rate() == Approx(h200.l2_bandwidth / 64));
    // The tiled GEMM's loads are whole lines: the request rate never binds it.
    TileRequest tiled;
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    const AlgorithmResult t = simulate(algorithm("standard"), p, h200, tiled, cuda_cores);
    for (const KernelTiming& kt : t.timing) CHECK(kt.l2_requests_s < kt.l2_s + 1e-12);
    for (const KernelTiming& kt : t.timing) CHECK(kt.bound.find("L2 requests") == std::string::npos);
}

TEST_CASE("naive GEMM at N = 8192: P, streamed past L2, is read from DRAM once, as the 4 blocks that share a row band "
          "read it in the same wave (rule 1)",
          "[standard][naive][l2]") {
    // One head of fp32 P is 268 MB, more than twice the H200's 60 MiB L2: the L2 model streams it and
    // keeps no residency. The 4 blocks of O = PV that read one row band of P (d = 64: 4 column tiles of
    // 16) run in the same wave; the H200 reads P once (ncu, sixth run: 8.70 GB of DRAM reads for the
    // whole of standard attention at B=2, H=8).
    const auto p = problem(8192, 64, 1, DType::fp32);
    const AlgorithmResult r = naive(p, find_gpu_preset("H200"));
    const KernelRecord& pv = r.kernels[2];
    CHECK(read_of(pv.dram, "P") == p.N * p.Nk * p.elem_bytes());
    CHECK(read_of(pv.hbm, "P") == p.d * p.N * p.Nk * p.elem_bytes());  // by the thread of each output column
}
