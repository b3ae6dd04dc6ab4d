// Pippenger multi-scalar multiplication over BLS12-381 G1 and G2, and batch addition.
// Rust launch wrappers: crates/msm/src/gpu/pippenger.rs and batch.rs (one per kernel, same name).
//
// An MSM of m points per chunk, windows of c bits (W = ceil(255/c) windows, K = 2^(c-1) buckets
// per window, G = W·K buckets in all) runs as:
//
// 1. msm_digits: one thread per point. The scalar is reduced mod r, taken out of Montgomery form
//    if asked, and negated (s -> r - s, the point's sign flipped) when above (r-1)/2, so it has
//    at most 254 bits; then it is cut into W signed digits, window w's of width c_w in
//    (-K_w, K_w], K_w = 2^(c_w - 1). The widths are balanced, Σ c_w = 255 (the top window keeps
//    one bit for the last carry): the first `wide` windows take c bits, the rest c - 1, and a
//    window of c - 1 bits uses the lower half of its K keys. Each non-zero digit becomes a key
//    w·K + |d| - 1 (the bucket) with the sign in bit 31, written to keys[w·m + i], and counted in
//    counts[key] (one atomic add per digit). Where the sort runs in two passes (below, chunks
//    whose windows' entries exceed L2), msm_digits_bins instead counts them per bin of buckets,
//    in shared memory, and the second pass writes the buckets' offsets.
// 2. msm_scan_tiles / msm_scan_add: exclusive prefix sum of counts (G + 1 entries, so that
//    counts[G] ends up as the number of entries N; of the bins' counts in two passes), in tiles
//    of 2048.
// 3. msm_scatter: a counting sort, one launch for all windows, or one per part of each window's
//    buckets when a window's sorted entries exceed L2 (or the two passes, msm_sort_bins and
//    msm_sort_bin_buckets, which are faster there); one thread per entry. Each entry takes the
//    next free slot of its bucket (atomic add on a copy of the offsets) and writes there one
//    64-bit word: the key above, the point reference (index, sign in bit 31) below. Within a
//    bucket the order is arbitrary, which cannot change the result: the additions are exact.
// 4. msm_accumulate_<g>: thread t takes the sorted entries [t·L, t·L + L) and sums each run of
//    equal keys with mixed additions into an XYZZ accumulator. A run that lies inside the segment
//    is complete: it is added into its bucket, with no other thread touching that bucket. The
//    first run, when it began in the previous segment, and the last, when it continues into the
//    next, are written out as keyed partial sums (slots 2t and 2t + 1), so every thread does the
//    same L additions whatever the distribution of the scalars. The complete runs are added into
//    their buckets after the loop, all threads of a warp together (MSM_FLUSH_SLOTS of them per
//    thread): added where each run ends, each such full addition made the warp wait while one
//    thread did it, which doubled the kernel's time once the buckets hold earlier chunks' sums.
// 5. msm_merge_<g>: the partial sums form a sorted keyed list again; the same segmented sum
//    (full XYZZ additions) runs over it, level after level, until one thread holds the whole
//    list. An unused slot carries its neighbour's key with the EMPTY flag, so the list stays
//    sorted and its point is never read.
// 6. msm_reduce_<g>: per window, Σ_k k·B_k over the buckets, by running sums over segments of S
//    buckets in parallel and the same reduction again over the segments' sums (see the kernel;
//    with batch-affine sums in G1, the last chunk's msm_affine_reduce_g1, affine.cuh, writes the
//    first level).
//    The last few sums per window and the combination of the windows are done on the host.
//
// Memory traffic per chunk: scalars 32·m bytes; digit keys (4·m·W bytes) and sorted entries
// (8·m·W bytes; twice that in two passes) written and read; points gathered m·W times (96 or 192 bytes each, the dominant read); buckets
// read and written once per run. The arithmetic dominates: m·W mixed additions of 10 (G1) or 28
// (G2, in Fp multiplications) field multiplications.
#include "curve/xyzz.cuh"
#include "msm/bits.cuh"

#define MSM_SIGN 0x80000000u    // in a key from msm_digits and in a point reference: negate
#define MSM_EMPTY 0x80000000u   // in a partial-sum key: the slot holds no point
#define MSM_KEY_MASK 0x7fffffffu
#define MSM_INVALID 0x7fffffffu // a key above every bucket: past the end of a list
#define MSM_NO_DIGIT 0xffffffffu
#define MSM_SCAN_TILE 2048u
#define MSM_FLUSH_SLOTS 8      // complete runs a thread holds before adding them into buckets

// (r - 1)/2, little-endian 32-bit limbs: scalars above it are negated.
FR_HD constexpr uint32_t msm_half_r(int i) {
    return i == 0 ? 0x80000000u : i == 1 ? 0x7fffffffu : i == 2 ? 0x7fff2dffu
         : i == 3 ? 0xa9ded201u : i == 4 ? 0x04d0ec02u : i == 5 ? 0x199cec04u
         : i == 6 ? 0x94cebea4u : 0x39f6d3a9u;
}

// s mod r for any 256-bit s (2^256 < 3r: at most two subtractions).
FR_HD fr_t msm_reduce_scalar(fr_t s) {
#pragma unroll 1
    for (int round = 0; round < 2; round++) {
        fr_t t;
        t.l[0] = sub_cc(s.l[0], fr_modulus(0));
#pragma unroll
        for (int i = 1; i < 8; i++) t.l[i] = subc_cc(s.l[i], fr_modulus(i));
        uint32_t borrow = subc(0, 0);
        if (!borrow) s = t;
    }
    return s;
}

