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

// a² as a product: a dedicated squaring (78 products instead of 144) was faster alone but slower
// inside the MSM's kernels on the H200 (docs/benchmarks.md, tried and not kept).
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
// Measured and not kept (docs/benchmarks.md, tried and not kept): a dedicated squaring (78 products
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

// The inversion: Bernstein and Yang's "safegcd" (Fast constant-time gcd computation and modular
// inversion, 2019) in its variable-time form, as libsecp256k1's modinv32 writes it: divsteps in
// batches of 30 on the low 32 bits of f and g, each batch's 2x2 transition matrix then applied to
// the full f, g (signed, 13 limbs of 30 bits) and to their coefficients d, e modulo p (divided
// by 2^30 Montgomery-style, so no correction is left at the end). About 27 batches for a random
// 381-bit input, where the binary extended Euclid it replaces took some 760 dependent shifts and
// 380 subtractions of the whole twelve limbs.
namespace fp_inv_detail {
constexpr int LIMBS = 13;  // 13 · 30 = 390 bits: p < 2^381 and the sign
constexpr int32_t M30 = (int32_t)0x3fffffff;
// p in 30-bit limbs, and p^-1 mod 2^30.
FR_HD constexpr int32_t p30(int i) {
    return i == 0 ? 0x3fffaaab : i == 1 ? 0x27fbffff : i == 2 ? 0x153ffffb : i == 3 ? 0x2affffac
         : i == 4 ? 0x30f6241e : i == 5 ? 0x034a83da : i == 6 ? 0x112bf673 : i == 7 ? 0x12e13ce1
         : i == 8 ? 0x2cd76477 : i == 9 ? 0x1ed90d2e : i == 10 ? 0x29a4b1ba : i == 11 ? 0x3a8e5ff9
         : 0x001a0111;
}
constexpr uint32_t P_INV30 = 0x30003u;

// Σ v[i]·2^(30·i): limbs 0..11 in [0, 2^30), the top limb signed.
struct s30_t {
    int32_t v[LIMBS];
};

// The transition matrix of 30 divsteps: [f', g']·2^30 = [[u, v], [q, r]]·[f, g], with
// |u| + |v| ≤ 2^30 and |q| + |r| ≤ 2^30.
struct trans_t {
    int32_t u, v, q, r;
};

FR_HD int ctz32(uint32_t x) {
#if defined(__CUDA_ARCH__)
    return __ffs((int)x) - 1;
#else
    return __builtin_ctz(x);
#endif
}

// 30 divsteps on the low bits of f (odd) and g, in variable time: runs of zeros in g in one
// shift, and up to 8 bits of g cancelled at once (g += w·f with w = −g/f mod 2^limit, limit at
// most eta + 1, so that the steps taken are the divsteps' own). eta is −delta.
FR_HD int32_t divsteps_30(int32_t eta, uint32_t f, uint32_t g, trans_t& t) {
    uint32_t u = 1, v = 0, q = 0, r = 1;
    int i = 30;
    for (;;) {
        // A sentinel bit at i stops the count at the steps left.
        int zeros = ctz32(g | (0xffffffffu << i));
        g >>= zeros;
        u <<= zeros;
        v <<= zeros;
        eta -= zeros;
        i -= zeros;
        if (i == 0) break;
        // f and g are odd.
        if (eta < 0) {
            uint32_t tmp;
            eta = -eta;
            tmp = f; f = g; g = 0u - tmp;
            tmp = u; u = q; q = 0u - tmp;
            tmp = v; v = r; r = 0u - tmp;
        }
        int limit = eta + 1 > i ? i : eta + 1;
        uint32_t m = (0xffffffffu >> (32 - limit)) & 255u;
        // −1/f mod 2^8: (3f) xor 2 is 1/f to 5 bits, one Newton step doubles that.
        uint32_t inv = (3u * f) ^ 2u;
        inv *= 2u - f * inv;
        uint32_t w = (0u - g * inv) & m;
        g += f * w;
        q += u * w;
        r += v * w;
    }
    t.u = (int32_t)u;
    t.v = (int32_t)v;
    t.q = (int32_t)q;
    t.r = (int32_t)r;
    return eta;
}

// [x, y] ← (t·[x, y] + p·[mx, my]) / 2^30, exact: the caller chose mx, my (zero for f, g) so
// that the low 30 bits of both sums are zero.
FR_HD void combine(s30_t& x, s30_t& y, const trans_t& t, int32_t mx, int32_t my) {
    int64_t cx = (int64_t)t.u * x.v[0] + (int64_t)t.v * y.v[0] + (int64_t)p30(0) * mx;
    int64_t cy = (int64_t)t.q * x.v[0] + (int64_t)t.r * y.v[0] + (int64_t)p30(0) * my;
    cx >>= 30;
    cy >>= 30;
#pragma unroll
    for (int i = 1; i < LIMBS; i++) {
        cx += (int64_t)t.u * x.v[i] + (int64_t)t.v * y.v[i] + (int64_t)p30(i) * mx;
        cy += (int64_t)t.q * x.v[i] + (int64_t)t.r * y.v[i] + (int64_t)p30(i) * my;
        x.v[i - 1] = (int32_t)cx & M30;
        y.v[i - 1] = (int32_t)cy & M30;
        cx >>= 30;
        cy >>= 30;
    }
    x.v[LIMBS - 1] = (int32_t)cx;
    y.v[LIMBS - 1] = (int32_t)cy;
}

// [d, e] ← t·[d, e] / 2^30 mod p, with d, e in (−2p, p) before and after (libsecp256k1's
// update_de_30): the multiples md, me of p added make the low 30 bits zero, and start with
// t's entries where d or e is negative, which keeps the range.
FR_HD void update_de(s30_t& d, s30_t& e, const trans_t& t) {
    int32_t sd = d.v[LIMBS - 1] >> 31, se = e.v[LIMBS - 1] >> 31;
    int32_t md = (t.u & sd) + (t.v & se);
    int32_t me = (t.q & sd) + (t.r & se);
    uint32_t cd = (uint32_t)t.u * (uint32_t)d.v[0] + (uint32_t)t.v * (uint32_t)e.v[0];
    uint32_t ce = (uint32_t)t.q * (uint32_t)d.v[0] + (uint32_t)t.r * (uint32_t)e.v[0];
    md -= (int32_t)((P_INV30 * cd + (uint32_t)md) & (uint32_t)M30);
    me -= (int32_t)((P_INV30 * ce + (uint32_t)me) & (uint32_t)M30);
    combine(d, e, t, md, me);
}

// [f, g] ← t·[f, g] / 2^30 (exact: the divsteps made the low 30 bits zero).
FR_HD void update_fg(s30_t& f, s30_t& g, const trans_t& t) { combine(f, g, t, 0, 0); }

FR_HD bool is_zero(const s30_t& x) {
    int32_t acc = 0;
#pragma unroll
    for (int i = 0; i < LIMBS; i++) acc |= x.v[i];
    return acc == 0;
}

// x += p·k for k in {−1, 0, 1}, limbs renormalised.
FR_HD void add_p_times(s30_t& x, int32_t k) {
    int64_t c = 0;
#pragma unroll
    for (int i = 0; i < LIMBS - 1; i++) {
        c += (int64_t)x.v[i] + (int64_t)p30(i) * k;
        x.v[i] = (int32_t)c & M30;
        c >>= 30;
    }
    x.v[LIMBS - 1] = (int32_t)(c + x.v[LIMBS - 1] + (int64_t)p30(LIMBS - 1) * k);
}

FR_HD void negate(s30_t& x) {
    int64_t c = 0;
#pragma unroll
    for (int i = 0; i < LIMBS - 1; i++) {
        c -= x.v[i];
        x.v[i] = (int32_t)c & M30;
        c >>= 30;
    }
    x.v[LIMBS - 1] = (int32_t)(c - x.v[LIMBS - 1]);
}

// x ≥ p, for 0 ≤ x < 2^390.
FR_HD bool geq_p(const s30_t& x) {
    int64_t c = 0;
#pragma unroll
    for (int i = 0; i < LIMBS; i++) {
        c += (int64_t)x.v[i] - p30(i);
        c >>= 30;
    }
    return c >= 0;
}

FR_HD s30_t from_fp(const fp_t& a) {
    s30_t x;
#pragma unroll
    for (int i = 0; i < LIMBS; i++) {
        int bit = 30 * i, w = bit / 32, sh = bit % 32;
        uint64_t window = a.l[w];
        if (w + 1 < 12) window |= (uint64_t)a.l[w + 1] << 32;
        x.v[i] = (int32_t)(window >> sh) & M30;
    }
    return x;
}

// For 0 ≤ x < 2^384 with limbs in [0, 2^30).
FR_HD fp_t to_fp(const s30_t& x) {
    fp_t a;
#pragma unroll
    for (int w = 0; w < 12; w++) {
        int bit = 32 * w, i = bit / 30, sh = bit % 30;
        uint64_t window = (uint32_t)x.v[i];
        if (i + 1 < LIMBS) window |= (uint64_t)(uint32_t)x.v[i + 1] << 30;
        if (i + 2 < LIMBS) window |= (uint64_t)(uint32_t)x.v[i + 2] << 60;
        a.l[w] = (uint32_t)(window >> sh);
    }
    return a;
}
}  // namespace fp_inv_detail

