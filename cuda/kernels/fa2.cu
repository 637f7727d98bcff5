// FlashAttention-2 forward (Dao 2023, Algorithm 1), on the CUDA cores: fp32 FMAs, no tensor cores.
//
// What it adds over fa1.cu: the loops are swapped and the sequence is split across blocks.
//   grid  = (ceil(N/Br), B*H): blockIdx.x = Q tile (fastest), blockIdx.y = batch*head.
//   block = 128 threads = 4 warps, "split-Q": warp w owns rows [w*Br/4, (w+1)*Br/4) of the Q tile and
//           never exchanges anything with the other warps (only the K/V tile loads are shared).
//   per block: Q_i loaded once; for each K/V tile j (causal: tiles entirely above the diagonal skipped,
//           only tiles crossing it masked element-wise): load K_j, V_j; S = Q_i K_j^T; m_new = max(m, rowmax S);
//           P = exp(S - m_new) (rounded to the storage dtype); l = exp(m - m_new) l + rowsum P;
//           O = exp(m - m_new) O + P V  (O unnormalised, in registers). At the end O / l and
//           LSE = m + log l are written once.
// Tiles (host, fa2_tiles): d <= 64: 128x128, d <= 128: 128x64, halved while they do not fit.
//
// Where things live:
//   registers      O micro-tile (8 rows x d/8 columns per lane), operand fragments
//   shared memory  Q tile, K tile, V tile (storage dtype), S/P tile (fp32, each warp its rows),
//                  row max m, row sum l, rescale factor (fp32); layout in smem_layouts.hpp
//   global         Q, K, V read through L2 only (ld.global.cg, 16 bytes per thread); O, LSE written once
//
// Run:  build/cuda/cuda-check --algo fa2
#include <cmath>

#include "common/dispatch.hpp"
#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/launchers.hpp"
#include "kernels/smem_layouts.hpp"

namespace fasim::cuda_detail {

namespace {

struct Fa2Params {
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
__global__ void __launch_bounds__(kFlashThreads) fa2_forward_kernel(Fa2Params p) {
    constexpr int TM = 8;  // rows per lane: a warp covers up to 32 rows (Br <= 128)
    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int bh = static_cast<int>(blockIdx.y);
    const int q0 = static_cast<int>(blockIdx.x) * p.Br;
    const int q_rows = imin(p.Br, p.N - q0);
    const int WR = p.Br / kFlashWarps;  // rows per warp
    const int wr0 = warp * WR;          // warp's first row in the tile
    const int w_rows = imax(0, imin(WR, q_rows - wr0));  // rows of this warp inside the sequence

    const FlashSmemLayout L = flash_smem_layout(p.Br, p.Bc, D, static_cast<int>(sizeof(T)));
    unsigned char* smem = dynamic_smem();
    T* Qs = reinterpret_cast<T*>(smem + L.q);
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    float* Ss = reinterpret_cast<float*>(smem + L.s) + wr0 * L.lds;  // this warp's rows
    float* m_row = reinterpret_cast<float*>(smem + L.m) + wr0;
    float* l_row = reinterpret_cast<float*>(smem + L.l) + wr0;
    float* a_row = reinterpret_cast<float*>(smem + L.a) + wr0;

    const T* Qg = static_cast<const T*>(p.Q) + static_cast<long long>(bh) * p.N * D;
    const T* Kg = static_cast<const T*>(p.K) + static_cast<long long>(bh) * p.Nk * D;
    const T* Vg = static_cast<const T*>(p.V) + static_cast<long long>(bh) * p.Nk * D;
    T* Og = static_cast<T*>(p.O) + (static_cast<long long>(bh) * p.N + q0 + wr0) * D;

    for (int r = lane; r < WR; r += 32) {
        m_row[r] = -INFINITY;
        l_row[r] = 0.f;
    }
    load_tile<T, D>(Qs, L.ldq, Qg, q0, p.Br, q_rows);

    float o[TM][D / 8];
#pragma unroll
    for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int c = 0; c < D / 8; ++c) o[i][c] = 0.f;
    }

