// Tile choices, shared-memory layouts and the launch table of the CUDA kernels: host-only, needs no GPU.
#include <catch2/catch.hpp>

#include <cstddef>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "attention_kernels.hpp"
#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"
#include "kernels/launchers.hpp"
#include "kernels/smem_layouts.hpp"
#include "model/kernel_setup.hpp"
#include "model/simulation.hpp"

using fasim::DType;
using namespace fasim::cuda_detail;

namespace {
constexpr std::size_t kH100 = 232448;  // sharedMemPerBlockOptin of H100 / H200 (227 KB)
constexpr std::size_t kA100 = 166912;  // A100 (163 KB)
constexpr std::size_t kAda = 101376;   // L4 / sm_86 / sm_89 (99 KB)
constexpr std::size_t kT4 = 65536;     // T4 (64 KB)
}  // namespace

TEST_CASE("fa2 and tiled use the conventions' default tiles on H100/H200") {
    for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
        CHECK(fasim::fa2_tiles(32, dt, kH100).Br == 128);
        CHECK(fasim::fa2_tiles(32, dt, kH100).Bc == 128);
        CHECK(fasim::fa2_tiles(64, dt, kH100).Br == 128);
        CHECK(fasim::fa2_tiles(64, dt, kH100).Bc == 128);
        CHECK(fasim::fa2_tiles(128, dt, kH100).Br == 128);
        CHECK(fasim::fa2_tiles(128, dt, kH100).Bc == 64);
    }
}

TEST_CASE("fa1 tiles follow Bc = ceil(M/4d), Br = min(Bc, d) on H100/H200") {
    // M = 232448 / 4 = 58112 fp32 elements: Bc = ceil(58112 / 256) = 227, ceil(58112 / 512) = 114.
    CHECK(fasim::fa1_tiles(64, DType::fp32, kH100).Bc == 227);
    CHECK(fasim::fa1_tiles(64, DType::fp32, kH100).Br == 64);
    CHECK(fasim::fa1_tiles(128, DType::fp32, kH100).Bc == 114);
    CHECK(fasim::fa1_tiles(128, DType::fp32, kH100).Br == 114);
    // fp16: M = 116224 elements.
    CHECK(fasim::fa1_tiles(64, DType::fp16, kH100).Bc == 454);
    CHECK(fasim::fa1_tiles(64, DType::fp16, kH100).Br == 64);
    CHECK(fasim::fa1_tiles(128, DType::bf16, kH100).Bc == 227);
    CHECK(fasim::fa1_tiles(128, DType::bf16, kH100).Br == 128);
}

TEST_CASE("every tile choice fits the device and keeps the kernels' shape rules") {
    for (std::size_t smem : {kT4, kAda, kA100, kH100}) {
        for (int d : {32, 64, 128}) {
            for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
                INFO("smem " << smem << " d " << d << " dtype " << fasim::dtype_name(dt));
                const int e = static_cast<int>(fasim::dtype_bytes(dt));
                const fasim::TileChoice f2 = fasim::fa2_tiles(d, dt, smem);
                CHECK(f2.smem_bytes <= smem);
                CHECK(f2.smem_bytes == flash_smem_layout(f2.Br, f2.Bc, d, e).total);
                CHECK(f2.Br % 16 == 0);
                CHECK(f2.Br >= 16);
                CHECK(f2.Br <= 128);
                CHECK(f2.Bc % 4 == 0);
                const fasim::TileChoice f1 = fasim::fa1_tiles(d, dt, smem);
                CHECK(f1.smem_bytes <= smem);
                CHECK(f1.smem_bytes == fa1_smem_layout(f1.Br, f1.Bc, d, e).total);
                CHECK(f1.Bc >= 1);
                CHECK(f1.Br == (f1.Bc < d ? f1.Bc : d));
            }
        }
    }
}