// Whether s > (r - 1)/2.
FR_HD bool msm_above_half(const fr_t& s) {
    // Only the borrow out is wanted; the differences go nowhere.
    [[maybe_unused]] uint32_t t;
    t = sub_cc(msm_half_r(0), s.l[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) t = subc_cc(msm_half_r(i), s.l[i]);
    return subc(0, 0) != 0;
}

// The W signed digits of scalar s (32 bytes, any 256-bit value, in Montgomery form if asked):
// emit(w, out) for each window w in order, out = MSM_NO_DIGIT for a zero digit, else the key
// w·half + |d| - 1 with the sign in bit 31. Windows [0, wide_windows) are window_bits wide, the
// rest window_bits - 1 (see the header).
template <class Emit>
FR_HD void msm_scalar_digits(fr_t s, uint32_t window_bits, uint32_t n_windows, uint32_t wide_windows,
                             uint32_t montgomery, Emit emit) {
    s = msm_reduce_scalar(s);
    if (montgomery) s = fr_from_mont(s);
    bool negate = msm_above_half(s);
    if (negate) s = fr_neg(s);
    uint32_t half = 1u << (window_bits - 1);  // keys per window, whatever its width
    // The windows' bits are taken from the bottom of `buf`, which holds the next `have` bits of
    // s and is refilled a limb at a time (the limb loop is unrolled, so every limb stays in a
    // register: indexing s.l by a window's bit offset made ptxas select each window's two limbs
    // out of all eight, most of the kernel's instructions). After the last limb the bits are
    // zero. Windows are at most 31 bits, so `have` is below 32 whenever a limb goes in.
    uint64_t buf = 0;
    uint32_t have = 0, w = 0, carry = 0;
#pragma unroll
    for (int limb = 0; limb <= 8; limb++) {
        if (w >= n_windows) break;
        if (limb < 8) {
            buf |= (uint64_t)s.l[limb] << have;
            have += 32;
        } else {
            have = 0xffffffffu;  // zeros from bit 256 on, as many as the last windows take
        }
        for (; w < n_windows; w++) {
            uint32_t bits = w < wide_windows ? window_bits : window_bits - 1;
            if (have < bits) break;
            uint32_t v = ((uint32_t)buf & ((1u << bits) - 1)) + carry;
            buf >>= bits;
            have -= bits;
            uint32_t magnitude, sign;
            if (v > (1u << (bits - 1))) {
                magnitude = (1u << bits) - v;  // digit v - 2^bits < 0; zero when v = 2^bits
                sign = 1;
                carry = 1;
            } else {
                magnitude = v;
                sign = 0;
                carry = 0;
            }
            uint32_t out = MSM_NO_DIGIT;
            if (magnitude != 0) out = (w * half + magnitude - 1) | ((sign ^ (negate ? 1u : 0u)) << 31);
            emit(w, out);
        }
    }
}

// keys[w·m + i] for the W digits of scalar i; counts[key] += 1 for each non-zero digit.
// One thread per point; reads 32 bytes, writes 4·W. For the single-pass scatter, which needs
// every bucket's count; the two-pass sort counts per bin (msm_digits_bins).
extern "C" __global__ void msm_digits(uint32_t* keys, uint32_t* counts, const fr_t* scalars,
                                      uint64_t scalar_offset, uint32_t m, uint32_t window_bits,
                                      uint32_t n_windows, uint32_t wide_windows, uint32_t montgomery) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    msm_scalar_digits(scalars[scalar_offset + i], window_bits, n_windows, wide_windows, montgomery,
                      [&](uint32_t w, uint32_t out) {
                          if (out != MSM_NO_DIGIT) atomicAdd(&counts[out & MSM_KEY_MASK], 1u);
                          keys[(uint64_t)w * m + i] = out;
                      });
}

// A kernel's dynamic shared memory, 16-byte aligned (the host emulator defines its own).
#ifndef CUZK_DYNAMIC_SHARED
#define CUZK_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif

#define MSM_DIGITS_BINS_THREADS 1024u  // threads per block of msm_digits_bins

// How the two-pass sort groups a chunk's buckets in bins (MsmPlan::sort_bins): each window's
// keys [w·half, w·half + half) in `bins` bins of 2^shift(w) consecutive keys, shift(w) =
// bin_log2, plus wide_extra (0 or 1) in the windows of window_bits bits, [0, wide_windows).
// With wide_extra = 1 a window of window_bits - 1 bits, which uses only the lower half of its
// keys, has its bins there (its upper half's keys, never a digit's, lie in no bin), so that
// every window's bins hold about as many entries (a chunk's points over `bins`) and a wide
// window's bins are not half as full as a narrow one's.
struct msm_bin_layout_t {
    uint32_t half, bins, bin_log2, wide_windows, wide_extra;

    FR_HD uint32_t shift(uint32_t w) const { return bin_log2 + (w < wide_windows ? wide_extra : 0); }
    // The bin (of its window) of key `key` in window w.
    FR_HD uint32_t bin_of(uint32_t w, uint32_t key) const { return (key - w * half) >> shift(w); }
    // Bin `bin` (of all windows'): its first key and its number of keys.
    FR_HD uint32_t first_key(uint32_t bin) const {
        uint32_t w = bin / bins;
        return w * half + ((bin - w * bins) << shift(w));
    }
    FR_HD uint32_t keys(uint32_t bin) const { return 1u << shift(bin / bins); }
};

// The digits as msm_digits writes them, counted per bin of the two-pass sort (msm_bin_layout_t,
// `bins` per window) rather than per bucket: each block
// counts its digits in shared memory and adds its counts into bin_counts once, so the 4·m·W
// bytes of keys cost about W·m shared-memory atomics and not as many global ones (which bound
// msm_digits: 235 M of them at G1 2^24). Measured on the H200 (ncu, per
// launch): G1 2^24 2.41 -> 1.10 ms, a 2^25-point chunk 4.48 -> 2.07 ms. Block b takes the windows
// [g·windows_per_block, ...) of group g = b / blocks_per_group, and the points [x·per_block,
// (x + 1)·per_block) of its slot x = b % blocks_per_group, one thread per point in turn; it
// computes every window's digit (the carries run from the lowest window up) and keeps those of
// its windows. Dynamic shared memory: a counter per bin of its windows (4·windows_per_block·bins
// bytes).
extern "C" __global__ void __launch_bounds__(MSM_DIGITS_BINS_THREADS)
    msm_digits_bins(uint32_t* keys, uint32_t* bin_counts, const fr_t* scalars, uint64_t scalar_offset,
                    uint32_t m, uint32_t window_bits, uint32_t n_windows, uint32_t wide_windows,
                    uint32_t montgomery, uint32_t bins, uint32_t bin_log2, uint32_t wide_extra,
                    uint32_t windows_per_block, uint32_t blocks_per_group, uint32_t per_block) {
    CUZK_DYNAMIC_SHARED(uint32_t, hist);
    msm_bin_layout_t layout{1u << (window_bits - 1), bins, bin_log2, wide_windows, wide_extra};
    uint32_t group = blockIdx.x / blocks_per_group, slot = blockIdx.x % blocks_per_group;
    uint32_t w_lo = group * windows_per_block;
    uint32_t w_hi = w_lo + windows_per_block < n_windows ? w_lo + windows_per_block : n_windows;
    uint32_t n_hist = (w_hi - w_lo) * bins, bin0 = w_lo * bins;
    for (uint32_t j = threadIdx.x; j < n_hist; j += blockDim.x) hist[j] = 0;
    __syncthreads();
    uint64_t lo = (uint64_t)slot * per_block, hi = lo + per_block < m ? lo + per_block : m;
    for (uint64_t p = lo + threadIdx.x; p < hi; p += blockDim.x) {
        uint32_t i = (uint32_t)p;
        msm_scalar_digits(scalars[scalar_offset + i], window_bits, n_windows, wide_windows, montgomery,
                          [&](uint32_t w, uint32_t out) {
                              if (w < w_lo || w >= w_hi) return;
                              if (out != MSM_NO_DIGIT) {
                                  uint32_t b = (w - w_lo) * bins + layout.bin_of(w, out & MSM_KEY_MASK);
                                  atomicAdd(&hist[b], 1u);
                              }
                              keys[(uint64_t)w * m + i] = out;
                          });
    }
    __syncthreads();
    for (uint32_t j = threadIdx.x; j < n_hist; j += blockDim.x) {
        if (hist[j] != 0) atomicAdd(&bin_counts[bin0 + j], hist[j]);
    }
}

