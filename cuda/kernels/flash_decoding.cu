// FlashDecoding (Dao, Haziza, Massa and Sizov 2023: flash-attention's split-KV kernels) on the tensor
// cores: fp16/bf16 products with mma.sync.m16n8k16, fp32 accumulation. sm_80+ (K/V through TMA on sm_90+);
// storage fp16 or bf16, d 64 or 128; grouped-query attention (KV K/V heads for H query heads).
//
// What it changes over fa2_tensor_core.cu, and why:
//   - Split the keys. Generation has one query row per head, so fa2_tc launches B*H blocks, one per
//     (batch, head): 32 at batch 1 with 32 heads, on an H100's 132 SMs. Most SMs idle, and the few busy
//     ones cannot pull the memory bandwidth that reading the K/V cache needs. Here split s of a (row head,
//     Q tile) walks only K/V tiles [s*P, (s+1)*P), P = ceil(Tc/S), as a block of its own; S is
//     flash-attention's heuristic for 2 blocks per SM (kernels/tile_rules.hpp, what the simulator uses).
//   - Combine by the log-sum-exp. Each split writes its normalised partial output O_s and LSE_s in fp32;
//     the combine kernel computes LSE = log sum_s exp(LSE_s), O = sum_s exp(LSE_s - LSE) O_s, which is exact
//     (exp(LSE_s - LSE) is the share of the row's softmax mass that split's keys hold). With one split the
//     split kernel writes O and LSE itself and there is no combine.
//   - Grouped K/V heads. Query head h of batch b reads K/V head b*KV + h/(H/KV). With one query row and
//     KV < H, a group's H/KV query heads are the rows of one Q tile (flash-attention's
//     seqlenq_ngroups_swapped; the same memory as Q [B*H][1][d]), so each K/V tile is read once per group
//     and split, not once per query head.
//   - Stream K and V. One query row does 4d FLOPs per key against 4d bytes of K and V: decoding is bound
//     by reading the cache once. K and V tiles are double-buffered with cp.async (16-byte copies,
//     consecutive threads on consecutive chunks, L2 only): tile j + 1 is in flight while tile j is used, so
//     a block has up to two 32 KiB tiles in flight. Each copy asks L2 for its whole 128-byte line
//     (.L2::128B, as CuTe's SM80_CP_ASYNC_CACHEGLOBAL does): +1.9..3.3% K/V bandwidth on an H200 where the
//     kernel already streamed at 4 TB/s or more, nothing more from 256 bytes
//     (cuda/results/2026-11-29-h200-decode-prefetch).
//     The tiles are half of flash-attention's (64 keys at d = 128, 128 at d = 64) so that Q + 2 x (K + V),
//     85 KiB, lets two blocks share an SM, as the split heuristic assumes. A third stage (three tiles in
//     flight, Q kept in the third until its fragments are in registers: 102 KiB, still two blocks per SM)
//     streamed 0.2-4.5% slower where this kernel reads at 4 TB/s or more, and no shape faster
//     (cuda/results/2026-11-29-h200-decode-stages): not kept. But when the whole split grid fits one
//     block per SM (batch-1 MQA: 114-128 blocks), the second block per SM never comes, and four stages
//     (153 KiB, three tiles in flight) made MQA at batch 1 3% faster at 64k and 128k keys, every other
//     shape within 1.5% (cuda/results/2026-11-30-h200-tile-copies-b; tile_rules::flash_decoding_stages).
//     Whole tiles are copied from one address per thread (TileAddresses::one_per_tile): 23% fewer
//     instructions per tile in the split kernel, 0-2% faster (cuda/results/2026-11-30-h200-tile-copies).
//   - On Hopper, let the copy engine stream. From sm_90 one thread asks TMA for each K and V tile (boxes of
//     64 columns x Bc keys through a tensor map, written 128-byte-swizzled, so the ldmatrix addresses
//     follow the swizzle: warp_tile_products.cuh's swizzled_chunk) and a stage's mbarrier counts the bytes
//     in. On an H200 K/V streamed 2.5-11% faster than with per-thread cp.async on 21 of 24 decode shapes,
//     up to 4.70 TB/s, above the copy rate of the same call (4.22-4.23 TB/s) and cuDNN's best (4.67 TB/s);
//     the split kernel was slower than PyTorch's fastest backend on 9 of the 24 shapes before, on none
//     after. Batch-1 MQA (the deep pipeline) streamed 1.6-4.7% slower with it and keeps its per-thread
//     copies. One bulk copy per key row (256 bytes, padded rows kept) was 1.1-35% slower everywhere: the
//     engine's cost is per request (cuda/results/2026-11-30-h200-decode-copies).
//
//   split kernel
//     grid  = (S * Tr, row heads): blockIdx.x = split * Tr + Q tile, blockIdx.y = row head (B*H, or B*KV
//             when a group's query heads are packed as rows; Tr = ceil(rows / 64)).
//     block = 128 threads = 4 warps, split-Q as in fa2_tc: warp w owns rows [16w, 16w + 16) of the Q tile
//             (one m16 row block) when the row head has more than 32 rows. With fewer (a decoding step:
//             one query row, or a packed group of up to 32 query heads) only one or two bands hold rows, so
//             the warps split into G = 4 or 2 key groups (tile_rules::flash_decoding_key_groups): warp w
//             owns band w % (4 / G) and keys [(w / (4 / G)) Bc / G, ...) of every tile, and at the end groups
//             1.. hand their m, l and O to group 0 through shared memory, merged as two splits are. Before
//             (warps without rows only copying): batch-1 MQA at 128k keys had two computing warps, each
//             issuing an instruction every 5.1-5.4 cycles, about 1.2 us per tile (ncu,
//             cuda/results/2026-11-29-h200-decode-mqa). With the key groups and the combine's early loads,
//             MQA at batch 1 is 8-14% faster, every other decode shape within 1.2%, timed in one call
//             (cuda/results/2026-11-29-h200-decode-ab).
//     tiles = Br = 64 query rows, Bc = 128 (d = 64) or 64 (d = 128) keys, fixed.
//     Per K/V tile, per warp: S = Q K^T in registers, masked only on tiles crossing the causal diagonal
//     or the end of K, online softmax (fa2_tc's, exp2 with the scale folded in), O += round(P) V.
//     Writes O / l and LSE (one split), or O_s / l_s and LSE_s in fp32 (several); a split that sees no key
//     of a row writes O = 0, LSE = -inf there.
//   combine kernel (several splits only)
//     grid  = (rows, row heads): a block of 4 warps per row. LSE over the splits by block reductions
//             while each warp's first 16 partial rows are in flight, then warp w adds the weighted O_s of
//             splits w, w + 4, ..., each lane d/32 columns (coalesced rows of d floats), and warp 0 adds
//             the four sums. On sm_90+ it is launched as a programmatic dependent
//             launch, so its launch overlaps the split kernel's tail.
//
// Run:  build/cuda/cuda-check --algo flash_decoding
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/hopper_primitives.cuh"
#include "kernels/launchers.hpp"
#include "kernels/mma_fragments.cuh"
#include "kernels/smem_layouts.hpp"
#include "kernels/tensor_maps.hpp"
#include "kernels/tile_rules.hpp"
#include "kernels/warp_tile_products.cuh"

