#include "algorithms/group_sums.hpp"

#include <algorithm>
#include <tuple>

#include "kernels/tile_rules.hpp"

namespace fasim {

KvGradients declare_kv_gradients(Executor& x, const AttentionProblem& p, std::int64_t tile_rows, std::int64_t tile_cols) {
    const std::int64_t BH = p.batch_heads(), Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const bool grouped = p.grouped();
    KvGradients g;
    g.dK_parts = x.declare({grouped ? "dK_expanded" : "dK", BH, Nk, d, e, tile_rows, tile_cols});
    g.dV_parts = x.declare({grouped ? "dV_expanded" : "dV", BH, Nk, d, e, tile_rows, tile_cols});
    g.dK = grouped ? x.declare({"dK", p.batch_kv_heads(), Nk, d, e, tile_rows, tile_cols}) : g.dK_parts;
    g.dV = grouped ? x.declare({"dV", p.batch_kv_heads(), Nk, d, e, tile_rows, tile_cols}) : g.dV_parts;
    return g;
}

void sum_kv_gradient_groups(Executor& x, const AttentionProblem& p, const KvGradients& g, const char* kernel_name) {
    if (!p.grouped()) return;
    const std::int64_t rows = tile_rules::group_sum_rows(static_cast<int>(p.d), static_cast<int>(p.elem_bytes()));
    const std::int64_t Nk = p.Nk, tiles = ceil_div(Nk, rows), G = p.group_size();
    const KernelDesc kernel{kernel_name, "dK, dV = the sums of each group's per-query-head dK, dV (fp32)", tiles,
                            p.batch_kv_heads(), tile_rules::kGroupSumThreads / 32, run_starts(tiles, {tiles - 1})};
    x.launch(kernel, [&](Block& b, std::int64_t kv_head, std::int64_t j) {
        const std::int64_t k0 = j * rows, n = std::min(rows, Nk - k0);
        // K/V head kv of batch b is read by query heads b·H + kv·G ... + G - 1.
        const std::int64_t first = (kv_head / p.kv_head_count()) * p.heads + (kv_head % p.kv_head_count()) * G;
        for (const auto& [parts, sum, name, next] : {std::tuple{&g.dK_parts, &g.dK, "dK_j", "dK_j of the next query head"},
                                                     std::tuple{&g.dV_parts, &g.dV, "dV_j", "dV_j of the next query head"}}) {
            Tile acc = b.load(view(*parts, first).rows(k0, n), Space::Registers, name);
            for (std::int64_t q = 1; q < G; ++q) {
                Tile part = b.load(view(*parts, first + q).rows(k0, n), Space::Registers, next);
                b.map(acc, Fn::add, {acc, part});
            }
            b.store(acc, view(*sum, kv_head).rows(k0, n));
        }
    });
}

ClosedForm::Bytes kv_gradient_group_bytes(const AttentionProblem& p) {
    if (!p.grouped()) return {};
    const Count per_head = Count(2) * p.Nk * p.d * p.elem_bytes();  // dK and dV
    return {Count(p.batch_heads()) * per_head, Count(p.batch_kv_heads()) * per_head};
}

}  // namespace fasim
