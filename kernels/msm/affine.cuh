// Batch-affine bucket sums: the MSM's alternative to msm_accumulate/msm_merge (msm.cu), with
// affine additions whose inversions are shared by a whole round. Rust launch wrappers:
// crates/msm/src/gpu/affine.rs (one per kernel, same name).
//
// An affine addition costs one inversion and three multiplications; with the inversions of a
// round batched by Montgomery's trick (three multiplications per element and one inversion per
// round) it is about six Fp multiplications, against ten for the mixed XYZZ addition.
//
// The input is one chunk's counting sort (msm.cu): `offsets[k]` is the first sorted entry of key
// k and `offsets[k + 1]` the end. The keys of a group of windows [k0, k0 + n_keys) are summed
// together, level by level. Level 0 is the sorted entries themselves; at level L the values of
// key κ (counted from k0) are `count_L(κ)` affine points at `base_L(κ) + j` of that level's
// array (every x, then every y: msm_level_t), with
//     base_0(κ) = offsets[k0 + κ] − offsets[k0],   count_0(κ) = offsets[k0 + κ + 1] − offsets[k0 + κ],
//     base_{L+1}(κ) = ⌊(base_L(κ) + κ) / 2⌋,      count_{L+1}(κ) = ⌈count_L(κ) / 2⌉.
// Value j of level L + 1 is the sum of values 2j and 2j + 1 of level L (or value 2j alone, the
// last of an odd count). The base recurrence keeps the keys apart (base_{L+1}(κ + 1) −
// base_{L+1}(κ) ≥ count_{L+1}(κ), because base_L(κ + 1) − base_L(κ) ≥ count_L(κ)) and shrinks
// the arrays: size_{L+1} ≤ ⌊(size_L + n_keys) / 2⌋. No prefix sums are needed: each round
// writes the key of every slot it fills (key + 1; zero marks a gap), and level 0's keys are in
// the sorted entries. After enough rounds every key has at most AFFINE_TAIL values
// (crates/msm/src/gpu/affine.rs), which msm_affine_buckets adds into its XYZZ bucket, or, in the
// MSM's last chunk where the plan fuses them, msm_affine_reduce into the bucket reduction's first
// level.
//
// One round (level L → L + 1):
// 0. msm_affine_slots: one thread per input value writes the key of its pair's output slot
//    (integer work only), so that the arithmetic kernels give every thread `per` output slots
//    and no thread idles on the second value of a pair. Thread t of T takes slots t + k·T, so
//    that a warp's loads and stores of keys, entries and scratch are of consecutive elements.
// 1. msm_affine_pairs: each slot's denominator d (x_b − x_a, or 2·y_a to double, or none when
//    the pair needs no inversion: a lone value, infinity, P + (−P)), the product of the
//    thread's earlier denominators (the slot's prefix product, see msm_round_scratch_t) and of
//    all of them (totals[t]). Reads the x coordinates, the whole points only where they cannot
//    decide (equal or zero x).
// 2. msm_inv_up / msm_inv_top / msm_inv_down: the inverses of the threads' products by a tree of
//    the same trick (groups of `per`), down to a few values (at most 1024 in G2, 8 in G1), which
//    one block inverts with one inversion (msm_inv_top; fp_inv: safegcd divsteps).
// 3. msm_affine_sums: from the last slot back, each pair's 1/d out of the thread's inverse and
//    prefix, and the affine sum: λ = (y_b − y_a)/d or 3x_a²/d, x = λ² − x_a − x_b,
//    y = λ(x_a − x) − y_a. Reads both points again, writes the sum.
// Multiplications per addition: 1 (prefix) + 2 (inverse back-substitution) + 3 (sum), less
// three per thread (its first pair: msm_chain_start), plus about 3/per for the tree. Every addition is exact: doubling, a point plus its negation and the
// point at infinity (x = y = 0) are their own cases, never a zero denominator.
#pragma once

#include "curve/xyzz.cuh"

#define MSM_PAIR_ADD 0u  // a + b, distinct x
#define MSM_PAIR_DBL 1u  // a + a
#define MSM_PAIR_A 2u    // the sum is a (b absent or infinity)
#define MSM_PAIR_B 3u    // the sum is b (a infinity)
#define MSM_PAIR_INF 4u  // a + (−a)
#define MSM_NO_SLOT 0xffffffffu

struct msm_level_pos {
    uint32_t base, count;
};

// Level `level`'s base and count of key κ of the group starting at key k0 (entry e0), whose
// sorted entries are [start, end): the recurrences' closed forms, base_L(κ) = ⌊(base_0(κ) +
// κ·(2^L − 1)) / 2^L⌋ and count_L(κ) = ⌈count_0(κ) / 2^L⌉ (a floor of a floor of halvings is
// one floor, as for the ceilings), so that no loop, and no branch, lies between a slot's loads.
FR_HD msm_level_pos msm_level_at(uint32_t start, uint32_t end, uint32_t e0, uint32_t kappa, uint32_t level) {
    uint64_t span = (1ull << level) - 1;
    return msm_level_pos{(uint32_t)(((uint64_t)(start - e0) + (uint64_t)kappa * span) >> level),
                         (uint32_t)(((uint64_t)(end - start) + span) >> level)};
}

FR_HD msm_level_pos msm_level_of(const uint32_t* offsets, uint32_t k0, uint32_t e0, uint32_t kappa,
                                 uint32_t level) {
    return msm_level_at(offsets[k0 + kappa], offsets[k0 + kappa + 1], e0, kappa, level);
}

// Affine points move as 16-byte words: a point is 96 (G1) or 192 (G2) bytes and every array of
// them is a whole cuzk-gpu DeviceBuffer (cuMemAlloc: 256-byte aligned; cuzk-gpu makes no views
// at offsets), so each point is 16-byte aligned. Element-wise, ptxas
// issued one 4-byte load per limb, and the loads queued up behind each other (ncu: a third of
// msm_affine_pairs' stalls were a full load/store queue).
template <class T>
FR_HD T msm_load_words(const T* p) {
    static_assert(sizeof(T) % 16 == 0, "points are whole 16-byte words");
#if defined(__CUDA_ARCH__)
    T r;
    const uint4* src = reinterpret_cast<const uint4*>(p);
    uint4* dst = reinterpret_cast<uint4*>(&r);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); i++) dst[i] = src[i];
    return r;