namespace fasim::cuda_detail {

namespace {

constexpr const char* kName = "flash_decoding";
constexpr int kBr = tile_rules::kFlashDecodingBr;   // query rows per block: 4 warps x 16
static_assert(kBr == 16 * kFlashWarps && tile_rules::kFlashDecodingWarps == kFlashWarps, "one m16 row block per warp");

struct SplitParams {
    const void* Q;
    const void* K;
    const void* V;
    void* O;          // one split: the outputs, O in the storage dtype ...
    float* lse;       // ... and LSE
    float* o_part;    // several splits: O_s [row_heads * S][rows][d] ...
    float* lse_part;  // ... and LSE_s [row_heads * S][rows], fp32
    int rows, Nk;     // query rows per row head, keys
    // K/V head of row head r: (r / row_heads_per_batch) * kv_heads_per_batch + (r % row_heads_per_batch) / row_heads_per_kv_head
    int row_heads_per_batch, row_heads_per_kv_head, kv_heads_per_batch;
    int q_tiles, splits, tiles_per_split;
    int causal;
    float scale_log2;  // scale * log2(e): exp(scale s - m) = exp2(scale_log2 s - m2)
};

// How the split kernel brings K/V tiles into shared memory. per_thread: every thread copies 16-byte chunks
// with cp.async (sm_80+) into padded rows, waited for per thread and made visible by a block barrier.
// tensor_tiles (sm_90+): one thread asks the copy engine (TMA) for each tile's boxes of 64 columns, written
// 128-byte-swizzled (kernels/tensor_maps.hpp); a stage's mbarrier counts the bytes in.
enum class KvCopies { per_thread, tensor_tiles };

// G: key groups (tile_rules::flash_decoding_key_groups): warp w owns the 16-row band w % (4 / G) of the Q
// tile and keys [(w / (4 / G)) * Bc / G, ... + Bc / G) of every K/V tile. STAGES: K/V tile buffers
// (tile_rules::flash_decoding_stages), tiles j + 1 .. j + STAGES - 1 in flight while tile j is used.
// The kernel's body (flash_decoding_split_kernel below picks which architectures build it).
template <typename T, int D, int G, int STAGES, KvCopies COPIES>
__device__ __forceinline__ void split_kernel_body(const SplitParams& p, const CUtensorMap* tk, const CUtensorMap* tv) {
    constexpr int BC = tile_rules::flash_decoding_bc(D);
    constexpr int LD = D + tile_rules::kFlashDecodingPad;  // shared-memory row stride, elements (padded)
    constexpr int BANDS = kFlashWarps / G;  // 16-row bands per key group
    constexpr int BCW = BC / G;      // keys of each tile per warp
    static_assert(kFlashWarps % G == 0 && BCW % 16 == 0, "whole warps per key group, whole k-steps per slice");
    static_assert(STAGES >= 2 && (STAGES & (STAGES - 1)) == 0, "a power of two: the stage of tile j is (j - first) % STAGES");
    constexpr int KS_D = D / 16;     // k-steps of S = Q K^T (over the head dim)
    constexpr int NT_S = BCW / 8;    // n-tiles of S (8 keys each)
    constexpr int KS_KV = BCW / 16;  // k-steps of O = P V (over the keys)
    constexpr int NT_O = D / 8;      // n-tiles of O (8 columns each)

    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int g = lane >> 2;  // this lane's fragment rows are g and g + 8
    const int t = lane & 3;   // its fragment columns are 2t and 2t + 1 of each 8
    const int row_head = static_cast<int>(blockIdx.y);
    const int split = static_cast<int>(blockIdx.x) / p.q_tiles;
    const int q0 = (static_cast<int>(blockIdx.x) - split * p.q_tiles) * kBr;
    const int q_rows = imin(kBr, p.rows - q0);
    const int band = warp % BANDS;
    const int key_group = warp / BANDS;
    const int wk0 = key_group * BCW;        // the warp's first key within each tile
    const int wq0 = q0 + 16 * band;         // the warp's first row
    const bool warp_active = wq0 < p.rows;  // uniform per warp
    const int kv_head = (row_head / p.row_heads_per_batch) * p.kv_heads_per_batch +
                        (row_head % p.row_heads_per_batch) / p.row_heads_per_kv_head;

    constexpr bool kTensor = COPIES == KvCopies::tensor_tiles;
    // Elements of a K or V tile in shared memory: padded rows, or swizzled boxes (1 KB-aligned, no padding).
    constexpr int kTileElems = kTensor ? BC * D : BC * LD;
    T* Qs = reinterpret_cast<T*>(dynamic_smem());
    // Stage b: its K tile at stages + 2b * kTileElems, its V tile right after.
    T* stages = Qs + kBr * LD;
    if constexpr (kTensor) stages = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(stages) + 1023) & ~std::uintptr_t{1023});
    const T* Qg = static_cast<const T*>(p.Q) + static_cast<long long>(row_head) * p.rows * D;
    const T* Kg = static_cast<const T*>(p.K) + static_cast<long long>(kv_head) * p.Nk * D;
    const T* Vg = static_cast<const T*>(p.V) + static_cast<long long>(kv_head) * p.Nk * D;