// a⁻¹ in Montgomery form (zero for zero), in variable time: safegcd (above) on the integer
// A = a·R mod p gives A⁻¹, and fp_mul(A⁻¹, R³) = a⁻¹·R. Only the batch inversions of the MSM's
// affine rounds call it, once per round in one thread, so its latency is what counts; the values
// it inverts are public (products of point coordinates).
FR_HD fp_t fp_inv(const fp_t& a) {
    using namespace fp_inv_detail;
    if (a.is_zero()) return a;
    s30_t f, g = from_fp(a), d = {}, e = {};
#pragma unroll
    for (int i = 0; i < LIMBS; i++) f.v[i] = p30(i);
    e.v[0] = 1;
    // f ≡ d·A and g ≡ e·A (mod p) throughout; g reaches zero and f ±1 (gcd(A, p) = 1).
    int32_t eta = -1;
    while (!is_zero(g)) {
        trans_t t;
        eta = divsteps_30(eta, (uint32_t)f.v[0], (uint32_t)g.v[0], t);
        update_de(d, e, t);
        update_fg(f, g, t);
    }
    // A⁻¹ = ±d: d in (−2p, p) to [0, p), negated where f = −1.
    if (d.v[LIMBS - 1] < 0) add_p_times(d, 1);
    if (d.v[LIMBS - 1] < 0) add_p_times(d, 1);
    if (f.v[LIMBS - 1] < 0) {
        negate(d);
        add_p_times(d, 1);
    }
    if (geq_p(d)) add_p_times(d, -1);
    fp_t r3;
#pragma unroll
    for (int i = 0; i < 12; i++) r3.l[i] = fp_r3_limb(i);
    return fp_mul(to_fp(d), r3);
}
