// NTT over Fr: the pass kernels of a multi-pass radix-2^k transform and the bit-reversal
// permutation. Rust launch wrappers: crates/ntt/src/gpu/device.rs (one per kernel, same names).
//
// Algorithm. A transform of n = 2^L points is the radix-2 decimation-in-frequency (DIF) network,
// natural order in, bit-reversed order out, cut into passes of k consecutive stages. Writing an
// index as (hi: s0 bits | t: k bits | lo: l bits) with s0 the stages before the pass and
// l = L - s0 - k, a pass does, for every (hi, lo), a size-2^k DIF transform over t with the
// 2^k-th roots of unity, then multiplies the element at t by the twiddle w^(lo * bitrev_k(t)),
// w = omega^(2^s0) (the four-step decomposition, applied recursively). The decimation-in-time
// (DIT) network, bit-reversed in and natural out, is the transpose: the same passes in reverse
// order, each multiplying by its twiddle first and then running the transposed butterflies
// (a, b) -> (a + w·b, a - w·b) from the lowest stage up. The inverse uses omega^-1. Coset and
// n^-1 scalings are fused into the first pass's loads and the last pass's stores.
//
// Inside a pass, a block holds 2^m groups (hi, lo) of 2^k elements, 2^(k+m) elements in all, in
// shared memory. Each thread keeps R = 2^RLOG elements in registers and runs RLOG stages on them
// per round (a radix-R butterfly); rounds exchange elements through shared memory. The first
// round reads global memory directly and the last writes it directly, so a pass moves every
// element through DRAM once each way and through shared memory 2·(rounds - 1) times.
//
// Twiddles come from one table of 2^18 powers of the 2^18-th root of unity (8 MiB, L2-resident):
// the inner butterfly at stage c for position t uses index (t mod 2^c) << (17 - c), whatever the
// transform size. Inter-pass twiddles of order up to 2^18 are one lookup. The first pass of a
// transform larger than 2^18 needs twiddles of order 2^L: with NTT_FULL_TWIDDLE it reads them from
// a table of the 2^(L-1) powers omega^j, j < 2^(L-1) (omega^(j + 2^(L-1)) = -omega^j), which
// ntt_twiddle_table makes on the device; without it, it multiplies a coarse lookup by a "fine" one
// (a 2^(L-18)-entry table), one more multiplication per element.
//
// Launch shape: grid (2^(L-k-m), vectors), block 2^(k+m-RLOG) threads, dynamic shared memory
// 2^(k+m)·32 bytes (none when the pass has a single round). Memory traffic per pass: each element
// read and written once (32 bytes each way), plus twiddle reads that hit L1/L2.
#include "field/fr.cuh"
#include "field/fr_io.cuh"

// A kernel's dynamic shared memory, 16-byte aligned (the host emulator defines its own).
#ifndef CUZK_DYNAMIC_SHARED
#define CUZK_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif

// Pass parameters, mirrored in Rust by `NttPassParams` (crates/ntt/src/gpu/plan.rs) with a size check.
struct NttPassParams {
    uint64_t vector_stride;  // elements between consecutive vectors of a batch
    uint32_t log_n;          // L
    uint32_t s0;             // stages before this pass
    uint32_t k;              // stages in this pass
    uint32_t m;              // log2 of groups per block
    uint32_t flags;          // NTT_* below
    uint32_t scale_shift;    // scale factor of natural index j: a[j & scale_mask] * b[j >> scale_shift]
    uint32_t scale_mask;
    uint32_t pad;
};
static_assert(sizeof(NttPassParams) == 40, "mirrored in Rust");

#define NTT_G_FAST 1u          // consecutive threads take consecutive groups (lo varies fastest)
#define NTT_PRE_SCALE 2u       // multiply each loaded element by its scale factor
#define NTT_POST_SCALE 4u      // multiply each stored element by its scale factor
#define NTT_SCALE_BITREV 8u    // the natural index of the element at position p is bitrev(p)
#define NTT_TWIDDLE 16u        // inter-pass twiddle (every pass but the one with l = 0)
#define NTT_FULL_TWIDDLE 32u   // `fine` is the table of 2^(L-1) powers (transforms above 2^18)

