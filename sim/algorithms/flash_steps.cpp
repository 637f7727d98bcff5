#include "algorithms/flash_steps.hpp"

#include "common/errors.hpp"
#include "kernels/kernel_execution.hpp"

namespace fasim {

std::int64_t q_tile_smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig& cfg) {
    const std::int64_t d = p.d, e = p.elem_bytes();
    // Q_i, K_j, V_j; with a staged S: S_ij and the row statistics m, l, alpha (fp32), and the rows of
    // Q, K and S padded as the CUDA-core kernels pad them (LaneGrid)
    if (cfg.scores != Space::Shared) return (Br + 2 * Bc) * d * e;
    return (Br + Bc) * padded_row_bytes(d * e) + Bc * d * e + Br * padded_row_bytes(Bc * 4) + 3 * Br * 4;
}

TileConfig choose_q_tiles(std::string_view algo_id, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c;
    c.matmul = req.matmul;
    c.scores = req.scores;
    const std::int64_t d = p.d, limit = gpu.smem_per_block_bytes;
    auto fits = [&](std::int64_t Br, std::int64_t Bc) { return q_tile_smem_bytes(p, Br, Bc, c) <= limit; };
    std::int64_t Br = d <= 64 ? 128 : (d <= 128 ? 128 : 64);
    std::int64_t Bc = d <= 64 ? 128 : 64;
    c.reasons.push_back("flash-attention 2 forward defaults for d=" + std::to_string(d) + ": Br = " + std::to_string(Br) +
                        ", Bc = " + std::to_string(Bc));
    if (req.Br || req.Bc) {
        Br = req.Br.value_or(Br);
        Bc = req.Bc.value_or(Bc);
        if (!fits(Br, Bc)) reject_user_tiles(algo_id, p, gpu, Br, Bc, q_tile_smem_bytes(p, Br, Bc, c));
        c.reasons.push_back(tiles_given_text(req, Br, Bc));
    } else if (!fits(Br, Bc)) {
        const std::int64_t need = q_tile_smem_bytes(p, Br, Bc, c);
        while (!fits(Br, Bc) && (Bc > 16 || Br > 16)) {
            if (Bc >= Br && Bc > 16) Bc /= 2;
            else Br /= 2;
        }
        c.reasons.push_back(std::string(c.scores == Space::Shared ? "Q, K, V and S tiles" : "Q, K, V tiles") + " need " +
                            std::to_string(need) + " B > " + std::to_string(limit) +
                            " B of shared memory: halved to Br = " + std::to_string(Br) + ", Bc = " + std::to_string(Bc));
    }
    c.Br = Br;
    c.Bc = Bc;
    if (req.warps > 0) c.warps = req.warps;  // a kernel that splits its Q tile over more warps (fa2_wgmma: 8)
    return c;
}

std::string q_tile_grid_text(const AttentionProblem& p, const TileConfig& t) {
    return " = B\u00B7H \u00D7 \u2308N/Br\u2309 = " + std::to_string(p.batch_heads()) + " \u00D7 " +
           std::to_string(ceil_div(p.N, t.Br));
}

}  // namespace fasim
