// Fp, the base field of BLS12-381 (381-bit p), in Montgomery form on the GPU.
//
// Layout: twelve little-endian 32-bit limbs of a·R mod p with R = 2^384, byte-identical to blst's
// `blst_fp` (six little-endian 64-bit limbs) on a little-endian host, so host vectors of blstrs
// points go to the device without conversion (`cuzk_field::layout::FpLimbs`). Every function
// takes and returns canonical values (< p): equality is limb equality and zero is all-zero limbs.
//
// Multiplication is Montgomery's CIOS in the "even/odd" form of `fr.cuh`, generalised to twelve
// limbs and a modulus whose low limb is not 1: the products a[j]·b[i] with j even accumulate into
// one array and those with j odd into another, offset by one limb, so every product lands on an
// aligned pair of limbs. Each pair (mad.lo.cc + madc.hi.cc on the same operands) is written as
// ONE inline-asm statement (`madc_pair_cc` and friends, fr.cuh): ptxas then fuses it into a single
// IMAD.WIDE.U32.X (64-bit multiply-add with carry). Written as two statements, ptxas emits
// IMAD + IMAD.HI.U32 + IADD3.X for each product instead: about 1060 instructions per
// multiplication on sm_90 against about 360 this way (counted with cuobjdump). The reduction
// factor is m = t0·(−p⁻¹ mod 2^32) and the products m·p[j] use the same fused pairs. One multiplication is 144 products for a·b,
// 144 for the reduction and 12 for the factors.
//
// Bounds: p < 2^381, so after each row the accumulator T = even + 2^32·odd stays below 2p and
// below 2^414 before the division by 2^32; the odd array (weights 2^32..2^384) therefore never
// carries out, and the even array's carry (weight 2^384) lands in the odd array's top limb.
//
// The same source compiles for the host with `fr.cuh`'s C emulation of the PTX carry
// instructions, so the arithmetic is checked without a GPU (crates/msm, feature `emu`).
#pragma once

#include "field/fr.cuh"

// The modulus p, little-endian 32-bit limbs (as `cuzk_field::layout::FP_MODULUS`).
FR_HD constexpr uint32_t fp_modulus(int i) {
    return i == 0 ? 0xffffaaabu : i == 1 ? 0xb9feffffu : i == 2 ? 0xb153ffffu
         : i == 3 ? 0x1eabfffeu : i == 4 ? 0xf6b0f624u : i == 5 ? 0x6730d2a0u
         : i == 6 ? 0xf38512bfu : i == 7 ? 0x64774b84u : i == 8 ? 0x434bacd7u
         : i == 9 ? 0x4b1ba7b6u : i == 10 ? 0x397fe69au : 0x1a0111eau;
}

// R mod p: one in Montgomery form.
FR_HD constexpr uint32_t fp_one_limb(int i) {
    return i == 0 ? 0x0002fffdu : i == 1 ? 0x76090000u : i == 2 ? 0xc40c0002u
         : i == 3 ? 0xebf4000bu : i == 4 ? 0x53c758bau : i == 5 ? 0x5f489857u
         : i == 6 ? 0x70525745u : i == 7 ? 0x77ce5853u : i == 8 ? 0xa256ec6du
         : i == 9 ? 0x5c071a97u : i == 10 ? 0xfa80e493u : 0x15f65ec3u;
}

// −p⁻¹ mod 2^32, the Montgomery reduction factor.
#define FP_M0 0xfffcfffdu

struct fp_t {
    uint32_t l[12];

    FR_HD static fp_t zero() { fp_t r; for (int i = 0; i < 12; i++) r.l[i] = 0; return r; }
    FR_HD static fp_t one() { fp_t r; for (int i = 0; i < 12; i++) r.l[i] = fp_one_limb(i); return r; }
    FR_HD bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < 12; i++) acc |= l[i];
        return acc == 0;
    }
};

FR_HD bool fp_eq(const fp_t& a, const fp_t& b) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < 12; i++) acc |= a.l[i] ^ b.l[i];
    return acc == 0;
}

// s − p when that does not borrow, else s; for s < 2p.
FR_HD fp_t fp_reduce_once(const fp_t& s) {
    fp_t t, r;
    t.l[0] = sub_cc(s.l[0], fp_modulus(0));
#pragma unroll
    for (int i = 1; i < 12; i++) t.l[i] = subc_cc(s.l[i], fp_modulus(i));
    uint32_t borrow = subc(0, 0);  // 0 or 0xffffffff
#pragma unroll
    for (int i = 0; i < 12; i++) r.l[i] = borrow ? s.l[i] : t.l[i];
    return r;
}