    const int diag = p.Nk - p.rows;  // key k visible to row q iff k <= q + diag (bottom-right causal)
    const int first = split * p.tiles_per_split;
    const int last = imin(visible_kv_tiles(q0, q_rows, p.rows, p.Nk, BC, p.causal != 0), first + p.tiles_per_split);

    // K_j and V_j into one stage, keys past Nk zero-filled (they are masked).
    // .L2::128B: each 16-byte copy also asks L2 for its whole 128-byte line (see the top of the file).
    // One address per whole tile (kernels/mma_fragments.cuh, TileAddresses).
    constexpr int kPrefetch = 128;
    constexpr TileAddresses kOnePerTile = TileAddresses::one_per_tile;
    // tensor_tiles: stage b's copies signal kv_full[b]; its n-th filling completes phase n (parity n & 1).
    __shared__ alignas(8) std::uint64_t kv_full[kTensor ? STAGES : 1];
    auto load_kv = [&](int j, int stage) {
        const int k0 = j * BC;
        const int valid = imin(BC, p.Nk - k0);
        T* Kt = stages + 2 * stage * kTileElems;
        if constexpr (kTensor) {
            // Boxes of 64 columns x BC keys; keys past Nk arrive as zeros and count as bytes all the same.
            if (tid == 0) {
                constexpr int kSlabs = D / kTensorMapBoxCols;
                hopper::mbarrier_arrive_expect_tx(&kv_full[stage], 2u * BC * D * sizeof(T));
#pragma unroll
                for (int s = 0; s < kSlabs; ++s) {
                    hopper::tma_load_3d(Kt + s * BC * kTensorMapBoxCols, tk, &kv_full[stage], s * kTensorMapBoxCols, k0, kv_head);
                    hopper::tma_load_3d(Kt + kTileElems + s * BC * kTensorMapBoxCols, tv, &kv_full[stage], s * kTensorMapBoxCols, k0,
                                        kv_head);
                }
            }
        } else {
            load_tile_async<T, D, BC, LD, kFlashThreads, kPrefetch, kOnePerTile>(Kt, Kg, k0, valid);
            load_tile_async<T, D, BC, LD, kFlashThreads, kPrefetch, kOnePerTile>(Kt + BC * LD, Vg, k0, valid);
        }
    };

