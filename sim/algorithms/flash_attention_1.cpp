// FlashAttention forward (Dao et al., 2022, Algorithm 1), as a tile program.
//
// Line numbers refer to Algorithm 1 of the paper.
//  - Tiles: Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d) (line 1), M = SRAM per block in elements.
//  - O, ℓ, m live in HBM (line 2: an init kernel writes O = 0, ℓ = 0, m = −inf).
//  - Outer loop over K/V tiles (line 5), inner loop over Q tiles (line 7): every
//    inner step reads Q_i, O_i, ℓ_i, m_i from HBM and writes O_i, ℓ_i, m_i back
//    (lines 8, 12, 13). That round trip is the Tc·(2Nd + 2N) term of its traffic.
//  - One thread block per batch·head. Its 4 warps split K and V ("split-K"): each
//    warp sees a quarter of the keys, so row maxima, row sums and the partial P·V
//    products are exchanged through shared memory with barriers.
//  - Optionally q_splits blocks per batch·head (FlashAttention-1's num_splits, which
//    the tensor-core FA1 kernel uses when batch·heads alone leave SMs idle): block s
//    takes Q tiles s, s + q_splits, ... and reads the K/V tiles they see itself, so
//    K and V are read up to q_splits times.
//  - O_i is normalised on every step (divided by ℓ_new, multiplied back by ℓ_i on
//    the next): the extra non-matmul work FlashAttention-2 removes.
//  - With fp16/bf16 storage the running O_i makes its round trips in fp32 (O_acc,
//    FlashAttention-1's o_tmp): rounding it to 16 bits Tc times would compound the
//    error. The last K/V tile a Q tile sees writes O_i in the storage dtype to O.
//    Element counts are the paper's; only O_acc's bytes per element differ.
#include <numeric>

#include "algorithms/flash_steps.hpp"
#include "common/errors.hpp"