#else
    return *p;
#endif
}

template <class F>
FR_HD affine_t<F> msm_load_affine(const affine_t<F>* p) {
    return msm_load_words(p);
}

// Stores a point (affine or XYZZ) as 16-byte words, for the same reason.
template <class T>
FR_HD void msm_store_words(T* p, const T& v) {
    static_assert(sizeof(T) % 16 == 0, "points are whole 16-byte words");
#if defined(__CUDA_ARCH__)
    const uint4* src = reinterpret_cast<const uint4*>(&v);
    uint4* dst = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); i++) dst[i] = src[i];
#else
    *p = v;
#endif
}

// The rounds' scratch field elements (prefix products, the inversion tree's values) lie
// word-major: 16-byte word w of element i of an array of `cap` elements is word w·cap + i, so
// a warp's threads, which take consecutive elements, read and write consecutive words. Element
// by element (one 4-byte access per limb, 48 or 96 bytes apart across the warp), every access
// touched 32 sectors: ncu on msm_inv_up_g1 (2^22, 3.7 M values) showed the L2 at 84% of its
// throughput for 0.62 TB/s and warps stalled on a full load/store queue 69% of the time.
template <class F>
FR_HD F msm_soa_load(const F* arr, uint64_t cap, uint64_t i) {
    static_assert(sizeof(F) % 16 == 0, "field elements are whole 16-byte words");
    F v;
    uint32_t* out = reinterpret_cast<uint32_t*>(&v);
#if defined(__CUDA_ARCH__)
    const uint4* words = reinterpret_cast<const uint4*>(arr);
#pragma unroll
    for (int w = 0; w < (int)(sizeof(F) / 16); w++) {
        uint4 q = words[w * cap + i];
        out[4 * w] = q.x;
        out[4 * w + 1] = q.y;
        out[4 * w + 2] = q.z;
        out[4 * w + 3] = q.w;
    }
#else
    const uint32_t* words = reinterpret_cast<const uint32_t*>(arr);
    for (int w = 0; w < (int)(sizeof(F) / 16); w++) {
        for (int j = 0; j < 4; j++) out[4 * w + j] = words[4 * (w * cap + i) + j];
    }
#endif
    return v;
}

template <class F>
FR_HD void msm_soa_store(F* arr, uint64_t cap, uint64_t i, const F& v) {
    const uint32_t* in = reinterpret_cast<const uint32_t*>(&v);
#if defined(__CUDA_ARCH__)
    uint4* words = reinterpret_cast<uint4*>(arr);
#pragma unroll
    for (int w = 0; w < (int)(sizeof(F) / 16); w++) {
        words[w * cap + i] = make_uint4(in[4 * w], in[4 * w + 1], in[4 * w + 2], in[4 * w + 3]);
    }
#else
    uint32_t* words = reinterpret_cast<uint32_t*>(arr);
    for (int w = 0; w < (int)(sizeof(F) / 16); w++) {
        for (int j = 0; j < 4; j++) words[4 * (w * cap + i) + j] = in[4 * w + j];
    }
#endif
}

// The levels above 0 lie as structures of arrays: a level array of `cap` values holds every
// value's x (cap field elements), then every value's y, so that value i's x is pts[i] and its y
// pts[cap + i]. msm_affine_pairs reads only the x coordinates, and with each point's x and y
// side by side it read whole points: DRAM moves 64-byte granules, and the x of two neighbouring
// 96-byte points touch all three granules of the pair (ncu, G1 2^22, the second round's pairs:
// 3.37 GB read for 17 M slots, the size of the whole level). The bases (level 0) are the caller's
// affine points, y right after x.
template <class F>
struct msm_level_t {
    F* x;
    uint64_t cap;

    FR_HD F* y_at(uint64_t i) const { return x + cap + i; }
};

// Value s of a level array, stored as its x and its y.
template <class F>
FR_HD void msm_store_value(msm_level_t<F> out, uint64_t s, const affine_t<F>& v) {
    msm_store_words(&out.x[s], v.x);
    msm_store_words(out.y_at(s), v.y);
}

template <class F>
FR_HD affine_t<F> msm_load_value(msm_level_t<F> in, uint64_t i) {
    return affine_t<F>{msm_load_words(&in.x[i]), msm_load_words(in.y_at(i))};
}

// Where value `idx` of level `level` lies: its x and whether its y is to be negated (a sorted
// entry's sign at level 0). Its y lies `msm_y_step` field elements after its x: one in a base
// point, the level's capacity in a level array.
template <class F>
struct msm_value_ref {
    const F* x;
    bool neg;
};

template <class F>
FR_HD uint64_t msm_y_step(uint32_t level, msm_level_t<F> pts) {
    return level == 0 ? 1 : pts.cap;
}

template <class F>
FR_HD msm_value_ref<F> msm_level_ref(uint32_t level, uint32_t idx, const uint64_t* sorted, uint32_t e0,
                                     const affine_t<F>* bases, uint64_t base_offset, msm_level_t<F> pts) {
    if (level == 0) {
        uint32_t ref = (uint32_t)sorted[e0 + idx];
        return msm_value_ref<F>{&bases[base_offset + (ref & MSM_KEY_MASK)].x, (ref & MSM_SIGN) != 0};
    }
    return msm_value_ref<F>{&pts.x[idx], false};
}

// The value's x, its y and the whole value, with its sign applied (y_step: msm_y_step).
template <class F>
FR_HD F msm_ref_x(const msm_value_ref<F>& r) {
    return msm_load_words(r.x);
}

template <class F>
FR_HD F msm_ref_y(const msm_value_ref<F>& r, uint64_t y_step) {
    return f_cneg(msm_load_words(r.x + y_step), r.neg);
}

template <class F>
FR_HD affine_t<F> msm_ref_value(const msm_value_ref<F>& r, uint64_t y_step) {
    return affine_t<F>{msm_ref_x(r), msm_ref_y(r, y_step)};
}