    float o[NT_O][4];  // O accumulator: o[nt] = C fragment of rows g, g+8, columns 8nt + 2t, 8nt + 2t + 1
#pragma unroll
    for (int nt = 0; nt < NT_O; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) o[nt][i] = 0.f;
    }
    float m[2] = {-INFINITY, -INFINITY};  // running max of rows g and g + 8, log2 units
    float l[2] = {0.f, 0.f};              // running sum over this lane's columns (the quad adds them at the end)
    unsigned qf[KS_D][4];                 // Q's A fragments, from the first tile on

    // One K/V tile for this warp: S = Q K_j^T, mask (only where `masked`, a type, so that the unmasked
    // copy carries no masking instructions), online softmax, O += round(P) V_j.
    auto step = [&](const T* Kt, const T* Vt, int k0, auto masked) {
        float s[NT_S][4];
#pragma unroll
        for (int nt = 0; nt < NT_S; ++nt) {
#pragma unroll
            for (int i = 0; i < 4; ++i) s[nt][i] = 0.f;
        }
        if constexpr (kTensor) {
            qk_scores<T>(s, qf, [&](int np, int ks) {
                return swizzled_chunk<BC>(Kt, wk0 + (lane & 7) + 8 * (lane >> 4) + 16 * np, ((lane >> 3) & 1) + 2 * ks);
            });
        } else {
            qk_scores<T>(s, qf, Kt + (wk0 + (lane & 7) + 8 * (lane >> 4)) * LD + 8 * ((lane >> 3) & 1), LD);
        }
        if constexpr (decltype(masked)::value) {  // s[nt][i] is row g + 8*(i >> 1), key k0 + 8nt + 2t + (i & 1)
#pragma unroll
            for (int nt = 0; nt < NT_S; ++nt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int q = wq0 + g + 8 * (i >> 1);
                    const int k = k0 + wk0 + 8 * nt + 2 * t + (i & 1);
                    if (k >= p.Nk || (p.causal != 0 && k > q + diag)) s[nt][i] = -INFINITY;
                }
            }
        }
        // The online softmax (warp_tile_products.cuh): s becomes P, m, l and o rescaled.
        online_softmax_step(s, m, l, o, p.scale_log2);
        unsigned pf[KS_KV][4];
        p_fragments<T>(pf, s);
        if constexpr (kTensor) {
            pv_accumulate<T>(o, pf, [&](int ks, int dp) {
                return swizzled_chunk<BC>(Vt, wk0 + (lane & 7) + 8 * ((lane >> 3) & 1) + 16 * ks, (lane >> 4) + 2 * dp);
            });
        } else {
            pv_accumulate<T>(o, pf, Vt + (wk0 + (lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4), LD);
        }
    };

    // cp.async groups in issue order: Q with K/V tile `first`, tiles first + 1 .. first + STAGES - 2 one
    // group each, then one group per iteration j holding tile j + STAGES - 1 (empty groups past the last
    // tile, so that wait<STAGES - 1> always means "tile j has landed"). With tensor tiles only Q goes by
    // cp.async, and a stage's barrier says when its tiles have landed.
    if constexpr (kTensor) {
        if (tid == 0) {
#pragma unroll
            for (int b = 0; b < STAGES; ++b) hopper::mbarrier_init(&kv_full[b], 1);  // tid 0's expect_tx
            hopper::mbarrier_init_fence();
        }
        __syncthreads();
    }
    if (first < last) {
        load_tile_async<T, D, kBr, LD, kFlashThreads, 0, kOnePerTile>(Qs, Qg, q0, q_rows);
        load_kv(first, 0);
        cp_async_commit();
#pragma unroll
        for (int s = 1; s < STAGES - 1; ++s) {
            if (first + s < last) load_kv(first + s, s);
            cp_async_commit();
        }
    }
    for (int j = first; j < last; ++j) {
        const int stage = (j - first) & (STAGES - 1);
        const int ahead = j + STAGES - 1;
        // Into the stage of tile j - 1, which the barrier ending iteration j - 1 freed.
        if (ahead < last) load_kv(ahead, (ahead - first) & (STAGES - 1));
        cp_async_commit();
        if constexpr (kTensor) {
            if (j == first) cp_async_wait<0>();  // Q
            hopper::mbarrier_wait(&kv_full[stage], static_cast<unsigned>((j - first) / STAGES) & 1u);
        } else {
            cp_async_wait<STAGES - 1>();  // this thread's copies of tile j (and Q) have landed ...
        }
        __syncthreads();  // ... and every other thread's
        if (j == first && warp_active) {
            // A fragments of the warp's 16 rows (as fa2_tc: matrix i of the x4 is quarter (rows + 8(i & 1),
            // columns + 8(i >> 1)) of each 16 x 16 block).
            const T* qrow = Qs + (16 * band + (lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);
#pragma unroll
            for (int ks = 0; ks < KS_D; ++ks) ldmatrix_x4(qf[ks], qrow + 16 * ks);
        }
        const int k0 = j * BC;
        const T* Kt = stages + 2 * stage * kTileElems;
        // Warp-uniform: only a slice crossing the causal diagonal or the end of K runs the masked copy.
        const int sk0 = k0 + wk0;
        const bool need_mask = sk0 + BCW > p.Nk || (p.causal != 0 && sk0 + BCW - 1 > wq0 + diag);
        if (warp_active) {
            if (need_mask) step(Kt, Kt + kTileElems, k0, std::true_type{});
            else step(Kt, Kt + kTileElems, k0, std::false_type{});
        }
        __syncthreads();  // every warp is done with this stage before iteration j + 1 refills it
    }
    cp_async_wait<0>();  // only an empty group can be left, but say so
#if __CUDA_ARCH__ >= 900
    // The combine kernel may be launched now (programmatic dependent launch): it waits for this grid to
    // finish before it reads, so only its launch overlaps the partial results' stores.
    asm volatile("griddepcontrol.launch_dependents;");
#endif

    if constexpr (G > 1) {
        // Merge the key groups: groups 1.. leave m, their lanes' partial l and O in shared memory (the
        // stages are free: the loop's last barrier), group 0 rescales both to the larger max and adds.
        // Lane-major (value v of lane at [v * 32 + lane]): conflict-free, and group 0's lane reads what the
        // same lane of the same band wrote, the fragment layouts being the same.
        constexpr int kValues = 4 * NT_O + 4;  // o, then m[2], l[2]
        static_assert((G - 1) * BANDS * kValues * 32 * sizeof(float) <= 2 * STAGES * BC * LD * sizeof(T),
                      "the merge fits in the stages");
        float* merge = reinterpret_cast<float*>(stages);
        if (key_group > 0 && warp_active) {
            float* mine = merge + ((key_group - 1) * BANDS + band) * kValues * 32 + lane;
#pragma unroll
            for (int nt = 0; nt < NT_O; ++nt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) mine[(4 * nt + i) * 32] = o[nt][i];
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                mine[(4 * NT_O + h) * 32] = m[h];
                mine[(4 * NT_O + 2 + h) * 32] = l[h];
            }
        }
        __syncthreads();
        if (key_group > 0 || !warp_active) return;
#pragma unroll
        for (int other = 1; other < G; ++other) {
            const float* theirs = merge + ((other - 1) * BANDS + band) * kValues * 32 + lane;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float m_other = theirs[(4 * NT_O + h) * 32];
                const float m_new = fmaxf(m[h], m_other);
                const float m_use = m_new == -INFINITY ? 0.f : m_new;  // neither saw a key: both weigh 0
                const float a = fast_exp2(m[h] - m_use), b = fast_exp2(m_other - m_use);
                l[h] = l[h] * a + theirs[(4 * NT_O + 2 + h) * 32] * b;
                m[h] = m_new;
#pragma unroll
                for (int nt = 0; nt < NT_O; ++nt) {
                    o[nt][2 * h] = o[nt][2 * h] * a + theirs[(4 * nt + 2 * h) * 32] * b;
                    o[nt][2 * h + 1] = o[nt][2 * h + 1] * a + theirs[(4 * nt + 2 * h + 1) * 32] * b;
                }
            }
        }
    }
    if (!warp_active) return;
    const long long out_head = static_cast<long long>(row_head) * p.splits + split;  // O_s, LSE_s row head
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float lsum = l[h];
        lsum += __shfl_xor_sync(kFullMask, lsum, 1);
        lsum += __shfl_xor_sync(kFullMask, lsum, 2);
        const float inv = lsum > 0.f ? 1.f / lsum : 0.f;  // no key seen: O = 0, LSE = -inf
        const float lse = lsum > 0.f ? (m[h] + log2f(lsum)) * kLn2 : -INFINITY;
        const int q = wq0 + g + 8 * h;
        if (q >= p.rows) continue;
        if (p.splits == 1) {
            T* orow = static_cast<T*>(p.O) + (static_cast<long long>(row_head) * p.rows + q) * D + 2 * t;
#pragma unroll
            for (int nt = 0; nt < NT_O; ++nt)
                *reinterpret_cast<unsigned*>(orow + 8 * nt) = pack2<T>(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
            if (t == 0) p.lse[static_cast<long long>(row_head) * p.rows + q] = lse;
        } else {
            float* orow = p.o_part + (out_head * p.rows + q) * D + 2 * t;
#pragma unroll
            for (int nt = 0; nt < NT_O; ++nt)
                *reinterpret_cast<float2*>(orow + 8 * nt) = make_float2(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
            if (t == 0) p.lse_part[out_head * p.rows + q] = lse;
        }
    }
}

