// The kernel catalog (sim/kernels/kernel_catalog.cpp) and how the simulator models a kernel from its
// row (sim/model/kernel_setup.hpp). tests/cuda/test_cuda_tiles.cpp checks the rows against the CUDA
// launch table and the launchers' tiles.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "common/errors.hpp"
#include "model/kernel_setup.hpp"
#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

TEST_CASE("every catalog kernel implements a registered algorithm, once", "[catalog]") {
    std::set<std::string_view> names;
    for (const KernelVariant& k : kernel_catalog()) {
        CAPTURE(k.name);
        CHECK(names.insert(k.name).second);
        CHECK(find_algorithm(k.algorithm) != nullptr);
        CHECK(find_kernel(k.name) == &k);
        CHECK(k.unsupported(DType::fp16, k.head_dims[0]).empty());
    }
    CHECK(find_kernel("fa3") == nullptr);
}

TEST_CASE("a backward kernel implements a backward program and names a forward kernel of the same family that "
          "writes what it reads, on the same dtypes, head dims and devices",
          "[catalog][backward]") {
    int backward_kernels = 0;
    for (const KernelVariant& k : kernel_catalog()) {
        CAPTURE(k.name);
        const Algorithm& a = algorithm(k.algorithm);
        CHECK(k.forward_kernel.empty() == (a.pass == Pass::forward));
        if (k.forward_kernel.empty()) continue;
        ++backward_kernels;
        const KernelVariant* f = find_kernel(k.forward_kernel);
        REQUIRE(f != nullptr);
        CHECK(f->forward_kernel.empty());
        CHECK(f->in_repository == k.in_repository);
        CHECK(backward_of(algorithm(f->algorithm)) == &a);
        for (DType t : {DType::fp32, DType::fp16, DType::bf16})
            for (int d : {32, 64, 128})
                if (k.unsupported(t, d).empty()) CHECK(f->unsupported(t, d).empty());
        CHECK(f->min_compute_capability <= k.min_compute_capability);
    }
    CHECK(backward_kernels == 5);  // cuBLAS standard, CUDA-core and tensor-core FA2, PyTorch's math and flash
}

TEST_CASE("fa-sim --cuda-cores means each algorithm's CUDA-core kernel of this repository", "[catalog]") {
    CHECK(cuda_core_kernel(algorithm("fa2"), MatmulMode::tiled)->name == "fa2");
    CHECK(cuda_core_kernel(algorithm("fa1"), MatmulMode::tiled)->name == "fa1");
    CHECK(cuda_core_kernel(algorithm("tiled"), MatmulMode::tiled)->name == "tiled");
    CHECK(cuda_core_kernel(algorithm("standard"), MatmulMode::tiled)->name == "standard_tiled");
    CHECK(cuda_core_kernel(algorithm("standard"), MatmulMode::naive)->name == "standard_naive");
    // A library GEMM computes fp32 on the CUDA cores: cuBLAS's SGEMM.
    CHECK(cuda_core_kernel(algorithm("standard"), MatmulMode::library)->name == "standard_cublas");
    CHECK(cuda_core_kernel(algorithm("fa2_bwd"), MatmulMode::tiled)->name == "fa2_bwd");
    CHECK(cuda_core_kernel(algorithm("standard_bwd"), MatmulMode::library)->name == "standard_cublas_bwd");
    CHECK(cuda_core_kernel(algorithm("fa1_bwd"), MatmulMode::tiled) == nullptr);  // no CUDA kernel of it yet
}

TEST_CASE("a kernel is modelled with what its run recorded, else with its own rule and registers", "[catalog]") {
    const GpuSpec h200 = find_gpu_preset("H200");
    const AttentionProblem p = problem(4096, 128, 16, DType::fp16);
    const KernelVariant& fa2_tc = *find_kernel("fa2_tc");

    const KernelSetup bare = kernel_setup(fa2_tc, p, h200);  // fa-sim --kernel fa2_tc
    CHECK(bare.algorithm == &algorithm("fa2"));
    CHECK(bare.options.tensor_cores);
    CHECK(bare.tiles.Br == 64);
    CHECK(bare.tiles.Bc == 64);
    CHECK(bare.tiles.registers_per_thread == 168);

    const KernelSetup run = kernel_setup(fa2_tc, p, h200, MeasuredLaunch{64, 64, 0, 192});  // an older build's run
    CHECK(run.tiles.registers_per_thread == 192);
    // A run that recorded its tiles but not its registers: the model's estimate, not today's count.
    CHECK(kernel_setup(fa2_tc, p, h200, MeasuredLaunch{64, 64, 0, 0}).tiles.registers_per_thread == 0);

    // cuBLAS: tensor cores for fp16, the CUDA cores for fp32; its GEMM tiles are the algorithm's (library).
    const KernelVariant& cublas = *find_kernel("standard_cublas");
    CHECK(kernel_setup(cublas, p, h200).options.tensor_cores);
    CHECK_FALSE(kernel_setup(cublas, problem(4096, 128, 16, DType::fp32), h200).options.tensor_cores);
    CHECK(kernel_setup(cublas, p, h200).tiles.matmul == MatmulMode::library);
    CHECK_FALSE(kernel_setup(cublas, p, h200).tiles.Br.has_value());
}

