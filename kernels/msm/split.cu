// A Groth16 query's split (zero / one / other) and the gathering of its tail MSM's bases, on the
// device. Rust launch wrappers: crates/msm/src/gpu/split.rs (one per kernel, same name).
//
// The prover's values V (input ‖ aux, blstrs scalars: Montgomery form, fully reduced) are on the
// device once per partition; each query says which variables it has with a membership bitmap
// over V (bit i of word i / 64), and the query's bases are its members in order, so a member's
// base index is its rank among the members. A query is split by:
//
// 1. msm_split_count: one thread per word of the bitmap counts the word's members, ones and
//    others (neither zero nor one) into counts[w], counts[n_words + w], counts[2·n_words + w].
// 2. msm_scan_tiles / msm_scan_add (msm.cu) over those 3·n_words counts: an exclusive prefix sum,
//    so that each word's entries start where the words before it end (the ones' and others'
//    sections each start at the section's first entry, which the kernels below subtract).
// 3. msm_split_totals: the number of members, ones and others, for the host (one tiny download:
//    the sizes of the outputs and of the later launches).
// 4. msm_split_scatter: each thread walks its word again and writes the base index of each one
//    into ones[...], of each other into other_bases[...] and its scalar into other_scalars[...],
//    in order: the outputs are the host split's (crates/pipeline/src/split.rs), element for
//    element.
//
// Then the batch addition of the ones reads the resident bases through `ones`
// (msm_batch_indices_<g>, msm.cu), and the tail MSM streams its bases from the resident ones
// through `other_bases`: msm_gather_<g> fills each chunk's staging slot as a copy would.
//
// Traffic: the members' values are read twice (32 bytes each), every output written once. One
// thread per 64 variables keeps a word's outputs in one thread, so no synchronisation is needed.
#include "curve/xyzz.cuh"
#include "msm/bits.cuh"

// Whether a stored scalar is one (R mod r in Montgomery form; stored scalars are reduced).
FR_HD bool msm_split_is_one(const fr_t& v) {
    uint32_t diff = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) diff |= v.l[i] ^ fr_one_limb(i);
    return diff == 0;
}

// Member word w of n_words over n_values values, bits at or past n_values cleared.
FR_HD uint64_t msm_split_word(const uint64_t* members, uint64_t n_values, uint32_t w) {
    uint64_t word = members[w];
    uint64_t first = (uint64_t)w * 64;
    if (first + 64 > n_values) word &= (1ull << (n_values - first)) - 1;
    return word;
}

// The ones and others among the members of word `word` (word w of the bitmap).
FR_HD void msm_split_word_counts(uint64_t word, const fr_t* values, uint32_t w, uint32_t& ones,
                                 uint32_t& others) {
    ones = 0;
    others = 0;
    while (word) {
        uint32_t bit = msm_ctz64(word);
        word &= word - 1;
        fr_t v = values[(uint64_t)w * 64 + bit];
        if (v.is_zero()) continue;
        if (msm_split_is_one(v)) {
            ones++;
        } else {
            others++;
        }
    }
}

// Counts of word w (one thread each): members, ones, others, in three sections of n_words.
extern "C" __global__ void msm_split_count(uint32_t* counts, const uint64_t* members, const fr_t* values,
                                           uint64_t n_values, uint32_t n_words) {
    uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n_words) return;
    uint64_t word = msm_split_word(members, n_values, w);
    uint32_t ones, others;
    msm_split_word_counts(word, values, w, ones, others);
    counts[w] = msm_popc64(word);
    counts[n_words + w] = ones;
    counts[2 * (uint64_t)n_words + w] = others;
}

// totals = (members, ones, others) from the scanned counts and the last word's own counts (the
// scan is exclusive). One thread; n_words >= 1.
extern "C" __global__ void msm_split_totals(uint32_t* totals, const uint32_t* offsets, const uint64_t* members,
                                            const fr_t* values, uint64_t n_values, uint32_t n_words) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    uint32_t last = n_words - 1;
    uint64_t word = msm_split_word(members, n_values, last);
    uint32_t ones, others;
    msm_split_word_counts(word, values, last, ones, others);
    totals[0] = offsets[last] + msm_popc64(word);
    totals[1] = offsets[n_words + last] - offsets[n_words] + ones;
    totals[2] = offsets[2 * (uint64_t)n_words + last] - offsets[2 * (uint64_t)n_words] + others;
}

// Word w's ones and others (one thread each), at the word's offsets: each one's base index
// (its rank among the members) into ones, each other's into other_bases and its scalar into
// other_scalars, in the order of the variables.
extern "C" __global__ void msm_split_scatter(uint32_t* ones, uint32_t* other_bases, fr_t* other_scalars,
                                             const uint32_t* offsets, const uint64_t* members,
                                             const fr_t* values, uint64_t n_values, uint32_t n_words) {
    uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n_words) return;
    uint64_t word = msm_split_word(members, n_values, w);
    uint32_t base = offsets[w];
    uint32_t one_at = offsets[n_words + w] - offsets[n_words];
    uint64_t others_from = offsets[2 * (uint64_t)n_words];
    uint32_t other_at = (uint32_t)(offsets[2 * (uint64_t)n_words + w] - others_from);
    while (word) {
        uint32_t bit = msm_ctz64(word);
        word &= word - 1;
        fr_t v = values[(uint64_t)w * 64 + bit];
        if (!v.is_zero()) {
            if (msm_split_is_one(v)) {
                ones[one_at++] = base;
            } else {
                other_bases[other_at] = base;
                other_scalars[other_at] = v;
                other_at++;
            }
        }
        base++;
    }
}

// out[j] = bases[indices[start + j]] for j < m: a chunk of a tail MSM's bases, gathered from the
// resident ones into the chunk's staging slot. One thread per point.
template <class F>
__device__ __forceinline__ void msm_gather(affine_t<F>* out, const affine_t<F>* bases, const uint32_t* indices,
                                           uint32_t start, uint32_t m) {
    uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m) return;
    out[j] = bases[indices[(uint64_t)start + j]];
}

extern "C" __global__ void msm_gather_g1(affine_t<fp_t>* out, const affine_t<fp_t>* bases, const uint32_t* indices,
                                         uint32_t start, uint32_t m) {
    msm_gather<fp_t>(out, bases, indices, start, m);
}

extern "C" __global__ void msm_gather_g2(affine_t<fp2_t>* out, const affine_t<fp2_t>* bases,
                                         const uint32_t* indices, uint32_t start, uint32_t m) {
    msm_gather<fp2_t>(out, bases, indices, start, m);
}