// tk, tv: K's and V's tensor maps (tensor_tiles only).
template <typename T, int D, int G, int STAGES, KvCopies COPIES>
__global__ void __launch_bounds__(kFlashThreads, STAGES == tile_rules::kFlashDecodingStages ? 2 : 1)
    flash_decoding_split_kernel(SplitParams p, const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    // Built for sm_75 too (the project's oldest target) but never launched there: the host refuses
    // devices below 8.0.
    (void)p;
    (void)tk;
    (void)tv;
    __trap();
#else
    if constexpr (COPIES == KvCopies::tensor_tiles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
        (void)p;
        __trap();  // the host asks for the copy engine on 9.0+ only
#else
        split_kernel_body<T, D, G, STAGES, COPIES>(p, &tk, &tv);
#endif
    } else {
        split_kernel_body<T, D, G, STAGES, COPIES>(p, &tk, &tv);
    }
#endif
}

struct CombineParams {
    const float* o_part;
    const float* lse_part;
    void* O;
    float* lse;
    int rows, splits;
};

// LSE = log sum_s exp(LSE_s), O = sum_s exp(LSE_s - LSE) O_s, one block per row; a row no split saw a
// key of (every LSE_s = -inf) gets O = 0, LSE = -inf. The block's 4 warps take every 4th split (each lane
// d/32 adjacent columns of the partial row, kInFlight rows in flight per warp) and add their sums in
// shared memory. The partial rows are in L2, so the kernel is a chain of L2 round trips: the first
// batch of O_s is loaded before the LSE reductions (it does not depend on them) and every thread reads
// its LSE_s once, so 128 splits cost two round trips, where loading the LSEs twice and then O_s 8 rows at
// a time cost six (7.1-7.3 us for MQA's 32 rows x 114-128 splits on an H200, ncu,
// cuda/results/2026-11-29-h200-decode-mqa). A block per 64 rows, each warp walking all the splits of its
// rows, was slower still: 0.12 ms for 32 rows x 128 splits on an H100.
template <typename T, int D>
__global__ void __launch_bounds__(kFlashThreads) flash_decoding_combine_kernel(CombineParams p) {
    constexpr int kCols = D / 32;  // columns per lane: 2 (d = 64) or 4 (d = 128), adjacent
    static_assert(kCols == 2 || kCols == 4, "d = 64 or 128");
    constexpr int kInFlight = 16;           // partial rows each warp loads before it adds them
    constexpr int kLsePerThread = 2;        // LSE_s held per thread: up to 256 splits in one pass
    __shared__ float warp_max[kFlashWarps], warp_sum[kFlashWarps];
    __shared__ float warp_acc[kFlashWarps - 1][D];  // warps 1..3's sums; warp 0 adds them
    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const long long row = static_cast<long long>(blockIdx.y) * p.rows + blockIdx.x;  // over row_heads * rows
    // Split s of this row: LSE_s at lse_part[first + s * rows], O_s at o_part[(first + s * rows) * D].
    const long long first = static_cast<long long>(blockIdx.y) * p.splits * p.rows + blockIdx.x;
    auto lse_of = [&](int s) { return p.lse_part[first + static_cast<long long>(s) * p.rows]; };
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");  // the split kernel has finished and its stores are visible
#endif

    // Rows s0 + u * 4 (u < kInFlight) of this warp: weight 0 past the last split.
    float lse_s[kInFlight], o_s[kInFlight][kCols];
    auto load_batch = [&](int s0) {
#pragma unroll
        for (int u = 0; u < kInFlight; ++u) {
            const int s = s0 + u * kFlashWarps;
            lse_s[u] = -INFINITY;
#pragma unroll
            for (int c = 0; c < kCols; ++c) o_s[u][c] = 0.f;
            if (s >= p.splits) continue;
            const long long part = first + static_cast<long long>(s) * p.rows;
            lse_s[u] = p.lse_part[part];
            const float* src = p.o_part + part * D + kCols * lane;
            if constexpr (kCols == 4) {
                const float4 v = *reinterpret_cast<const float4*>(src);
                o_s[u][0] = v.x;
                o_s[u][1] = v.y;
                o_s[u][2] = v.z;
                o_s[u][3] = v.w;
            } else {
                const float2 v = *reinterpret_cast<const float2*>(src);
                o_s[u][0] = v.x;
                o_s[u][1] = v.y;
            }
        }
    };
    load_batch(warp);  // in flight while the block reduces the LSEs

    float held[kLsePerThread];
#pragma unroll
    for (int i = 0; i < kLsePerThread; ++i) {
        const int s = tid + i * kFlashThreads;
        held[i] = s < p.splits ? lse_of(s) : -INFINITY;
    }
    float mx = -INFINITY;
    for (int s = tid + kLsePerThread * kFlashThreads; s < p.splits; s += kFlashThreads) mx = fmaxf(mx, lse_of(s));
#pragma unroll
    for (int i = 0; i < kLsePerThread; ++i) mx = fmaxf(mx, held[i]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, off));
    if (lane == 0) warp_max[warp] = mx;
    __syncthreads();
    mx = fmaxf(fmaxf(warp_max[0], warp_max[1]), fmaxf(warp_max[2], warp_max[3]));
    float sum = 0.f;
    if (mx != -INFINITY) {
#pragma unroll
        for (int i = 0; i < kLsePerThread; ++i) sum += expf(held[i] - mx);  // exp(-inf) = 0 past the last split
        for (int s = tid + kLsePerThread * kFlashThreads; s < p.splits; s += kFlashThreads) sum += expf(lse_of(s) - mx);
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(kFullMask, sum, off);
    if (lane == 0) warp_sum[warp] = sum;
    __syncthreads();
    const float lse = mx == -INFINITY ? -INFINITY : mx + logf(warp_sum[0] + warp_sum[1] + warp_sum[2] + warp_sum[3]);

    float acc[kCols] = {};
    if (lse != -INFINITY) {
        for (int s0 = warp;;) {
#pragma unroll
            for (int u = 0; u < kInFlight; ++u) {
                const float w = expf(lse_s[u] - lse);
#pragma unroll
                for (int c = 0; c < kCols; ++c) acc[c] = fmaf(w, o_s[u][c], acc[c]);
            }
            s0 += kInFlight * kFlashWarps;
            if (s0 >= p.splits) break;
            load_batch(s0);
        }
    }
    if (warp > 0) {
#pragma unroll
        for (int c = 0; c < kCols; ++c) warp_acc[warp - 1][kCols * lane + c] = acc[c];
    }
    __syncthreads();
    if (warp > 0) return;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[c] += warp_acc[0][kCols * lane + c] + warp_acc[1][kCols * lane + c] + warp_acc[2][kCols * lane + c];
    T* dst = static_cast<T*>(p.O) + row * D + kCols * lane;
#pragma unroll
    for (int c = 0; c < kCols; c += 2) *reinterpret_cast<unsigned*>(dst + c) = pack2<T>(acc[c], acc[c + 1]);
    if (lane == 0) p.lse[row] = lse;
}