// Exclusive prefix sum of each tile of 2048 entries of data, in place; tile_sums[tile] = the
// tile's total. 256 threads of 8 entries each.
extern "C" __global__ void __launch_bounds__(256) msm_scan_tiles(uint32_t* data, uint32_t* tile_sums,
                                                                 uint32_t n) {
    __shared__ uint32_t sums[256];
    uint32_t tid = threadIdx.x;
    uint32_t base = blockIdx.x * MSM_SCAN_TILE + tid * 8;
    uint32_t v[8];
    uint32_t local = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        uint32_t idx = base + k;
        v[k] = idx < n ? data[idx] : 0;
        local += v[k];
    }
    sums[tid] = local;
    __syncthreads();
    for (uint32_t offset = 1; offset < 256; offset <<= 1) {
        uint32_t add = tid >= offset ? sums[tid - offset] : 0;
        __syncthreads();
        sums[tid] += add;
        __syncthreads();
    }
    uint32_t prefix = tid > 0 ? sums[tid - 1] : 0;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        uint32_t idx = base + k;
        if (idx < n) data[idx] = prefix;
        prefix += v[k];
    }
    if (tid == 255) tile_sums[blockIdx.x] = sums[255];
}

// data[i] += tile_offsets[i / 2048]: the second half of a multi-tile scan.
extern "C" __global__ void msm_scan_add(uint32_t* data, const uint32_t* tile_offsets, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += tile_offsets[i / MSM_SCAN_TILE];
}

// Counting-sort scatter of the entries [first, first + n) of keys (entry j is point j mod m of
// window j / m) whose bucket lies in [key_lo, key_hi): each thread takes MSM_SCATTER_PER entries
// (strided by the block, so that the loads coalesce) and, for each bucket in range, writes
// sorted[pos] = key << 32 | point reference at the bucket's next free slot. When a window's
// sorted entries (8·m bytes) exceed L2, the host cuts its buckets into parts whose entries mostly
// stay in L2 while the part is written (randomly placed 8-byte writes otherwise leave L2 in
// partly written sectors), one launch each over the window's keys, read once per part as
// streaming loads so that they do not push the output out of L2; otherwise one launch takes
// every window. Measured on the H200 (docs/benchmarks.md): G1 2^24 10.4 -> 8.1 ms, 2^26 49.4 ->
// 38.8 ms; eight entries per thread, atomics issued before the stores, was no faster
// (0.5 -> 0.6 ms at 2^20, 8.0 -> 8.5 ms at 2^24), hence one.
#define MSM_SCATTER_PER 1u  // the host's SCATTER_PER
extern "C" __global__ void msm_scatter(uint64_t* sorted, uint32_t* cursor, const uint32_t* keys, uint32_t m,
                                       uint32_t first, uint32_t n, uint32_t key_lo, uint32_t key_hi) {
    uint32_t base = blockIdx.x * blockDim.x * MSM_SCATTER_PER + threadIdx.x;
    uint32_t v[MSM_SCATTER_PER], pos[MSM_SCATTER_PER];
    uint32_t taken = 0;
#pragma unroll
    for (uint32_t r = 0; r < MSM_SCATTER_PER; r++) {
        uint32_t i = base + r * blockDim.x;
#if defined(__CUDA_ARCH__)
        v[r] = i < n ? __ldcs(&keys[first + i]) : MSM_NO_DIGIT;
#else
        v[r] = i < n ? keys[first + i] : MSM_NO_DIGIT;
#endif
    }
#pragma unroll
    for (uint32_t r = 0; r < MSM_SCATTER_PER; r++) {
        uint32_t key = v[r] & MSM_KEY_MASK;
        if (v[r] != MSM_NO_DIGIT && key >= key_lo && key < key_hi) {
            pos[r] = atomicAdd(&cursor[key], 1u);
            taken |= 1u << r;
        }
    }
#pragma unroll
    for (uint32_t r = 0; r < MSM_SCATTER_PER; r++) {
        if (taken & (1u << r)) {
            uint32_t point = (first + base + r * blockDim.x) % m;
            sorted[pos[r]] = ((uint64_t)(v[r] & MSM_KEY_MASK) << 32) | (point | (v[r] & MSM_SIGN));
        }
    }
}

// The counting sort in two passes, for chunks whose windows' sorted entries exceed the L2 cache
// (MsmPlan::sort_bins, crates/msm/src/gpu/plan/sort.rs), in place of msm_scatter's parts. The
// single-pass scatter writes each 8-byte entry at a random place of its window's output, which
// leaves L2 in partly written sectors unless the output is cut into parts that fit it, and each
// part reads the window's keys again (kernels/msm/README.md, the sort). The buckets
// are grouped in bins of consecutive ones (`bins` per window, n_bins in all, bin w·bins + b of
// window w: msm_bin_layout_t). Here:
// 0. msm_digits_bins counts the digits per bin (not per bucket), and bin_offsets is the
//    exclusive prefix sum of those counts (n_bins + 1 entries: the last is the number of
//    entries).
// 1. msm_sort_bins: each block takes a tile of keys of one window and groups its entries by bin
//    in shared memory, claims room in each bin's range of `binned` (bin_fill, zeroed
//    beforehand, counts what earlier tiles claimed; a bin's range starts at bin_offsets[bin])
//    and writes each bin's entries there as one run.
// 2. msm_sort_bin_buckets: each block takes whole bins, one after another, counts each bin's
//    entries per bucket in shared memory, writes its buckets' offsets (the sort's output beside
//    the entries: offsets[key], the first entry of bucket key, G + 1 of them), orders the
//    entries by bucket in shared memory and writes them out in order. Sorting a bin in place in
//    `sorted` instead, each entry to its bucket's next place, wrote half as many bytes again as
//    it needed (partly written sectors) and made the two passes slower than msm_scatter
//    (H200; docs/benchmarks.md, tried and not kept). A bin of more entries than the stage holds (skewed scalars: digits that
//    crowd a few buckets) is shared by every block instead: msm_sort_big counts its entries
//    per bucket (in `cursor`, zeroed beforehand), msm_sort_bin_buckets turns those counts into
//    the buckets' offsets, and msm_sort_big again puts each entry at its bucket's
//    next place through `cursor`, as msm_scatter does, which is correct for any distribution.
//    (One block per such bin serialised it: G1 2^24 with scalars below 2^8, whose lowest
//    window's digits fill one bin, sorted in 21.8 ms, shared 3.1 ms on the H200.)
// The entries are those msm_scatter writes (key << 32 | point reference), in each bucket in an
// order that varies from run to run (as the atomics leave it); the bucket sums do not depend on
// it. Any distribution of the keys is sorted correctly; one bucket holding most entries makes
// the shared-memory atomics on its bin queue, and its bin goes the shared way.
#define MSM_BIN_PER 22u            // keys per thread of msm_sort_bins: a tile is MSM_BIN_PER·blockDim.x
#define MSM_BIN_MAX_THREADS 1024u  // the most threads of a msm_sort_bins block
#define MSM_BIG_BINS 1024u         // bins a block looks at together for big ones
#define MSM_CLAIM_BATCH 2u         // bins per thread of msm_sort_bins whose room it claims together

