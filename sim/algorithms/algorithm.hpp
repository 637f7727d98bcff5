// The four forward algorithms, their tile sizes, and the entry point that runs
// one of them on any executor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_spec.hpp"
#include "problem/attention_problem.hpp"
#include "tile/tile_program.hpp"

namespace fasim {

enum class Algo { standard, tiled, fa1, fa2 };
inline constexpr Algo kAllAlgos[] = {Algo::standard, Algo::tiled, Algo::fa1, Algo::fa2};

const char* algo_name(Algo a);           // "standard", "tiled", "fa1", "fa2"
const char* algo_title(Algo a);          // "Standard attention (Algorithm 0)" ...
std::optional<Algo> parse_algo(const std::string& s);

// Standard attention's two matrix products: SRAM-tiled (default: 64x64 output tiles),
// naive (every thread reads its operands from global memory: what a first CUDA attempt
// does), or library (a vendor GEMM's large tiles: what cuBLAS runs on Hopper's tensor cores).
enum class MatmulMode { tiled, naive, library };
const char* matmul_name(MatmulMode m);  // "tiled", "naive", "library"

struct TileRequest {                 // what the user asked for (--Br/--Bc/--matmul/--q-splits)
    std::optional<std::int64_t> Br, Bc;
    MatmulMode matmul = MatmulMode::tiled;
    // Where tiled and FA2 keep the score tile S_ij (then P_ij): in registers, as tensor-core
    // kernels do (FA2's way), or in shared memory, as fa-sim's CUDA-core kernels do (fp32 S/P
    // of a 128x128 tile would need 128 registers per thread). simulate() sets it from ModelOptions.
    Space scores = Space::Registers;
    // FA1 only (--q-splits): blocks per batch·head, each taking every q_splits-th Q tile.
    // 0 or 1 = one block per batch·head, Algorithm 1 as written.
    std::int64_t q_splits = 0;
    // Registers per thread of the compiled kernel (--registers; ptxas -v or ncu report it); 0 = estimate
    // them from the register-resident tiles. Used for occupancy of the kernels that multiply matrices.
    int registers_per_thread = 0;
};

// Tile sizes a program runs with, and why they were chosen.
struct TileConfig {
    std::int64_t Br = 0, Bc = 0;         // Q-tile rows, K/V-tile rows
    std::int64_t M_elements = 0;         // FA1's SRAM size M, in elements
    MatmulMode matmul = MatmulMode::tiled;
    std::int64_t gemm_m = 64, gemm_n = 64, gemm_k = 32;  // standard's GEMM tiles: S = QK^T (naive: 16x16 outputs)
    std::int64_t pv_m = 64, pv_n = 64;  // ...and O = PV's output tile (the same, except for library GEMMs)
    int gemm_warps = 8;                 // threads / 32 of a GEMM block
    std::int64_t softmax_chunk = 0;      // standard's softmax: columns of S staged at once (Nk if a row fits)
    std::int64_t smem_bytes = 0;         // shared memory one block needs (formula)
    int warps = 4;
    Space scores = Space::Registers;     // tiled and FA2's S_ij/P_ij (TileRequest::scores)
    // FA1's blocks per batch·head (FlashAttention-1's num_splits): with few batch·heads one
    // block each leaves SMs idle, so Q tiles are dealt round-robin to q_splits blocks.
    std::int64_t q_splits = 1;
    int registers_per_thread = 0;        // TileRequest::registers_per_thread, checked against the GPU
    std::vector<std::string> reasons;    // how Br/Bc were chosen, for the report
};

// Paper defaults, or the user's --Br/--Bc; always checked against the GPU's
// shared memory (UsageError naming the sizes, the limit and a fix).
TileConfig choose_tiles(Algo algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req);

// Shared memory a block of `algo` holds at its peak with these tiles. The counting
// executor measures the same peak while running; a test checks they agree.
std::int64_t smem_bytes_needed(Algo algo, const AttentionProblem& p, std::int64_t Br, std::int64_t Bc,
                               const TileConfig& cfg);

// Runs the algorithm's tile program on an executor.
void run_algorithm(Algo algo, Executor& x, const AttentionProblem& p, const TileConfig& cfg);

// The programs themselves (one file each).
void standard_attention(Executor& x, const AttentionProblem& p, const TileConfig& cfg);
void tiled_attention(Executor& x, const AttentionProblem& p, const TileConfig& cfg);
void flash_attention_1(Executor& x, const AttentionProblem& p, const TileConfig& cfg);
void flash_attention_2(Executor& x, const AttentionProblem& p, const TileConfig& cfg);

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace fasim