TEST_CASE("shared-memory layouts are 16-byte aligned, ordered and conflict-free by construction") {
    for (int d : {32, 64, 128}) {
        for (int e : {2, 4}) {
            const FlashSmemLayout L = flash_smem_layout(128, 64, d, e);
            for (std::size_t off : {L.q, L.k, L.v, L.s, L.m, L.l, L.a, L.total}) CHECK(off % 16 == 0);
            CHECK(L.q < L.k);
            CHECK(L.k + static_cast<std::size_t>(64) * L.ldk * e <= L.v);
            CHECK(L.s + static_cast<std::size_t>(128) * L.lds * 4 <= L.m);
            CHECK((L.ldq * e) % 16 == 0);          // 16-byte rows
            CHECK(((L.ldq * e) / 16) % 2 == 1);    // odd number of 16-byte units: 8 rows, 8 bank groups
            CHECK(L.lds % 4 == 0);
            CHECK((L.lds / 4) % 2 == 1);
            const Fa1SmemLayout F = fa1_smem_layout(114, 227, d, e);
            for (std::size_t off : {F.k, F.v, F.q, F.u, F.red_m, F.red_l, F.coef_a, F.coef_b, F.total}) {
                CHECK(off % 16 == 0);
            }
            CHECK(F.kv_rows == 228);
            CHECK(F.lds >= F.kv_rows);
            CHECK(F.red_m - F.u >= static_cast<std::size_t>(4) * kFa1RowChunk * d * 4);  // partial products fit
            CHECK(F.red_m - F.u >= static_cast<std::size_t>(kFa1RowChunk) * F.lds * 4);  // S chunk fits
        }
    }
}

TEST_CASE("problem validation names the bad value") {
    fasim::CudaProblem p;
    p.d = 96;
    CHECK_THROWS_WITH(fasim::validate_problem(p), Catch::Contains("d = 96"));
    p.d = 64;
    p.N = 0;
    CHECK_THROWS_WITH(fasim::validate_problem(p), Catch::Contains("N = 0"));
    p.N = 16;
    p.B = 300;
    p.H = 300;
    CHECK_THROWS_WITH(fasim::validate_problem(p), Catch::Contains("B*H = 90000"));
    CHECK(fasim::cuda_kernel("fa2").algorithm == "fa2");
    CHECK_THROWS_WITH(fasim::cuda_kernel("fa3"), Catch::Contains("'fa3' is not one of fa-sim's CUDA kernels"));
    CHECK_THROWS_WITH(fasim::cuda_kernel("torch_flash"), Catch::Contains("choose standard_naive"));  // PyTorch's, not built here
}

TEST_CASE("the launch table holds exactly the kernel catalog's kernels of this repository", "[catalog]") {
    std::vector<std::string> catalog;
    for (const fasim::KernelVariant* k : fasim::cuda_kernels()) {
        catalog.emplace_back(k->name);
        const RegisteredKernel r = registered_kernel(k->name);
        CHECK(r.entry != nullptr);
        CHECK(r.tiles != nullptr);
    }
    std::sort(catalog.begin(), catalog.end());
    CHECK(registered_kernel_names() == catalog);
}

// One tile-choice rule: on every GPU preset, for every dtype and head dim a kernel has code for, the
// tiles the launcher launches with are the tiles the simulator models the kernel with (kernel_setup, as
// fa-validate and fa-sim --kernel use it), and, for the CUDA-core kernels, the tiles of fa-sim
// --cuda-cores.
TEST_CASE("the simulator and the launchers pick the same tiles on every preset, dtype, head dim and kernel", "[catalog][tiles]") {
    int compared = 0;
    for (const fasim::GpuSpec& gpu : fasim::gpu_presets())
        for (DType dt : {DType::fp32, DType::fp16, DType::bf16})
            for (int d : {32, 64, 128})
                for (const fasim::KernelVariant* k : fasim::cuda_kernels()) {
                    if (!k->unsupported(dt, d).empty() || gpu.compute_capability < k->min_compute_capability) continue;
                    INFO(gpu.name << " " << fasim::dtype_name(dt) << " d=" << d << " " << k->name);
                    fasim::AttentionProblem p;
                    p.heads = 2;
                    p.N = p.Nk = 256;
                    p.d = d;
                    p.dtype = dt;
                    const std::size_t smem = static_cast<std::size_t>(gpu.smem_per_block_bytes);
                    fasim::TileChoice launched;
                    try {
                        launched = registered_kernel(k->name).tiles(d, dt, smem);
                    } catch (const std::invalid_argument&) {  // nothing fits: the simulator refuses it too
                        CHECK_THROWS_AS(([&] {
                                            const fasim::KernelSetup s = fasim::kernel_setup(*k, p, gpu);
                                            return fasim::simulate(*s.algorithm, p, gpu, s.tiles, s.options);
                                        }()),
                                        fasim::UsageError);
                        continue;
                    }
                    if (launched.Br == 0) continue;  // a library's own tiles (cuBLAS)
                    const fasim::KernelSetup s = fasim::kernel_setup(*k, p, gpu);
                    const fasim::AlgorithmResult r = fasim::simulate(*s.algorithm, p, gpu, s.tiles, s.options);
                    const bool gemm = !s.algorithm->tunable_tiles;  // standard attention: the GEMM's output tile
                    CHECK((gemm ? r.tiles.gemm_m : r.tiles.Br) == launched.Br);
                    CHECK((gemm ? r.tiles.gemm_n : r.tiles.Bc) == launched.Bc);
                    if (!k->tensor_cores(dt)) {
                        fasim::TileRequest cuda_cores;
                        cuda_cores.matmul = k->matmul;
                        const fasim::AlgorithmResult c = fasim::simulate(*s.algorithm, p, gpu, cuda_cores, fasim::ModelOptions{false});
                        CHECK((gemm ? c.tiles.gemm_m : c.tiles.Br) == launched.Br);
                        CHECK((gemm ? c.tiles.gemm_n : c.tiles.Bc) == launched.Bc);
                    }
                    ++compared;
                }
    CHECK(compared > 300);
}