// out[b] = base + in[0] + ... + in[b - 1] for b < n, by the whole block (blockDim.x a multiple
// of 32, at most MSM_BIN_MAX_THREADS; `in` may be `out`): thread t takes the entries [t·per,
// t·per + per), per = ⌈n / blockDim.x⌉, and the threads' sums are scanned in `scratch` (shared,
// MSM_BIN_MAX_THREADS entries). Returns in[0] + ... + in[n - 1] to every thread. Must be called
// with the block synchronised and `in` complete (it has no barrier before its first reads); ends
// with the block synchronised.
__device__ __forceinline__ uint32_t msm_block_scan(const uint32_t* in, uint32_t* out, uint32_t n, uint32_t base,
                                                   uint32_t* scratch) {
    uint32_t tid = threadIdx.x, threads = blockDim.x;
    uint32_t per = (n + threads - 1) / threads;
    uint32_t lo = tid * per < n ? tid * per : n;
    uint32_t hi = lo + per < n ? lo + per : n;
    uint32_t local = 0;
    for (uint32_t b = lo; b < hi; b++) local += in[b];
    uint32_t before, total;
#if defined(__CUDA_ARCH__)
    // Within each warp by shuffles, then across the warps' sums (one warp): two barriers.
    uint32_t lane = tid & 31, warp = tid >> 5, warps = threads >> 5;
    uint32_t inclusive = local;
#pragma unroll
    for (uint32_t d = 1; d < 32; d <<= 1) {
        uint32_t v = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) inclusive += v;
    }
    if (lane == 31) scratch[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        uint32_t sum = lane < warps ? scratch[lane] : 0, scanned = sum;
#pragma unroll
        for (uint32_t d = 1; d < 32; d <<= 1) {
            uint32_t v = __shfl_up_sync(0xffffffffu, scanned, d);
            if (lane >= d) scanned += v;
        }
        if (lane < warps) scratch[lane] = scanned - sum;
        if (lane == 31) scratch[32] = scanned;
    }
    __syncthreads();
    before = scratch[warp] + inclusive - local;
    total = scratch[32];
#else
    // Hillis–Steele over the threads' sums (the host emulator has no shuffles).
    scratch[tid] = local;
    __syncthreads();
    for (uint32_t offset = 1; offset < threads; offset <<= 1) {
        uint32_t add = tid >= offset ? scratch[tid - offset] : 0;
        __syncthreads();
        scratch[tid] += add;
        __syncthreads();
    }
    before = scratch[tid] - local;
    total = scratch[threads - 1];
#endif
    uint32_t run = base + before;
    for (uint32_t b = lo; b < hi; b++) {
        uint32_t c = in[b];
        out[b] = run;
        run += c;
    }
    __syncthreads();  // scratch is reused by the next scan
    return total;
}

// Pass 1, block b: tile b % tiles_per_window of window b / tiles_per_window (keys[w·m ..]), of
// MSM_BIN_PER·blockDim.x keys (blockDim.x a power of two, at least 32, at most
// MSM_BIN_MAX_THREADS); bins as msm_bin_layout_t says (half = 2^(window_bits - 1) keys per
// window). Dynamic shared memory: the tile's entries, then two counters per bin
// (8·MSM_BIN_PER·blockDim.x + 8·bins bytes). Each key's rank in its bin is held in 16 bits (a
// tile has fewer than 2^16 keys), two to a register, so that 22 keys per thread stay within the
// 64 registers of a 1024-thread block with a small stack (sm_90: 48 bytes).
extern "C" __global__ void __launch_bounds__(MSM_BIN_MAX_THREADS)
    msm_sort_bins(uint64_t* binned, uint32_t* bin_fill, const uint32_t* bin_offsets, const uint32_t* keys,
                  uint32_t m, uint32_t tiles_per_window, uint32_t half, uint32_t bins, uint32_t bin_log2,
                  uint32_t wide_windows, uint32_t wide_extra) {
    msm_bin_layout_t layout{half, bins, bin_log2, wide_windows, wide_extra};
    CUZK_DYNAMIC_SHARED(uint64_t, stage);
    __shared__ uint32_t scratch[MSM_BIN_MAX_THREADS];
    uint32_t tid = threadIdx.x, threads = blockDim.x, tile = MSM_BIN_PER * threads;
    // Each bin's entries in this tile, then (in place, once claimed) their first place in
    // `binned`; and their first place in `stage`.
    uint32_t* dest = reinterpret_cast<uint32_t*>(stage + tile);
    uint32_t* start = dest + bins;
    uint32_t w = blockIdx.x / tiles_per_window;
    uint32_t first = (blockIdx.x % tiles_per_window) * tile;
    for (uint32_t b = tid; b < bins; b += threads) dest[b] = 0;
    __syncthreads();
    uint32_t v[MSM_BIN_PER], rank[(MSM_BIN_PER + 1) / 2];
#pragma unroll
    for (uint32_t r = 0; r < MSM_BIN_PER; r++) {
        uint32_t i = first + r * threads + tid;
#if defined(__CUDA_ARCH__)
        v[r] = i < m ? __ldcs(&keys[(uint64_t)w * m + i]) : MSM_NO_DIGIT;
#else
        v[r] = i < m ? keys[(uint64_t)w * m + i] : MSM_NO_DIGIT;
#endif
        uint32_t got = v[r] != MSM_NO_DIGIT ? atomicAdd(&dest[layout.bin_of(w, v[r] & MSM_KEY_MASK)], 1u) : 0u;
        rank[r / 2] = r % 2 == 0 ? got : rank[r / 2] | (got << 16);
    }
    __syncthreads();
    uint32_t total = msm_block_scan(dest, start, bins, 0, scratch);
    // Each bin's room claimed, MSM_CLAIM_BATCH bins per thread at a time, their atomics issued
    // before any result is used (4096 bins a window at G1 2^26: four per thread; one at a time,
    // each waited for its atomic). A bin with no entry in the tile adds zero; a thread past the
    // last bin makes no atomic (adding zero there instead put every such thread's atomic on one
    // address: G1 2^24's first pass took 2.5 times as long).
    for (uint32_t b0 = 0; b0 < bins; b0 += MSM_CLAIM_BATCH * threads) {
        uint32_t off[MSM_CLAIM_BATCH], got[MSM_CLAIM_BATCH];
#pragma unroll
        for (uint32_t r = 0; r < MSM_CLAIM_BATCH; r++) {
            uint32_t b = b0 + r * threads + tid;
            off[r] = b < bins ? bin_offsets[w * bins + b] : 0u;
        }
#pragma unroll
        for (uint32_t r = 0; r < MSM_CLAIM_BATCH; r++) {
            uint32_t b = b0 + r * threads + tid;
            got[r] = b < bins ? atomicAdd(&bin_fill[w * bins + b], dest[b]) : 0u;
        }
#pragma unroll
        for (uint32_t r = 0; r < MSM_CLAIM_BATCH; r++) {
            uint32_t b = b0 + r * threads + tid;
            if (b < bins) dest[b] = off[r] + got[r];
        }
    }
#pragma unroll
    for (uint32_t r = 0; r < MSM_BIN_PER; r++) {
        if (v[r] != MSM_NO_DIGIT) {
            uint32_t key = v[r] & MSM_KEY_MASK;
            uint32_t point = first + r * threads + tid;
            uint32_t at = (rank[r / 2] >> (16 * (r % 2))) & 0xffffu;
            stage[start[layout.bin_of(w, key)] + at] = ((uint64_t)key << 32) | (point | (v[r] & MSM_SIGN));
        }
    }
    __syncthreads();
    // Consecutive threads write consecutive entries of a bin's run.
    for (uint32_t j = tid; j < total; j += threads) {
        uint64_t e = stage[j];
        uint32_t b = layout.bin_of(w, (uint32_t)(e >> 32));
        binned[dest[b] + (j - start[b])] = e;
    }
}

