// An attention algorithm, as one self-describing unit, and the registry that lists them.
//
// Each algorithm is one file in this folder (standard_attention.cpp, flash_attention_2.cpp, ...)
// that defines its Algorithm: its id and title, its tile mapping (default and legal tiles, the
// shared memory they need), its tile program (written once, run by every executor), its
// closed-form traffic where the papers give one, and its work. The registry (registry.cpp)
// lists them in the order reports show them; the command line, the reports, sweeps, figures and
// lessons iterate it. Adding an algorithm: docs/adding-an-algorithm.md.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/count.hpp"
#include "gpu/gpu_spec.hpp"
#include "problem/attention_problem.hpp"
#include "tile/tile_program.hpp"

namespace fasim {

// Standard attention's two matrix products: SRAM-tiled (default: 64x64 output tiles),
// naive (every thread reads its operands from global memory: what a first CUDA attempt
// does), or library (a vendor GEMM's large tiles: what cuBLAS runs on Hopper's tensor cores).
enum class MatmulMode { tiled, naive, library };
const char* matmul_name(MatmulMode m);  // "tiled", "naive", "library"

// How FlashAttention-2's backward sums dQ over the K/V blocks: atomic adds of fp32 partials into a
// global buffer, then a conversion (what the official implementation does), or a kernel of its own
// that loops over the K/V tiles per Q tile, recomputing S, P and dP, with no atomics (--dq).
enum class DqMode : std::uint8_t { atomic, separate };
const char* dq_name(DqMode m);  // "atomic", "separate"

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
    // FlashDecoding only (--kv-splits): blocks the keys of each (batch, head) are split over; 0 = its
    // heuristic (fill the SMs).
    std::int64_t kv_splits = 0;
    // FA2's backward only (--dq): how dQ is summed over the K/V blocks.
    DqMode dq = DqMode::atomic;
    // Registers per thread of the compiled kernel (--registers; ptxas -v or ncu report it); 0 = estimate
    // them from the register-resident tiles. Used for occupancy of the kernels that multiply matrices.
    int registers_per_thread = 0;
    // Where Br/Bc come from when not from the user (a kernel's rule, a measured run's record): the report
    // says so. Empty: the user's --Br/--Bc.
    std::string tile_source{};
    std::string registers_source{};  // likewise for registers_per_thread; empty: --registers
    // Warps per block of the kernel being modelled (a run's record, or the kernel catalog's); 0: the
    // algorithm's own. Only FA2's backward has a choice (the official kernels run 8; fa-sim's 4 or 8).
    int warps = 0;
    // Shared memory per block the kernel being modelled launches with (a run's record, or its launcher's
    // rule); 0: the program's own count. Like registers_per_thread it sets the occupancy of the kernels
    // that multiply matrices: a kernel's buffers (fp32 accumulators, padding, double buffers) are not
    // all in the tile program.
    std::int64_t launched_smem_bytes = 0;
    std::string smem_source{};  // where launched_smem_bytes comes from
    // FA2 with the causal mask: each head's Q tiles launched last first, the heaviest first (the kernel
    // being modelled does so: the kernel catalog's causal_heaviest_first). false: in order, lightest first.
    bool heaviest_first = false;
    // The kernel being modelled copies whole tiles with one address per thread (the kernel catalog's
    // one_address_per_tile): fewer instructions per copy (kernels/issue_costs.hpp).
    bool one_address_per_tile = false;
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
    std::int64_t kv_splits = 1;          // FlashDecoding: blocks the keys of each row group are split over
    DqMode dq = DqMode::atomic;          // FA2's backward: TileRequest::dq
    int registers_per_thread = 0;        // TileRequest::registers_per_thread, checked against the GPU
    std::int64_t launched_smem_bytes = 0;  // TileRequest::launched_smem_bytes, checked against the GPU
    bool heaviest_first = false;         // TileRequest::heaviest_first
    bool one_address_per_tile = false;   // TileRequest::one_address_per_tile
    std::vector<std::string> reasons;    // how Br/Bc were chosen, for the report
};

// What the papers' formulas say an algorithm moves and computes, for given tiles (all heads). Counts
// (common/count.hpp), computed in 128 bits: at N = Nk = 2^24, B·H = 2^16, d = 256 they pass 2^64.
struct ClosedForm {
    struct Bytes {
        Count read = 0, write = 0;
        Count total() const { return read + write; }
    };
    // HBM bytes exactly as the tile program loads and stores them (the papers' sense).
    std::optional<Bytes> hbm;
    // The paper's own count, where it differs from the program's: Algorithm 0 counts each GEMM operand
    // once (what DRAM sees when L2 serves a tiled GEMM's re-reads).
    std::optional<Bytes> papers_hbm;
    // The leading-order term the figures draw beside the simulated traffic, and how they write it.
    std::optional<double> leading_hbm_bytes;
    std::string leading_text;
    // Matrix-product FLOPs (2 per multiply-add), exactly as the program performs them.
    std::optional<Count> matmul_flops;
};

// How the block-size figure sweeps an algorithm's tiles.
enum class TileSweep : std::uint8_t { none, bc_only, square };

// Which pass of training a program is: the forward (O from Q, K, V) or the backward (dQ, dK, dV
// from dO and what the forward kept).
enum class Pass : std::uint8_t { forward, backward };

