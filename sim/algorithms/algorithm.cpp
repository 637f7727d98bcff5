// What every algorithm's tile mapping shares: the range of --Br/--Bc, the shared-memory check,
// --q-splits and --registers.
#include "algorithms/algorithm.hpp"

#include "common/errors.hpp"

namespace fasim {

const char* matmul_name(MatmulMode m) {
    switch (m) {
        case MatmulMode::tiled: return "tiled";
        case MatmulMode::naive: return "naive";
        case MatmulMode::library: return "library";
    }
    return "?";
}

const char* dq_name(DqMode m) { return m == DqMode::separate ? "separate" : "atomic"; }

namespace {
std::string bytes_text(std::int64_t b) { return std::to_string(b) + " B"; }
}  // namespace

std::string tiles_given_text(const TileRequest& req, std::int64_t Br, std::int64_t Bc) {
    const std::string tiles = "Br = " + std::to_string(Br) + ", Bc = " + std::to_string(Bc);
    return req.tile_source.empty() ? "overridden by the user: " + tiles : tiles + ", " + req.tile_source;
}

void check_tile_arg(const char* flag, std::int64_t v) {
    if (v < 1 || v > 4096)
        throw usage_error(std::string("--") + flag + " " + std::to_string(v) + " is out of range",
                          std::string(flag) + " must be 1..4096 rows",
                          "pass a tile size such as 64 or 128, or omit it for the paper default");
}

void reject_user_tiles(std::string_view algo_id, const AttentionProblem& p, const GpuSpec& gpu, std::int64_t Br,
                       std::int64_t Bc, std::int64_t needed_bytes) {
    throw usage_error("--Br " + std::to_string(Br) + " --Bc " + std::to_string(Bc) + " need " + bytes_text(needed_bytes) +
                          " of shared memory per block for " + std::string(algo_id) + " (d=" + std::to_string(p.d) + ", " + dtype_name(p.dtype) + ")",
                      gpu.name + " allows at most " + bytes_text(gpu.smem_per_block_bytes) + " per block",
                      "choose smaller --Br/--Bc, or omit them to use the largest paper-default tiles that fit");
}

TileConfig choose_tiles(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    if (req.Br) check_tile_arg("Br", *req.Br);
    if (req.Bc) check_tile_arg("Bc", *req.Bc);
    TileConfig c = algo.choose_tiles(p, gpu, req);
    c.heaviest_first = req.heaviest_first;
    c.one_address_per_tile = req.one_address_per_tile;
    c.smem_bytes = algo.smem_bytes(p, c.Br, c.Bc, c);
    if (c.smem_bytes > gpu.smem_per_block_bytes)
        throw usage_error(std::string(algo.id) + " with d=" + std::to_string(p.d) + " " + dtype_name(p.dtype) + " needs " +
                              bytes_text(c.smem_bytes) + " of shared memory per block even with the smallest tiles",
                          gpu.name + " allows " + bytes_text(gpu.smem_per_block_bytes), "use a smaller --d or a 2-byte --dtype");
    if (req.q_splits != 0 && req.q_splits != 1 && !algo.q_splits) {
        std::string takes;
        for (const Algorithm* a : algorithms())
            if (a->q_splits) takes += (takes.empty() ? "" : ", ") + std::string(a->id);
        // tiled and FA2 already give every Q tile its own block; standard has no Q-tile loop.
        throw usage_error("--q-splits " + std::to_string(req.q_splits) + " does not apply to " + std::string(algo.id),
                          "only " + takes + " splits its Q tiles over several blocks per batch*head",
                          "use --algo " + takes + ", or drop --q-splits");
    }
    if (p.grouped() && !algo.grouped_kv) {
        // Named as --algo takes them: a backward pass by its forward's id.
        std::string takes;
        for (const Algorithm* a : algorithms())
            if (a->grouped_kv && a->pass == algo.pass)
                takes += (takes.empty() ? "" : ", ") + std::string(a->family.empty() ? a->id : a->family);
        const bool backward = algo.pass == Pass::backward;
        throw usage_error("--kv-heads " + std::to_string(p.kv_head_count()) + " (grouped-query attention) is not modelled for " +
                              std::string(algo.id),
                          std::string(backward ? "the algorithms whose backward pass takes grouped K/V heads are "
                                               : "the algorithms with grouped K/V heads are ") + takes,
                          "use --algo " + takes.substr(0, takes.find(',')) + ", or omit --kv-heads");
    }
    if (req.kv_splits != 0 && !algo.kv_splits) {
        std::string takes;
        for (const Algorithm* a : algorithms())
            if (a->kv_splits) takes += (takes.empty() ? "" : ", ") + std::string(a->id);
        throw usage_error("--kv-splits " + std::to_string(req.kv_splits) + " does not apply to " + std::string(algo.id),
                          "only " + takes + " splits the keys over several blocks", "use --algo " + takes + ", or drop --kv-splits");
    }
    if (req.registers_per_thread != 0) {
        if (req.registers_per_thread < 1 || req.registers_per_thread > gpu.max_registers_per_thread)
            throw usage_error("--registers " + std::to_string(req.registers_per_thread) + " is out of range for " + gpu.name,
                              "a thread has 1.." + std::to_string(gpu.max_registers_per_thread) + " registers",
                              "pass the count ptxas -v prints for the kernel (\"Used N registers\"), or omit --registers");
        c.registers_per_thread = req.registers_per_thread;
        c.reasons.push_back("registers per thread = " + std::to_string(c.registers_per_thread) + " (" +
                            (req.registers_source.empty() ? std::string("given") : req.registers_source) +
                            "): occupancy uses the compiled kernel's count, not the estimate from the tiles");
    }
    if (req.launched_smem_bytes != 0) {
        if (req.launched_smem_bytes < 0 || req.launched_smem_bytes > gpu.smem_per_block_bytes)
            throw usage_error("a launch with " + std::to_string(req.launched_smem_bytes) + " B of shared memory per block",
                              gpu.name + " allows 0.." + std::to_string(gpu.smem_per_block_bytes) + " B per block",
                              "model the run on the GPU it was measured on (--gpu)");
        c.launched_smem_bytes = req.launched_smem_bytes;
        c.reasons.push_back("shared memory per block = " + bytes_text(c.launched_smem_bytes) + " (" + req.smem_source +
                            "): occupancy uses what the kernel launches with, not the program's count");
    }
    return c;
}

}  // namespace fasim