namespace ntt {

using fr_io::load;
using fr_io::load_ro;
using fr_io::store;

FR_D uint32_t bitrev(uint32_t x, uint32_t bits) { return bits == 0 ? 0 : __brev(x) >> (32 - bits); }

// omega_{2^order}^e for e < 2^order, from the coarse table (2^18 powers of omega_{2^18}) and, for
// order > 18, from `fine`: with `full`, the table of the 2^(order-1) powers of omega_{2^order}
// (the upper half of the exponents as negations, omega_{2^order}^(2^(order-1)) being -1), else
// the table of 2^(order-18) powers of omega_{2^order}, multiplied by a coarse lookup.
FR_D fr_t twiddle(const uint4* coarse, const uint4* fine, uint32_t order, uint32_t e, bool full) {
    if (order <= 18) return load_ro(coarse, e << (18 - order));
    if (full) {
        const uint32_t half = order - 1;
        const fr_t w = load_ro(fine, e & ((1u << half) - 1));
        const fr_t neg = fr_neg(w);
        return (e >> half) & 1 ? neg : w;
    }
    uint32_t fine_bits = order - 18;
    fr_t hi = load_ro(coarse, e >> fine_bits);
    // fine[0] is one: multiplying unconditionally keeps the code straight-line.
    return fr_mul(hi, load_ro(fine, e & ((1u << fine_bits) - 1)));
}

FR_D fr_t scale_factor(const uint4* a, const uint4* b, const NttPassParams& p, uint32_t j) {
    fr_t f = load_ro(a, j & p.scale_mask);
    if (b != nullptr) f = fr_mul(f, load_ro(b, j >> p.scale_shift));
    return f;
}

// x times the inter-pass twiddle omega_{2^order}^e, and x times the scale factor of natural index
// j. Out of line: each runs once per element and pass, outside the butterflies, and one copy of
// its multiplications instead of one per register element keeps the kernel's hot code smaller
// (the inlined form put the pass kernels at about 140 KB of code, and the first pass, whose
// twiddle takes two multiplications, stalled on instruction fetch).
__device__ __noinline__ fr_t mul_twiddle(const fr_t x, const uint4* coarse, const uint4* fine,
                                         uint32_t order, uint32_t e, bool full) {
    return fr_mul(x, twiddle(coarse, fine, order, e, full));
}
__device__ __noinline__ fr_t mul_scale(const fr_t x, const uint4* a, const uint4* b,
                                       const NttPassParams p, uint32_t j) {
    return fr_mul(x, scale_factor(a, b, p, j));
}

// The stages [bf_lo, bf_hi) of the register window [b, b + RLOG) on a thread's R elements: stage
// c = b + cc pairs (t, t + 2^c) with twiddle index (t mod 2^c) << (17 - c) in the coarse table,
// t mod 2^c = ((j mod 2^cc) << b) | t_low. LOW: the window is at the bottom (b = 0, t_low = 0).
template <int RLOG, bool DIT, bool LOW>
FR_D void butterflies(fr_t (&x)[1 << RLOG], const uint4* coarse, uint32_t b, uint32_t bf_lo,
                      uint32_t bf_hi, uint32_t t_low) {
    constexpr uint32_t R = 1u << RLOG;
#pragma unroll
    for (int s = 0; s < RLOG; s++) {
        const int cc = DIT ? s : RLOG - 1 - s;
        const uint32_t c = b + cc;
        if (c < bf_lo || c >= bf_hi) continue;
#pragma unroll
        for (uint32_t j = 0; j < R; j++) {
            if (j & (1u << cc)) continue;
            const uint32_t j2 = j | (1u << cc);
            const uint32_t jm = j & ((1u << cc) - 1);
            const bool unit = LOW && jm == 0;  // compile-time
            const uint32_t tm = (jm << b) | t_low;
            fr_t u = x[j], v = x[j2];
            if (!DIT) {
                x[j] = fr_add(u, v);
                fr_t d = fr_sub(u, v);
                x[j2] = unit ? d : fr_mul(d, load_ro(coarse, tm << (17 - c)));
            } else {
                if (!unit) v = fr_mul(v, load_ro(coarse, tm << (17 - c)));
                x[j] = fr_add(u, v);
                x[j2] = fr_sub(u, v);
            }
        }
    }
}

// One pass; see the header comment. RLOG: log2 of elements per thread; DIT: transposed network.
template <int RLOG, bool DIT>
FR_D void pass(uint4* data, const uint4* coarse, const uint4* fine, const uint4* scale_a,
               const uint4* scale_b, const NttPassParams& p) {
    constexpr uint32_t R = 1u << RLOG;
    CUZK_DYNAMIC_SHARED(uint4, smem);
    const uint32_t k = p.k, m = p.m, L = p.log_n;
    const uint32_t ell = L - p.s0 - k;
    const uint32_t tile = 1u << (k + m);
    const bool g_fast = p.flags & NTT_G_FAST;
    const bool full = p.flags & NTT_FULL_TWIDDLE;
    const uint32_t tid = threadIdx.x;
    const uint32_t rounds = (k + RLOG - 1) / RLOG;
    uint4* vec = data + 2 * (uint64_t)blockIdx.y * p.vector_stride;
    uint4* smem_lo = smem;
    uint4* smem_hi = smem + tile;

    fr_t x[R];
    for (uint32_t q = 0; q < rounds; q++) {
        // Register window [b, b + RLOG) of t, and the stages [bf_lo, bf_hi) this round runs.
        uint32_t b, bf_lo, bf_hi;
        if (!DIT) {
            if (q + 1 < rounds) { b = k - (q + 1) * RLOG; bf_lo = b; bf_hi = b + RLOG; }
            else { b = 0; bf_lo = 0; bf_hi = k - q * RLOG; }
        } else {
            if (q + 1 < rounds) { b = q * RLOG; bf_lo = b; bf_hi = b + RLOG; }
            else { b = k - RLOG; bf_lo = q * RLOG; bf_hi = k; }
        }
        // This thread's group g and the t bits outside the window.
        const uint32_t high_bits = k - RLOG - b;
        uint32_t g, t_low, t_high;
        if (g_fast) {
            g = tid & ((1u << m) - 1);
            uint32_t rest = tid >> m;
            t_low = rest & ((1u << b) - 1);
            t_high = rest >> b;
        } else {
            t_low = tid & ((1u << b) - 1);
            uint32_t rest = tid >> b;
            t_high = rest & ((1u << high_bits) - 1);
            g = rest >> high_bits;
        }
        const uint32_t t_base = (t_high << (b + RLOG)) | t_low;
        const uint32_t group = (blockIdx.x << m) | g;
        const uint32_t lo = group & ((1u << ell) - 1);
        const uint32_t hi = group >> ell;
        const uint32_t pos_base = (hi << (ell + k)) | lo;

        if (q == 0) {
            // Loads first (all in flight together), then each scaling as its own straight-line
            // loop, so that independent multiplications can be interleaved.
#pragma unroll
            for (uint32_t j = 0; j < R; j++) x[j] = load(vec, pos_base | ((t_base | (j << b)) << ell));
            if (p.flags & NTT_PRE_SCALE) {
#pragma unroll
                for (uint32_t j = 0; j < R; j++) {
                    uint32_t pos = pos_base | ((t_base | (j << b)) << ell);
                    uint32_t nat = (p.flags & NTT_SCALE_BITREV) ? bitrev(pos, L) : pos;
                    x[j] = mul_scale(x[j], scale_a, scale_b, p, nat);
                }
            }
            if (DIT && (p.flags & NTT_TWIDDLE)) {
#pragma unroll
                for (uint32_t j = 0; j < R; j++) {
                    uint32_t e = lo * bitrev(t_base | (j << b), k);
                    x[j] = mul_twiddle(x[j], coarse, fine, L - p.s0, e, full);
                }
            }
        } else {
            __syncthreads();
#pragma unroll
            for (uint32_t j = 0; j < R; j++) {
                uint32_t t = t_base | (j << b);
                uint32_t idx = g_fast ? ((t << m) | g) : ((g << k) | t);
                uint4 a = smem_lo[idx], c = smem_hi[idx];
                x[j].l[0] = a.x; x[j].l[1] = a.y; x[j].l[2] = a.z; x[j].l[3] = a.w;
                x[j].l[4] = c.x; x[j].l[5] = c.y; x[j].l[6] = c.z; x[j].l[7] = c.w;
            }
        }

        // Butterflies. With the window at the bottom (b = 0) the twiddle index depends on j only,
        // so the unit twiddles are skipped at compile time; elsewhere every butterfly multiplies
        // (index 0 holds one), which keeps each stage straight-line code.
        if (b == 0) butterflies<RLOG, DIT, true>(x, coarse, 0, bf_lo, bf_hi, 0);
        else butterflies<RLOG, DIT, false>(x, coarse, b, bf_lo, bf_hi, t_low);

        if (q + 1 == rounds) {
            if (!DIT && (p.flags & NTT_TWIDDLE)) {
#pragma unroll
                for (uint32_t j = 0; j < R; j++) {
                    uint32_t e = lo * bitrev(t_base | (j << b), k);
                    x[j] = mul_twiddle(x[j], coarse, fine, L - p.s0, e, full);
                }
            }
            if (p.flags & NTT_POST_SCALE) {
#pragma unroll
                for (uint32_t j = 0; j < R; j++) {
                    uint32_t pos = pos_base | ((t_base | (j << b)) << ell);
                    uint32_t nat = (p.flags & NTT_SCALE_BITREV) ? bitrev(pos, L) : pos;
                    x[j] = mul_scale(x[j], scale_a, scale_b, p, nat);
                }
            }
#pragma unroll
            for (uint32_t j = 0; j < R; j++) store(vec, pos_base | ((t_base | (j << b)) << ell), x[j]);
        } else {
            if (q > 0) __syncthreads();
#pragma unroll
            for (uint32_t j = 0; j < R; j++) {
                uint32_t t = t_base | (j << b);
                uint32_t idx = g_fast ? ((t << m) | g) : ((g << k) | t);
                smem_lo[idx] = make_uint4(x[j].l[0], x[j].l[1], x[j].l[2], x[j].l[3]);
                smem_hi[idx] = make_uint4(x[j].l[4], x[j].l[5], x[j].l[6], x[j].l[7]);
            }
        }
    }
}

}  // namespace ntt