// Value `idx` of level `level`: a sorted entry's base point (sign applied) at level 0, else
// value idx of the level array. (msm_level_ref's lookup, written out: msm_affine_pairs and
// msm_affine_buckets were measured with this form, and routing them through msm_level_ref
// changes their code.)
template <class F>
FR_HD affine_t<F> msm_level_value(uint32_t level, uint32_t idx, const uint64_t* sorted, uint32_t e0,
                                  const affine_t<F>* bases, uint64_t base_offset, msm_level_t<F> pts) {
    if (level == 0) {
        uint32_t ref = (uint32_t)sorted[e0 + idx];
        affine_t<F> p = msm_load_affine(&bases[base_offset + (ref & MSM_KEY_MASK)]);
        p.y = f_cneg(p.y, (ref & MSM_SIGN) != 0);
        return p;
    }
    return msm_load_value(pts, idx);
}

// The inputs of output slot j of key κ: values 2j and 2j + 1 (when it exists) of the input level.
template <class F>
struct msm_pair_t {
    affine_t<F> a, b;
    uint32_t kind;
    F d;  // the denominator to invert (one when none)
};

template <class F>
FR_HD void msm_classify(msm_pair_t<F>& p, bool has_b) {
    p.d = F::one();
    if (!has_b || p.b.is_inf()) {
        p.kind = MSM_PAIR_A;
    } else if (p.a.is_inf()) {
        p.kind = MSM_PAIR_B;
    } else if (!f_eq(p.a.x, p.b.x)) {
        p.kind = MSM_PAIR_ADD;
        p.d = f_sub(p.b.x, p.a.x);
    } else if (f_eq(p.a.y, p.b.y) && !p.a.y.is_zero()) {
        p.kind = MSM_PAIR_DBL;
        p.d = f_dbl(p.a.y);
    } else {
        p.kind = MSM_PAIR_INF;  // b = −a (or a point of order two doubled)
    }
}

// Loads and classifies the pair of output slot j of key κ (input level `level`, position `in`).
template <class F>
FR_HD msm_pair_t<F> msm_load_pair(uint32_t level, msm_level_pos in, uint32_t j, const uint64_t* sorted, uint32_t e0,
                                  const affine_t<F>* bases, uint64_t base_offset, msm_level_t<F> pts) {
    msm_pair_t<F> p;
    uint32_t ia = in.base + 2 * j;
    bool has_b = 2 * j + 1 < in.count;
    p.a = msm_level_value<F>(level, ia, sorted, e0, bases, base_offset, pts);
    if (has_b) {
        p.b = msm_level_value<F>(level, ia + 1, sorted, e0, bases, base_offset, pts);
    } else {
        p.b = p.a;
    }
    msm_classify(p, has_b);
    return p;
}

FR_HD bool msm_needs_inverse(uint32_t kind) { return kind == MSM_PAIR_ADD || kind == MSM_PAIR_DBL; }

// The key (counted from k0) of value i of level `level`, or MSM_NO_SLOT for a gap: level 0 reads
// it from the sorted entry, later levels from the keys array the previous round wrote (key + 1,
// zero in a gap).
FR_HD uint32_t msm_level_key(uint32_t level, uint32_t i, const uint64_t* sorted, uint32_t e0, uint32_t k0,
                             const uint32_t* keys_in) {
    if (level == 0) return (uint32_t)(sorted[e0 + i] >> 32) - k0;
    uint32_t k = keys_in[i];
    return k == 0 ? MSM_NO_SLOT : k - 1;
}

// Round step 0: the keys of the next level's slots. Thread i takes value i of the input level
// (n_in of them); when it is the first of its pair (value j of its key with j even) it writes
// key + 1 at the pair's output slot. keys_out is zeroed beforehand, so zero marks a gap.
extern "C" __global__ void msm_affine_slots(uint32_t* keys_out, const uint32_t* keys_in, const uint32_t* offsets,
                                            uint32_t k0, uint32_t level_in, const uint64_t* sorted,
                                            uint32_t n_in) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_in) return;
    uint32_t e0 = offsets[k0];
    uint32_t kappa = msm_level_key(level_in, i, sorted, e0, k0, keys_in);
    if (kappa == MSM_NO_SLOT) return;
    msm_level_pos in = msm_level_of(offsets, k0, e0, kappa, level_in);
    uint32_t j2 = i - in.base;
    if (j2 & 1) return;  // the second value of a pair
    keys_out[(uint32_t)(((uint64_t)in.base + kappa) >> 1) + j2 / 2] = kappa + 1;
}

// Where the inputs of output slot s lie (keys_out as msm_affine_slots wrote it): its key's
// position at the input level and its index j there; invalid for a gap between two keys' slots.
struct msm_slot_t {
    msm_level_pos in;
    uint32_t j;
    bool valid;
};

// Output slot s's inputs from its key word (keys_out[s]) and its key's sorted entries [start,
// end). For a gap (key zero) the caller may pass any in-bounds entries (key 0's): the result is
// marked invalid.
FR_HD msm_slot_t msm_slot_at(uint32_t s, uint32_t key, uint32_t start, uint32_t end, uint32_t e0,
                             uint32_t level_in) {
    msm_slot_t slot;
    slot.valid = key != 0;
    uint32_t kappa = key - 1;
    slot.in = msm_level_at(start, end, e0, kappa, level_in);
    slot.j = s - (uint32_t)(((uint64_t)slot.in.base + kappa) >> 1);
    return slot;
}

// Branch-free: a gap's lookups read key 0's offsets, always in bounds, so that the loads of
// the key and of its offsets wait on nothing but each other.
FR_HD msm_slot_t msm_slot_of(uint32_t s, const uint32_t* keys_out, const uint32_t* offsets, uint32_t k0,
                             uint32_t e0, uint32_t level_in) {
    uint32_t key = keys_out[s];
    uint32_t kappa = key != 0 ? key - 1 : 0;
    return msm_slot_at(s, key, offsets[k0 + kappa], offsets[k0 + kappa + 1], e0, level_in);
}

// Output slots per thread of the arithmetic kernels (the host's AFFINE_PER): msm_affine_pairs
// locates all of a thread's slots before loading any point, so their lookups overlap.
#define MSM_AFFINE_PER 8u

// The prefix product of a thread's first pair that needs an inversion is one. msm_affine_pairs
// stores this marker there instead, and msm_affine_sums, which reaches that pair last, takes
// 1/d = inv for it and skips the update of inv, which no pair needs after it: two of its five
// multiplications per pair, once per thread. The marker's last 32-bit word is all ones, which
// no field value in Montgomery form (below p, whose top word is 0x1a0111ea) can have.
template <class F>
FR_HD F msm_chain_start() {
    F v = F::zero();
    reinterpret_cast<uint32_t*>(&v)[sizeof(F) / 4 - 1] = 0xffffffffu;
    return v;
}

