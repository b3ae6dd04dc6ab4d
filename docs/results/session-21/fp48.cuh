// Fp multiplication on the FP64 pipe: eight 48-bit limbs held in doubles, R = 2^384.
//
// Session 21 experiment, not part of the build: exact, but 20.8-23.1 G/s on the H200 against
// fp_mul's 26.8-27.4 (docs/benchmarks.md, GPU MSM, session 21: the FP64 pipe loses its rate beside
// the integer column sums and does not overlap the integer multiplies). Checked by
// fp48_host_check.cpp (host) and fp48_probe.cu (device), beside this file.
//
// Why it was tried. `fp_mul` (fp.cuh) is bounded by its 279 IMAD.WIDE.U32(.X) in carry chains, which issue
// at a quarter of the SM sub-partition's rate (docs/benchmarks.md, session 15): about 1120 cycles
// of the heavy multiply pipe per warp multiplication, 26.6 G/s on the H200. The H200's FP64 pipe
// is separate and issues a DFMA every two cycles; one DFMA pair multiplies 48 x 48 bits, 2.25
// times the bits of an IMAD.WIDE. Moving the 128 partial products there (three FP64 operations
// each) costs about 800 FP64-pipe cycles per warp multiplication, with the column sums on the
// integer ALU. The form is Emmart, Zheng and Weems's (ARITH 2018), as `mont52.cuh` writes it for
// Fr with 52-bit limbs; with 48-bit limbs eight of them cover exactly twelve 32-bit limbs, so the
// Montgomery form (R = 2^384) and the layout are `fp.cuh`'s and the two multiplications are
// interchangeable: `fp_mul48(a, b) == fp_mul(a, b)` for all canonical a, b.
//
// The product split, for integers a, b < 2^48 held exactly in doubles:
//   h = fma_rz(a, b, 2^100)              = 2^100 + H·2^48, H = floor(a·b / 2^48)
//   l = fma_rz(a, b, (2^100 + 2^52) - h) = 2^52 + L,      L = a·b mod 2^48
// h lies in [2^100, 2^101), where doubles are 2^48 apart, and rounding toward zero truncates to H;
// (2^100 + 2^52) - h = 2^52 - H·2^48 is exact (49 significant bits); l lies in [2^52, 2^53), where
// doubles are the integers. So bits(h) = E100 + H and bits(l) = E52 + L, with E100 and E52 the bit
// patterns of 2^100 and 2^52, whose low 52 bits are zero. Column k (weight 2^(48k)) sums bits(l)
// of every pair with i + j = k and bits(h) of every pair with i + j = k − 1 in a uint64_t that
// starts at minus the offsets it will receive (mod 2^64): once every term is in, it holds its exact
// value, and its low 52 bits are exact at any time.
//
// The reduction is Montgomery's with 48-bit digits, folded into the product scanning: column k
// (k < 8) takes q_k = (column_k mod 2^48)·(−p⁻¹ mod 2^48) mod 2^48 once every other term is in
// (a 64-bit integer product on the otherwise idle multiply pipe), then adds q_k·p_0, which clears
// its low 48 bits; q_k·p_j joins column k + j. Columns 8..15 are the result.
//
// Bounds. For a, b < p: (a·b + Q·p)/2^384 < p·(p/2^384 + 1) < 2p, reduced once at the end. A
// column holds at most 16 low and 16 high halves (each below 2^48) and a carry: below 2^54.
//
// On the host the same code runs with `mont52.cuh`'s exact emulation of fma_rz, so
// fp48_host_check.cpp checks it against `fp_mul` without a GPU.
#pragma once

#include "field/fp.cuh"
#include "field/mont52.cuh"

