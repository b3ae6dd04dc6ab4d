// Fr, the scalar field of BLS12-381, in Montgomery form on the GPU.
//
// Layout: eight little-endian 32-bit limbs of a·R mod r with R = 2^256, byte-identical to blst's
// `blst_fr` (four little-endian 64-bit limbs) on a little-endian host, so host vectors of blstrs
// scalars go to the device without conversion (`cuzk_field::layout::FrLimbs`).
//
// Multiplication is Montgomery's CIOS with the "even/odd" split: the products a[j]·b[i] with j
// even accumulate into one array and those with j odd into another, offset by one limb, so every
// product lands on an aligned pair of limbs and each (mad.lo.cc, madc.hi.cc) pair becomes one
// 64-bit multiply-add with carry (IMAD.WIDE.U32.X) in SASS. The reduction factor needs no
// multiply: r ≡ 1 (mod 2^32), so -r^-1 ≡ -1 and m = -t0; its products m·r[j] are fused pairs
// too (`madc_pair_cc`), and r[0] = 1, r[1] = 2^32 − 1 cost no multiplication. Its speed is
// bounded by the 32x32->64 multiplies (IMAD.WIDE occupies the heavy multiply pipe twice as long
// as IMAD; ncu: that pipe 81% busy): about 55 G multiplications/s on an H200
// (crates/ntt/examples/bench_ntt.rs measures it), whatever the occupancy.
//
// Bounds: r < 2^255 (top limb 0x73eda753 < 2^31) is what lets the odd array's top limb absorb
// every carry, so no carry is dropped. `mul(a, b)` needs a < r and accepts any b < 2^256; its
// result is canonical (< r).
//
// The same source compiles for the host with a C emulation of the PTX carry instructions, so the
// arithmetic can be checked on a machine without a GPU (kernels/tests/fr_host_check.cpp).
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define FR_HD __host__ __device__ __forceinline__
#define FR_D __device__ __forceinline__
#else
#define FR_HD inline
#define FR_D inline
#endif

// ---------------------------------------------------------------------------------------------
// Carry-chain primitives. On the device each is one PTX instruction; the carry flag (CC.CF) is
// carried between consecutive `asm volatile` statements, which keeps their order. On the host
// they emulate the same instructions with an explicit flag.
// ---------------------------------------------------------------------------------------------
#if defined(__CUDA_ARCH__)