template <typename T, int D, int STAGES, KvCopies C>
auto split_kernel_with(int key_groups) {
    return key_groups == 4   ? flash_decoding_split_kernel<T, D, 4, STAGES, C>
           : key_groups == 2 ? flash_decoding_split_kernel<T, D, 2, STAGES, C>
                             : flash_decoding_split_kernel<T, D, 1, STAGES, C>;
}
template <typename T, int D, KvCopies C>
auto split_kernel_for(int stages, int key_groups) {
    constexpr int kTwo = tile_rules::kFlashDecodingStages, kDeep = tile_rules::kFlashDecodingDeepStages;
    if constexpr (C == KvCopies::tensor_tiles) return split_kernel_with<T, D, kTwo, C>(key_groups);  // kv_copies_for
    else return stages == kDeep ? split_kernel_with<T, D, kDeep, C>(key_groups) : split_kernel_with<T, D, kTwo, C>(key_groups);
}

// The copy engine on sm_90+ (TMA exists there), except for the deep pipeline: its launches (a split grid of
// one block per SM: batch-1 MQA) streamed 1.6-4.7% slower with it, where every other decode shape streamed
// 2.5-11% faster (cuda/results/2026-11-30-h200-decode-copies).
KvCopies kv_copies_for(const FlashDecodingLayout& L) {
    return device_compute_capability() >= 90 && L.stages == tile_rules::kFlashDecodingStages ? KvCopies::tensor_tiles
                                                                                                : KvCopies::per_thread;
}

