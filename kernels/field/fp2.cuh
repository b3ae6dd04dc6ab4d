// Fp2 = Fp[u]/(u² + 1), the field of G2's coordinates, on the GPU.
//
// Layout: c0 then c1, each an `fp_t` (Montgomery, canonical), byte-identical to blst's `blst_fp2`
// (`cuzk_field::layout::Fp2Limbs`). Multiplication is Karatsuba with lazy reduction (three
// double-width products, two reductions); squaring is that multiplication (see fp2_sqr).
#pragma once

#include "field/fp.cuh"

// Fp2 multiplication and squaring are called, not inlined, on the device: inlining their three
// Fp multiplications into every G2 formula multiplies the code size (and nvcc's compile time)
// for no measurable gain; a call costs a few dozen instructions beside about 2000.
#if defined(__CUDACC__)
#define FP2_CALLED __host__ __device__ __noinline__
#else
#define FP2_CALLED inline
#endif

struct fp2_t {
    fp_t c0, c1;

    FR_HD static fp2_t zero() { return fp2_t{fp_t::zero(), fp_t::zero()}; }
    FR_HD static fp2_t one() { return fp2_t{fp_t::one(), fp_t::zero()}; }
    FR_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
};

FR_HD bool fp2_eq(const fp2_t& a, const fp2_t& b) { return fp_eq(a.c0, b.c0) && fp_eq(a.c1, b.c1); }

FR_HD fp2_t fp2_add(const fp2_t& a, const fp2_t& b) { return fp2_t{fp_add(a.c0, b.c0), fp_add(a.c1, b.c1)}; }
FR_HD fp2_t fp2_sub(const fp2_t& a, const fp2_t& b) { return fp2_t{fp_sub(a.c0, b.c0), fp_sub(a.c1, b.c1)}; }
FR_HD fp2_t fp2_dbl(const fp2_t& a) { return fp2_t{fp_dbl(a.c0), fp_dbl(a.c1)}; }
FR_HD fp2_t fp2_neg(const fp2_t& a) { return fp2_t{fp_neg(a.c0), fp_neg(a.c1)}; }
FR_HD fp2_t fp2_cneg(const fp2_t& a, bool negate) { return negate ? fp2_neg(a) : a; }

// (a0 + a1·u)(b0 + b1·u) = (a0·b0 − a1·b1) + ((a0 + a1)(b0 + b1) − a0·b0 − a1·b1)·u: three
// double-width products and two reductions (lazy reduction, fp.cuh) instead of three
// multiplications. The real part is offset by p² to stay non-negative (a0·b0 + p² − a1·b1 < 2p²);
// the imaginary part, a0·b1 + a1·b0, is below 2p² as it stands. Measured on the H200: 6% more G2
// mixed additions per second than with three Montgomery multiplications (standalone probe, one
// block of 256 threads per SM), 2.5 to 3% less G2 MSM time. Writing the point formulas'
// a·b − c·d as one such combination (four reductions fewer) measured slower: its six live
// double-width values spill. So did four products with two fused reductions ((a0·b0 − a1·b1)
// and (a0·b1 + a1·b0), each one Montgomery row loop: fewer registers, 19% more products): G2
// XYZZ MSM 9% slower, batch-affine sums no faster (H200; docs/benchmarks.md, tried and not kept).
//
// The operands are taken by value: the call then passes them in registers. By reference, each
// call stored both operands to the caller's stack and the callee read them back limb by limb
// (SASS: STL.64 / LDL); with a dozen warps per SM those frames overflow the L1 and the traffic
// reached DRAM (ncu, G2 batch-affine sums at 2^22: 25 GB of local loads and stores beside 28 GB
// of global ones, and 28 GB of DRAM traffic for about 10 GB of data). By value, the G2
// batch-affine sums ran 12% faster (2^24: 211 → 185 ms).
FP2_CALLED fp2_t fp2_mul(const fp2_t a, const fp2_t b) {
    fp_wide_t re = fp_mul_wide(a.c0, b.c0);
    fp_wide_t re_neg = fp_mul_wide(a.c1, b.c1);
    fp_wide_t im = fp_mul_wide(fp_detail::int_add(a.c0, a.c1), fp_detail::int_add(b.c0, b.c1));
    fp_detail::wide_sub(im, re);
    fp_detail::wide_sub(im, re_neg);
    fp_detail::wide_add_p2(re);
    fp_detail::wide_sub(re, re_neg);
    return fp2_t{fp_redc(re), fp_redc(im)};
}

// a², as a·a through the one called fp2_mul. The complex method, (a0 + a1)(a0 − a1) +
// 2·a0·a1·u, needs two Fp multiplications against fp2_mul's 2.5, but as a second called
// function it doubled the code a G2 point addition runs through: in a probe of G2 mixed
// additions (one thread per accumulator, as msm_accumulate_g2) a fifth of the warps' stall
// cycles were instruction-cache misses (ncu: no_instruction 1.65 of 8.3 cycles per issue,
// 0.08 with this), and the additions ran 13% faster this way, the G2 MSM 12% faster
// (H200; docs/benchmarks.md, tried and not kept).
FR_HD fp2_t fp2_sqr(const fp2_t& a) { return fp2_mul(a, a); }

FR_HD fp2_t fp2_neg_im(const fp2_t& a) { return fp2_t{a.c0, fp_neg(a.c1)}; }

// (a0 + a1·u)⁻¹ = (a0 − a1·u) / (a0² + a1²): one Fp inversion (zero for zero).
FP2_CALLED fp2_t fp2_inv(const fp2_t& a) {
    fp_t norm = fp_add(fp_sqr(a.c0), fp_sqr(a.c1));
    fp_t inv = fp_inv(norm);
    fp2_t conj = fp2_neg_im(a);
    return fp2_t{fp_mul(conj.c0, inv), fp_mul(conj.c1, inv)};
}