// The pass kernels: ntt_pass_{dif,dit}_r{1,2,3}, at most 512 threads per block (the planner's
// limit), so the compiler may give each thread up to 128 registers; and the high-occupancy
// variants ntt_pass_{dif,dit}_r1_o2 (512 threads, 2 blocks per SM: at most 64 registers) and
// ntt_pass_{dif,dit}_r2_o3 (256 threads, 3 blocks per SM: at most 80 registers), which trade
// registers (and a little spilling) for more warps to hide the multiplications' latency.
#define NTT_PASS_KERNEL(name, RLOG, DIT, THREADS, BLOCKS)                                      \
    extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS)                              \
        name(uint4* data, const uint4* coarse, const uint4* fine, const uint4* scale_a,        \
             const uint4* scale_b, NttPassParams p) {                                          \
        ntt::pass<RLOG, DIT>(data, coarse, fine, scale_a, scale_b, p);                         \
    }

NTT_PASS_KERNEL(ntt_pass_dif_r1, 1, false, 512, 1)
NTT_PASS_KERNEL(ntt_pass_dif_r2, 2, false, 512, 1)
NTT_PASS_KERNEL(ntt_pass_dif_r3, 3, false, 512, 1)
NTT_PASS_KERNEL(ntt_pass_dit_r1, 1, true, 512, 1)
NTT_PASS_KERNEL(ntt_pass_dit_r2, 2, true, 512, 1)
NTT_PASS_KERNEL(ntt_pass_dit_r3, 3, true, 512, 1)
NTT_PASS_KERNEL(ntt_pass_dif_r1_o2, 1, false, 512, 2)
NTT_PASS_KERNEL(ntt_pass_dit_r1_o2, 1, true, 512, 2)
NTT_PASS_KERNEL(ntt_pass_dif_r2_o3, 2, false, 256, 3)
NTT_PASS_KERNEL(ntt_pass_dit_r2_o3, 2, true, 256, 3)

