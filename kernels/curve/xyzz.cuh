// Points of BLS12-381's G1 (over Fp) and G2 (over Fp2), written once for both fields.
//
// Two representations:
// - `affine_t<F>`: (x, y) as blst stores affine points, byte-identical to
//   `cuzk_field::layout::{G1AffineLimbs, G2AffineLimbs}`; the point at infinity is x = y = 0
//   (not on the curve y² = x³ + b, so unambiguous).
// - `xyzz_t<F>`: extended Jacobian "XYZZ" coordinates (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ
//   and ZZ³ = ZZZ²; the point at infinity is ZZ = 0 (all-zero memory is infinity, so buckets are
//   cleared with a memset). The MSM's buckets, partial sums and results use it.
//
// Formulas (curve a = 0) from the Explicit-Formulas Database, "xyzz" section:
// - mixed addition madd-2008-s: 8M + 2S;
// - addition add-2008-s: 12M + 2S;
// - doubling dbl-2008-s-1: 6M + 3S; doubling of an affine point mdbl-2008-s-1: 4M + 3S.
// Every addition is complete: adding infinity, adding a point to itself (it doubles) and adding
// a point to its negation (it gives infinity) are branches, exact for every input.
#pragma once

#include "field/fp2.cuh"

// The G2 point formulas are called, not inlined, on the device, so each exists once in the
// binary: inlined everywhere (about 30 Fp multiplications each) they made nvcc's compile time
// explode, for a call overhead of well under 1%. The G1 formulas are inlined, so the kernels'
// accumulators stay in registers (a call passes them through the stack).
#if defined(__CUDACC__)
#define CURVE_CALLED static __host__ __device__ __noinline__
#else
#define CURVE_CALLED inline
#endif

// The field operations the point formulas use, overloaded for Fp and Fp2.
FR_HD fp_t f_add(const fp_t& a, const fp_t& b) { return fp_add(a, b); }
FR_HD fp_t f_sub(const fp_t& a, const fp_t& b) { return fp_sub(a, b); }
FR_HD fp_t f_dbl(const fp_t& a) { return fp_dbl(a); }
FR_HD fp_t f_mul(const fp_t& a, const fp_t& b) { return fp_mul(a, b); }
FR_HD fp_t f_sqr(const fp_t& a) { return fp_sqr(a); }
FR_HD fp_t f_cneg(const fp_t& a, bool negate) { return fp_cneg(a, negate); }
FR_HD fp_t f_inv(const fp_t& a) { return fp_inv(a); }
FR_HD bool f_eq(const fp_t& a, const fp_t& b) { return fp_eq(a, b); }
FR_HD fp2_t f_add(const fp2_t& a, const fp2_t& b) { return fp2_add(a, b); }
FR_HD fp2_t f_sub(const fp2_t& a, const fp2_t& b) { return fp2_sub(a, b); }
FR_HD fp2_t f_dbl(const fp2_t& a) { return fp2_dbl(a); }
FR_HD fp2_t f_mul(const fp2_t& a, const fp2_t& b) { return fp2_mul(a, b); }
FR_HD fp2_t f_sqr(const fp2_t& a) { return fp2_sqr(a); }
FR_HD fp2_t f_cneg(const fp2_t& a, bool negate) { return fp2_cneg(a, negate); }
FR_HD fp2_t f_inv(const fp2_t& a) { return fp2_inv(a); }
FR_HD bool f_eq(const fp2_t& a, const fp2_t& b) { return fp2_eq(a, b); }

template <class F>
struct affine_t {
    F x, y;

    FR_HD bool is_inf() const { return x.is_zero() && y.is_zero(); }
};

template <class F>
struct xyzz_t {
    F x, y, zz, zzz;

    FR_HD static xyzz_t inf() { return xyzz_t{F::zero(), F::zero(), F::zero(), F::zero()}; }
    FR_HD bool is_inf() const { return zz.is_zero(); }
};

// 2·p for an affine p (mdbl-2008-s-1). y = 0 cannot occur in the prime-order subgroup; if it did,
// V = 0 would give infinity, which is right for a point of order two.
template <class F>
FR_HD xyzz_t<F> xyzz_dbl_affine_impl(const affine_t<F>& p) {
    if (p.is_inf()) return xyzz_t<F>::inf();
    F u = f_dbl(p.y);
    F v = f_sqr(u);
    F w = f_mul(u, v);
    F s = f_mul(p.x, v);
    F x2 = f_sqr(p.x);
    F m = f_add(f_dbl(x2), x2);
    xyzz_t<F> r;
    r.x = f_sub(f_sqr(m), f_dbl(s));
    r.y = f_sub(f_mul(m, f_sub(s, r.x)), f_mul(w, p.y));
    r.zz = v;
    r.zzz = w;
    return r;
}