// FlashDecoding's launcher and the simulator's model of it lay decode problems out alike on every GPU
// preset: the packed rows of a group, the tiles, the splits of the keys (the heuristic, or kv_splits
// rounded to the splits that hold tiles), the split kernel's grid and whether a combine kernel runs (and
// the launcher's K/V stages: four when the grid fits one block per SM); and a
// measured run's recorded split count is what the model then runs. (The combine kernel launches a block
// per row where the program has one per Q tile: flash_decoding.cu says why.)
TEST_CASE("flash_decoding: the launcher's rows, tiles, splits and grids are the simulator's", "[catalog][tiles][decoding]") {
    const fasim::KernelVariant& k = fasim::cuda_kernel("flash_decoding");
    struct Shape {
        int B, H, KV, N, Nk, d;
        bool causal;
        int kv_splits;
    };
    const Shape shapes[] = {
        {1, 32, 32, 1, 16384, 128, false, 0}, {1, 32, 8, 1, 65536, 128, false, 0}, {1, 32, 1, 1, 131072, 128, false, 0},
        {8, 32, 8, 1, 4096, 128, false, 0},   {64, 16, 16, 1, 1024, 128, false, 0}, {1, 8, 2, 1, 4097, 64, false, 0},
        {2, 8, 1, 3, 1000, 64, true, 0},      {1, 8, 8, 100, 77, 128, false, 0},  {2, 8, 2, 1, 4097, 128, false, 7},
        {1, 8, 8, 64, 1000, 64, true, 6},     {2, 8, 1, 3, 4097, 128, true, 65},  {1, 4, 4, 1, 1, 128, false, 0},
    };
    int compared = 0, deep = 0;
    for (const fasim::GpuSpec& gpu : fasim::gpu_presets()) {
        if (gpu.compute_capability < k.min_compute_capability) continue;
        for (const Shape& sh : shapes) {
            INFO(gpu.name << " B=" << sh.B << " H=" << sh.H << " KV=" << sh.KV << " N=" << sh.N << " Nk=" << sh.Nk
                          << " d=" << sh.d << " kv_splits=" << sh.kv_splits);
            const fasim::CudaProblem cp{sh.B, sh.H, sh.N, sh.Nk, sh.d, DType::fp16, sh.causal, sh.KV, sh.kv_splits};
            const FlashDecodingLayout L = flash_decoding_layout(cp, gpu.sm_count);
            fasim::AttentionProblem p;
            p.batch = sh.B;
            p.heads = sh.H;
            p.kv_heads = sh.KV;
            p.N = sh.N;
            p.Nk = sh.Nk;
            p.d = sh.d;
            p.causal = sh.causal;
            // fa-sim --kernel flash_decoding [--kv-splits S], then a run that recorded what it launched.
            const fasim::KernelSetup asked = fasim::kernel_setup(k, p, gpu, fasim::MeasuredLaunch{.kv_splits = sh.kv_splits});
            const fasim::MeasuredLaunch ran{.Br = L.Br, .Bc = L.Bc, .warps = 4, .kv_splits = L.splits};
            for (const fasim::KernelSetup& s : {asked, fasim::kernel_setup(k, p, gpu, ran)}) {
                const fasim::AlgorithmResult r = fasim::simulate(*s.algorithm, p, gpu, s.tiles, s.options);
                CHECK(r.tiles.Br == L.Br);
                CHECK(r.tiles.Bc == L.Bc);
                CHECK(r.tiles.kv_splits == L.splits);
                REQUIRE(r.kernels.size() == (L.splits > 1 ? 2u : 1u));
                CHECK(r.kernels[0].desc.blocks_per_head == static_cast<std::int64_t>(L.splits) * L.q_tiles);
                CHECK(r.kernels[0].desc.heads == L.row_heads);
            }
            CHECK(L.packed == (sh.N == 1 && sh.KV < sh.H));
            CHECK(static_cast<long long>(L.row_heads) * L.rows == static_cast<long long>(sh.B) * sh.H * sh.N);
            CHECK((L.splits - 1) * L.tiles_per_split < L.kv_tiles);  // every split holds a K/V tile
            // Four K/V stages when the split kernel's grid fits one block per SM, else two.
            const long long blocks = static_cast<long long>(L.splits) * L.q_tiles * L.row_heads;
            CHECK(L.stages == (blocks <= gpu.sm_count ? 4 : 2));
            if (L.stages == 4) ++deep;
            ++compared;
        }
    }
    CHECK(compared >= 4 * 12);
    CHECK(deep > 0);
    // The deep pipeline's shared memory (153 KB at d = 128) fits the A100's 163 KB and Hopper's 227 KB per
    // block; where it does not (the L4's 99 KB) the launcher keeps two stages.
    CHECK(fasim::tile_rules::flash_decoding_smem_bytes(128, 2, 4) == (64 + 2 * 4 * 64) * (128 + 8) * 2);
    CHECK(fasim::tile_rules::flash_decoding_smem_bytes(128, 2, 4) <= 163 * 1024);  // the A100's 163 KB per block
    // A split count with more splits than K/V tiles is refused, naming the range.
    CHECK_THROWS_WITH(flash_decoding_layout(fasim::CudaProblem{1, 8, 1, 100, 128, DType::fp16, false, 8, 3}, 132),
                      Catch::Contains("kv_splits = 3 is out of range for Nk = 100") && Catch::Contains("1..2"));
}