template <typename T, int D>
void launch_split_and_combine(const FlashDecodingLayout& L, const SplitParams& sp, const CombineParams& cp,
                              CudaLaunchInfo& info, cudaStream_t stream) {
    const int key_groups = tile_rules::flash_decoding_key_groups(L.rows);
    const KvCopies copies = kv_copies_for(L);
    auto split_kernel = copies == KvCopies::tensor_tiles ? split_kernel_for<T, D, KvCopies::tensor_tiles>(L.stages, key_groups)
                                                         : split_kernel_for<T, D, KvCopies::per_thread>(L.stages, key_groups);
    CUtensorMap tk{}, tv{};
    if (copies == KvCopies::tensor_tiles) {
        const DType dtype = std::is_same_v<T, __half> ? DType::fp16 : DType::bf16;
        const int kv_heads = L.row_heads / L.row_heads_per_batch * sp.kv_heads_per_batch;  // B * KV
        tk = tensor_map_16bit(kName, sp.K, kv_heads, sp.Nk, D, L.Bc, dtype);
        tv = tensor_map_16bit(kName, sp.V, kv_heads, sp.Nk, D, L.Bc, dtype);
    }
    CudaKernelLaunch split;
    split.name = "flash_decoding_split";
    split.grid = {static_cast<unsigned>(L.splits * L.q_tiles), static_cast<unsigned>(L.row_heads), 1u};
    split.block_threads = kFlashThreads;
    split.dynamic_smem_bytes = tile_rules::flash_decoding_smem_bytes(D, static_cast<int>(sizeof(T)), L.stages);
    split.Br = L.Br;
    split.Bc = L.Bc;
    split.kv_splits = L.splits;
    split.registers_per_thread =
        launch_kernel(split.name.c_str(), split_kernel, dim3(split.grid[0], split.grid[1]),
                      dim3(kFlashThreads), split.dynamic_smem_bytes, stream, sp, tk, tv);
    split.one_address_per_tile = true;  // the Q tile, and K/V where they go per thread
    split.kv_copy_engine = copies == KvCopies::tensor_tiles;
    info.kernels.push_back(split);
    if (L.splits == 1) return;
    CudaKernelLaunch combine;
    combine.name = "flash_decoding_combine";
    combine.grid = {static_cast<unsigned>(L.rows), static_cast<unsigned>(L.row_heads), 1u};
    combine.block_threads = kFlashThreads;
    combine.Br = 1;
    // Programmatic dependent launch on sm_90+: the combine's launch overlaps the split kernel's last stores
    // (a few microseconds, against decode steps of tens).
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(combine.grid[0], combine.grid[1]);
    config.blockDim = dim3(kFlashThreads);
    config.stream = stream;
    cudaLaunchAttribute overlap{};
    overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    overlap.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &overlap;
    config.numAttrs = device_compute_capability() >= 90 ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&config, flash_decoding_combine_kernel<T, D>, cp));
    CUDA_CHECK_LAUNCH("flash_decoding_combine", stream);
    combine.registers_per_thread = kernel_registers(reinterpret_cast<const void*>(flash_decoding_combine_kernel<T, D>));
    info.kernels.push_back(combine);
}

template <typename T>
void launch_dtype(const CudaProblem& p, const FlashDecodingLayout& L, const SplitParams& sp, const CombineParams& cp,
                  CudaLaunchInfo& info, cudaStream_t stream) {
    switch (p.d) {  // only d = 64 and 128 are instantiated
        case 64: launch_split_and_combine<T, 64>(L, sp, cp, info, stream); return;
        case 128: launch_split_and_combine<T, 128>(L, sp, cp, info, stream); return;
        default: break;
    }
    throw std::invalid_argument(cuda_kernel_unsupported(cuda_kernel(kName), p));
}

// The launch table's entry for "flash_decoding" (kernels/launchers.hpp): fixed tiles, checked against the
// device's shared memory.
TileChoice flash_decoding_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const std::size_t need = tile_rules::flash_decoding_smem_bytes(d, static_cast<int>(dtype_bytes(dtype)));
    if (need > smem_per_block)
        throw std::invalid_argument(std::string(kName) + ": its " + std::to_string(need) + " B of shared memory at d = " +
                                    std::to_string(d) + " do not fit the device's " + std::to_string(smem_per_block) +
                                    " B per block");
    return {kBr, tile_rules::flash_decoding_bc(d), need};
}

