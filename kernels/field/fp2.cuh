// Fp2 = Fp[u]/(u² + 1), the field of G2's coordinates, on the GPU.
//
// Layout: c0 then c1, each an `fp_t` (Montgomery, canonical), byte-identical to blst's `blst_fp2`
// (`cuzk_field::layout::Fp2Limbs`). Multiplication is Karatsuba (three Fp multiplications),
// squaring the complex method (two).
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

// (a0 + a1·u)(b0 + b1·u) = (a0·b0 − a1·b1) + ((a0 + a1)(b0 + b1) − a0·b0 − a1·b1)·u.
FP2_CALLED fp2_t fp2_mul(const fp2_t& a, const fp2_t& b) {
    fp_t t0 = fp_mul(a.c0, b.c0);
    fp_t t1 = fp_mul(a.c1, b.c1);
    fp_t t2 = fp_mul(fp_add(a.c0, a.c1), fp_add(b.c0, b.c1));
    return fp2_t{fp_sub(t0, t1), fp_sub(fp_sub(t2, t0), t1)};
}

// (a0 + a1·u)² = (a0 + a1)(a0 − a1) + 2·a0·a1·u.
FP2_CALLED fp2_t fp2_sqr(const fp2_t& a) {
    fp_t re = fp_mul(fp_add(a.c0, a.c1), fp_sub(a.c0, a.c1));
    fp_t im = fp_mul(a.c0, a.c1);
    return fp2_t{re, fp_dbl(im)};
}

FR_HD fp2_t fp2_neg_im(const fp2_t& a) { return fp2_t{a.c0, fp_neg(a.c1)}; }

// (a0 + a1·u)⁻¹ = (a0 − a1·u) / (a0² + a1²): one Fp inversion (zero for zero).
FP2_CALLED fp2_t fp2_inv(const fp2_t& a) {
    fp_t norm = fp_add(fp_sqr(a.c0), fp_sqr(a.c1));
    fp_t inv = fp_inv(norm);
    fp2_t conj = fp2_neg_im(a);
    return fp2_t{fp_mul(conj.c0, inv), fp_mul(conj.c1, inv)};
}