// A place in bucket `key`'s range of the sorted entries: cursor[key], then advanced. The lanes of
// a warp that claim in the same bucket make one atomic together (a skewed distribution puts
// most entries in a few buckets, whose counters would otherwise take every entry's atomic).
__device__ __forceinline__ uint32_t msm_claim(uint32_t* cursor, uint32_t key) {
#if defined(__CUDA_ARCH__)
    uint32_t peers = __match_any_sync(__activemask(), key);
    uint32_t lane = threadIdx.x & 31;
    uint32_t leader = __ffs(peers) - 1;
    uint32_t base = 0;
    if (lane == leader) base = atomicAdd(&cursor[key], (uint32_t)__popc(peers));
    base = __shfl_sync(peers, base, leader);
    return base + (uint32_t)__popc(peers & ((1u << lane) - 1));
#else
    return atomicAdd(&cursor[key], 1u);
#endif
}

// Whether bin `bin` holds more entries than the second pass's stage (`cap`).
__device__ __forceinline__ bool msm_big_bin(const uint32_t* bin_offsets, uint32_t bin, uint32_t cap) {
    return bin_offsets[bin + 1] - bin_offsets[bin] > cap;
}

// f(bin) for each bin over the stage, in every thread of the block, MSM_BIG_BINS bins at a time:
// listed together in `big` (shared, MSM_BIG_BINS entries; *n_big their number), then done.
template <class F>
__device__ __forceinline__ void msm_each_big_bin(const uint32_t* bin_offsets, uint32_t n_bins, uint32_t cap,
                                                 uint32_t* big, uint32_t* n_big, F f) {
    for (uint32_t first = 0; first < n_bins; first += MSM_BIG_BINS) {
        if (threadIdx.x == 0) *n_big = 0;
        __syncthreads();
        for (uint32_t i = threadIdx.x; i < MSM_BIG_BINS && first + i < n_bins; i += blockDim.x) {
            if (msm_big_bin(bin_offsets, first + i, cap)) big[atomicAdd(n_big, 1u)] = first + i;
        }
        __syncthreads();
        for (uint32_t b = 0; b < *n_big; b++) f(big[b]);
        __syncthreads();  // n_big and the list are reused by the next bins
    }
}

// The bins over the stage, shared out over the grid: before the second pass (place = 0) each
// entry counted in its bucket's cursor[key] (zeroed beforehand); after it (place = 1), each entry
// put at its bucket's next place, from the bucket's first (cursor[key], which the second pass
// set). `sorted` is not touched when counting.
extern "C" __global__ void __launch_bounds__(MSM_BIN_MAX_THREADS)
    msm_sort_big(uint64_t* sorted, uint32_t* cursor, const uint64_t* binned, const uint32_t* bin_offsets,
                 uint32_t n_bins, uint32_t cap, uint32_t place) {
    __shared__ uint32_t big[MSM_BIG_BINS];
    __shared__ uint32_t n_big;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    msm_each_big_bin(bin_offsets, n_bins, cap, big, &n_big, [&](uint32_t bin) {
        uint32_t lo = bin_offsets[bin], n = bin_offsets[bin + 1] - lo;
        for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride) {
            uint64_t e = binned[lo + j];
            uint32_t at = msm_claim(cursor, (uint32_t)(e >> 32));
            if (place) sorted[at] = e;
        }
    });
}

// f(in[j]) for j < n, thread t of the block taking j = t + i·blockDim.x in batches of
// MSM_STAGE_BATCH: each batch's loads are issued before any f (the second pass spent most of
// its time waiting on one load of `binned` after another, each behind the previous entry's
// shared-memory atomic: the second pass 7.4 → 6.2 ms at G1 2^26 on the H200).
#define MSM_STAGE_BATCH 16u
template <class F>
__device__ __forceinline__ void msm_each_stage_batch(const uint64_t* in, uint32_t n, F f) {
    for (uint32_t j0 = 0; j0 < n; j0 += MSM_STAGE_BATCH * blockDim.x) {
        uint64_t e[MSM_STAGE_BATCH];
#pragma unroll
        for (uint32_t r = 0; r < MSM_STAGE_BATCH; r++) {
            uint32_t j = j0 + r * blockDim.x + threadIdx.x;
            e[r] = j < n ? in[j] : 0;
        }
#pragma unroll
        for (uint32_t r = 0; r < MSM_STAGE_BATCH; r++) {
            if (j0 + r * blockDim.x + threadIdx.x < n) f(e[r]);
        }
    }
}