TEST_CASE("grouped K/V heads, kv_splits and causal N > Nk: validated, and refused by the kernels without them", "[decoding]") {
    fasim::CudaProblem p{1, 8, 1, 100, 128, DType::fp16, false, 3};
    CHECK_THROWS_WITH(fasim::validate_problem(p), Catch::Contains("KV = 3 does not divide H = 8"));
    p.KV = 2;
    CHECK_NOTHROW(fasim::validate_problem(p));
    CHECK(fasim::cuda_kernel_unsupported(fasim::cuda_kernel("flash_decoding"), p).empty());
    CHECK(fasim::cuda_kernel_unsupported(fasim::cuda_kernel("fa2_tc"), p).empty());
    CHECK_THAT(fasim::cuda_kernel_unsupported(fasim::cuda_kernel("fa1_tc"), p), Catch::Contains("no grouped-query kernel"));
    // The kernels that read a group's K/V head: FlashDecoding, and FA2's tensor-core training pair (forward and
    // backward, whose dK and dV are summed over each group).
    const std::set<std::string> grouped{"flash_decoding", "fa2_tc", "fa2_bwd_tc"};
    for (const fasim::KernelVariant* k : fasim::cuda_kernels()) {
        INFO(k->name);
        CHECK(k->grouped_kv == grouped.count(std::string(k->name)));
        if (!k->grouped_kv) CHECK_FALSE(fasim::cuda_kernel_unsupported(*k, p).empty());
    }
    p.KV = 8;
    p.kv_splits = 4;
    CHECK_THAT(fasim::cuda_kernel_unsupported(fasim::cuda_kernel("fa2_tc"), p), Catch::Contains("kv_splits = 4 does not apply"));
    p.kv_splits = 0;
    p.N = 200;
    p.causal = true;
    CHECK_THAT(fasim::cuda_kernel_unsupported(fasim::cuda_kernel("flash_decoding"), p), Catch::Contains("N = 200 > Nk = 100"));
    CHECK(fasim::cuda_kernel_unsupported(fasim::cuda_kernel("fa2_tc"), p).empty());  // rows that see no key: O = 0
    // The simulator's model of a kernel refuses grouped K/V heads the same way.
    fasim::AttentionProblem sp;
    sp.heads = 8;
    sp.kv_heads = 2;
    sp.N = 1;
    sp.Nk = 1000;
    CHECK_THROWS_AS(fasim::kernel_setup(fasim::cuda_kernel("fa1_tc"), sp, fasim::find_gpu_preset("H100-SXM")), fasim::UsageError);
    CHECK_NOTHROW(fasim::kernel_setup(fasim::cuda_kernel("fa2_tc"), sp, fasim::find_gpu_preset("H100-SXM")));
    CHECK_NOTHROW(fasim::kernel_setup(fasim::cuda_kernel("flash_decoding"), sp, fasim::find_gpu_preset("H100-SXM")));
}