namespace fp_detail {
// a + b as an integer (no reduction), for a + b < 2^384: fp_add before its reduction (a, b < p),
// an operand of `fp_mul_wide`, and the last step of `fp_redc`.
FR_HD fp_t int_add(const fp_t& a, const fp_t& b) {
    fp_t s;
    s.l[0] = add_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < 11; i++) s.l[i] = addc_cc(a.l[i], b.l[i]);
    s.l[11] = addc(a.l[11], b.l[11]);
    return s;
}
}  // namespace fp_detail

// a + b mod p, for a, b < p (a + b < 2p < 2^382: no carry out).
FR_HD fp_t fp_add(const fp_t& a, const fp_t& b) { return fp_reduce_once(fp_detail::int_add(a, b)); }

// 2a mod p.
FR_HD fp_t fp_dbl(const fp_t& a) { return fp_add(a, a); }

// a − b mod p, for a, b < p.
FR_HD fp_t fp_sub(const fp_t& a, const fp_t& b) {
    fp_t d;
    d.l[0] = sub_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < 12; i++) d.l[i] = subc_cc(a.l[i], b.l[i]);
    uint32_t mask = subc(0, 0);  // all ones when a < b: add p back
    d.l[0] = add_cc(d.l[0], fp_modulus(0) & mask);
#pragma unroll
    for (int i = 1; i < 11; i++) d.l[i] = addc_cc(d.l[i], fp_modulus(i) & mask);
    d.l[11] = addc(d.l[11], fp_modulus(11) & mask);
    return d;
}

// −a mod p, for a < p (zero stays zero).
FR_HD fp_t fp_neg(const fp_t& a) {
    fp_t d;
    uint32_t nz = a.is_zero() ? 0u : 0xffffffffu;
    d.l[0] = sub_cc(fp_modulus(0) & nz, a.l[0]);
#pragma unroll
    for (int i = 1; i < 11; i++) d.l[i] = subc_cc(fp_modulus(i) & nz, a.l[i]);
    d.l[11] = subc(fp_modulus(11) & nz, a.l[11]);
    return d;
}

// −a when `negate`, else a.
FR_HD fp_t fp_cneg(const fp_t& a, bool negate) { return negate ? fp_neg(a) : a; }

