// How the simulator runs a kernel of the catalog (kernels/kernel_catalog.hpp): its algorithm, its
// tiles (what a run recorded, else the kernel's own rule), its matrix products and registers. One
// function, used wherever a measurement is put beside a prediction (fa-validate, the
// predicted-vs-measured figure, lesson 09, the CI test against cuda/results/) and by fa-sim --kernel,
// so that they cannot disagree.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "algorithms/algorithm.hpp"
#include "kernels/kernel_catalog.hpp"
#include "model/runtime_model.hpp"

namespace fasim {

// What a measurement recorded of the attention kernel it timed (fa-validate's "launches": the last one
// with a K/V tile, Bc > 0, else the last; fa1's init kernel comes first, FA2 backward's dQ conversion
// and FlashDecoding's combine last). 0 = not recorded.
struct MeasuredLaunch {
    std::int64_t Br = 0, Bc = 0;
    std::int64_t q_splits = 0;     // fa1_tc: blocks per batch*head
    int registers_per_thread = 0;  // what ptxas allocated
    int warps = 0;                 // threads per block / 32
    std::int64_t smem_bytes = 0;   // dynamic shared memory per block it launched with
    std::int64_t kv_splits = 0;    // flash_decoding: splits of the keys it ran (a launch choice, not the compiled
                                   // kernel's: the catalog's registers still apply)
    // Its tile copies took one address per whole tile ("tile_addresses": "one_per_tile"); a run without the
    // key copied per chunk (every kernel did before 2026-11-30).
    bool one_address_per_tile = false;
    bool recorded() const { return Br > 0 || Bc > 0 || q_splits > 0 || registers_per_thread > 0; }
};

// The "launches" of one fa-validate result (JSON); all zero when there are none (torch_sdpa.py).
MeasuredLaunch measured_launch(const nlohmann::json& result);

struct KernelSetup {
    const Algorithm* algorithm = nullptr;
    TileRequest tiles;
    ModelOptions options;
};

// The simulation of kernel k on this problem and GPU. Tiles: recorded, else the kernel's rule (not
// for standard attention, whose GEMM tiles are the algorithm's). Splits of the keys: recorded, else the
// algorithm's heuristic. Registers: recorded; the catalog's when the run recorded nothing of the kernel
// (PyTorch's, or fa-sim --kernel); else the model's estimate. Throws UsageError where the kernel's rule
// finds no tile that fits, or the problem has grouped K/V heads and the kernel takes none.
KernelSetup kernel_setup(const KernelVariant& k, const AttentionProblem& p, const GpuSpec& gpu,
                         const MeasuredLaunch& recorded = {});

// Tiles of fa-sim's CUDA-core kernel of an algorithm, by its launcher's rule (kernels/tile_rules.hpp):
// what --cuda-cores runs with unless --Br/--Bc say otherwise. Leaves `tiles` alone where the
// algorithm's own mapping decides (standard attention) or the user chose.
void apply_cuda_core_tile_rule(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, TileRequest& tiles);

}  // namespace fasim
