#include "algorithms/algorithm.hpp"

#include <sstream>

#include "common/errors.hpp"

namespace fasim {

const char* algo_name(Algo a) {
    switch (a) {
        case Algo::standard: return "standard";
        case Algo::tiled: return "tiled";
        case Algo::fa1: return "fa1";
        case Algo::fa2: return "fa2";
    }
    return "?";
}

const char* algo_title(Algo a) {
    switch (a) {
        case Algo::standard: return "Standard attention (Algorithm 0: S and P through HBM)";
        case Algo::tiled: return "Tiled fused attention without online softmax (two passes over K)";
        case Algo::fa1: return "FlashAttention-1 (Algorithm 1: K/V outer loop, split-K warps)";
        case Algo::fa2: return "FlashAttention-2 (Q outer loop, split-Q warps, O written once)";
    }
    return "?";
}

const char* matmul_name(MatmulMode m) {
    switch (m) {
        case MatmulMode::tiled: return "tiled";
        case MatmulMode::naive: return "naive";
        case MatmulMode::library: return "library";
    }
    return "?";
}

std::optional<Algo> parse_algo(const std::string& s) {
    for (Algo a : kAllAlgos)
        if (s == algo_name(a)) return a;
    return std::nullopt;
}

std::int64_t smem_bytes_needed(Algo algo, const AttentionProblem& p, std::int64_t Br, std::int64_t Bc,
                               const TileConfig& cfg) {
    const std::int64_t d = p.d, e = p.elem_bytes(), W = cfg.warps;
    switch (algo) {
        case Algo::fa2:
        case Algo::tiled:  // Q_i, K_j, V_j; with a staged S: S_ij and the row statistics m, l, alpha (fp32),
                           // and the rows of Q, K and S padded as the CUDA-core kernels pad them (LaneGrid)
            if (cfg.scores != Space::Shared) return (Br + 2 * Bc) * d * e;
            return (Br + Bc) * padded_row_bytes(d * e) + Bc * d * e +
                   Br * padded_row_bytes(Bc * 4) + 3 * Br * 4;
        case Algo::fa1:  // K_j, V_j, Q_i, l_i, m_i (O_i passes through registers), plus the split-K
                         // exchange buffer: every warp's partial P·V (fp32), 16 rows at a time
            return 2 * Bc * d * e + Br * d * e + 2 * Br * 4 + W * std::min<std::int64_t>(Br, 16) * d * 4;
        case Algo::standard: {
            // Operand tiles of one k-step; a library GEMM keeps two k-steps in flight (double buffering).
            const std::int64_t stages = cfg.matmul == MatmulMode::library ? 2 : 1;
            const std::int64_t gemm = cfg.matmul == MatmulMode::naive ? 0
                                    : stages * std::max(cfg.gemm_m + cfg.gemm_n, cfg.pv_m + cfg.pv_n) * cfg.gemm_k * e;
            return std::max(gemm, cfg.softmax_chunk * e);
        }
    }
    return 0;
}

namespace {

void check_tile_arg(const char* flag, std::int64_t v) {
    if (v < 1 || v > 4096)
        throw usage_error(std::string("--") + flag + " " + std::to_string(v) + " is out of range",
                          std::string(flag) + " must be 1..4096 rows",
                          "pass a tile size such as 64 or 128, or omit it for the paper default");
}

std::string bytes_text(std::int64_t b) { return std::to_string(b) + " B"; }

}  // namespace

TileConfig choose_tiles(Algo algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req) {
    TileConfig c;
    c.matmul = req.matmul;
    c.scores = algo == Algo::fa2 || algo == Algo::tiled ? req.scores : Space::Registers;
    const std::int64_t d = p.d, e = p.elem_bytes(), limit = gpu.smem_per_block_bytes;
    if (req.Br) check_tile_arg("Br", *req.Br);
    if (req.Bc) check_tile_arg("Bc", *req.Bc);
    auto fits = [&](std::int64_t Br, std::int64_t Bc) { return smem_bytes_needed(algo, p, Br, Bc, c) <= limit; };
    auto reject_user_tiles = [&](std::int64_t Br, std::int64_t Bc) {
        throw usage_error("--Br " + std::to_string(Br) + " --Bc " + std::to_string(Bc) + " need " +
                              bytes_text(smem_bytes_needed(algo, p, Br, Bc, c)) + " of shared memory per block for " +
                              algo_name(algo) + " (d=" + std::to_string(d) + ", " + dtype_name(p.dtype) + ")",
                          gpu.name + " allows at most " + bytes_text(limit) + " per block",
                          "choose smaller --Br/--Bc, or omit them to use the largest paper-default tiles that fit");
    };

    switch (algo) {
        case Algo::standard: {
            if (req.Br || req.Bc) c.reasons.push_back("--Br/--Bc do not apply to standard attention (GEMM tiles are fixed)");
            if (c.matmul == MatmulMode::naive) {
                c.gemm_m = c.gemm_n = c.pv_m = c.pv_n = 16;
                c.reasons.push_back("naive GEMMs: 16x16 outputs per block, each thread reads its own operands from global memory");
            } else if (c.matmul == MatmulMode::library && p.dtype == DType::fp32) {
                // cuBLAS's fp32 GEMMs (CUDA cores) have not been profiled: 64x64 output tiles, at the FP32
                // rate cuBLAS reaches (the GPU preset's effective FP32 throughput).
                c.reasons.push_back("library GEMMs in fp32 (cuBLAS SGEMM, not profiled): 64x64 output tiles at cuBLAS's "
                                    "measured FP32 rate");
            } else if (c.matmul == MatmulMode::library) {
                // cuBLAS on the H200 (ncu, cuda/results/2026-11-23-h200/profile_cublas_fp16_d*): 384-thread
                // blocks, k-step 64 fp16 elements (128 bytes), output tiles of 32768 elements: 256x128 for S,
                // 512x64 or 256x128 for O. Taken here as (32768/d) x d for O, at most 512 rows (so the
                // operand tiles of d = 32 still fit).
                c.gemm_m = 256;
                c.gemm_n = 128;
                c.gemm_k = 128 / e;
                c.pv_n = std::min<std::int64_t>(d, 128);
                c.pv_m = std::min<std::int64_t>(32768 / c.pv_n, 512);
                c.gemm_warps = 12;
                c.reasons.push_back("library GEMMs (cuBLAS-like): output tiles S 256x128, O " + std::to_string(c.pv_m) + "x" +
                                    std::to_string(c.pv_n) + ", k-step " + std::to_string(c.gemm_k) +
                                    " double-buffered, 12 warps per block");
            } else {
                c.reasons.push_back("tiled GEMMs: 64x64 output tile per block, k-step 32, operand tiles in shared memory");
            }
            c.softmax_chunk = p.Nk;
            if (p.Nk * e > limit) {
                c.softmax_chunk = 1;
                while (c.softmax_chunk * 2 * e <= limit) c.softmax_chunk *= 2;
                c.reasons.push_back("a row of S (" + bytes_text(p.Nk * e) + ") exceeds shared memory (" + bytes_text(limit) +
                                    "): softmax reads S twice in chunks of " + std::to_string(c.softmax_chunk));
            } else {
                c.reasons.push_back("softmax stages one row of S (" + bytes_text(p.Nk * e) + ") in shared memory");
            }
            c.Br = c.gemm_m;
            c.Bc = c.gemm_n;
            break;
        }
        case Algo::fa1: {
            c.M_elements = limit / e;
            const std::int64_t paper_bc = ceil_div(c.M_elements, 4 * d);
            std::int64_t Bc = paper_bc, Br = std::min(paper_bc, d);
            c.reasons.push_back("M = " + bytes_text(limit) + " shared memory per block / " + std::to_string(e) + " B = " +
                                std::to_string(c.M_elements) + " elements");
            c.reasons.push_back("Bc = ceil(M/4d) = " + std::to_string(paper_bc) + ", Br = min(ceil(M/4d), d) = " +
                                std::to_string(Br) + " (Algorithm 1, line 1)");
            if (req.Br || req.Bc) {
                Br = req.Br.value_or(Br);
                Bc = req.Bc.value_or(Bc);
                if (!fits(Br, Bc)) reject_user_tiles(Br, Bc);
                c.reasons.push_back("overridden by the user: Br = " + std::to_string(Br) + ", Bc = " + std::to_string(Bc));
            } else if (!fits(Br, Bc)) {
                const std::int64_t need = smem_bytes_needed(algo, p, Br, Bc, c);
                while (!fits(Br, Bc) && (Br > 1 || Bc > 1)) {  // shrink the larger, so neither collapses
                    if (Bc >= Br) --Bc;
                    else --Br;
                }
                c.reasons.push_back("those tiles plus the split-K exchange buffer need " + bytes_text(need) + " > " +
                                    bytes_text(limit) + ": lowered to Br = " + std::to_string(Br) + ", Bc = " +
                                    std::to_string(Bc) + ", the largest that fit");
            }
            c.Br = Br;
            c.Bc = Bc;
            break;
        }
        case Algo::fa2:
        case Algo::tiled: {
            std::int64_t Br = d <= 64 ? 128 : (d <= 128 ? 128 : 64);
            std::int64_t Bc = d <= 64 ? 128 : 64;
            c.reasons.push_back("flash-attention 2 forward defaults for d=" + std::to_string(d) + ": Br = " +
                                std::to_string(Br) + ", Bc = " + std::to_string(Bc));
            if (req.Br || req.Bc) {
                Br = req.Br.value_or(Br);
                Bc = req.Bc.value_or(Bc);
                if (!fits(Br, Bc)) reject_user_tiles(Br, Bc);
                c.reasons.push_back("overridden by the user: Br = " + std::to_string(Br) + ", Bc = " + std::to_string(Bc));
            } else if (!fits(Br, Bc)) {
                const std::int64_t need = smem_bytes_needed(algo, p, Br, Bc, c);
                while (!fits(Br, Bc) && (Bc > 16 || Br > 16)) {
                    if (Bc >= Br && Bc > 16) Bc /= 2;
                    else Br /= 2;
                }
                c.reasons.push_back(std::string(c.scores == Space::Shared ? "Q, K, V and S tiles" : "Q, K, V tiles") +
                                    " need " + bytes_text(need) + " > " + bytes_text(limit) +
                                    " of shared memory: halved to Br = " + std::to_string(Br) + ", Bc = " + std::to_string(Bc));
            }
            c.Br = Br;
            c.Bc = Bc;
            break;
        }
    }
    c.smem_bytes = smem_bytes_needed(algo, p, c.Br, c.Bc, c);
    if (c.smem_bytes > limit)
        throw usage_error(std::string(algo_name(algo)) + " with d=" + std::to_string(d) + " " + dtype_name(p.dtype) +
                              " needs " + bytes_text(c.smem_bytes) + " of shared memory per block even with the smallest tiles",
                          gpu.name + " allows " + bytes_text(limit),
                          "use a smaller --d or a 2-byte --dtype");
    if (req.q_splits != 0 && req.q_splits != 1) {
        const std::string qs = "--q-splits " + std::to_string(req.q_splits);
        // tiled and FA2 already give every Q tile its own block; standard has no Q-tile loop.
        if (algo != Algo::fa1)
            throw usage_error(qs + " does not apply to " + algo_name(algo),
                              "only fa1 splits its Q tiles over several blocks per batch*head",
                              "use --algo fa1, or drop --q-splits");
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
    if (req.registers_per_thread != 0) {
        if (req.registers_per_thread < 1 || req.registers_per_thread > gpu.max_registers_per_thread)
            throw usage_error("--registers " + std::to_string(req.registers_per_thread) + " is out of range for " + gpu.name,
                              "a thread has 1.." + std::to_string(gpu.max_registers_per_thread) + " registers",
                              "pass the count ptxas -v prints for the kernel (\"Used N registers\"), or omit --registers");
        c.registers_per_thread = req.registers_per_thread;
        c.reasons.push_back("registers per thread = " + std::to_string(c.registers_per_thread) +
                            " (given): occupancy uses the compiled kernel's count, not the estimate from the tiles");
    }
    return c;
}

void run_algorithm(Algo algo, Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    switch (algo) {
        case Algo::standard: return standard_attention(x, p, cfg);
        case Algo::tiled: return tiled_attention(x, p, cfg);
        case Algo::fa1: return flash_attention_1(x, p, cfg);
        case Algo::fa2: return flash_attention_2(x, p, cfg);
    }
}

}  // namespace fasim