CudaLaunchInfo run_flash_decoding(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, kName);  // Q, O [B*H][N][d], K, V [B*KV][Nk][d]
    set_lse(f, p, t, kName);
    const int cc = device_compute_capability();
    if (cc < 80)
        throw std::runtime_error(std::string(kName) + " needs compute capability 8.0+ (mma.m16n8k16 bf16); this GPU is " +
                                 std::to_string(cc / 10) + "." + std::to_string(cc % 10) + "; use --algo fa2");
    (void)flash_decoding_tiles(p.d, p.dtype, device_smem_per_block());
    FlashDecodingLayout L = flash_decoding_layout(p, device_sm_count());
    // The deep pipeline only where its shared memory fits: 153 KB at d <= 128 fit the A100's 163 KB and Hopper's
    // 227 KB per block, not the L4's 99 KB.
    if (tile_rules::flash_decoding_smem_bytes(p.d, static_cast<int>(dtype_bytes(p.dtype)), L.stages) > device_smem_per_block())
        L.stages = tile_rules::kFlashDecodingStages;
    SplitParams sp{};
    sp.Q = f.Q;
    sp.K = f.K;
    sp.V = f.V;
    sp.O = f.O;
    sp.lse = f.lse;
    if (L.splits > 1) {
        const std::size_t partial_rows = static_cast<std::size_t>(L.row_heads) * static_cast<std::size_t>(L.splits) *
                                         static_cast<std::size_t>(L.rows);
        check_buffer(t.O_partial, partial_rows * static_cast<std::size_t>(p.d) * sizeof(float), "O_partial", kName);
        check_buffer(t.LSE_partial, partial_rows * sizeof(float), "LSE_partial", kName);
        sp.o_part = t.O_partial.as<float>();
        sp.lse_part = t.LSE_partial.as<float>();
    }
    sp.rows = L.rows;
    sp.Nk = p.Nk;
    sp.row_heads_per_batch = L.row_heads_per_batch;
    sp.row_heads_per_kv_head = L.row_heads_per_kv_head;
    sp.kv_heads_per_batch = p.kv_heads();
    sp.q_tiles = L.q_tiles;
    sp.splits = L.splits;
    sp.tiles_per_split = L.tiles_per_split;
    sp.causal = p.causal && !L.packed ? 1 : 0;  // a packed row is the one query row, which sees every key
    sp.scale_log2 = static_cast<float>(static_cast<double>(f.scale) * 1.4426950408889634);
    const CombineParams cp{sp.o_part, sp.lse_part, sp.O, sp.lse, L.rows, L.splits};
    CudaLaunchInfo info;
    if (p.dtype == DType::fp16) launch_dtype<__half>(p, L, sp, cp, info, stream);
    else launch_dtype<__nv_bfloat16>(p, L, sp, cp, info, stream);
    return info;
}

FASIM_REGISTER_KERNEL("flash_decoding", run_flash_decoding, flash_decoding_tiles);

}  // namespace

FlashDecodingLayout flash_decoding_layout(const CudaProblem& p, int sm_count) {
    FlashDecodingLayout L;
    L.packed = p.N == 1 && p.grouped();
    L.row_heads_per_batch = L.packed ? p.kv_heads() : p.H;
    L.row_heads_per_kv_head = L.packed ? 1 : p.group_size();
    L.row_heads = p.B * L.row_heads_per_batch;
    L.rows = L.packed ? p.group_size() : p.N;
    L.Br = kBr;
    L.Bc = tile_rules::flash_decoding_bc(p.d);
    L.q_tiles = ceil_div(L.rows, L.Br);
    L.kv_tiles = ceil_div(p.Nk, L.Bc);
    if (p.kv_splits < 0 || p.kv_splits > L.kv_tiles)
        throw std::invalid_argument("kv_splits = " + std::to_string(p.kv_splits) + " is out of range for Nk = " +
                                    std::to_string(p.Nk) + ": a split needs at least one K/V tile of " +
                                    std::to_string(L.Bc) + " keys, so 1.." + std::to_string(L.kv_tiles) +
                                    ". Fix: pass kv_splits between 1 and " + std::to_string(L.kv_tiles) +
                                    ", or 0 for the heuristic");
    const std::int64_t asked =
        p.kv_splits > 0 ? p.kv_splits
                        : tile_rules::flash_decoding_splits(static_cast<std::int64_t>(L.row_heads) * L.q_tiles, 2LL * sm_count,
                                                            L.kv_tiles);
    L.splits = static_cast<int>(tile_rules::flash_decoding_nonempty_splits(L.kv_tiles, asked));
    L.tiles_per_split = ceil_div(L.kv_tiles, L.splits);
    L.stages = tile_rules::flash_decoding_stages(static_cast<std::int64_t>(L.splits) * L.q_tiles * L.row_heads, sm_count);
    if (static_cast<long long>(L.splits) * L.q_tiles > std::numeric_limits<int>::max())
        throw std::invalid_argument("kv_splits = " + std::to_string(L.splits) + " with " + std::to_string(L.q_tiles) +
                                    " Q tiles is too many blocks: at most 2^31 - 1 per row head. Fix: pass fewer kv_splits");
    return L;
}

}  // namespace fasim::cuda_detail