namespace fp_detail {

// First row: e = a_even·b0, o = a_odd·b0 (aligned lo/hi pairs; o[k] weighs 2^(32(k+1))).
FR_HD void row_first(uint32_t e[12], uint32_t o[12], const fp_t& a, uint32_t b) {
#pragma unroll
    for (int q = 0; q < 6; q++) {
        uint64_t t = (uint64_t)a.l[2 * q] * b;
        e[2 * q] = (uint32_t)t;
        e[2 * q + 1] = (uint32_t)(t >> 32);
        t = (uint64_t)a.l[2 * q + 1] * b;
        o[2 * q] = (uint32_t)t;
        o[2 * q + 1] = (uint32_t)(t >> 32);
    }
}

// Adds m·p with m = e[0]·(−p⁻¹), which clears e[0] (modulo 2^32). The even chain's carry
// (weight 2^384) goes into o[11]; the odd chain cannot carry out (see the bounds above).
FR_HD void reduce(uint32_t e[12], uint32_t o[12]) {
    uint32_t m = mul_lo(e[0], FP_M0);
    // Odd limbs of p into o.
    mad_pair_cc(o[0], o[1], m, fp_modulus(1));
#pragma unroll
    for (int q = 1; q < 5; q++) madc_pair_cc(o[2 * q], o[2 * q + 1], m, fp_modulus(2 * q + 1));
    madc_pair(o[10], o[11], m, fp_modulus(11));
    // Even limbs of p into e.
    mad_pair_cc(e[0], e[1], m, fp_modulus(0));
#pragma unroll
    for (int q = 1; q < 6; q++) madc_pair_cc(e[2 * q], e[2 * q + 1], m, fp_modulus(2 * q));
    o[11] = addc(o[11], 0);
}

// Divides T = e + 2^32·o by 2^32 (e[0] is zero) and adds a·b. On return the roles swap: the new
// even array is `o` and the new odd array is `e` (the old e shifted down by two limbs).
FR_HD void row_next(uint32_t e[12], uint32_t o[12], const fp_t& a, uint32_t b) {
    // e[1] now weighs 2^0: add it into the new even array's first limb; its carry weighs 2^32,
    // the first limb of the new odd array, and enters that chain below.
    o[0] = add_cc(o[0], e[1]);
    // New odd array: old e[k+2] plus the odd products.
#pragma unroll
    for (int q = 0; q < 5; q++) {
        madc_pair_to_cc(e[2 * q], e[2 * q + 1], a.l[2 * q + 1], b, e[2 * q + 2], e[2 * q + 3]);
    }
    e[10] = 0;
    e[11] = 0;
    madc_pair(e[10], e[11], a.l[11], b);
    // New even array: old o plus the even products; its carry weighs 2^384, like e[11]'s limb.
    mad_pair_cc(o[0], o[1], a.l[0], b);
#pragma unroll
    for (int q = 1; q < 6; q++) madc_pair_cc(o[2 * q], o[2 * q + 1], a.l[2 * q], b);
    e[11] = addc(e[11], 0);
}

// The final division by 2^32: e[1..12] + o as one integer, unreduced (below 2^384 wherever it is
// used: below 2p after a Montgomery product, the high half of a double-width product).
FR_HD fp_t fold(const uint32_t e[12], const uint32_t o[12]) {
    fp_t s;
    s.l[0] = add_cc(o[0], e[1]);
#pragma unroll
    for (int i = 1; i < 11; i++) s.l[i] = addc_cc(o[i], e[i + 1]);
    s.l[11] = addc(o[11], 0);
    return s;
}

// Final division by 2^32 and conditional subtraction: returns (e[1..12] + o) mod p.
FR_HD fp_t finish(const uint32_t e[12], const uint32_t o[12]) { return fp_reduce_once(fold(e, o)); }

}  // namespace fp_detail

// a·b·R⁻¹ mod p (Montgomery product), for a, b < p; the result is canonical.
FR_HD fp_t fp_mul(const fp_t& a, const fp_t& b) {
    uint32_t x[12], y[12];
    fp_detail::row_first(x, y, a, b.l[0]);
    fp_detail::reduce(x, y);
#pragma unroll
    for (int i = 1; i < 12; i += 2) {
        fp_detail::row_next(x, y, a, b.l[i]);  // the even array is now y
        fp_detail::reduce(y, x);
        if (i + 1 < 12) {
            fp_detail::row_next(y, x, a, b.l[i + 1]);  // the even array is x again
            fp_detail::reduce(x, y);
        }
    }
    // Twelve rows: the last (i = 11) left the even array in y.
    return fp_detail::finish(y, x);
}

FR_HD fp_t fp_sqr(const fp_t& a) { return fp_mul(a, a); }

// ---------------------------------------------------------------------------------------------
// Lazy reduction: double-width products and one Montgomery reduction for a sum of products.
//
// A sum or difference of products needs one reduction, not one per product: the products are
// kept as 768-bit integers (`fp_wide_t`), combined exactly, and `fp_redc` divides the combination
// by R = 2^384 modulo p. The product and the reduction are each 144 fused 32x32->64 multiply-adds
// (as in `fp_mul`, whose interleaved form they split). Fp2's Karatsuba multiplication (fp2.cuh)
// uses it: three products and two reductions, 720 multiply-adds instead of 864.
//
// Measured and not kept (docs/benchmarks.md, session 4): a dedicated squaring (78 products
// instead of 144) and the G1 formulas' a·b − c·d with one reduction made a G1 mixed addition 6%
// faster in a standalone probe, but left the MSM's accumulation unchanged and its bucket
// reduction 3% slower on the H200: those kernels are held by dependent latency at 8 warps per
// SM, not by the multiply pipe (73 to 80% busy either way).
//
// Bounds: `fp_redc(T)` needs T < p·2^384 (about 9.8·p²) and returns T·2^-384 mod p, canonical.
// `fp_mul_wide(a, b)` accepts any a, b < 2^384 (sums of two canonical values included).
// ---------------------------------------------------------------------------------------------
struct fp_wide_t {
    uint32_t l[24];
};