namespace fp48 {

constexpr uint64_t MASK = (1ull << 48) - 1;
constexpr uint64_t E52 = 0x4330000000000000ull;   // bit pattern of 2^52
constexpr uint64_t E100 = 0x4630000000000000ull;  // bit pattern of 2^100
constexpr double TWO52 = 4503599627370496.0;      // 2^52
constexpr double TWO100 = 1267650600228229401496703205376.0;  // 2^100
constexpr double TWO100_52 = TWO100 + TWO52;                  // exact: 49 significant bits
constexpr uint64_t MINV = 0xfffcfffcfffdull;  // −p⁻¹ mod 2^48

// p in 48-bit limbs, exact doubles.
FR_HD constexpr double modulus(int i) {
    return (double)(i == 0 ? 0xffffffffaaabull : i == 1 ? 0xb153ffffb9feull
                    : i == 2 ? 0xf6241eabfffeull : i == 3 ? 0x6730d2a0f6b0ull
                    : i == 4 ? 0x4b84f38512bfull : i == 5 ? 0x434bacd76477ull
                    : i == 6 ? 0xe69a4b1ba7b6ull : 0x1a0111ea397full);
}

// Low halves at i + j = k and high halves at i + j = k − 1 that column k receives: as many pairs
// (i, j) of a·b as of q·p.
FR_HD constexpr uint64_t offset(int k) {
    return 2 * mont52::pairs_at(8, k) * E52 + 2 * mont52::pairs_at(8, k - 1) * E100;
}

// The exact double of a 48-bit value given as its low 32 bits and high 16 bits: the bit pattern
// of 2^52 + v, less 2^52.
FR_HD double from_parts(uint32_t lo, uint32_t hi16) {
    uint64_t b = ((uint64_t)(0x43300000u | hi16) << 32) | lo;
    return mont52::from_bits(b) - TWO52;
}

// The eight 48-bit limbs of x (twelve 32-bit limbs) as exact doubles: limb 2j is words 3j and the
// low half of 3j + 1, limb 2j + 1 the high half of 3j + 1 and word 3j + 2.
FR_HD void split(const fp_t& x, double (&d)[8]) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        uint32_t w0 = x.l[3 * j], w1 = x.l[3 * j + 1], w2 = x.l[3 * j + 2];
        d[2 * j] = from_parts(w0, w1 & 0xffffu);
        d[2 * j + 1] = from_parts((w1 >> 16) | (w2 << 16), w2 >> 16);
    }
}

// The split product a·b into columns lo (weight 1) and hi (weight 2^48).
FR_HD void mul_acc(double a, double b, uint64_t& lo, uint64_t& hi) {
    double h = mont52::fma_rz(a, b, TWO100);
    double l = mont52::fma_rz(a, b, TWO100_52 - h);
    lo += mont52::bits(l);
    hi += mont52::bits(h);
}

// Eight 48-bit columns (the top one below 2^46: the value is below 2p) into twelve words, reduced
// once.
FR_HD fp_t pack(const uint64_t (&out)[8]) {
    fp_t s;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        uint64_t c0 = out[2 * j], c1 = out[2 * j + 1];
        s.l[3 * j] = (uint32_t)c0;
        s.l[3 * j + 1] = (uint32_t)(c0 >> 32) | ((uint32_t)c1 << 16);
        s.l[3 * j + 2] = (uint32_t)(c1 >> 16);
    }
    return fp_reduce_once(s);
}

}  // namespace fp48

// a·b·2^-384 mod p for a, b < p, canonical: the same value as fp_mul(a, b), on the FP64 pipe.
FR_HD fp_t fp_mul48(const fp_t& a, const fp_t& b) {
    double x[8], y[8], q[8];
    fp48::split(a, x);
    fp48::split(b, y);
    uint64_t out[8];
    uint64_t cur = 0 - fp48::offset(0);
#pragma unroll
    for (int k = 0; k < 16; k++) {
        uint64_t nxt = 0 - fp48::offset(k + 1);
        const int lo = k - 7 > 0 ? k - 7 : 0;
        const int hi = k < 7 ? k : 7;
#pragma unroll
        for (int i = lo; i <= hi; i++) fp48::mul_acc(x[i], y[k - i], cur, nxt);
#pragma unroll
        for (int i = lo; i <= hi; i++) {
            if (i < k) fp48::mul_acc(q[i], fp48::modulus(k - i), cur, nxt);
        }
        if (k < 8) {
            uint64_t qk = ((cur & fp48::MASK) * fp48::MINV) & fp48::MASK;
            q[k] = fp48::from_parts((uint32_t)qk, (uint32_t)(qk >> 32));
            fp48::mul_acc(q[k], fp48::modulus(0), cur, nxt);
        } else {
            out[k - 8] = k == 15 ? cur : cur & fp48::MASK;
        }
        nxt += cur >> 48;
        cur = nxt;
    }
    return fp48::pack(out);
}
