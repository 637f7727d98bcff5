// Tiled attention in two passes, on the CUDA cores: fp32 FMAs, no tensor cores.
//
// What it adds over standard attention (standard_*.cu): S and P never go to global memory. Each block
// keeps one Q tile on chip and streams K (and V) tiles past it, but without the online-softmax trick:
//   pass 1, over the K tiles:        S = Q_i K_j^T; running row max m and row sum l
//                                    (l rescaled by exp(m_old - m_new) when the max grows; O not touched)
//   pass 2, over the K and V tiles:  S = Q_i K_j^T again; P = exp(S - m) / l (final m, l; rounded to the
//                                    storage dtype); O += P V
//   O (already normalised) and LSE = m + log l are written once.
// So K is read twice and S computed twice; fa2.cu removes the second pass by rescaling O instead.
//   grid  = (ceil(N/Br), B*H): blockIdx.x = Q tile, blockIdx.y = batch*head.
//   block = 128 threads = 4 warps, split-Q (warp w owns rows [w*Br/4, (w+1)*Br/4)), as in fa2.
//   tiles = FA2's Br x Bc (fa2_tiles). Causal: K/V tiles entirely above the diagonal are skipped in
//   both passes, tiles crossing it are masked element-wise.
//
// Where things live: as in fa2.cu (smem_layouts.hpp, FlashSmemLayout); pass 1 loads only K tiles.
//   registers      O micro-tile (8 rows x d/8 columns per lane)
//   shared memory  Q, K, V tiles (storage dtype), S/P tile (fp32), row max m, row sum l, 1/l (fp32)
//
// Run:  build/cuda/cuda-check --algo tiled
#include <cmath>

#include "common/dispatch.hpp"
#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/launchers.hpp"
#include "kernels/smem_layouts.hpp"

namespace fasim::cuda_detail {

namespace {

struct TiledParams {
    const void* Q;
    const void* K;
    const void* V;
    void* O;
    float* lse;
    int N, Nk, Br, Bc;
    int causal;
    float scale_log2;
};

template <typename T, int D>
__global__ void __launch_bounds__(kFlashThreads, 1) tiled_two_pass_kernel(TiledParams p) {
    constexpr int TM = 8;
    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int bh = static_cast<int>(blockIdx.y);
    const int q0 = static_cast<int>(blockIdx.x) * p.Br;
    const int q_rows = imin(p.Br, p.N - q0);
    const int WR = p.Br / kFlashWarps;
    const int wr0 = warp * WR;
    const int w_rows = imax(0, imin(WR, q_rows - wr0));

    const FlashSmemLayout L = flash_smem_layout(p.Br, p.Bc, D, static_cast<int>(sizeof(T)));
    unsigned char* smem = dynamic_smem();
    T* Qs = reinterpret_cast<T*>(smem + L.q);
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    float* Ss = reinterpret_cast<float*>(smem + L.s) + wr0 * L.lds;
    float* m_row = reinterpret_cast<float*>(smem + L.m) + wr0;
    float* l_row = reinterpret_cast<float*>(smem + L.l) + wr0;
    float* inv_l = reinterpret_cast<float*>(smem + L.a) + wr0;

    const T* Qg = static_cast<const T*>(p.Q) + static_cast<long long>(bh) * p.N * D;
    const T* Kg = static_cast<const T*>(p.K) + static_cast<long long>(bh) * p.Nk * D;
    const T* Vg = static_cast<const T*>(p.V) + static_cast<long long>(bh) * p.Nk * D;
    T* Og = static_cast<T*>(p.O) + (static_cast<long long>(bh) * p.N + q0 + wr0) * D;

    for (int r = lane; r < WR; r += 32) {
        m_row[r] = -INFINITY;
        l_row[r] = 0.f;
    }
    load_tile<T, D>(Qs, L.ldq, Qg, q0, p.Br, q_rows);

    const int diag = p.Nk - p.N;
    const int n_tiles = visible_kv_tiles(q0, q_rows, p.N, p.Nk, p.Bc, p.causal != 0);
    ScoreMask mask;
    mask.q0 = q0 + wr0;
    mask.diag = diag;
    mask.causal = p.causal != 0;

    // ---- pass 1: row max and row sum ----------------------------------------------------------
    for (int j = 0; j < n_tiles; ++j) {
        const int k0 = j * p.Bc;
        const int kv_valid = imin(p.Bc, p.Nk - k0);
        const int ncols = round_up(kv_valid, 4);
        __syncthreads();
        load_tile<T, D>(Ks, L.ldk, Kg, k0, ncols, kv_valid);
        __syncthreads();
        if (w_rows == 0) continue;
        mask.k0 = k0;
        mask.kv_valid = kv_valid;
        mask.active = kv_valid < ncols || (p.causal != 0 && k0 + ncols - 1 > q0 + diag);
        compute_scores<T, D, TM>(Qs + wr0 * L.ldq, L.ldq, WR, Ks, L.ldk, ncols, 0, ncols, Ss, L.lds, p.scale_log2,
                                 mask);
        __syncwarp();
        for (int r = lane; r < WR; r += 32) {
            const float* srow = Ss + r * L.lds;
            const float m_old = m_row[r];
            float mx = m_old;
            for (int c = 0; c < ncols; c += 4) mx = fmaxf(mx, max4(*reinterpret_cast<const float4*>(srow + c)));
            const float m_use = mx == -INFINITY ? 0.f : mx;
            float sum = 0.f;
            for (int c = 0; c < ncols; c += 4) {
                const float4 s = *reinterpret_cast<const float4*>(srow + c);
                sum += (exp2f(s.x - m_use) + exp2f(s.y - m_use)) + (exp2f(s.z - m_use) + exp2f(s.w - m_use));
            }
            l_row[r] = l_row[r] * exp2f(m_old - m_use) + sum;
            m_row[r] = mx;
        }
        // the next writes to Ss come after the __syncthreads at the top of the loop
    }
    for (int r = lane; r < WR; r += 32) inv_l[r] = l_row[r] > 0.f ? 1.f / l_row[r] : 0.f;

    float o[TM][D / 8];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int c = 0; c < D / 8; ++c) o[i][c] = 0.f;
    }