// p², little-endian 32-bit limbs: the offset that keeps a difference of products non-negative.
FR_HD constexpr uint32_t fp_p2_limb(int i) {
    constexpr uint32_t P2[24] = {0x1c718e39u, 0x26aa0000u, 0x76382eabu, 0x7ced6b1du, 0x62113cfdu,
                                 0x162c3383u, 0x3e71b743u, 0x66bf91edu, 0x7091a049u, 0x292e85a8u,
                                 0x86185c7bu, 0x1d68619cu, 0x0978ef01u, 0xf5314933u, 0x16ddca6eu,
                                 0x50a62cfdu, 0x349e8bd0u, 0x66e59e49u, 0x0e7046b4u, 0xe2dc90e5u,
                                 0xa22f25e9u, 0x4bd278eau, 0xb8c35fc7u, 0x02a437a4u};
    return P2[i];
}

namespace fp_detail {
// Divides T = e + 2^32·o by 2^32 after `reduce` cleared e[0], adding nothing: the new even array
// is `o` (with e[1] added to its first limb) and the new odd array is `e` shifted down two limbs.
FR_HD void shift(uint32_t e[12], uint32_t o[12]) {
    o[0] = add_cc(o[0], e[1]);
#pragma unroll
    for (int k = 0; k < 10; k++) e[k] = addc_cc(e[k + 2], 0);
    e[10] = addc(0, 0);
    e[11] = 0;
}
}  // namespace fp_detail

// a·b as a 768-bit integer, for any a, b < 2^384: the rows of `fp_mul` without the reduction,
// each row's lowest limb leaving as a limb of the product.
FR_HD fp_wide_t fp_mul_wide(const fp_t& a, const fp_t& b) {
    uint32_t x[12], y[12];
    fp_wide_t t;
    fp_detail::row_first(x, y, a, b.l[0]);
    t.l[0] = x[0];
#pragma unroll
    for (int i = 1; i < 12; i += 2) {
        fp_detail::row_next(x, y, a, b.l[i]);  // the even array is now y
        t.l[i] = y[0];
        if (i + 1 < 12) {
            fp_detail::row_next(y, x, a, b.l[i + 1]);  // the even array is x again
            t.l[i + 1] = x[0];
        }
    }
    // The rest, y[1..12) + x at weight 2^(32·12): below 2^384, as the product is below 2^768.
    fp_t hi = fp_detail::fold(y, x);
#pragma unroll
    for (int k = 0; k < 12; k++) t.l[12 + k] = hi.l[k];
    return t;
}

// T·2^-384 mod p (Montgomery reduction), canonical, for T < p·2^384. The twelve reduction rows
// run on the low half L = T mod 2^384 alone, giving (L + M·p)/2^384 < p + 1; the high half
// H = floor(T/2^384) < p is added afterwards, since (T + M·p)/2^384 = H + (L + M·p)/2^384, and
// the total is below 2p.
FR_HD fp_t fp_redc(const fp_wide_t& t) {
    uint32_t x[12], y[12];
#pragma unroll
    for (int k = 0; k < 12; k++) {
        x[k] = t.l[k];
        y[k] = 0;
    }
    fp_detail::reduce(x, y);
#pragma unroll
    for (int i = 1; i < 12; i += 2) {
        fp_detail::shift(x, y);  // the even array is now y
        fp_detail::reduce(y, x);
        if (i + 1 < 12) {
            fp_detail::shift(y, x);  // the even array is x again
            fp_detail::reduce(x, y);
        }
    }
    // (L + M·p)/2^384 = y[1..12) + x, plus H.
    fp_t h;
#pragma unroll
    for (int k = 0; k < 12; k++) h.l[k] = t.l[12 + k];
    return fp_reduce_once(fp_detail::int_add(fp_detail::fold(y, x), h));
}

namespace fp_detail {
// a −= b over 24 limbs, for a ≥ b.
FR_HD void wide_sub(fp_wide_t& a, const fp_wide_t& b) {
    a.l[0] = sub_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < 23; i++) a.l[i] = subc_cc(a.l[i], b.l[i]);
    a.l[23] = subc(a.l[23], b.l[23]);
}

// a += p².
FR_HD void wide_add_p2(fp_wide_t& a) {
    a.l[0] = add_cc(a.l[0], fp_p2_limb(0));
#pragma unroll
    for (int i = 1; i < 23; i++) a.l[i] = addc_cc(a.l[i], fp_p2_limb(i));
    a.l[23] = addc(a.l[23], fp_p2_limb(23));
}

}  // namespace fp_detail