// Pass 2: block b takes bins b, b + gridDim.x, ... of the n_bins (all windows', laid out as
// msm_bin_layout_t says). Dynamic shared memory: `cap` entries, then one counter per bucket of
// the widest bin (8·cap + 4·2^(bin_log2 + wide_extra) bytes). A bin
// of at most `cap` entries is counted per bucket, its buckets' offsets written, and its entries
// sorted in the stage and written out in order, in whole sectors; the bin's entries are read
// twice (to count, then to place), the second time mostly from L2 (G1 2^24: 1.74 ms when
// msm_digits counted per bucket, 2.12 ms counting here, H200). A larger one's counts,
// which msm_sort_big left in `cursor`, become its buckets' offsets, in `offsets` and in
// `cursor` (where msm_sort_big then claims places). Every entry of `offsets` is written (the keys of
// a narrow window's upper half, in no bin, get the window's end), the last
// (offsets[windows·half]) the number of entries. Any block size up to MSM_BIN_MAX_THREADS, a
// multiple of 32.
extern "C" __global__ void __launch_bounds__(MSM_BIN_MAX_THREADS)
    msm_sort_bin_buckets(uint64_t* sorted, uint32_t* offsets, uint32_t* cursor, const uint64_t* binned,
                         const uint32_t* bin_offsets, uint32_t n_bins, uint32_t cap, uint32_t half,
                         uint32_t bins, uint32_t bin_log2, uint32_t wide_windows, uint32_t wide_extra) {
    msm_bin_layout_t layout{half, bins, bin_log2, wide_windows, wide_extra};
    CUZK_DYNAMIC_SHARED(uint64_t, stage);
    __shared__ uint32_t big[MSM_BIG_BINS];  // the bins over the stage
    __shared__ uint32_t n_big;
    __shared__ uint32_t scratch[MSM_BIN_MAX_THREADS];  // the scans'
    uint32_t* place = reinterpret_cast<uint32_t*>(stage + cap);
    uint32_t windows = n_bins / bins;
    if (blockIdx.x == 0 && threadIdx.x == 0) offsets[windows * half] = bin_offsets[n_bins];
    for (uint32_t bin = blockIdx.x; bin < n_bins; bin += gridDim.x) {
        uint32_t k0 = layout.first_key(bin), keys = layout.keys(bin);
        uint32_t lo = bin_offsets[bin], n = bin_offsets[bin + 1] - lo;
        if (n > cap) continue;  // below
        for (uint32_t k = threadIdx.x; k < keys; k += blockDim.x) place[k] = 0;
        __syncthreads();
        // The bin's entries MSM_STAGE_BATCH per thread at a time, their loads issued together,
        // so that a thread waits for memory once a batch rather than once an entry.
        msm_each_stage_batch(binned + lo, n,
                             [&](uint64_t e) { atomicAdd(&place[(uint32_t)(e >> 32) - k0], 1u); });
        __syncthreads();
        msm_block_scan(place, place, keys, 0, scratch);
        for (uint32_t k = threadIdx.x; k < keys; k += blockDim.x) offsets[k0 + k] = lo + place[k];
        __syncthreads();  // the counters become the buckets' next places below
        msm_each_stage_batch(binned + lo, n,
                             [&](uint64_t e) { stage[atomicAdd(&place[(uint32_t)(e >> 32) - k0], 1u)] = e; });
        __syncthreads();
        for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) sorted[lo + j] = stage[j];
        __syncthreads();  // the counters and the stage are reused by the next bin
    }
    // The big bins' offsets, each bin by one block (its counts are read, then overwritten).
    msm_each_big_bin(bin_offsets, n_bins, cap, big, &n_big, [&](uint32_t bin) {
        if (bin % gridDim.x != blockIdx.x) return;
        uint32_t k0 = layout.first_key(bin), keys = layout.keys(bin);
        msm_block_scan(cursor + k0, cursor + k0, keys, bin_offsets[bin], scratch);
        for (uint32_t k = threadIdx.x; k < keys; k += blockDim.x) offsets[k0 + k] = cursor[k0 + k];
    });
    // A narrow window's upper half, where no digit falls: each offset there is the window's end.
    if (wide_extra && windows > wide_windows) {
        uint32_t upper = half / 2;
        uint64_t n_upper = (uint64_t)(windows - wide_windows) * upper;
        uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
        for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_upper; i += stride) {
            uint32_t w = wide_windows + (uint32_t)(i / upper);
            offsets[w * half + upper + (uint32_t)(i % upper)] = bin_offsets[(w + 1) * bins];
        }
    }
}

// buckets[key] += acc (skipped for infinity).
template <class F>
__device__ __forceinline__ void msm_bucket_add(xyzz_t<F>* buckets, uint32_t key, const xyzz_t<F>& acc) {
    if (acc.is_inf()) return;
    xyzz_t<F> b = buckets[key];
    xyzz_add(b, acc);
    buckets[key] = b;
}

// Complete runs waiting to be added into their buckets: held per thread (local memory) and added
// after the thread's loop, so that the threads of a warp make these full additions together.
template <class F>
struct msm_pending_runs {
    xyzz_t<F> points[MSM_FLUSH_SLOTS];
    uint32_t keys[MSM_FLUSH_SLOTS];
    uint32_t count;

    __device__ __forceinline__ void push(xyzz_t<F>* buckets, uint32_t key, const xyzz_t<F>& acc) {
        if (acc.is_inf()) return;
        if (count < MSM_FLUSH_SLOTS) {
            points[count] = acc;
            keys[count] = key;
            count++;
        } else {
            msm_bucket_add(buckets, key, acc);  // more runs than slots: add now
        }
    }

    __device__ __forceinline__ void flush(xyzz_t<F>* buckets) {
        for (uint32_t i = 0; i < MSM_FLUSH_SLOTS; i++) {
            if (i < count) msm_bucket_add(buckets, keys[i], points[i]);
        }
    }
};

// Level 0 of the segmented bucket sums (see the header). Thread t of n_threads sums sorted
// entries [t·seg_len, t·seg_len + seg_len) of the n = counts[n_entries_at] valid ones.
template <class F>
__device__ __forceinline__ void msm_accumulate(xyzz_t<F>* buckets, uint32_t* part_keys, xyzz_t<F>* part_points,
                                               const uint64_t* sorted, const uint32_t* counts,
                                               uint32_t n_entries_at, const affine_t<F>* bases,
                                               uint64_t base_offset, uint32_t seg_len, uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint32_t n = counts[n_entries_at];
    uint64_t begin64 = (uint64_t)t * seg_len;
    if (begin64 >= n) {
        part_keys[2 * t] = MSM_INVALID | MSM_EMPTY;
        part_keys[2 * t + 1] = MSM_INVALID | MSM_EMPTY;
        return;
    }
    uint32_t begin = (uint32_t)begin64;
    uint32_t end = n - begin < seg_len ? n : begin + seg_len;
    uint32_t first_key = (uint32_t)(sorted[begin] >> 32);
    uint32_t last_key = (uint32_t)(sorted[end - 1] >> 32);
    bool start_shared = begin > 0 && (uint32_t)(sorted[begin - 1] >> 32) == first_key;
    bool end_shared = end < n && (uint32_t)(sorted[end] >> 32) == last_key;
    uint32_t head_key = first_key | MSM_EMPTY;
    uint32_t tail_key = last_key | MSM_EMPTY;

    msm_pending_runs<F> pending;
    pending.count = 0;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    uint32_t cur = first_key;
    bool first = true;
    for (uint32_t j = begin; j < end; j++) {
        uint64_t entry = sorted[j];
        uint32_t k = (uint32_t)(entry >> 32);
        uint32_t ref = (uint32_t)entry;
        if (k != cur) {
            if (first && start_shared) {
                part_points[2 * t] = acc;
                head_key = cur;
            } else {
                pending.push(buckets, cur, acc);
            }
            acc = xyzz_t<F>::inf();
            cur = k;
            first = false;
        }
        affine_t<F> p = bases[base_offset + (ref & MSM_KEY_MASK)];
        p.y = f_cneg(p.y, (ref & MSM_SIGN) != 0);
        xyzz_add_affine(acc, p);
    }
    if (first && start_shared) {
        part_points[2 * t] = acc;
        head_key = cur;
    } else if (end_shared) {
        part_points[2 * t + 1] = acc;
        tail_key = cur;
    } else {
        pending.push(buckets, cur, acc);
    }
    part_keys[2 * t] = head_key;
    part_keys[2 * t + 1] = tail_key;
    pending.flush(buckets);
}