    // ---- pass 2: P = exp(S - m) / l, O += P V --------------------------------------------------
    for (int j = 0; j < n_tiles; ++j) {
        const int k0 = j * p.Bc;
        const int kv_valid = imin(p.Bc, p.Nk - k0);
        const int ncols = round_up(kv_valid, 4);
        __syncthreads();
        load_tile<T, D>(Ks, L.ldk, Kg, k0, ncols, kv_valid);
        load_tile<T, D>(Vs, L.ldv, Vg, k0, ncols, kv_valid);
        __syncthreads();
        if (w_rows == 0) continue;
        mask.k0 = k0;
        mask.kv_valid = kv_valid;
        mask.active = kv_valid < ncols || (p.causal != 0 && k0 + ncols - 1 > q0 + diag);
        compute_scores<T, D, TM>(Qs + wr0 * L.ldq, L.ldq, WR, Ks, L.ldk, ncols, 0, ncols, Ss, L.lds, p.scale_log2,
                                 mask);
        __syncwarp();
        for (int r = lane; r < WR; r += 32) {
            float* srow = Ss + r * L.lds;
            const float m_use = m_row[r] == -INFINITY ? 0.f : m_row[r];
            const float il = inv_l[r];
            for (int c = 0; c < ncols; c += 4) {
                const float4 s = *reinterpret_cast<const float4*>(srow + c);
                *reinterpret_cast<float4*>(srow + c) = make_float4(
                    round_through<T>(exp2f(s.x - m_use) * il), round_through<T>(exp2f(s.y - m_use) * il),
                    round_through<T>(exp2f(s.z - m_use) * il), round_through<T>(exp2f(s.w - m_use) * il));
            }
        }
        __syncwarp();
        pv_accumulate<T, D, TM>(o, Ss, L.lds, WR, Vs, L.ldv, 0, ncols);
    }

    // ---- epilogue: O (normalised already) and LSE ---------------------------------------------
    for (int r = lane; r < w_rows; r += 32) {
        const float l = l_row[r];
        p.lse[static_cast<long long>(bh) * p.N + q0 + wr0 + r] = l > 0.f ? (m_row[r] + log2f(l)) * kLn2 : -INFINITY;
    }
    store_o_rows<T, D, TM>(o, Og, w_rows, nullptr);
}

}  // namespace

CudaKernelLaunch launch_tiled_two_pass(const FlashArgs& a, cudaStream_t stream) {
    if (a.Br <= 0 || a.Br > 128 || a.Br % 16 != 0 || a.Bc < 4 || a.Bc % 4 != 0) {
        throw std::invalid_argument("tiled: tile " + std::to_string(a.Br) + "x" + std::to_string(a.Bc) +
                                    " unsupported: Br must be a multiple of 16 in 16..128 and Bc a multiple of 4");
    }
    if (a.O == nullptr || a.lse == nullptr || a.Q == nullptr || a.K == nullptr || a.V == nullptr) {
        throw std::invalid_argument("tiled: Q, K, V, O and LSE buffers are required");
    }
    CudaKernelLaunch info;
    info.name = "tiled_two_pass";
    info.block_threads = kFlashThreads;
    info.Br = a.Br;
    info.Bc = a.Bc;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, a.Br)), static_cast<unsigned>(a.BH), 1);
    info.grid = {grid.x, grid.y, grid.z};
    TiledParams p{a.Q, a.K, a.V, a.O, a.lse, a.N, a.Nk, a.Br, a.Bc, a.causal ? 1 : 0,
                  static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_head_dim(a.d, [&](auto dc) {
            constexpr int D = decltype(dc)::value;
            info.dynamic_smem_bytes = flash_smem_layout(a.Br, a.Bc, D, static_cast<int>(sizeof(T))).total;
            info.registers_per_thread = launch_kernel("tiled_two_pass", tiled_two_pass_kernel<T, D>, grid,
                                                      dim3(kFlashThreads), info.dynamic_smem_bytes, stream, p);
        });
    });
    return info;
}

namespace {
// The launch table's entry for "tiled" (kernels/launchers.hpp): FA2's tiles (fa2_tiles, kernels/tile_rules.hpp).
CudaLaunchInfo run_tiled(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, "tiled");
    set_lse(f, p, t, "tiled");
    const TileChoice tiles = fa2_tiles(p.d, p.dtype, device_smem_per_block());
    f.Br = tiles.Br;
    f.Bc = tiles.Bc;
    return {{launch_tiled_two_pass(f, stream)}};
}
FASIM_REGISTER_KERNEL("tiled", run_tiled, fa2_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