namespace fasim {

namespace {

// The main kernel's blocks s = 0..splits-1 take Q tiles s, s + splits, ...: without a mask, blocks with
// as many Q tiles do alike work but the one holding the ragged last tile; causal, each its own.
std::vector<std::int64_t> fa1_block_runs(std::int64_t splits, std::int64_t Tr, bool causal) {
    if (causal) return {};
    const std::int64_t last = (Tr - 1) % splits;  // the block with Q tile Tr - 1
    return run_starts(splits, {Tr % splits, last, last + 1});
}

void program(Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    const std::int64_t BH = p.batch_heads(), N = p.N, Nk = p.Nk, d = p.d, e = p.elem_bytes();
    const std::int64_t Br = cfg.Br, Bc = cfg.Bc, Tr = ceil_div(N, Br), Tc = ceil_div(Nk, Bc);
    const double scale = p.softmax_scale();

    const GlobalTensor Q = x.declare({"Q", BH, N, d, e, Br, d});
    const GlobalTensor K = x.declare({"K", p.batch_kv_heads(), Nk, d, e, Bc, d});  // grouped: a group's query heads share one
    const GlobalTensor V = x.declare({"V", p.batch_kv_heads(), Nk, d, e, Bc, d});
    const GlobalTensor O = x.declare({"O", BH, N, d, e, Br, d});
    const bool separate_acc = e != 4;  // fp32 storage accumulates in O itself
    const GlobalTensor O_fp32 = separate_acc ? x.declare({"O_acc", BH, N, d, 4, Br, d}) : GlobalTensor{};
    const GlobalTensor& O_acc = separate_acc ? O_fp32 : O;
    const GlobalTensor m = x.declare({"m", BH, 1, N, 4, 1, Br, true});
    const GlobalTensor l = x.declare({"l", BH, 1, N, 4, 1, Br, true});

    // The last K/V tile Q tile i sees (causal: the one holding its last row's diagonal);
    // -1 when causal masking hides every key from the whole tile.
    auto last_kv_tile = [&](std::int64_t q0, std::int64_t rows) -> std::int64_t {
        if (!p.causal) return Tc - 1;
        const std::int64_t last_key = q0 + rows - 1 + (Nk - N);
        return last_key < 0 ? -1 : std::min(Tc - 1, last_key / Bc);
    };

    // Line 2: initialise O = 0, ℓ = 0, m = −inf in HBM (O_acc when it is separate; O too
    // for rows no key is visible to, which the main kernel never writes).
    // Alike but the ragged last Q tile, and (causal, fp16/bf16) the tiles no key is visible to, which
    // also clear O.
    const std::int64_t first_seeing = first_where(0, Tr, [&](std::int64_t i) {
        return last_kv_tile(i * Br, std::min(Br, N - i * Br)) >= 0;
    });
    const KernelDesc init{"fa1_init", "line 2: write O = 0, l = 0, m = -inf to HBM", Tr, BH, cfg.warps,
                          run_starts(Tr, {first_seeing, Tr - 1})};
    x.launch(init, [&](Block& b, std::int64_t bh, std::int64_t i) {
        const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
        b.store(b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i"), view(O_acc, bh).rows(q0, rows));
        if (separate_acc && last_kv_tile(q0, rows) < 0)
            b.store(b.alloc(rows, d, Space::Registers, Fill::Zero, "O_i"), view(O, bh).rows(q0, rows));
        b.store(b.alloc_statistic(rows, Space::Registers, Fill::Zero, "l_i"), view(l, bh).tile(0, 1, q0, rows));
        b.store(b.alloc_statistic(rows, Space::Registers, Fill::NegInf, "m_i"), view(m, bh).tile(0, 1, q0, rows));
    });

    // Grid (q_splits, BH): Q tiles are dealt round-robin (FlashAttention-1's num_splits), so
    // causal blocks get similar work. With q_splits = 1 this is Algorithm 1 as written.
    const std::int64_t splits = cfg.q_splits;
    const KernelDesc kernel{"fa1_forward",
                            (splits == 1 ? std::string("one block") : std::to_string(splits) + " blocks (Q tiles round-robin)") +
                                " per batch*head; outer loop K/V tiles, inner loop Q tiles",
                            splits, BH, cfg.warps, fa1_block_runs(splits, Tr, p.causal)};
    x.launch(kernel, [&](Block& b, std::int64_t bh, std::int64_t s) {
        // Causal visibility only grows down the rows, so the block's last Q tile sees every K/V
        // tile any of its Q tiles sees; the block does not load the ones after it.
        const std::int64_t my_tiles = (Tr - 1 - s) / splits + 1;  // Q tiles s, s + splits, ...
        const std::int64_t last_i = s + (my_tiles - 1) * splits;
        const std::int64_t last_j = last_kv_tile(last_i * Br, std::min(Br, N - last_i * Br));
        // Line 7, this block's Q tiles i = s + t*splits: those that see K_j, in runs of alike steps;
        // causal, the Q tiles for which K_j is the last K/V tile (they write O) are a run of their own.
        auto q_tiles_of = [&](std::int64_t j) {
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            QLoop q = q_loop(s, splits, my_tiles, Br, k0, cols, N, Nk, p.causal);
            auto last_for = [&](std::int64_t t) { const std::int64_t q0 = (s + t * splits) * Br; return last_kv_tile(q0, std::min(Br, N - q0)); };
            q.cuts.push_back(first_where(q.begin, my_tiles, [&](std::int64_t t) { return last_for(t) >= j; }));
            q.cuts.push_back(first_where(q.begin, my_tiles, [&](std::int64_t t) { return last_for(t) > j; }));
            return q;
        };
        // Without a mask the K/V steps are alike but the last (it writes O, and may be ragged).
        auto kv_step = [&](std::int64_t j) {                                   // line 5
            const std::int64_t k0 = j * Bc, cols = std::min(Bc, Nk - k0);
            Tile Kj = b.load(view(K, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "K_j");  // line 6
            Tile Vj = b.load(view(V, p.kv_head_of(bh)).rows(k0, cols), Space::Shared, "V_j");
            const QLoop q = q_tiles_of(j);  // line 7
            for_each_run(b, q.begin, my_tiles, q.cuts, [&](std::int64_t t) {
                const std::int64_t i = s + t * splits;
                const std::int64_t q0 = i * Br, rows = std::min(Br, N - q0);
                Tile Qi = b.load(view(Q, bh).rows(q0, rows), Space::Shared, "Q_i");  // line 8
                // O_i goes straight to registers: it is read once, combined with P~V and written back
                // (the kernel streams it through the threads' registers; shared memory holds K, V, Q).
                Tile Oi = b.load(view(O_acc, bh).rows(q0, rows), Space::Registers, "O_i");
                Tile li = b.load(view(l, bh).tile(0, 1, q0, rows), Space::Shared, "l_i");
                Tile mi = b.load(view(m, bh).tile(0, 1, q0, rows), Space::Shared, "m_i");

                Tile S = score_tile(b, Qi, Kj, q0, k0, p, Split::Cols);                // line 9

                Tile m_tilde = b.row_max(S, scale, "m~_ij");                   // line 10
                b.reduce_across_warps(m_tilde, Reduce::Max);
                b.map(S, Fn::exp_shifted, {S, scale, per_row(m_tilde)});       // S becomes P~_ij
                Tile l_tilde = b.row_sum(S, "l~_ij");
                b.reduce_across_warps(l_tilde, Reduce::Sum);

                Tile m_new = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "m_new");  // line 11
                b.map(m_new, Fn::max, {mi, m_tilde});
                Tile a = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "e^(m_i-m_new)");
                b.map(a, Fn::exp_diff, {mi, m_new});
                Tile c = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "e^(m~-m_new)");
                b.map(c, Fn::exp_diff, {m_tilde, m_new});
                Tile old_weight = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "l_i*e^(m_i-m_new)");
                b.map(old_weight, Fn::mul, {a, li});
                Tile l_new = b.alloc_statistic(rows, Space::Registers, Fill::Zero, "l_new");
                b.map(l_new, Fn::fma, {c, l_tilde, old_weight});

                b.round_to_storage(S);                                          // line 12
                Tile PV = b.alloc(rows, d, Space::Registers, Fill::Zero, "P~V_j");
                b.matmul(PV, S, Vj, {.split = Split::Inner});
                b.reduce_across_warps(PV, Reduce::Sum);
                b.map(Oi, Fn::mul, {Oi, per_row(old_weight)});
                b.map(PV, Fn::mul, {PV, per_row(c)});
                b.map(Oi, Fn::add, {Oi, PV});
                b.map(Oi, Fn::div, {Oi, per_row(l_new)});
                const bool last = j == last_kv_tile(q0, rows);
                b.store(Oi, view(last ? O : O_acc, bh).rows(q0, rows));
                b.store(l_new, view(l, bh).tile(0, 1, q0, rows));               // line 13
                b.store(m_new, view(m, bh).tile(0, 1, q0, rows));
            });
        };
        if (p.causal) {
            // Each K/V tile meets its own Q tiles, Bc / (Br * splits) fewer than the tile before: a whole
            // number of them every `period` K/V tiles.
            const std::int64_t period = Br * splits / std::gcd(Bc, Br * splits);
            for_each_staircase(b, 0, last_j + 1, period, [&](std::int64_t j) {
                const QLoop q = q_tiles_of(j);
                return loop_shape(q.begin, my_tiles, q.cuts);
            }, kv_step);
        } else {
            for_each_run(b, 0, last_j + 1, {last_j}, kv_step);
        }
    });
}