struct Algorithm {
    std::string_view id{};     // what --algo takes: "fa2"
    std::string_view title{};  // one line: "FlashAttention-2 (Q outer loop, split-Q warps, O written once)"
    std::string_view name{};   // as prose names it: "FlashAttention-2"
    std::string_view label{};  // as figures write it: "FA2"
    // The algorithm --algo names (the forward's id), for a backward pass; empty: its own id.
    std::string_view family{};
    Pass pass = Pass::forward;

    // What the command line can change.
    bool tunable_tiles = false;  // --Br/--Bc choose its tiles
    bool q_splits = false;       // --q-splits (FlashAttention-1's num_splits)
    bool matmul_modes = false;   // --matmul (how its GEMMs are written)
    bool grouped_kv = false;     // --kv-heads: reads the K/V head of a group of query heads (GQA, MQA)
    bool kv_splits = false;      // --kv-splits (FlashDecoding's split of the keys over blocks)
    bool dq_modes = false;       // --dq (a backward that sums dQ atomically or in a kernel of its own)
    // Built for generation (few query rows against a long K/V cache): --algo all lists it only when
    // N < Nk, and the training figures (N = Nk) leave it out.
    bool decoding = false;
    bool baseline = false;       // the algorithm the others are compared with ("vs standard")
    TileSweep tile_sweep = TileSweep::none;  // the block-size figure sweeps its tiles
    bool timeline_figure = false;            // the figures draw its blocks on the SMs over time
    // A library's own implementation, modelled to check fa-sim against what it measures beside fa-sim's
    // kernels (PyTorch's math backend): --algo all and the training figures leave it out; --algo names it.
    bool library_model = false;
    // Its products take fp32 operands whatever the storage dtype (PyTorch's math backend copies 16-bit
    // inputs to fp32): they run on the CUDA cores at the FP32 rate, never on the tensor cores.
    bool fp32_products = false;

    // Tile mapping: the default tiles (with their reasons) or the requested ones, checked; throws
    // UsageError naming the tiles, the limit and a fix. q_splits and registers are checked by
    // choose_tiles() below for every algorithm.
    TileConfig (*choose_tiles)(const AttentionProblem&, const GpuSpec&, const TileRequest&) = nullptr;
    // Shared memory one block holds at its peak with these tiles. The counting executor measures the
    // same peak while running; a test checks they agree.
    std::int64_t (*smem_bytes)(const AttentionProblem&, std::int64_t Br, std::int64_t Bc, const TileConfig&) = nullptr;
    // The tile program.
    void (*program)(Executor&, const AttentionProblem&, const TileConfig&) = nullptr;
    // The papers' formulas (fields left empty where there is none).
    ClosedForm (*closed_form)(const AttentionProblem&, const TileConfig&) = nullptr;
    // Work: the inner-loop tile steps its simulation walks (what a sweep over N costs), and the most
    // a figure spends on one simulation of it.
    // (A Count: B·H·(N/Br)·(Nk/Bc) reaches 2^64 at B·H = 2^16, N = Nk = 2^24 with 1-row tiles.)
    Count (*tile_steps)(const AttentionProblem&, const TileConfig&) = nullptr;
    std::int64_t tile_step_budget = 0;  // 0: no limit
    // How many blocks its main kernel launches, for captions: " = B·H × ⌈N/Br⌉ = 16 × 32" (empty: nothing to say).
    std::string (*grid_text)(const AttentionProblem&, const TileConfig&) = nullptr;
};

// The registry, in the order reports list the algorithms (forward passes, then backward passes).
std::span<const Algorithm* const> algorithms();
// The registered algorithms of one pass, in registry order.
std::vector<const Algorithm*> algorithms(Pass pass);
// The forward passes --algo all compares: all but the libraries' (Algorithm::library_model).
std::vector<const Algorithm*> compared_algorithms(Pass pass);
// The forward passes compared on training shapes (N = Nk): all but the decoding ones and the libraries'.
std::vector<const Algorithm*> training_algorithms();
// The algorithm --algo names an entry by: its family, else its own id.
inline std::string_view family_of(const Algorithm& a) { return a.family.empty() ? a.id : a.family; }
// The backward pass of a forward algorithm; nullptr when it has none.
const Algorithm* backward_of(const Algorithm& forward);
const Algorithm* find_algorithm(std::string_view id);  // nullptr for an unknown id
const Algorithm& algorithm(std::string_view id);       // throws std::invalid_argument for an unknown id
// The forward algorithms' ids, what --algo takes: "standard, tiled, fa1 or fa2".
std::string algorithm_ids(std::string_view last_separator = " or ");

// The algorithm's tiles for this problem: its own mapping, then the checks every algorithm shares
// (shared memory, --q-splits, --registers). Throws UsageError.
TileConfig choose_tiles(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req);

// Runs the algorithm's tile program on an executor.
inline void run_algorithm(const Algorithm& algo, Executor& x, const AttentionProblem& p, const TileConfig& cfg) {
    algo.program(x, p, cfg);
}

// Helpers for the algorithms' tile mappings.
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
// The report's line for tiles that were given, not chosen: "overridden by the user: Br = 64, Bc = 64".
std::string tiles_given_text(const TileRequest& req, std::int64_t Br, std::int64_t Bc);
// --Br/--Bc in range (UsageError otherwise).
void check_tile_arg(const char* flag, std::int64_t v);
// UsageError: the user's tiles need more shared memory than the GPU has.
[[noreturn]] void reject_user_tiles(std::string_view algo_id, const AttentionProblem& p, const GpuSpec& gpu, std::int64_t Br,
                                    std::int64_t Bc, std::int64_t needed_bytes);

}  // namespace fasim