// The full twiddle table of a transform of 2^order points, order > 18: out[e] = omega_{2^order}^e
// for e < 2^(order-1), each the coarse-times-fine product the first pass would otherwise compute
// per element (so the two paths use the same values). One thread per entry.
extern "C" __global__ void ntt_twiddle_table(uint4* out, const uint4* coarse, const uint4* fine,
                                             uint32_t order) {
    const uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    if (order <= 18 || order > 32 || e >= (1u << (order - 1))) return;
    ntt::store(out, e, ntt::twiddle(coarse, fine, order, e, false));
}

// In-place bit-reversal permutation of each vector (grid.y = vectors), one thread per index:
// swaps elements i and bitrev(i) when i < bitrev(i). For small vectors (log_n < 10).
extern "C" __global__ void ntt_bitrev_small(uint4* data, uint64_t vector_stride, uint32_t log_n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (1u << log_n)) return;
    uint32_t r = ntt::bitrev(i, log_n);
    if (i >= r) return;
    uint4* vec = data + 2 * (uint64_t)blockIdx.y * vector_stride;
    fr_t a = ntt::load(vec, i), b = ntt::load(vec, r);
    ntt::store(vec, i, b);
    ntt::store(vec, r, a);
}

// In-place bit-reversal permutation for log_n >= 10, by tiles. An index is
// (h: 5 bits | mid: log_n - 10 bits | l: 5 bits) and its reversal (rev5(l) | rev(mid) | rev5(h)).
// Block x takes the 32x32 tile of `mid` and the tile of its partner rev(mid) (when mid <= rev(mid);
// other blocks exit), loads both with 1 KiB contiguous rows, and writes each transposed into the
// other's place. 256 threads, 64 KiB of dynamic shared memory, one read and one write per element.
// Shared memory is swizzled (column ^ rev5(row)) so that both the row loads and the transposed
// reads are free of bank conflicts.
extern "C" __global__ void __launch_bounds__(256)
    ntt_bitrev_tiled(uint4* data, uint64_t vector_stride, uint32_t log_n) {
    CUZK_DYNAMIC_SHARED(uint4, smem);
    const uint32_t mid_bits = log_n - 10;
    const uint32_t mid = blockIdx.x;
    const uint32_t mid2 = ntt::bitrev(mid, mid_bits);
    if (mid > mid2) return;
    const bool pair = mid != mid2;
    uint4* vec = data + 2 * (uint64_t)blockIdx.y * vector_stride;
    // Planes: [tile A lo | tile A hi | tile B lo | tile B hi], 1024 uint4 each.
    uint4* a_lo = smem;
    uint4* a_hi = smem + 1024;
    uint4* b_lo = smem + 2048;
    uint4* b_hi = smem + 3072;
    for (uint32_t e = threadIdx.x; e < 1024; e += blockDim.x) {
        uint32_t h = e >> 5, l = e & 31;
        uint32_t slot = (h << 5) | (l ^ ntt::bitrev(h, 5));
        uint64_t pa = ((uint64_t)h << (log_n - 5)) | (mid << 5) | l;
        a_lo[slot] = vec[2 * pa];
        a_hi[slot] = vec[2 * pa + 1];
        if (pair) {
            uint64_t pb = ((uint64_t)h << (log_n - 5)) | (mid2 << 5) | l;
            b_lo[slot] = vec[2 * pb];
            b_hi[slot] = vec[2 * pb + 1];
        }
    }
    __syncthreads();
    for (uint32_t e = threadIdx.x; e < 1024; e += blockDim.x) {
        // Destination (h2, l2) in row mid2 receives the element (rev5(l2), mid, rev5(h2)) of tile A.
        uint32_t h2 = e >> 5, l2 = e & 31;
        uint32_t h = ntt::bitrev(l2, 5), l = ntt::bitrev(h2, 5);
        uint32_t slot = (h << 5) | (l ^ ntt::bitrev(h, 5));
        uint64_t da = ((uint64_t)h2 << (log_n - 5)) | (mid2 << 5) | l2;
        vec[2 * da] = a_lo[slot];
        vec[2 * da + 1] = a_hi[slot];
        if (pair) {
            uint64_t db = ((uint64_t)h2 << (log_n - 5)) | (mid << 5) | l2;
            vec[2 * db] = b_lo[slot];
            vec[2 * db + 1] = b_hi[slot];
        }
    }
}

// Groth16's quotient step between the coset transforms: h[i] = (a[i]·b[i] − c[i])·z_inv, where
// a, b, c are the evaluations of A·z, B·z, C·z on the coset (three vectors of n back to back in
// `abc`, natural order) and z_inv the inverse of the vanishing polynomial there (one value: Z is
// constant on the coset). One thread per element; reads 96 bytes and writes 32. Rust launch
// wrapper: GpuNtt::h_pointwise (crates/ntt/src/gpu/device.rs).
extern "C" __global__ void ntt_h_pointwise(uint4* h, const uint4* abc, uint64_t n, fr_t z_inv) {
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t a = ntt::load_ro(abc, i), b = ntt::load_ro(abc, n + i), c = ntt::load_ro(abc, 2 * n + i);
    ntt::store(h, i, fr_mul(fr_sub(fr_mul(a, b), c), z_inv));
}