// K_j, V_j, Q_i, l_i, m_i (O_i passes through registers), plus the split-K exchange buffer: every
// warp's partial P·V (fp32), 16 rows at a time.
std::int64_t smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig& cfg) {
    const std::int64_t d = p.d, e = p.elem_bytes(), W = cfg.warps;
    return 2 * Bc * d * e + Br * d * e + 2 * Br * 4 + W * std::min<std::int64_t>(Br, 16) * d * 4;
}

std::string bytes_text(std::int64_t b) { return std::to_string(b) + " B"; }

// Line 1 of Algorithm 1: Bc = ⌈M/4d⌉, Br = min(⌈M/4d⌉, d), for M elements of SRAM per block.
TileConfig choose_tiles(const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c;
    c.matmul = req.matmul;
    const std::int64_t d = p.d, e = p.elem_bytes(), limit = gpu.smem_per_block_bytes;
    auto fits = [&](std::int64_t Br, std::int64_t Bc) { return smem_bytes(p, Br, Bc, c) <= limit; };
    c.M_elements = limit / e;
    const std::int64_t paper_bc = ceil_div(c.M_elements, 4 * d);
    std::int64_t Bc = paper_bc, Br = std::min(paper_bc, d);
    c.reasons.push_back("M = " + bytes_text(limit) + " shared memory per block / " + std::to_string(e) + " B = " +
                        std::to_string(c.M_elements) + " elements");
    c.reasons.push_back("Bc = ceil(M/4d) = " + std::to_string(paper_bc) + ", Br = min(ceil(M/4d), d) = " + std::to_string(Br) +
                        " (Algorithm 1, line 1)");
    if (req.Br || req.Bc) {
        Br = req.Br.value_or(Br);
        Bc = req.Bc.value_or(Bc);
        if (!fits(Br, Bc)) reject_user_tiles("fa1", p, gpu, Br, Bc, smem_bytes(p, Br, Bc, c));
        c.reasons.push_back(tiles_given_text(req, Br, Bc));
    } else if (!fits(Br, Bc)) {
        const std::int64_t need = smem_bytes(p, Br, Bc, c);
        while (!fits(Br, Bc) && (Br > 1 || Bc > 1)) {  // shrink the larger, so neither collapses
            if (Bc >= Br) --Bc;
            else --Br;
        }
        c.reasons.push_back("those tiles plus the split-K exchange buffer need " + bytes_text(need) + " > " + bytes_text(limit) +
                            ": lowered to Br = " + std::to_string(Br) + ", Bc = " + std::to_string(Bc) + ", the largest that fit");
    }
    c.Br = Br;
    c.Bc = Bc;
    if (req.q_splits != 0 && req.q_splits != 1) {
        const std::string qs = "--q-splits " + std::to_string(req.q_splits);
        const std::int64_t Tr = ceil_div(p.N, c.Br);
        if (req.q_splits < 1 || req.q_splits > Tr)  // a block without a Q tile would do nothing
            throw usage_error(qs + " is out of range for fa1 with N=" + std::to_string(p.N) + ", Br=" + std::to_string(c.Br),
                              "q-splits must be 1..Tr = ceil(N/Br) = " + std::to_string(Tr) + " (each block takes at least one Q tile)",
                              "pass --q-splits 1.." + std::to_string(Tr) + ", or a smaller --Br for more Q tiles");
        c.q_splits = req.q_splits;
        c.reasons.push_back("q_splits = " + std::to_string(c.q_splits) + ": " + std::to_string(c.q_splits) +
                            " blocks per batch*head (FlashAttention-1's num_splits), block s takes Q tiles s, s+" +
                            std::to_string(c.q_splits) + ", ... of Tr = " + std::to_string(Tr) +
                            " and reads the K/V tiles they see itself");
    }
    return c;
}