// R³ mod p (R = 2^384), little-endian limbs: fp_mul(x, R³) = x·R² takes an integer inverse of a
// Montgomery form back to Montgomery form.
FR_HD constexpr uint32_t fp_r3_limb(int i) {
    return i == 0 ? 0xd94ca1e0u : i == 1 ? 0xed48ac6bu : i == 2 ? 0x03a7adf8u
         : i == 3 ? 0x315f831eu : i == 4 ? 0x615e29ddu : i == 5 ? 0x9a53352au
         : i == 6 ? 0x921e1761u : i == 7 ? 0x34c04e5eu : i == 8 ? 0x65724728u
         : i == 9 ? 0x2512d435u : i == 10 ? 0x91755d4du : 0x0aa63460u;
}

namespace fp_detail {
// u >>= 1 for a 12-limb u.
FR_HD void shr1(fp_t& u) {
#pragma unroll
    for (int i = 0; i < 11; i++) u.l[i] = (u.l[i] >> 1) | (u.l[i + 1] << 31);
    u.l[11] >>= 1;
}

// x/2 mod p for x < p: (x + p)/2 when x is odd (x + p < 2^382 fits the twelve limbs).
FR_HD void half(fp_t& x) {
    if (x.l[0] & 1) {
        x.l[0] = add_cc(x.l[0], fp_modulus(0));
#pragma unroll
        for (int i = 1; i < 11; i++) x.l[i] = addc_cc(x.l[i], fp_modulus(i));
        x.l[11] = addc(x.l[11], fp_modulus(11));
    }
    shr1(x);
}

FR_HD bool is_one_int(const fp_t& u) {
    uint32_t acc = u.l[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < 12; i++) acc |= u.l[i];
    return acc == 0;
}

// u >= v, as integers.
FR_HD bool geq(const fp_t& u, const fp_t& v) {
    uint32_t t = sub_cc(u.l[0], v.l[0]);
#pragma unroll
    for (int i = 1; i < 12; i++) t = subc_cc(u.l[i], v.l[i]);
    (void)t;
    return subc(0, 0) == 0;
}

// u -= v, for u >= v.
FR_HD void sub_int(fp_t& u, const fp_t& v) {
    u.l[0] = sub_cc(u.l[0], v.l[0]);
#pragma unroll
    for (int i = 1; i < 11; i++) u.l[i] = subc_cc(u.l[i], v.l[i]);
    u.l[11] = subc(u.l[11], v.l[11]);
}
}  // namespace fp_detail

// a⁻¹ in Montgomery form (zero for zero), in variable time: the binary extended Euclidean
// algorithm on the integer A = a·R mod p gives A⁻¹, and fp_mul(A⁻¹, R³) = a⁻¹·R. About 760
// shifts and 380 subtractions of twelve limbs, each a short dependency chain: a few tens of
// microseconds in one GPU thread, where Fermat's 380 squarings take about a millisecond. Only
// the batch inversions of the MSM's affine rounds call it, once per round, so its latency is
// what counts; the values it inverts are public (products of point coordinates).
FR_HD fp_t fp_inv(const fp_t& a) {
    if (a.is_zero()) return a;
    fp_t u = a, v, x1 = fp_t::zero(), x2 = fp_t::zero();
#pragma unroll
    for (int i = 0; i < 12; i++) v.l[i] = fp_modulus(i);
    x1.l[0] = 1;
    while (!fp_detail::is_one_int(u) && !fp_detail::is_one_int(v)) {
        while (!(u.l[0] & 1)) {
            fp_detail::shr1(u);
            fp_detail::half(x1);
        }
        while (!(v.l[0] & 1)) {
            fp_detail::shr1(v);
            fp_detail::half(x2);
        }
        if (fp_detail::geq(u, v)) {
            fp_detail::sub_int(u, v);
            x1 = fp_sub(x1, x2);
        } else {
            fp_detail::sub_int(v, u);
            x2 = fp_sub(x2, x1);
        }
    }
    fp_t r3;
#pragma unroll
    for (int i = 0; i < 12; i++) r3.l[i] = fp_r3_limb(i);
    return fp_mul(fp_detail::is_one_int(u) ? x1 : x2, r3);
}