template <class F>
FR_HD bool msm_is_chain_start(const F& v) {
    return reinterpret_cast<const uint32_t*>(&v)[sizeof(F) / 4 - 1] == 0xffffffffu;
}

// The round threads' scratch: each output slot's prefix product, and one product per thread in
// totals (`totals_cap` of them, word-major: msm_soa_load). The prefix products lie word-major in
// `prefix` (`prefix_cap` of them), or, when prefix_cap is zero, in the x of each slot's point in
// `out`, the output level (its x array), where msm_affine_sums reads it before writing the slot's sum over it
// in the same thread. The host chooses (`prefix_in_output` in crates/msm/src/gpu/plan/group.rs): in
// G2 the separate array is a quarter of the scratch, and without it twice as many windows fit a
// group; in G1 the output slot's half-sector stores cost more than the groups saved (H200,
// docs/benchmarks.md, tried and not kept).
template <class F>
struct msm_round_scratch_t {
    F* prefix;
    uint64_t prefix_cap;
    msm_level_t<F> out;
    F* totals;
    uint64_t totals_cap;

    FR_HD void store_prefix(uint64_t s, const F& v) const {
        if (prefix_cap == 0) {
            msm_store_words(&out.x[s], v);
        } else {
            msm_soa_store(prefix, prefix_cap, s, v);
        }
    }
    FR_HD F load_prefix(uint64_t s) const {
        return prefix_cap == 0 ? msm_load_words(&out.x[s]) : msm_soa_load(prefix, prefix_cap, s);
    }
};

// Round step 1 (see the header). Thread t of n_threads takes the output slots t + k·n_threads
// for k < per (per <= MSM_AFFINE_PER; n_out slots), so that a warp's threads take consecutive
// slots: for each pair that needs an inversion, the product of the thread's earlier
// denominators (exclusive: the slot's prefix product); totals[t] is the product of all of them.
template <class F>
__device__ __forceinline__ void msm_affine_pairs(msm_round_scratch_t<F> scratch, const uint32_t* keys_out,
                                                 const uint32_t* offsets, uint32_t k0, uint32_t level_in,
                                                 const uint64_t* sorted, const affine_t<F>* bases,
                                                 uint64_t base_offset, msm_level_t<F> pts_in, uint32_t n_out,
                                                 uint32_t per, uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint32_t e0 = offsets[k0];
    // ncu: each slot's chain of dependent loads (key, offsets, entries, points), slot after
    // slot, left this kernel waiting on memory most of the time; the lookups of all slots
    // first, in phases: every slot's key, then every key's offsets (key 0's for a gap or a slot
    // past the end, whose key reads as zero), with no branch between the loads of a phase, so
    // that the thread waits on each phase once (sm_90 SASS: slot by slot, with a branch on
    // each key and a loop over the level, it waited on each slot's key and offsets in turn).
    msm_slot_t slots[MSM_AFFINE_PER];
    {
        uint32_t key[MSM_AFFINE_PER], start[MSM_AFFINE_PER], end[MSM_AFFINE_PER];
#pragma unroll
        for (uint32_t k = 0; k < MSM_AFFINE_PER; k++) {
            uint64_t s = (uint64_t)k * n_threads + t;
            key[k] = k < per && s < n_out ? keys_out[s] : 0;
        }
#pragma unroll
        for (uint32_t k = 0; k < MSM_AFFINE_PER; k++) {
            uint32_t kappa = key[k] != 0 ? key[k] - 1 : 0;
            start[k] = offsets[k0 + kappa];
            end[k] = offsets[k0 + kappa + 1];
        }
#pragma unroll
        for (uint32_t k = 0; k < MSM_AFFINE_PER; k++) {
            slots[k] = msm_slot_at(k * n_threads + t, key[k], start[k], end[k], e0, level_in);
        }
    }
    // Where each pair's values lie: at level 0 a value is a sorted entry's base, one dependent
    // load further, so those entries are loaded for all slots before any point (ncu: the pairs
    // kernel waits on loads most of its cycles). Which slots hold a pair is kept as one mask:
    // the slots' positions are not needed past this point (the rare pair that the x
    // coordinates cannot decide looks its slot up again), so they are not held across the
    // multiplications, which in G2 are calls that save what is live.
    uint32_t at[2 * MSM_AFFINE_PER];
    uint32_t paired = 0;
#pragma unroll
    for (uint32_t k = 0; k < MSM_AFFINE_PER; k++) {
        uint32_t ia = slots[k].in.base + 2 * slots[k].j;
        at[2 * k] = ia;
        at[2 * k + 1] = ia + 1;
        if (slots[k].valid && 2 * slots[k].j + 1 < slots[k].in.count) {
            paired |= 1u << k;
            if (level_in == 0) {
                at[2 * k] = (uint32_t)sorted[e0 + ia] & MSM_KEY_MASK;
                at[2 * k + 1] = (uint32_t)sorted[e0 + ia + 1] & MSM_KEY_MASK;
            }
        }
    }
    // Value i's x: element 2i of the bases (x and y of each point side by side), element i of a
    // level array.
    const F* src_x = level_in == 0 ? &bases[base_offset].x : pts_in.x;
    const uint32_t x_stride = level_in == 0 ? 2 : 1;
    // The product of the denominators so far (one while there are none: `started` false).
    F q = F::one();
    bool started = false;
#pragma unroll
    for (uint32_t k = 0; k < MSM_AFFINE_PER; k++) {
        // A lone value needs no inversion. Otherwise the x coordinates alone decide the common
        // case, two distinct non-zero x (neither is infinity, which has x = 0): d = x_b − x_a,
        // as msm_classify gives. Anything else loads the whole pair and classifies it.
        if (!(paired & (1u << k))) continue;
        uint64_t s = (uint64_t)k * n_threads + t;
        F xa = msm_load_words(&src_x[(uint64_t)at[2 * k] * x_stride]);
        F xb = msm_load_words(&src_x[(uint64_t)at[2 * k + 1] * x_stride]);
        F d;
        if (!xa.is_zero() && !xb.is_zero() && !f_eq(xa, xb)) {
            d = f_sub(xb, xa);
        } else {
            msm_slot_t slot = msm_slot_of((uint32_t)s, keys_out, offsets, k0, e0, level_in);
            msm_pair_t<F> p =
                msm_load_pair<F>(level_in, slot.in, slot.j, sorted, e0, bases, base_offset, pts_in);
            if (!msm_needs_inverse(p.kind)) continue;
            d = p.d;
        }
        if (started) {
            scratch.store_prefix(s, q);
            q = f_mul(q, d);
        } else {
            scratch.store_prefix(s, msm_chain_start<F>());
            q = d;
            started = true;
        }
    }
    msm_soa_store(scratch.totals, scratch.totals_cap, t, q);
}