#define FR_ASM asm volatile
FR_D uint32_t add_cc(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("add.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
FR_D uint32_t addc_cc(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("addc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
FR_D uint32_t addc(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("addc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
FR_D uint32_t sub_cc(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("sub.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
FR_D uint32_t subc_cc(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("subc.cc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
FR_D uint32_t subc(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("subc.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
FR_D uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; FR_ASM("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
FR_D uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; FR_ASM("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
FR_D uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; FR_ASM("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
FR_D uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) { uint32_t r; FR_ASM("madc.hi.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c)); return r; }
FR_D uint32_t mul_lo(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("mul.lo.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
FR_D uint32_t mul_hi(uint32_t a, uint32_t b) { uint32_t r; FR_ASM("mul.hi.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r; }
#undef FR_ASM

#else  // Host emulation of the same instructions, for checking the algorithm without a GPU.

static thread_local uint32_t fr_emu_cf = 0;
inline uint32_t add_cc(uint32_t a, uint32_t b) { uint64_t s = (uint64_t)a + b; fr_emu_cf = (uint32_t)(s >> 32); return (uint32_t)s; }
inline uint32_t addc_cc(uint32_t a, uint32_t b) { uint64_t s = (uint64_t)a + b + fr_emu_cf; fr_emu_cf = (uint32_t)(s >> 32); return (uint32_t)s; }
inline uint32_t addc(uint32_t a, uint32_t b) { return a + b + fr_emu_cf; }
inline uint32_t sub_cc(uint32_t a, uint32_t b) { fr_emu_cf = a < b; return a - b; }
inline uint32_t subc_cc(uint32_t a, uint32_t b) { uint64_t d = (uint64_t)a - b - fr_emu_cf; fr_emu_cf = (uint32_t)(d >> 63); return (uint32_t)d; }
inline uint32_t subc(uint32_t a, uint32_t b) { return a - b - fr_emu_cf; }
inline uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint64_t s = (uint64_t)(uint32_t)(a * b) + c; fr_emu_cf = (uint32_t)(s >> 32); return (uint32_t)s; }
inline uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { uint64_t s = (uint64_t)(uint32_t)(a * b) + c + fr_emu_cf; fr_emu_cf = (uint32_t)(s >> 32); return (uint32_t)s; }
inline uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { uint64_t s = (((uint64_t)a * b) >> 32) + c + fr_emu_cf; fr_emu_cf = (uint32_t)(s >> 32); return (uint32_t)s; }
inline uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) { return (uint32_t)((((uint64_t)a * b) >> 32) + c + fr_emu_cf); }
inline uint32_t mul_lo(uint32_t a, uint32_t b) { return a * b; }
inline uint32_t mul_hi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }

#endif

// Fused multiply-add pairs on an aligned pair of limbs (lo, hi) += a·b, in the carry chain.
// On the device each pair is one asm statement, which ptxas turns into one IMAD.WIDE.U32(.X);
// on the host, the emulated instructions above in the same order.
#if defined(__CUDA_ARCH__)
// (lo, hi) += a·b, starting a carry chain (no carry in), carry out.
FR_D void mad_pair_cc(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b) {
    asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi) : "r"(a), "r"(b));
}
// (lo, hi) += a·b + carry in, carry out.
FR_D void madc_pair_cc(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b) {
    asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi) : "r"(a), "r"(b));
}
// (lo, hi) += a·b + carry in, ending the chain (no carry out).
FR_D void madc_pair(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b) {
    asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.u32 %1, %2, %3, %1;"
                 : "+r"(lo), "+r"(hi) : "r"(a), "r"(b));
}
// (lo, hi) = a·b + (c_lo, c_hi) + carry in, carry out.
FR_D void madc_pair_to_cc(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b, uint32_t c_lo, uint32_t c_hi) {
    asm volatile("madc.lo.cc.u32 %0, %2, %3, %4; madc.hi.cc.u32 %1, %2, %3, %5;"
                 : "=r"(lo), "=r"(hi) : "r"(a), "r"(b), "r"(c_lo), "r"(c_hi));
}
#else
inline void mad_pair_cc(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b) {
    lo = mad_lo_cc(a, b, lo);
    hi = madc_hi_cc(a, b, hi);
}
inline void madc_pair_cc(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b) {
    lo = madc_lo_cc(a, b, lo);
    hi = madc_hi_cc(a, b, hi);
}
inline void madc_pair(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b) {
    lo = madc_lo_cc(a, b, lo);
    hi = madc_hi(a, b, hi);
}
inline void madc_pair_to_cc(uint32_t& lo, uint32_t& hi, uint32_t a, uint32_t b, uint32_t c_lo, uint32_t c_hi) {
    lo = madc_lo_cc(a, b, c_lo);
    hi = madc_hi_cc(a, b, c_hi);
}
#endif

// ---------------------------------------------------------------------------------------------
// Constants.
// ---------------------------------------------------------------------------------------------

// The modulus r, little-endian 32-bit limbs (as `cuzk_field::layout::FR_MODULUS`).
FR_HD constexpr uint32_t fr_modulus(int i) {
    return i == 0 ? 0x00000001u : i == 1 ? 0xffffffffu : i == 2 ? 0xfffe5bfeu
         : i == 3 ? 0x53bda402u : i == 4 ? 0x09a1d805u : i == 5 ? 0x3339d808u
         : i == 6 ? 0x299d7d48u : 0x73eda753u;
}

// R mod r: one in Montgomery form.
FR_HD constexpr uint32_t fr_one_limb(int i) {
    return i == 0 ? 0xfffffffeu : i == 1 ? 0x00000001u : i == 2 ? 0x00034802u
         : i == 3 ? 0x5884b7fau : i == 4 ? 0xecbc4ff5u : i == 5 ? 0x998c4fefu
         : i == 6 ? 0xacc5056fu : 0x1824b159u;
}

// R^2 mod r: multiplying by it (Montgomery) converts into Montgomery form.
FR_HD constexpr uint32_t fr_r2_limb(int i) {
    return i == 0 ? 0xf3f29c6du : i == 1 ? 0xc999e990u : i == 2 ? 0x87925c23u
         : i == 3 ? 0x2b6cedcbu : i == 4 ? 0x7254398fu : i == 5 ? 0x05d31496u
         : i == 6 ? 0x9f59ff11u : 0x0748d9d9u;
}

// ---------------------------------------------------------------------------------------------
// The element type.
// ---------------------------------------------------------------------------------------------
struct fr_t {
    uint32_t l[8];

    FR_HD static fr_t zero() { fr_t r; for (int i = 0; i < 8; i++) r.l[i] = 0; return r; }
    FR_HD static fr_t one() { fr_t r; for (int i = 0; i < 8; i++) r.l[i] = fr_one_limb(i); return r; }
    FR_HD static fr_t r2() { fr_t r; for (int i = 0; i < 8; i++) r.l[i] = fr_r2_limb(i); return r; }
    FR_HD bool is_zero() const {
        uint32_t acc = 0;
        for (int i = 0; i < 8; i++) acc |= l[i];
        return acc == 0;
    }
};

// s mod r for s < 2r: subtracts r and keeps the difference when it did not borrow.
FR_HD fr_t fr_reduce_once(const fr_t& s) {
    fr_t t;
    t.l[0] = sub_cc(s.l[0], fr_modulus(0));
#pragma unroll
    for (int i = 1; i < 8; i++) t.l[i] = subc_cc(s.l[i], fr_modulus(i));
    uint32_t borrow = subc(0, 0);  // 0 or 0xffffffff
#pragma unroll
    for (int i = 0; i < 8; i++) t.l[i] = borrow ? s.l[i] : t.l[i];
    return t;
}

// a + b mod r, for a, b < r.
FR_HD fr_t fr_add(const fr_t& a, const fr_t& b) {
    fr_t s;
    s.l[0] = add_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) s.l[i] = addc_cc(a.l[i], b.l[i]);
    // s < 2r < 2^256: no carry out.
    return fr_reduce_once(s);
}

// a - b mod r, for a, b < r.
FR_HD fr_t fr_sub(const fr_t& a, const fr_t& b) {
    fr_t d;
    d.l[0] = sub_cc(a.l[0], b.l[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) d.l[i] = subc_cc(a.l[i], b.l[i]);
    uint32_t mask = subc(0, 0);  // all ones when a < b: add r back
    d.l[0] = add_cc(d.l[0], fr_modulus(0) & mask);
#pragma unroll
    for (int i = 1; i < 8; i++) d.l[i] = addc_cc(d.l[i], fr_modulus(i) & mask);
    return d;
}

// -a mod r, for a < r.
FR_HD fr_t fr_neg(const fr_t& a) {
    fr_t d;
    uint32_t nz = a.is_zero() ? 0u : 0xffffffffu;
    d.l[0] = sub_cc(fr_modulus(0) & nz, a.l[0]);
#pragma unroll
    for (int i = 1; i < 8; i++) d.l[i] = subc_cc(fr_modulus(i) & nz, a.l[i]);
    return d;
}

// 2a mod r, for a < r.
FR_HD fr_t fr_double(const fr_t& a) { return fr_add(a, a); }

namespace fr_detail {

// First row: e = a_even·b0, o = a_odd·b0 (as aligned lo/hi pairs).
FR_HD void row_first(uint32_t e[8], uint32_t o[8], const fr_t& a, uint32_t b) {
#pragma unroll
    for (int q = 0; q < 4; q++) {
        e[2 * q] = mul_lo(a.l[2 * q], b);
        e[2 * q + 1] = mul_hi(a.l[2 * q], b);
        o[2 * q] = mul_lo(a.l[2 * q + 1], b);
        o[2 * q + 1] = mul_hi(a.l[2 * q + 1], b);
    }
}

// Adds m·r with m = -e[0], which clears e[0]. The value T = e + 2^32·o is kept; the even chain's
// carry (weight 2^256) goes into o[7]; the odd chain cannot carry out (see the bounds above).
//
// The products m·r[j] are fused multiply-add pairs (one asm statement each, as in fp.cuh), which
// leaves their carry chains to the multiply instructions: 55.4 G multiplications/s on the H200
// against 54.3 with plain products added by IADD3.X chains (same run, the `fr_bench_mul` loop).
// r[0] = 1 makes m·r[0] = m, and r[1] = 2^32 − 1 makes m·r[1] = (m − [m != 0])·2^32 + (2^32 − m)
// mod 2^64: two ALU operations instead of a multiplication.
FR_HD void reduce(uint32_t e[8], uint32_t o[8]) {
    uint32_t m = 0u - e[0];
    uint32_t t1_lo = sub_cc(0, m);
    uint32_t t1_hi = subc(m, 0);
    // Odd limbs of r into o (o[k] weighs 2^(32(k+1))).
    o[0] = add_cc(o[0], t1_lo);
    o[1] = addc_cc(o[1], t1_hi);
    madc_pair_cc(o[2], o[3], m, fr_modulus(3));
    madc_pair_cc(o[4], o[5], m, fr_modulus(5));
    madc_pair(o[6], o[7], m, fr_modulus(7));
    // Even limbs of r into e: e[0] + m = 0, with a carry when e[0] != 0.
    e[0] = add_cc(e[0], m);
    e[1] = addc_cc(e[1], 0);
    madc_pair_cc(e[2], e[3], m, fr_modulus(2));
    madc_pair_cc(e[4], e[5], m, fr_modulus(4));
    madc_pair_cc(e[6], e[7], m, fr_modulus(6));
    o[7] = addc(o[7], 0);
}

// Divides T = e + 2^32·o by 2^32 (e[0] is zero) and adds a·b. On return the roles swap: the new
// even array is `o` and the new odd array is `e` (shifted down by two limbs).
FR_HD void row_next(uint32_t e[8], uint32_t o[8], const fr_t& a, uint32_t b) {
    // e[1] now weighs 2^0: add it into the new even array's first limb; its carry weighs 2^32,
    // the first limb of the new odd array.
    o[0] = add_cc(o[0], e[1]);
    // New odd array: old e[k+2] plus the odd products.
#pragma unroll
    for (int q = 0; q < 3; q++) {
        e[2 * q] = madc_lo_cc(a.l[2 * q + 1], b, e[2 * q + 2]);
        e[2 * q + 1] = madc_hi_cc(a.l[2 * q + 1], b, e[2 * q + 3]);
    }
    e[6] = madc_lo_cc(a.l[7], b, 0);
    e[7] = madc_hi(a.l[7], b, 0);
    // New even array: old o plus the even products; its carry weighs 2^256, like e[7]'s limb.
    o[0] = mad_lo_cc(a.l[0], b, o[0]);
    o[1] = madc_hi_cc(a.l[0], b, o[1]);
#pragma unroll
    for (int q = 1; q < 4; q++) {
        o[2 * q] = madc_lo_cc(a.l[2 * q], b, o[2 * q]);
        o[2 * q + 1] = madc_hi_cc(a.l[2 * q], b, o[2 * q + 1]);
    }
    e[7] = addc(e[7], 0);
}

// Final division by 2^32 and conditional subtraction: returns (e[1..8] + o) mod r.
FR_HD fr_t finish(const uint32_t e[8], const uint32_t o[8]) {
    fr_t s;
    s.l[0] = add_cc(o[0], e[1]);
#pragma unroll
    for (int i = 1; i < 7; i++) s.l[i] = addc_cc(o[i], e[i + 1]);
    s.l[7] = addc(o[7], 0);
    return fr_reduce_once(s);
}

}  // namespace fr_detail

// a·b·R^-1 mod r (Montgomery product), for a < r and any b < 2^256.
FR_HD fr_t fr_mul(const fr_t& a, const fr_t& b) {
    uint32_t x[8], y[8];
    fr_detail::row_first(x, y, a, b.l[0]);
    fr_detail::reduce(x, y);
#pragma unroll
    for (int i = 1; i < 8; i += 2) {
        fr_detail::row_next(x, y, a, b.l[i]);  // even array is now y
        fr_detail::reduce(y, x);
        if (i + 1 < 8) {
            fr_detail::row_next(y, x, a, b.l[i + 1]);  // even array is x again
            fr_detail::reduce(x, y);
        }
    }
    // Eight rows: the last (i = 7) left the even array in y.
    return fr_detail::finish(y, x);
}

FR_HD fr_t fr_sqr(const fr_t& a) { return fr_mul(a, a); }

// a^e for a 256-bit exponent given as little-endian limbs (square and multiply, left to right).
FR_HD fr_t fr_pow(const fr_t& a, const uint32_t e[8]) {
    fr_t acc = fr_t::one();
    for (int i = 7; i >= 0; i--) {
        for (int bit = 31; bit >= 0; bit--) {
            acc = fr_sqr(acc);
            if ((e[i] >> bit) & 1) acc = fr_mul(acc, a);
        }
    }
    return acc;
}

// a^-1 by Fermat (a^(r-2)); the inverse of zero is zero.
FR_HD fr_t fr_inv(const fr_t& a) {
    uint32_t e[8];
    for (int i = 0; i < 8; i++) e[i] = fr_modulus(i);
    // r - 2: the low limb 1 - 2 wraps to 0xffffffff and borrows from limb 1.
    e[0] -= 2;
    e[1] -= 1;
    return fr_pow(a, e);
}

// The Montgomery form of an integer x < 2^256 (reduced mod r).
FR_HD fr_t fr_to_mont(const fr_t& x) { return fr_mul(fr_t::r2(), x); }

// The integer (canonical, < r) of a Montgomery form a < r: a·R^-1 mod r by Montgomery
// reduction alone, eight rounds of T = (T + m·r)/2^32 with m = −T[0] (r[0] = 1, so −r^-1 = −1
// mod 2^32), half the products of fr_mul(a, 1). Each round's T stays below 2^224 + r < 2^256,
// and the last is below r + 1 (T = (a + M·r)/2^256 with M < 2^256), so nothing carries out of
// eight limbs; the final subtraction is kept for the bound's edge.
FR_HD fr_t fr_from_mont(const fr_t& a) {
    uint32_t t[8];
#pragma unroll
    for (int i = 0; i < 8; i++) t[i] = a.l[i];
#pragma unroll
    for (int round = 0; round < 8; round++) {
        uint32_t m = 0u - t[0];
        uint64_t c = ((uint64_t)t[0] + m) >> 32;  // t[0] + m·r[0] = 0 mod 2^32: its carry
#pragma unroll
        for (int j = 1; j < 8; j++) {
            c += (uint64_t)t[j] + (uint64_t)m * fr_modulus(j);
            t[j - 1] = (uint32_t)c;
            c >>= 32;
        }
        t[7] = (uint32_t)c;
    }
    fr_t s;
#pragma unroll
    for (int i = 0; i < 8; i++) s.l[i] = t[i];
    return fr_reduce_once(s);
}