// Levels 1 and up: the same segmented sum over n keyed XYZZ partial sums (in_keys may carry
// MSM_EMPTY, and MSM_INVALID past the end of the data), writing partials for the next level.
template <class F>
__device__ __forceinline__ void msm_merge(xyzz_t<F>* buckets, uint32_t* out_keys, xyzz_t<F>* out_points,
                                          const uint32_t* in_keys, const xyzz_t<F>* in_points, uint32_t n,
                                          uint32_t seg_len, uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint64_t begin64 = (uint64_t)t * seg_len;
    if (begin64 >= n) {
        out_keys[2 * t] = MSM_INVALID | MSM_EMPTY;
        out_keys[2 * t + 1] = MSM_INVALID | MSM_EMPTY;
        return;
    }
    uint32_t begin = (uint32_t)begin64;
    uint32_t end = n - begin < seg_len ? n : begin + seg_len;
    uint32_t first_key = in_keys[begin] & MSM_KEY_MASK;
    uint32_t last_key = in_keys[end - 1] & MSM_KEY_MASK;
    bool start_shared = begin > 0 && (in_keys[begin - 1] & MSM_KEY_MASK) == first_key;
    bool end_shared = end < n && (in_keys[end] & MSM_KEY_MASK) == last_key;
    uint32_t head_key = first_key | MSM_EMPTY;
    uint32_t tail_key = last_key | MSM_EMPTY;

    msm_pending_runs<F> pending;
    pending.count = 0;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    uint32_t cur = first_key;
    bool first = true;
    for (uint32_t j = begin; j < end; j++) {
        uint32_t raw = in_keys[j];
        uint32_t k = raw & MSM_KEY_MASK;
        if (k != cur) {
            if (first && start_shared) {
                out_points[2 * t] = acc;
                head_key = cur;
            } else if (cur != MSM_INVALID) {
                pending.push(buckets, cur, acc);
            }
            acc = xyzz_t<F>::inf();
            cur = k;
            first = false;
        }
        if (!(raw & MSM_EMPTY) && k != MSM_INVALID) xyzz_add(acc, in_points[j]);
    }
    if (cur == MSM_INVALID) {
        // Runs past the end of the data carry nothing.
    } else if (first && start_shared) {
        out_points[2 * t] = acc;
        head_key = cur;
    } else if (end_shared) {
        out_points[2 * t + 1] = acc;
        tail_key = cur;
    } else {
        pending.push(buckets, cur, acc);
    }
    out_keys[2 * t] = head_key;
    out_keys[2 * t + 1] = tail_key;
    pending.flush(buckets);
}

// One level of the bucket reduction, for all windows at once: thread t of n_segments reads
// in_r[t·seg .. t·seg + seg) (segment s = t mod S of window t / S, windows contiguous) and writes
//   R = Σ_j in_r[j],   T = Σ_j j·in_r[j]  (j = 0..seg-1, by running sums from the top),
//   first level: C = T + R  (bucket j holds digit j + 1);
//   later levels: C = Σ_j in_c[j] + 2^scale_log2 · T.
// With these, a window's Σ_k k·B_k = Σ_s C_s + 2^(scale_log2 + log2 seg)·Σ_s s·R_s, which the
// next level (or the host) reduces the same way. Cost per thread: 2·seg (3·seg) additions.
template <class F>
__device__ __forceinline__ void msm_reduce(xyzz_t<F>* out_c, xyzz_t<F>* out_r, const xyzz_t<F>* in_c,
                                           const xyzz_t<F>* in_r, uint32_t n_segments, uint32_t seg,
                                           uint32_t scale_log2, uint32_t first_level) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_segments) return;
    uint64_t base = (uint64_t)t * seg;
    xyzz_t<F> running = xyzz_t<F>::inf();
    xyzz_t<F> weighted = xyzz_t<F>::inf();
    for (uint32_t j = seg - 1; j >= 1; j--) {
        xyzz_add(running, in_r[base + j]);
        xyzz_add(weighted, running);
    }
    xyzz_add(running, in_r[base]);
    xyzz_t<F> c;
    if (first_level) {
        c = weighted;
        xyzz_add(c, running);
    } else {
        c = xyzz_t<F>::inf();
        for (uint32_t j = 0; j < seg; j++) xyzz_add(c, in_c[base + j]);
        for (uint32_t k = 0; k < scale_log2; k++) weighted = xyzz_dbl(weighted);
        xyzz_add(c, weighted);
    }
    out_c[t] = c;
    out_r[t] = running;
}

// Batch addition, selection by bitmap: thread t sums the bases of the set bits of words
// [t·words_per_thread, ...) (bits at or past n_bits ignored) into out[t].
template <class F>
__device__ __forceinline__ void msm_batch_bitmap(xyzz_t<F>* out, const affine_t<F>* bases, const uint64_t* words,
                                                 uint64_t n_bits, uint32_t words_per_thread, uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint64_t n_words = (n_bits + 63) / 64;
    uint64_t w0 = (uint64_t)t * words_per_thread;
    uint64_t w1 = w0 + words_per_thread < n_words ? w0 + words_per_thread : n_words;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint64_t wi = w0; wi < w1; wi++) {
        uint64_t word = words[wi];
        uint64_t first_bit = wi * 64;
        if (first_bit + 64 > n_bits) word &= (1ull << (n_bits - first_bit)) - 1;
        while (word) {
            uint32_t bit = msm_ctz64(word);
            word &= word - 1;
            xyzz_add_affine(acc, bases[first_bit + bit]);
        }
    }
    out[t] = acc;
}

