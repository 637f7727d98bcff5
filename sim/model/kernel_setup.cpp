#include "model/kernel_setup.hpp"

#include <stdexcept>

#include "common/errors.hpp"
#include "kernels/tile_rules.hpp"
#include "machine/occupancy.hpp"

namespace fasim {

MeasuredLaunch measured_launch(const nlohmann::json& result) {
    MeasuredLaunch l;
    const auto launches = result.find("launches");
    if (launches == result.end() || !launches->is_array() || launches->empty() || !launches->back().is_object()) return l;
    // The main kernel: the last launch with both tiles (a backward's last kernel may sum a group's dK, dV over
    // K/V tiles only: Bc without Br), else the last with K/V tiles, else the last.
    auto last_with = [&](bool with_rows) -> const nlohmann::json* {
        for (auto it = launches->rbegin(); it != launches->rend(); ++it)
            if (it->is_object() && it->value("Bc", 0) > 0 && (!with_rows || it->value("Br", 0) > 0)) return &*it;
        return nullptr;
    };
    const nlohmann::json* chosen = last_with(true);
    if (!chosen) chosen = last_with(false);
    if (!chosen) chosen = &launches->back();
    const nlohmann::json& main = *chosen;
    auto integer = [&](const char* key) -> std::int64_t {
        const auto it = main.find(key);
        return it != main.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
    };
    l.Br = integer("Br");
    l.Bc = integer("Bc");
    l.q_splits = integer("q_splits");
    l.registers_per_thread = static_cast<int>(integer("registers_per_thread"));
    l.warps = static_cast<int>(integer("threads") / 32);
    l.smem_bytes = integer("dynamic_smem_bytes");
    l.kv_splits = integer("kv_splits");
    l.one_address_per_tile = main.value("tile_addresses", std::string{}) == "one_per_tile";
    return l;
}

namespace {

// The kernel rule's tiles into the request (UsageError where nothing fits).
void apply_rule(const KernelVariant& k, const AttentionProblem& p, const GpuSpec& gpu, TileRequest& req) {
    TileChoice t;
    try {
        t = kernel_tiles(k, static_cast<int>(p.d), p.dtype, static_cast<std::size_t>(gpu.smem_per_block_bytes));
    } catch (const std::invalid_argument& e) {
        throw usage_error(std::string(k.name) + " with d=" + std::to_string(p.d) + " " + dtype_name(p.dtype) +
                              " has no tile that fits " + gpu.name + "'s shared memory",
                          e.what(), "use a smaller --d or a 2-byte --dtype");
    }
    if (t.Br == 0) return;
    req.Br = t.Br;
    req.Bc = t.Bc;
    req.tile_source = std::string(k.name) + "'s launcher rule (" + tile_rule_name(k.tiles) + ", kernels/tile_rules.hpp)";
    if (t.smem_bytes > 0) {
        req.launched_smem_bytes = static_cast<std::int64_t>(t.smem_bytes);
        req.smem_source = std::string(k.name) + "'s launcher rule";
    }
}

}  // namespace

KernelSetup kernel_setup(const KernelVariant& k, const AttentionProblem& p, const GpuSpec& gpu, const MeasuredLaunch& recorded) {
    if (p.grouped() && !k.grouped_kv)
        throw usage_error(std::string(k.name) + " has no grouped-query kernel: --kv-heads " + std::to_string(p.kv_head_count()) +
                              " differs from --heads " + std::to_string(p.heads),
                          "it reads one K/V head per query head", "omit --kv-heads, or use --kernel flash_decoding");
    KernelSetup s;
    s.algorithm = &algorithm(k.algorithm);
    s.options.tensor_cores = k.tensor_cores(p.dtype);
    if (k.products == Products::wgmma) s.options.flash_instruction = MatrixInstruction::wgmma;
    TileRequest& req = s.tiles;
    req.matmul = k.matmul;
    req.heaviest_first = k.causal_heaviest_first;
    // A run's record says how its kernel copied; without one (fa-sim --kernel, PyTorch's), the catalog.
    req.one_address_per_tile = recorded.recorded() ? recorded.one_address_per_tile : k.one_address_per_tile;
    if (!s.algorithm->tunable_tiles) return s;  // standard attention: the GEMM tiles follow req.matmul
    if (recorded.Br > 0 && recorded.Bc > 0) {
        req.Br = recorded.Br;
        req.Bc = recorded.Bc;
        req.tile_source = "as the measured run recorded them";
    } else {
        apply_rule(k, p, gpu, req);
    }
    if (s.algorithm->q_splits && recorded.q_splits > 1) req.q_splits = recorded.q_splits;
    if (s.algorithm->kv_splits && recorded.kv_splits > 0) req.kv_splits = recorded.kv_splits;
    req.warps = recorded.warps > 0 ? recorded.warps : k.warps;
    if (recorded.smem_bytes > 0) {
        req.launched_smem_bytes = recorded.smem_bytes;
        req.smem_source = "as the measured run recorded it";
    } else if (recorded.Br > 0 && recorded.Bc > 0) {
        // Tiles given without the shared memory (fa-sim --kernel K --Br --Bc): the kernel's layout for them.
        const std::size_t need = kernel_smem_bytes(k, static_cast<int>(recorded.Br), static_cast<int>(recorded.Bc),
                                                   static_cast<int>(p.d), p.dtype);
        if (need > static_cast<std::size_t>(gpu.smem_per_block_bytes))
            throw usage_error(std::string(k.name) + " with " + std::to_string(recorded.Br) + " x " +
                                  std::to_string(recorded.Bc) + " tiles needs " + std::to_string(need) +
                                  " B of shared memory per block",
                              gpu.name + " allows at most " + std::to_string(gpu.smem_per_block_bytes) + " B per block",
                              "choose smaller tiles with --Br/--Bc, or leave them out for the kernel's own");
        if (need > 0) {
            req.launched_smem_bytes = static_cast<std::int64_t>(need);
            req.smem_source = std::string(k.name) + "'s shared-memory layout for those tiles";
        }
    }
    if (recorded.registers_per_thread > 0) {
        req.registers_per_thread = recorded.registers_per_thread;
        req.registers_source = "as the measured run recorded them";
    } else if (!recorded.recorded() && k.registers_at(static_cast<int>(p.d)) > 0) {
        req.registers_per_thread = k.registers_at(static_cast<int>(p.d));
        req.registers_source = std::string(k.name) + "'s, from the kernel catalog";
    }
    // fa1_tc launches as many blocks per batch*head as one wave of the SMs holds (its launcher's rule,
    // kernels/tile_rules.hpp). A run records what it launched; a prediction without a record applies the rule
    // to the occupancy the model computes for those tiles.
    if (k.tiles == TileRule::fa1_tc && !recorded.recorded()) {
        const TileConfig cfg = choose_tiles(*s.algorithm, p, gpu, req);
        const std::int64_t smem = cfg.launched_smem_bytes > 0 ? cfg.launched_smem_bytes : cfg.smem_bytes;
        const Occupancy occ = compute_occupancy(gpu, cfg.warps, smem, cfg.registers_per_thread);
        req.q_splits = tile_rules::fa1_tc_q_splits(p.batch_heads(), p.N, gpu.sm_count, occ.blocks_per_sm);
    }
    return s;
}

void apply_cuda_core_tile_rule(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, TileRequest& tiles) {
    if (tiles.Br || tiles.Bc || !algo.tunable_tiles) return;
    if (const KernelVariant* k = cuda_core_kernel(algo, tiles.matmul)) apply_rule(*k, p, gpu, tiles);
}

}  // namespace fasim