// A pair the x coordinates cannot decide (a zero x, or equal x), classified from its whole
// values (xa, xb loaded already): false, with the sum stored at `out`, where it needs no
// inversion (a value plus infinity, or P + (−P)); else true, with its kind and denominator in p.
template <class F>
FR_HD bool msm_classify_whole(msm_pair_t<F>& p, const F& xa, const F& xb, const msm_value_ref<F>& ra,
                              const msm_value_ref<F>& rb, uint64_t y_step, msm_level_t<F> out, uint64_t s) {
    p.a = affine_t<F>{xa, msm_ref_y(ra, y_step)};
    p.b = affine_t<F>{xb, msm_ref_y(rb, y_step)};
    msm_classify(p, true);
    if (msm_needs_inverse(p.kind)) return true;
    affine_t<F> r = p.kind == MSM_PAIR_A   ? p.a
                    : p.kind == MSM_PAIR_B ? p.b
                                           : affine_t<F>{F::zero(), F::zero()};
    msm_store_value(out, s, r);
    return false;
}

// Two field values per thread of a block of at most MSM_SUMS_THREADS in shared memory, word-major
// (word w of thread t's cell c at [c][w][t]: a warp's accesses fall in distinct banks), for G2's
// msm_affine_sums. Its Fp2 multiplications are calls, and a value live across a call is saved
// to local memory: ncu on msm_affine_sums_g2 (2^22, first round, H200) counted 1.2 G
// sectors of local loads and stores, about 2.6 KB per pair, from the running inverse and one
// more value held across each of the pair's five calls (six when doubling), against none in
// msm_affine_pairs_g2. The host's block (POINT_BLOCK) is checked against MSM_SUMS_THREADS
// (crates/msm/src/gpu/affine.rs).
// G1 does not use them (its multiplications are inlined).
#define MSM_SUMS_THREADS 128u
template <class F>
__device__ __forceinline__ uint32_t (*msm_sums_cells())[sizeof(F) / 4][MSM_SUMS_THREADS] {
    __shared__ uint32_t cells[2][sizeof(F) / 4][MSM_SUMS_THREADS];
    return cells;
}

template <class F>
struct msm_smem_cells_t {
    __device__ __forceinline__ F load(int c) const {
        F v;
        uint32_t* out = reinterpret_cast<uint32_t*>(&v);
        uint32_t (*cells)[sizeof(F) / 4][MSM_SUMS_THREADS] = msm_sums_cells<F>();
#pragma unroll
        for (int w = 0; w < (int)(sizeof(F) / 4); w++) out[w] = cells[c][w][threadIdx.x];
        return v;
    }
    __device__ __forceinline__ void store(int c, const F& v) const {
        const uint32_t* in = reinterpret_cast<const uint32_t*>(&v);
        uint32_t (*cells)[sizeof(F) / 4][MSM_SUMS_THREADS] = msm_sums_cells<F>();
#pragma unroll
        for (int w = 0; w < (int)(sizeof(F) / 4); w++) cells[c][w][threadIdx.x] = in[w];
    }
};