// Batch addition, selection by index list: thread t sums bases[indices[j]] for its j.
template <class F>
__device__ __forceinline__ void msm_batch_indices(xyzz_t<F>* out, const affine_t<F>* bases, const uint32_t* indices,
                                                  uint32_t n_indices, uint32_t per_thread, uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint64_t j0 = (uint64_t)t * per_thread;
    uint64_t j1 = j0 + per_thread < n_indices ? j0 + per_thread : n_indices;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint64_t j = j0; j < j1; j++) xyzz_add_affine(acc, bases[indices[j]]);
    out[t] = acc;
}

// Batch addition of every base: thread t sums bases [t·per_thread, ...).
template <class F>
__device__ __forceinline__ void msm_batch_range(xyzz_t<F>* out, const affine_t<F>* bases, uint64_t n,
                                                uint32_t per_thread, uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint64_t j0 = (uint64_t)t * per_thread;
    uint64_t j1 = j0 + per_thread < n ? j0 + per_thread : n;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint64_t j = j0; j < j1; j++) xyzz_add_affine(acc, bases[j]);
    out[t] = acc;
}

// out[t] = Σ in[t·per_thread .. t·per_thread + per_thread) (XYZZ sums of partial sums).
template <class F>
__device__ __forceinline__ void msm_sum(xyzz_t<F>* out, const xyzz_t<F>* in, uint32_t n, uint32_t per_thread,
                                        uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint64_t j0 = (uint64_t)t * per_thread;
    uint64_t j1 = j0 + per_thread < n ? j0 + per_thread : n;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint64_t j = j0; j < j1; j++) xyzz_add(acc, in[j]);
    out[t] = acc;
}

// The extern "C" entry points, one set per group. `msm_accumulate` runs three blocks of
// POINT_BLOCK (128) threads per SM, at most 168 registers per thread (G1 needs 197 unbounded, G2
// 228): 12 warps per SM instead of 8 hide more of the multiplications' dependent latency, which
// is what holds that kernel (ncu, G1 2^22: heavy multiply pipe 81% busy, 11.7 warps per SM).
// Measured on the H200 in alternating runs: G1 accumulate 96.9 -> 95.4 ms at 2^24, G2 unchanged
// (docs/benchmarks.md).
#define MSM_GROUP_KERNELS(G, F)                                                                           \
    extern "C" __global__ void __launch_bounds__(128, 3) msm_accumulate_##G(                             \
        xyzz_t<F>* buckets, uint32_t* part_keys, xyzz_t<F>* part_points, const uint64_t* sorted,           \
        const uint32_t* counts, uint32_t n_entries_at, const affine_t<F>* bases, uint64_t base_offset,    \
        uint32_t seg_len, uint32_t n_threads) {                                                           \
        msm_accumulate<F>(buckets, part_keys, part_points, sorted, counts, n_entries_at, bases,           \
                          base_offset, seg_len, n_threads);                                               \
    }                                                                                                     \
    extern "C" __global__ void msm_merge_##G(xyzz_t<F>* buckets, uint32_t* out_keys, xyzz_t<F>* out_points, \
                                             const uint32_t* in_keys, const xyzz_t<F>* in_points,          \
                                             uint32_t n, uint32_t seg_len, uint32_t n_threads) {           \
        msm_merge<F>(buckets, out_keys, out_points, in_keys, in_points, n, seg_len, n_threads);            \
    }                                                                                                     \
    extern "C" __global__ void msm_reduce_##G(xyzz_t<F>* out_c, xyzz_t<F>* out_r, const xyzz_t<F>* in_c,  \
                                              const xyzz_t<F>* in_r, uint32_t n_segments, uint32_t seg,    \
                                              uint32_t scale_log2, uint32_t first_level) {                 \
        msm_reduce<F>(out_c, out_r, in_c, in_r, n_segments, seg, scale_log2, first_level);                 \
    }                                                                                                     \
    extern "C" __global__ void msm_batch_bitmap_##G(xyzz_t<F>* out, const affine_t<F>* bases,             \
                                                    const uint64_t* words, uint64_t n_bits,               \
                                                    uint32_t words_per_thread, uint32_t n_threads) {       \
        msm_batch_bitmap<F>(out, bases, words, n_bits, words_per_thread, n_threads);                      \
    }                                                                                                     \
    extern "C" __global__ void msm_batch_indices_##G(xyzz_t<F>* out, const affine_t<F>* bases,            \
                                                     const uint32_t* indices, uint32_t n_indices,         \
                                                     uint32_t per_thread, uint32_t n_threads) {            \
        msm_batch_indices<F>(out, bases, indices, n_indices, per_thread, n_threads);                      \
    }                                                                                                     \
    extern "C" __global__ void msm_batch_range_##G(xyzz_t<F>* out, const affine_t<F>* bases, uint64_t n,  \
                                                   uint32_t per_thread, uint32_t n_threads) {              \
        msm_batch_range<F>(out, bases, n, per_thread, n_threads);                                         \
    }                                                                                                     \
    extern "C" __global__ void msm_sum_##G(xyzz_t<F>* out, const xyzz_t<F>* in, uint32_t n,               \
                                           uint32_t per_thread, uint32_t n_threads) {                      \
        msm_sum<F>(out, in, n, per_thread, n_threads);                                                    \
    }

MSM_GROUP_KERNELS(g1, fp_t)
MSM_GROUP_KERNELS(g2, fp2_t)

// The batch-affine alternative to steps 4 and 5 (accumulate and merge).
#include "msm/affine.cuh"

// G1's sums run four blocks per SM (at most 128 registers, 16 warps): loading each pair's y and
// prefix with its x (msm_affine_sums) took them to 134 unbounded, three blocks; bounded, 126
// registers and no spills (H200: G1 2^24 sums 51.7 → 50.2 ms). G1's pairs, which
// wait on their loads (ncu on the H200: 14.7 cycles per issued instruction on the long
// scoreboard), run five blocks per SM (96 registers; 20 warps, against 16 at 99 registers
// unbounded; ptxas keeps 32 bytes on the stack, for the phased slot lookups): G1 2^24 pairs 22.97 → 21.84 ms, total 104.6 → 103.5 ms; six blocks
// measured 22.29 ms. G2's pairs and sums are held to three blocks of POINT_BLOCK per SM (168
// registers, 12 warps; ptxas spilled about 140 and 430 bytes then, none since the
// sums hold nothing across a call; unbounded they take more than 168 registers, 8 warps): on the H200, G2 2^24 sums
// 191.1 → 184.7 ms with the bound (pairs bounded in both), and before the by-value fp2_mul
// pairs 61.1 → 54.1 ms. Four blocks (128 registers, more spilling) ran the sums 32% slower
// (docs/benchmarks.md, tried and not kept).
MSM_AFFINE_KERNELS(g1, fp_t, __launch_bounds__(128, 4), __launch_bounds__(128, 5))
MSM_AFFINE_KERNELS(g2, fp2_t, __launch_bounds__(128, 3), __launch_bounds__(128, 3))