// Reads 2Nk·d + Tc(2Nd + 2N), writes (Nd + 2N) + Tc(Nd + 2N) elements (non-causal). Q, K, V and the
// final O in the storage dtype; ℓ, m and the running O in fp32 (O_acc, FlashAttention-1's o_tmp): the
// init and the first Tc - 1 O writes and all Tc O reads are 4 bytes per element, the last write e
// bytes. With q_splits blocks per batch·head each reads K and V itself.
ClosedForm closed_form(const AttentionProblem& p, const TileConfig& t) {
    // Counts (N, Nk, BH): every product below is computed in 128 bits.
    const Count N = p.N, Nk = p.Nk, BH = p.batch_heads();
    const std::int64_t d = p.d, e = p.elem_bytes();
    const Count Tc = ceil_div(p.Nk, t.Bc);
    ClosedForm f;
    if (p.causal) return f;
    f.hbm = ClosedForm::Bytes{BH * (t.q_splits * 2 * Nk * d * e + Tc * (N * d * e + N * d * 4 + 2 * N * 4)),
                              BH * ((N * d * 4 + 2 * N * 4) + (Tc - 1) * N * d * 4 + N * d * e + Tc * 2 * N * 4)};
    f.matmul_flops = 4 * BH * N * Nk * d;
    const double n = static_cast<double>(N), nk = static_cast<double>(Nk), dd = static_cast<double>(d);
    f.leading_hbm_bytes = (nk / static_cast<double>(t.Bc)) * (n * dd * static_cast<double>(e) + 2 * n * dd * 4 + 4 * n * 4) *
                          static_cast<double>(BH);
    f.leading_text = "FA1 (" + std::string(Nk == N ? "N" : "Nk") + "/Bc)\u00B7N\u00B7(d\u00B7e + 8d + 16)\u00B7B\u00B7H with Bc=" +
                     std::to_string(t.Bc) +
                     (t.M_elements > 0 && t.Bc == ceil_div(t.M_elements, 4 * d) ? " = \u2308M/4d\u2309" : "") +
                     " (Q read, fp32 running O read and written, fp32 m and \u2113 read and written once per K/V block: "
                     "\u221D N\u00B2d\u00B2/M)";
    return f;
}

Count tile_steps(const AttentionProblem& p, const TileConfig& t) {
    return Count(p.batch_heads()) * ceil_div(p.N, t.Br) * ceil_div(p.Nk, t.Bc);
}

}  // namespace

const Algorithm& flash_attention_1_algorithm() {
    static const Algorithm a{
        .id = "fa1",
        .title = "FlashAttention-1 (Algorithm 1: K/V outer loop, split-K warps)",
        .name = "FlashAttention-1",
        .label = "FA1",
        .tunable_tiles = true,
        .q_splits = true,
        .grouped_kv = true,
        .tile_sweep = TileSweep::bc_only,
        .timeline_figure = true,
        .choose_tiles = choose_tiles,
        .smem_bytes = smem_bytes,
        .program = program,
        .closed_form = closed_form,
        .tile_steps = tile_steps,
        .tile_step_budget = 4'000'000,  // a whole head is one block: about 2-3 s of simulation at this size
        .grid_text = [](const AttentionProblem&, const TileConfig&) {
            return std::string(" = B\u00B7H, one per batch\u00B7head");
        },
    };
    return a;
}

}  // namespace fasim