// 2·p (dbl-2008-s-1).
template <class F>
FR_HD xyzz_t<F> xyzz_dbl_impl(const xyzz_t<F>& p) {
    if (p.is_inf()) return p;
    F u = f_dbl(p.y);
    F v = f_sqr(u);
    F w = f_mul(u, v);
    F s = f_mul(p.x, v);
    F x2 = f_sqr(p.x);
    F m = f_add(f_dbl(x2), x2);
    xyzz_t<F> r;
    r.x = f_sub(f_sqr(m), f_dbl(s));
    r.y = f_sub(f_mul(m, f_sub(s, r.x)), f_mul(w, p.y));
    r.zz = f_mul(v, p.zz);
    r.zzz = f_mul(w, p.zzz);
    return r;
}

// acc += p for an affine p (madd-2008-s).
template <class F>
FR_HD void xyzz_add_affine_impl(xyzz_t<F>& acc, const affine_t<F>& p) {
    if (p.is_inf()) return;
    if (acc.is_inf()) {
        acc.x = p.x;
        acc.y = p.y;
        acc.zz = F::one();
        acc.zzz = F::one();
        return;
    }
    F u2 = f_mul(p.x, acc.zz);
    F s2 = f_mul(p.y, acc.zzz);
    F pd = f_sub(u2, acc.x);
    F rd = f_sub(s2, acc.y);
    if (pd.is_zero()) {
        // Same x: the same point (double it) or its negation (the sum is infinity).
        acc = rd.is_zero() ? xyzz_dbl_affine_impl(p) : xyzz_t<F>::inf();
        return;
    }
    F pp = f_sqr(pd);
    F ppp = f_mul(pd, pp);
    F q = f_mul(acc.x, pp);
    F x3 = f_sub(f_sub(f_sqr(rd), ppp), f_dbl(q));
    acc.y = f_sub(f_mul(rd, f_sub(q, x3)), f_mul(acc.y, ppp));
    acc.x = x3;
    acc.zz = f_mul(acc.zz, pp);
    acc.zzz = f_mul(acc.zzz, ppp);
}

// acc += q (add-2008-s).
template <class F>
FR_HD void xyzz_add_impl(xyzz_t<F>& acc, const xyzz_t<F>& q) {
    if (q.is_inf()) return;
    if (acc.is_inf()) {
        acc = q;
        return;
    }
    F u1 = f_mul(acc.x, q.zz);
    F u2 = f_mul(q.x, acc.zz);
    F s1 = f_mul(acc.y, q.zzz);
    F s2 = f_mul(q.y, acc.zzz);
    F pd = f_sub(u2, u1);
    F rd = f_sub(s2, s1);
    if (pd.is_zero()) {
        acc = rd.is_zero() ? xyzz_dbl_impl(acc) : xyzz_t<F>::inf();
        return;
    }
    F pp = f_sqr(pd);
    F ppp = f_mul(pd, pp);
    F qq = f_mul(u1, pp);
    F x3 = f_sub(f_sub(f_sqr(rd), ppp), f_dbl(qq));
    acc.y = f_sub(f_mul(rd, f_sub(qq, x3)), f_mul(s1, ppp));
    acc.x = x3;
    acc.zz = f_mul(f_mul(acc.zz, q.zz), pp);
    acc.zzz = f_mul(f_mul(acc.zzz, q.zzz), ppp);
}

typedef affine_t<fp_t> g1_affine_t;
typedef xyzz_t<fp_t> g1_xyzz_t;
typedef affine_t<fp2_t> g2_affine_t;
typedef xyzz_t<fp2_t> g2_xyzz_t;

// The formulas the kernels call: inlined in G1, called in G2 (see the top of this file).
FR_HD g1_xyzz_t xyzz_dbl_affine(const g1_affine_t& p) { return xyzz_dbl_affine_impl(p); }
FR_HD g1_xyzz_t xyzz_dbl(const g1_xyzz_t& p) { return xyzz_dbl_impl(p); }
FR_HD void xyzz_add_affine(g1_xyzz_t& acc, const g1_affine_t& p) { xyzz_add_affine_impl(acc, p); }
FR_HD void xyzz_add(g1_xyzz_t& acc, const g1_xyzz_t& q) { xyzz_add_impl(acc, q); }
CURVE_CALLED g2_xyzz_t xyzz_dbl_affine(const g2_affine_t& p) { return xyzz_dbl_affine_impl(p); }
CURVE_CALLED g2_xyzz_t xyzz_dbl(const g2_xyzz_t& p) { return xyzz_dbl_impl(p); }
CURVE_CALLED void xyzz_add_affine(g2_xyzz_t& acc, const g2_affine_t& p) { xyzz_add_affine_impl(acc, p); }
CURVE_CALLED void xyzz_add(g2_xyzz_t& acc, const g2_xyzz_t& q) { xyzz_add_impl(acc, q); }