    const int diag = p.Nk - p.N;
    const int n_tiles = visible_kv_tiles(q0, q_rows, p.N, p.Nk, p.Bc, p.causal != 0);
    for (int j = 0; j < n_tiles; ++j) {
        const int k0 = j * p.Bc;
        const int kv_valid = imin(p.Bc, p.Nk - k0);
        const int ncols = round_up(kv_valid, 4);
        __syncthreads();  // every warp is done with the previous K_j, V_j (and Q is loaded)
        load_tile<T, D>(Ks, L.ldk, Kg, k0, ncols, kv_valid);
        load_tile<T, D>(Vs, L.ldv, Vg, k0, ncols, kv_valid);
        __syncthreads();
        if (w_rows == 0) continue;  // warp entirely past the end of the sequence (uniform per warp)

        ScoreMask mask;
        mask.q0 = q0 + wr0;
        mask.k0 = k0;
        mask.kv_valid = kv_valid;
        mask.diag = diag;
        mask.causal = p.causal != 0;
        mask.active = kv_valid < ncols || (p.causal != 0 && k0 + ncols - 1 > q0 + diag);
        compute_scores<T, D, TM>(Qs + wr0 * L.ldq, L.ldq, WR, Ks, L.ldk, ncols, 0, ncols, Ss, L.lds, p.scale_log2,
                                 mask);
        __syncwarp();

        // Online softmax, one lane per row.
        for (int r = lane; r < WR; r += 32) {
            float* srow = Ss + r * L.lds;
            const float m_old = m_row[r];
            float mx = m_old;
            for (int c = 0; c < ncols; c += 4) mx = fmaxf(mx, max4(*reinterpret_cast<const float4*>(srow + c)));
            const float m_use = mx == -INFINITY ? 0.f : mx;  // a row with nothing visible yet: P = 0, no NaN
            const float alpha = exp2f(m_old - m_use);        // exp(m_old - m_new); 0 when m_old = -inf
            float sum = 0.f;
            for (int c = 0; c < ncols; c += 4) {
                const float4 s = *reinterpret_cast<const float4*>(srow + c);
                const float4 pr = make_float4(exp2f(s.x - m_use), exp2f(s.y - m_use), exp2f(s.z - m_use),
                                              exp2f(s.w - m_use));
                sum += (pr.x + pr.y) + (pr.z + pr.w);
                *reinterpret_cast<float4*>(srow + c) = make_float4(round_through<T>(pr.x), round_through<T>(pr.y),
                                                                   round_through<T>(pr.z), round_through<T>(pr.w));
            }
            l_row[r] = l_row[r] * alpha + sum;
            m_row[r] = mx;
            a_row[r] = alpha;
        }
        __syncwarp();

        // O = diag(alpha) O + P V
        const int lr = lane >> 3;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const float a = a_row[imin(lr + 4 * i, WR - 1)];
#pragma unroll
            for (int c = 0; c < D / 8; ++c) o[i][c] *= a;
        }
        pv_accumulate<T, D, TM>(o, Ss, L.lds, WR, Vs, L.ldv, 0, ncols);
    }

    // Epilogue: O / l and LSE, written once.
    __syncwarp();
    for (int r = lane; r < WR; r += 32) {
        const float l = l_row[r];
        a_row[r] = l > 0.f ? 1.f / l : 0.f;  // a row that saw no key: O = 0
        if (r < w_rows) {
            p.lse[static_cast<long long>(bh) * p.N + q0 + wr0 + r] =
                l > 0.f ? (m_row[r] + log2f(l)) * kLn2 : -INFINITY;
        }
    }
    __syncwarp();
    store_o_rows<T, D, TM>(o, Og, w_rows, a_row);
}

}  // namespace

CudaKernelLaunch launch_fa2(const FlashArgs& a, cudaStream_t stream) {
    if (a.Br <= 0 || a.Br > 128 || a.Br % 16 != 0 || a.Bc < 4 || a.Bc % 4 != 0) {
        throw std::invalid_argument("fa2: tile " + std::to_string(a.Br) + "x" + std::to_string(a.Bc) +
                                    " unsupported: Br must be a multiple of 16 in 16..128 and Bc a multiple of 4");
    }
    if (a.O == nullptr || a.lse == nullptr || a.Q == nullptr || a.K == nullptr || a.V == nullptr) {
        throw std::invalid_argument("fa2: Q, K, V, O and LSE buffers are required");
    }
    CudaKernelLaunch info;
    info.name = "fa2_forward";
    info.block_threads = kFlashThreads;
    info.Br = a.Br;
    info.Bc = a.Bc;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, a.Br)), static_cast<unsigned>(a.BH), 1);
    info.grid = {grid.x, grid.y, grid.z};
    Fa2Params p{a.Q, a.K, a.V, a.O, a.lse, a.N, a.Nk, a.Br, a.Bc, a.causal ? 1 : 0,
                static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_head_dim(a.d, [&](auto dc) {
            constexpr int D = decltype(dc)::value;
            info.dynamic_smem_bytes = flash_smem_layout(a.Br, a.Bc, D, static_cast<int>(sizeof(T))).total;
            info.registers_per_thread = launch_kernel("fa2_forward", fa2_forward_kernel<T, D>, grid, dim3(kFlashThreads),
                                                      info.dynamic_smem_bytes, stream, p);
        });
    });
    return info;
}

namespace {
// The launch table's entry for "fa2" (kernels/launchers.hpp): tiles by fa2_tiles (kernels/tile_rules.hpp).
CudaLaunchInfo run_fa2(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, "fa2");
    set_lse(f, p, t, "fa2");
    const TileChoice tiles = fa2_tiles(p.d, p.dtype, device_smem_per_block());
    f.Br = tiles.Br;
    f.Bc = tiles.Bc;
    return {{launch_fa2(f, stream)}};
}
FASIM_REGISTER_KERNEL("fa2", run_fa2, fa2_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