// Round step 3 (see the header): the slots of msm_affine_pairs' thread t, from the last back,
// given the inverse of that thread's product of denominators (inv_totals, laid out as totals).
// Few values stay live across the (called, for G2) multiplications: the coordinates are read
// again where they are needed rather than held, since registers, not loads, bound this kernel
// (ncu, G2 2^22: the whole pair held, 255 registers, 8 warps per SM, issue slots 28% busy).
template <class F>
__device__ __forceinline__ void msm_affine_sums(msm_level_t<F> pts_out, msm_round_scratch_t<F> scratch,
                                                const F* inv_totals, const uint32_t* keys_out,
                                                const uint32_t* offsets, uint32_t k0, uint32_t level_in,
                                                const uint64_t* sorted, const affine_t<F>* bases,
                                                uint64_t base_offset, msm_level_t<F> pts_in, uint32_t n_out,
                                                uint32_t per, uint32_t n_threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) return;
    uint32_t e0 = offsets[k0];
    const uint64_t y_step = msm_y_step(level_in, pts_in);
    // 1 / (product of the denominators of the pairs not yet visited); in G2 in cell 1.
    F inv = msm_soa_load(inv_totals, scratch.totals_cap, t);
    msm_smem_cells_t<F> cell;
    if constexpr (sizeof(F) != sizeof(fp_t)) cell.store(1, inv);
    for (uint32_t k = per; k-- > 0;) {
        uint64_t s = (uint64_t)k * n_threads + t;
        if (s >= n_out) continue;
        msm_slot_t slot = msm_slot_of((uint32_t)s, keys_out, offsets, k0, e0, level_in);
        if (!slot.valid) continue;
        uint32_t ia = slot.in.base + 2 * slot.j;
        msm_value_ref<F> ra = msm_level_ref<F>(level_in, ia, sorted, e0, bases, base_offset, pts_in);
        if (2 * slot.j + 1 >= slot.in.count) {
            // A lone value moves up as it is.
            msm_store_value(pts_out, s, msm_ref_value(ra, y_step));
            continue;
        }
        msm_value_ref<F> rb = msm_level_ref<F>(level_in, ia + 1, sorted, e0, bases, base_offset, pts_in);
        // λ = num / d with 1/d = inv · prefix; inv then moves past this pair (inv · d). d and
        // num come from the x coordinates in the common case (as msm_affine_pairs decided it),
        // else from the classified pair. Then x = λ² − x_a − x_b, y = λ(x_a − x) − y_a (x_b = x_a
        // when doubling).
        if constexpr (sizeof(F) == sizeof(fp_t)) {
            // G1 (inlined multiplications): d and num formed first, from the coordinates the
            // pair is classified by. Both points' y and the slot's prefix product are loaded
            // with the x coordinates, before the comparisons: loaded where each is used
            // (sm_90 SASS), the slot waited on three loads in a row, the x, then the y behind
            // the branch on x, then the prefix.
            F d, num;
            F pre;
            {
                F xa = msm_ref_x(ra);
                F xb = msm_ref_x(rb);
                F ya = msm_ref_y(ra, y_step);
                F yb = msm_ref_y(rb, y_step);
                pre = scratch.load_prefix(s);
                if (!xa.is_zero() && !xb.is_zero() && !f_eq(xa, xb)) {
                    d = f_sub(xb, xa);
                    num = f_sub(yb, ya);
                } else {
                    msm_pair_t<F> p;
                    if (!msm_classify_whole(p, xa, xb, ra, rb, y_step, pts_out, s)) continue;
                    d = p.d;
                    if (p.kind == MSM_PAIR_ADD) {
                        num = f_sub(p.b.y, p.a.y);
                    } else {
                        F x2 = f_sqr(p.a.x);
                        num = f_add(f_dbl(x2), x2);
                    }
                }
            }
            // The thread's first pair (msm_chain_start): 1/d is inv itself, and inv is not
            // needed after it.
            const bool first = msm_is_chain_start(pre);
            F lambda = f_mul(num, first ? inv : f_mul(inv, pre));
            if (!first) inv = f_mul(inv, d);
            F xa = msm_ref_x(ra);
            affine_t<F> r;
            r.x = f_sub(f_sub(f_sqr(lambda), xa), msm_ref_x(rb));
            r.y = f_sub(f_mul(lambda, f_sub(xa, r.x)), msm_ref_y(ra, y_step));
            msm_store_value(pts_out, s, r);
        } else {
            // G2: each multiplication is a call, which saves what its caller holds, so d and
            // num are formed where each is consumed, from the coordinates loaded again
            // (H200: sums 180.8 -> 176 ms at 2^24), and the field values needed after a
            // call wait in shared memory (H200: 176.4 -> 162.8 ms). The same order in G1
            // made its sums 4 to 8% slower (it reloads what G1 can hold), hence the two forms.
            uint32_t kind = MSM_PAIR_ADD;
            {
                F xa = msm_ref_x(ra);
                F xb = msm_ref_x(rb);
                if (xa.is_zero() || xb.is_zero() || f_eq(xa, xb)) {
                    msm_pair_t<F> p;
                    if (!msm_classify_whole(p, xa, xb, ra, rb, y_step, pts_out, s)) continue;
                    kind = p.kind;
                }
            }
            // Shared memory holds inv (cell 1) and 1/d, then λ (cell 0) between the calls, and
            // x goes to the output before the last one, so that no computed field value stays
            // live across a call (msm_smem_cells_t); the coordinates are loaded where needed.
            // The thread's first pair (msm_chain_start): 1/d is inv itself, and inv is not
            // needed after it.
            F pre = scratch.load_prefix(s);
            if (msm_is_chain_start(pre)) {
                cell.store(0, cell.load(1));
            } else {
                cell.store(0, f_mul(cell.load(1), pre));
                F d = kind == MSM_PAIR_ADD ? f_sub(msm_ref_x(rb), msm_ref_x(ra)) : f_dbl(msm_ref_y(ra, y_step));
                cell.store(1, f_mul(cell.load(1), d));
            }
            if (kind == MSM_PAIR_ADD) {
                cell.store(0, f_mul(f_sub(msm_ref_y(rb, y_step), msm_ref_y(ra, y_step)), cell.load(0)));
            } else {
                F x2 = f_sqr(msm_ref_x(ra));
                cell.store(0, f_mul(f_add(f_dbl(x2), x2), cell.load(0)));
            }
            F xa = msm_ref_x(ra);
            F x = f_sub(f_sub(f_sqr(cell.load(0)), xa), msm_ref_x(rb));
            msm_store_words(&pts_out.x[s], x);
            F y = f_sub(f_mul(cell.load(0), f_sub(xa, x)), msm_ref_y(ra, y_step));
            msm_store_words(pts_out.y_at(s), y);
        }
    }
}

// A level of the batch inversion tree: `n` values in an array of `cap` (word-major), and the
// next level up (one value per thread of the level below) in an array of `next_cap`.
struct msm_tree_level_t {
    uint32_t n;
    uint64_t cap, next_cap;
};

// Batch inversion tree, going up: thread g of n_threads = ⌈n / per⌉ takes vals[g + k·n_threads]
// for k < per (within n), so that a warp takes consecutive values; writes their running
// products to pre and their product to totals[g].
template <class F>
__device__ __forceinline__ void msm_inv_up(F* pre, F* totals, const F* vals, msm_tree_level_t lv, uint32_t per,
                                           uint32_t n_threads) {
    uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n_threads) return;
    F q = F::one();
    for (uint64_t i = g; i < lv.n && i < (uint64_t)per * n_threads; i += n_threads) {
        q = f_mul(q, msm_soa_load(vals, lv.cap, i));
        msm_soa_store(pre, lv.cap, i, q);
    }
    msm_soa_store(totals, lv.next_cap, g, q);
}

// Going down: thread g, given inv_totals[g] = 1 / (product of its values), turns the running
// products in inv (as msm_inv_up wrote them to pre) into the inverses of vals, in place.
template <class F>
__device__ __forceinline__ void msm_inv_down(F* inv, const F* vals, const F* inv_totals, msm_tree_level_t lv,
                                             uint32_t per, uint32_t n_threads) {
    uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n_threads || g >= lv.n) return;
    // The thread's last value: g + k·n_threads for the largest k < per within n.
    uint64_t k_last = ((uint64_t)lv.n - 1 - g) / n_threads;
    if (k_last >= per) k_last = per - 1;
    F acc = msm_soa_load(inv_totals, lv.next_cap, g);
    for (uint64_t i = g + k_last * n_threads; i > g; i -= n_threads) {
        F v = msm_soa_load(vals, lv.cap, i);
        msm_soa_store(inv, lv.cap, i, f_mul(acc, msm_soa_load(inv, lv.cap, i - n_threads)));
        acc = f_mul(acc, v);
    }
    msm_soa_store(inv, lv.cap, g, acc);
}