TEST_CASE("tiles given without their shared memory (fa-sim --kernel K --Br --Bc) take the kernel's layout for them",
          "[catalog][smem]") {
    // The CUDA-core FA2 backward keeps dK, dV in fp32 shared memory: at d = 64, 64 x 64 tiles, 85.5 KiB in fp16 (two
    // blocks per SM on an H200) and 117.5 KiB in fp32 (one). Counting the tiles a block holds gave 48 and 96 KiB and
    // put three and two blocks on an SM: half the fp32 kernel's measured time (cuda/results/2026-11-26-h200).
    const GpuSpec h200 = find_gpu_preset("H200");
    const KernelVariant& fa2_bwd = *find_kernel("fa2_bwd");
    for (DType dtype : {DType::fp16, DType::fp32}) {
        const AttentionProblem p = problem(4096, 64, 16, dtype);
        const std::size_t layout = cuda_detail::fa2_bwd_smem_layout(64, 64, 64, static_cast<int>(dtype_bytes(dtype))).total;
        CHECK(layout == (dtype == DType::fp16 ? 87552u : 120320u));  // what the H200 run's launches recorded
        const KernelSetup given = kernel_setup(fa2_bwd, p, h200, MeasuredLaunch{.Br = 64, .Bc = 64});
        CHECK(given.tiles.launched_smem_bytes == static_cast<std::int64_t>(layout));
        CHECK(given.tiles.launched_smem_bytes == kernel_setup(fa2_bwd, p, h200).tiles.launched_smem_bytes);
        // What a run recorded wins.
        CHECK(kernel_setup(fa2_bwd, p, h200, MeasuredLaunch{.Br = 64, .Bc = 64, .smem_bytes = 1000}).tiles.launched_smem_bytes ==
              1000);
    }
    // Other tiles, the layout for them; a kernel with tiles of its own knows its need only for those.
    const AttentionProblem half = problem(4096, 64, 16, DType::fp16);
    CHECK(kernel_setup(fa2_bwd, half, h200, MeasuredLaunch{.Br = 32, .Bc = 32}).tiles.launched_smem_bytes ==
          static_cast<std::int64_t>(cuda_detail::fa2_bwd_smem_layout(32, 32, 64, 2).total));
    const KernelVariant& wgmma = *find_kernel("fa2_wgmma");
    CHECK(kernel_smem_bytes(wgmma, 128, 128, 128, DType::fp16) == tile_rules::fa2_wgmma_smem_bytes(128));
    CHECK(kernel_smem_bytes(wgmma, 64, 64, 128, DType::fp16) == 0);
    // Tiles past the GPU's shared memory: one clear error, the need and the limit named.
    try {
        kernel_setup(fa2_bwd, problem(4096, 128, 16, DType::fp32), h200, MeasuredLaunch{.Br = 128, .Bc = 128});
        FAIL("no error");
    } catch (const UsageError& e) {
        CHECK_THAT(e.what(), Catch::Contains("fa2_bwd with 128 x 128 tiles needs 470016 B of shared memory per block"));
        CHECK_THAT(e.what(), Catch::Contains("allows at most"));
    }
}

TEST_CASE("the CUDA-core FA2's tiles follow its launcher: on a T4, fp32, d=128, 64x16, where the papers' rule "
          "gives 32x32", "[catalog][tiles]") {
    const GpuSpec t4 = find_gpu_preset("T4");
    const AttentionProblem p = problem(4096, 128, 16, DType::fp32);
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    const AlgorithmResult r = simulate(algorithm("fa2"), p, t4, {}, cuda_cores);
    const TileChoice launched = fa2_tiles(128, DType::fp32, static_cast<std::size_t>(t4.smem_per_block_bytes));
    CHECK(r.tiles.Br == launched.Br);
    CHECK(r.tiles.Bc == launched.Bc);
    CHECK(launched.Br == 64);
    CHECK(launched.Bc == 16);
    // The papers' mapping, as the tensor-core model uses it, halves Bc then Br evenly.
    TileRequest paper;
    paper.scores = Space::Shared;
    const TileConfig own = algorithm("fa2").choose_tiles(p, t4, paper);
    CHECK(own.Br == 32);
    CHECK(own.Bc == 32);
}