// The top of the tree, one block of blockDim.x threads (a power of two, at most MSM_TOP_THREADS):
// inv[i] = 1 / vals[i] for i < n (arrays of `cap`), with one inversion. Thread t takes the values
// t + k·blockDim.x, as msm_inv_up does, and the threads' products are inverted by a binary tree
// in shared memory (node i is the product of nodes 2i and 2i + 1; the leaves are the threads'
// products). The host picks the block per group (`Group::tree_top` in
// crates/msm/src/gpu/plan/group.rs): in G2 a block of 128 takes up to 1024 values, so the tree's
// smallest levels are not launched one by one (15–21 µs a launch on the H200); in G1 one thread
// takes up to 8, as the block measured slower there (H200; docs/benchmarks.md, tried and not kept).
#define MSM_TOP_THREADS 128u

template <class F>
__device__ __forceinline__ void msm_inv_top(F* inv, const F* vals, uint32_t n, uint64_t cap, uint32_t span) {
    __shared__ F nodes[2 * MSM_TOP_THREADS];
    uint32_t t = threadIdx.x, threads = blockDim.x;
    // Block b inverts values [b·span, b·span + span) on its own (the launch covers n).
    uint64_t base = (uint64_t)blockIdx.x * span;
    n = n - base < span ? (uint32_t)(n - base) : span;
    F q = F::one();
    for (uint32_t i = t; i < n; i += threads) {
        q = f_mul(q, msm_soa_load(vals, cap, base + i));
        msm_soa_store(inv, cap, base + i, q);
    }
    nodes[threads + t] = q;
    __syncthreads();
    for (uint32_t w = threads / 2; w >= 1; w >>= 1) {
        if (t < w) nodes[w + t] = f_mul(nodes[2 * (w + t)], nodes[2 * (w + t) + 1]);
        __syncthreads();
    }
    if (t == 0) nodes[1] = f_inv(nodes[1]);
    __syncthreads();
    // Going down, node i's inverse times one child gives the other child's inverse.
    for (uint32_t w = 1; w < threads; w <<= 1) {
        if (t < w) {
            uint32_t i = w + t;
            F left = nodes[2 * i];
            F right = nodes[2 * i + 1];
            nodes[2 * i] = f_mul(nodes[i], right);
            nodes[2 * i + 1] = f_mul(nodes[i], left);
        }
        __syncthreads();
    }
    if (t >= n) return;
    // The thread's values back from its last, as msm_inv_down.
    F acc = nodes[threads + t];
    uint32_t last = t + (n - 1 - t) / threads * threads;
    for (uint32_t i = last; i > t; i -= threads) {
        F v = msm_soa_load(vals, cap, base + i);
        msm_soa_store(inv, cap, base + i, f_mul(acc, msm_soa_load(inv, cap, base + i - threads)));
        acc = f_mul(acc, v);
    }
    msm_soa_store(inv, cap, base + t, acc);
}

// After the last round: thread κ adds key κ's values at `level` (at most a few: the host stops
// the rounds at AFFINE_TAIL values per key) into its bucket with mixed XYZZ additions. When
// `fresh` (the chunk is the MSM's first), the bucket is not read but written from infinity (a
// lone value as (x, y, 1, 1), no value as infinity), so the MSM does not clear the buckets
// before its first chunk.
template <class F>
__device__ __forceinline__ void msm_affine_buckets(xyzz_t<F>* buckets, const uint32_t* offsets, uint32_t k0,
                                                   uint32_t n_keys, uint32_t level, const uint64_t* sorted,
                                                   const affine_t<F>* bases, uint64_t base_offset,
                                                   msm_level_t<F> pts, uint32_t fresh) {
    uint32_t kappa = blockIdx.x * blockDim.x + threadIdx.x;
    if (kappa >= n_keys) return;
    uint32_t e0 = offsets[k0];
    msm_level_pos pos = msm_level_of(offsets, k0, e0, kappa, level);
    if (pos.count == 0 && !fresh) return;
    xyzz_t<F> b = fresh ? xyzz_t<F>::inf() : msm_load_words(&buckets[k0 + kappa]);
    for (uint32_t j = 0; j < pos.count; j++) {
        xyzz_add_affine(b, msm_level_value<F>(level, pos.base + j, sorted, e0, bases, base_offset, pts));
    }
    msm_store_words(&buckets[k0 + kappa], b);
}

// After the last round of the MSM's last chunk, in place of msm_affine_buckets and the bucket
// reduction's first level (msm_reduce with first_level, kernels/msm/msm.cu), for keys [k0, k0 +
// n_keys) of whole windows: thread t takes the `seg` keys [t·seg, t·seg + seg) after k0 and
// writes that segment's C and R at segment (k0 / seg) + t, as msm_reduce does, with bucket j
// the sum of key j's earlier chunks' bucket (unless `fresh`) and its values at `level`. Each
// value goes into the running sum by a mixed addition: the buckets are neither written nor read
// again, and when `fresh` a bucket costs one full addition (the weighted sum's) besides its
// values' mixed ones, where msm_affine_buckets and the first level took a mixed addition fewer
// and two full ones (with earlier chunks the additions are the same).
template <class F>
__device__ __forceinline__ void msm_affine_reduce(xyzz_t<F>* out_c, xyzz_t<F>* out_r, const xyzz_t<F>* buckets,
                                                  const uint32_t* offsets, uint32_t k0, uint32_t n_keys,
                                                  uint32_t level, const uint64_t* sorted,
                                                  const affine_t<F>* bases, uint64_t base_offset,
                                                  msm_level_t<F> pts, uint32_t fresh, uint32_t seg) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_keys / seg) return;
    uint32_t e0 = offsets[k0];
    xyzz_t<F> running = xyzz_t<F>::inf();
    xyzz_t<F> weighted = xyzz_t<F>::inf();
    for (uint32_t j = seg; j-- > 0;) {
        uint32_t kappa = t * seg + j;
        if (!fresh) xyzz_add(running, msm_load_words(&buckets[k0 + kappa]));
        msm_level_pos pos = msm_level_of(offsets, k0, e0, kappa, level);
        for (uint32_t i = 0; i < pos.count; i++) {
            xyzz_add_affine(running, msm_level_value<F>(level, pos.base + i, sorted, e0, bases, base_offset, pts));
        }
        if (j != 0) xyzz_add(weighted, running);
    }
    uint32_t out = k0 / seg + t;
    xyzz_add(weighted, running);  // C = T + R
    msm_store_words(&out_c[out], weighted);
    msm_store_words(&out_r[out], running);
}

// Statistics of every group of `group_keys` keys among keys [0, n_keys), the last group possibly
// shorter: out[2g] = group g's largest count (atomic max: out starts at zero), out[2g + 1] = its
// number of entries. Each thread takes `per` consecutive keys and makes one atomic per group it
// meets: one thread per key, with the group's slot not uniform across a warp, made 32 times
// more atomics on a dozen addresses (G1 2^24: 6.8 M, about 4.7 ms on the H200).
extern "C" __global__ void msm_affine_stats(uint32_t* out, const uint32_t* offsets, uint32_t group_keys,
                                            uint32_t n_keys, uint32_t per) {
    uint64_t first = (uint64_t)(blockIdx.x * blockDim.x + threadIdx.x) * per;
    if (first >= n_keys) return;
    uint32_t lo = (uint32_t)first;
    uint32_t hi = n_keys - lo < per ? n_keys : lo + per;
    uint32_t g = lo / group_keys, largest = 0;
    for (uint32_t kappa = lo; kappa < hi; kappa++) {
        if (kappa == (g + 1) * group_keys) {
            atomicMax(&out[2 * g], largest);
            largest = 0;
            g++;
        }
        if (kappa == g * group_keys) {
            uint32_t end = n_keys - kappa < group_keys ? n_keys : kappa + group_keys;
            out[2 * g + 1] = offsets[end] - offsets[kappa];
        }
        uint32_t count = offsets[kappa + 1] - offsets[kappa];
        largest = count > largest ? count : largest;
    }
    atomicMax(&out[2 * g], largest);
}

#define MSM_AFFINE_KERNELS(G, F, SUMS_BOUNDS, PAIRS_BOUNDS)                                                 \
    extern "C" __global__ void PAIRS_BOUNDS msm_affine_pairs_##G(                                          \
        F* prefix, F* pts_out, F* totals, const uint32_t* keys_out, const uint32_t* offsets, uint32_t k0,  \
        uint32_t level_in, const uint64_t* sorted, const affine_t<F>* bases, uint64_t base_offset,         \
        F* pts_in, uint32_t n_out, uint32_t per, uint32_t n_threads, uint32_t prefix_cap,                  \
        uint32_t totals_cap, uint32_t in_cap, uint32_t out_cap) {                                          \
        msm_level_t<F> out{pts_out, out_cap};                                                              \
        msm_affine_pairs<F>(msm_round_scratch_t<F>{prefix, prefix_cap, out, totals, totals_cap}, keys_out, \
                            offsets, k0, level_in, sorted, bases, base_offset, msm_level_t<F>{pts_in, in_cap}, \
                            n_out, per, n_threads);                                                        \
    }                                                                                                      \
    extern "C" __global__ void SUMS_BOUNDS msm_affine_sums_##G(                                            \
        F* pts_out, F* prefix, const F* inv_totals, const uint32_t* keys_out, const uint32_t* offsets,     \
        uint32_t k0, uint32_t level_in, const uint64_t* sorted, const affine_t<F>* bases,                  \
        uint64_t base_offset, F* pts_in, uint32_t n_out, uint32_t per, uint32_t n_threads,                 \
        uint32_t prefix_cap, uint32_t totals_cap, uint32_t in_cap, uint32_t out_cap) {                     \
        msm_level_t<F> out{pts_out, out_cap};                                                              \
        msm_affine_sums<F>(out, msm_round_scratch_t<F>{prefix, prefix_cap, out, nullptr, totals_cap},      \
                           inv_totals, keys_out, offsets, k0, level_in, sorted, bases, base_offset,        \
                           msm_level_t<F>{pts_in, in_cap}, n_out, per, n_threads);                         \
    }                                                                                                      \
    extern "C" __global__ void msm_inv_up_##G(F* pre, F* totals, const F* vals, uint32_t n, uint32_t per,   \
                                              uint32_t n_threads, uint32_t cap, uint32_t next_cap) {        \
        msm_inv_up<F>(pre, totals, vals, msm_tree_level_t{n, cap, next_cap}, per, n_threads);             \
    }                                                                                                      \
    extern "C" __global__ void msm_inv_down_##G(F* inv, const F* vals, const F* inv_totals, uint32_t n,     \
                                                uint32_t per, uint32_t n_threads, uint32_t cap,            \
                                                uint32_t next_cap) {                                       \
        msm_inv_down<F>(inv, vals, inv_totals, msm_tree_level_t{n, cap, next_cap}, per, n_threads);       \
    }                                                                                                      \
    extern "C" __global__ void __launch_bounds__(MSM_TOP_THREADS)                                            \
        msm_inv_top_##G(F* inv, const F* vals, uint32_t n, uint32_t cap, uint32_t span) {                  \
        msm_inv_top<F>(inv, vals, n, cap, span);                                                           \
    }                                                                                                      \
    extern "C" __global__ void msm_affine_buckets_##G(                                                      \
        xyzz_t<F>* buckets, const uint32_t* offsets, uint32_t k0, uint32_t n_keys, uint32_t level,         \
        const uint64_t* sorted, const affine_t<F>* bases, uint64_t base_offset, F* pts, uint32_t fresh,    \
        uint32_t cap) {                                                                                    \
        msm_affine_buckets<F>(buckets, offsets, k0, n_keys, level, sorted, bases, base_offset,             \
                              msm_level_t<F>{pts, cap}, fresh);                                            \
    }                                                                                                      \
    extern "C" __global__ void msm_affine_reduce_##G(                                                       \
        xyzz_t<F>* out_c, xyzz_t<F>* out_r, const xyzz_t<F>* buckets, const uint32_t* offsets, uint32_t k0, \
        uint32_t n_keys, uint32_t level, const uint64_t* sorted, const affine_t<F>* bases,                 \
        uint64_t base_offset, F* pts, uint32_t fresh, uint32_t cap, uint32_t seg) {                        \
        msm_affine_reduce<F>(out_c, out_r, buckets, offsets, k0, n_keys, level, sorted, bases, base_offset, \
                             msm_level_t<F>{pts, cap}, fresh, seg);                                        \
    }
