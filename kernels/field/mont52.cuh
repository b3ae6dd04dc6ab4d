// Montgomery multiplication on the FP64 pipe: 52-bit limbs held in doubles, products split into
// exact high and low halves by fused multiply-adds, column sums in 64-bit integers.
//
// Why. The 32-bit integer multiplication (fr.cuh) is bounded by IMAD.WIDE, which occupies the
// heavy multiply pipe for two cycles: `ncu` shows that pipe 81% busy in `fr_bench_mul` on the
// H200, at 54.5 to 55.4 G multiplications/s. The FP64 pipe is a separate unit with the same issue
// rate as IMAD, and one DFMA multiplies 52 x 52 bits, 2.6 times the bits of an IMAD.WIDE per pipe
// cycle. This header moves the partial products there and keeps the integer pipes for the column
// sums (Emmart, Zheng and Weems, "Faster Modular Exponentiation Using Double Precision Floating
// Point Arithmetic on the GPU", ARITH 2018).
//
// Measured (`fr_bench_mul52`, `fr_bench_mul_hybrid`; docs/benchmarks.md): on the H200 this form
// reaches 49 G/s for Fr and the hybrid (integer and FP64 products interleaved) 53 to 55 G/s, no
// more than the integer form alone, so the NTT keeps the integer multiplication. The ALU pipe
// (the 64-bit column sums: about 200 operations per multiplication) and the FP64 pipe both sit
// near 54% with issue slots at 56 to 60%, held by dependent latency rather than by either pipe;
// interleaving two products per thread raised registers and lost occupancy, and the
// product-scanning form below (two live columns) did not change it.
//
// The product split. For integers a, b < 2^52 held exactly in doubles:
//   h = fma_rz(a, b, 2^104)              = 2^104 + H·2^52, H = floor(a·b / 2^52)
//   l = fma_rz(a, b, (2^104 + 2^52) - h) = 2^52 + L,      L = a·b mod 2^52
// Both results are exact: a·b < 2^104 puts h in [2^104, 2^105), where the spacing of doubles is
// 2^52, and rounding toward zero truncates to H; l lies in [2^52, 2^53), where doubles are the
// integers. The bit patterns are then integers with a fixed offset: bits(h) = E104 + H and
// bits(l) = E52 + L, with E104 and E52 the bit patterns of 2^104 and 2^52 (whose low 52 bits are
// zero). Column k of the product accumulates bits(l) of every pair with i + j = k and bits(h) of
// every pair with i + j = k - 1 in a uint64_t, starting from minus the sum of the offsets it will
// receive (mod 2^64), so that once every term is in, the column holds its exact value. Three FP64
// operations and two 64-bit additions per partial product, no IMAD.
//
// The reduction is Montgomery's with R = 2^(52·N), one 52-bit digit at a time: the quotient digit
// q = (column_k mod 2^52)·(-m^-1) mod 2^52 is itself the low half of a split product; adding q·m
// clears the column's low 52 bits and its carry moves into the next column. Reading column k's low
// 52 bits is exact before every offset has cancelled, because the offsets are multiples of 2^52.
//
// Bounds. For a < 2^(52·N) - the limb split - and b < m: the result (a·b + Q·m)/R is below
// m·(a/R + 1), so below 2m whenever a < R; callers reduce once more when they need canonical
// values. Every column stays below 2^58 (at most 4N terms of 52 bits, plus carries), far from the
// 2^64 wrap.
//
// On the host the same code runs with an exact emulation of fma_rz (integer operands only, which is
// all this file uses), so kernels/tests/fr_host_check.cpp checks it without a GPU.
#pragma once

#include <stdint.h>

#include "field/fr.cuh"

#if !defined(__CUDA_ARCH__)
#include <cstdlib>
#include <cstring>
#endif

namespace mont52 {

constexpr uint64_t MASK = (1ull << 52) - 1;
constexpr uint64_t E52 = 0x4330000000000000ull;   // bit pattern of 2^52
constexpr uint64_t E104 = 0x4670000000000000ull;  // bit pattern of 2^104
constexpr double TWO52 = 4503599627370496.0;      // 2^52
constexpr double TWO104 = 20282409603651670423947251286016.0;  // 2^104
constexpr double TWO104_52 = TWO104 + TWO52;      // exact: 53 significant bits

#if defined(__CUDA_ARCH__)
FR_D double fma_rz(double a, double b, double c) { return __fma_rz(a, b, c); }
FR_D uint64_t bits(double x) { return (uint64_t)__double_as_longlong(x); }
FR_D double from_bits(uint64_t b) { return __longlong_as_double((long long)b); }
#else
inline uint64_t bits(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }
inline double from_bits(uint64_t b) { double x; memcpy(&x, &b, 8); return x; }
// An integer-valued double (|x| < 2^127) as an exact 128-bit integer.
inline __int128 to_int(double x) {
    uint64_t b = bits(x);
    int exp = (int)((b >> 52) & 0x7ff);
    if (exp == 0) return 0;  // zero (these operands have no subnormals)
    __int128 mant = (__int128)((b & MASK) | (1ull << 52));
    int shift = exp - 1075;
    if (shift < 0) {
        // Not an integer: outside what this emulation (and this file) needs.
        if (mant & (((__int128)1 << -shift) - 1)) abort();
        mant >>= -shift;
    } else {
        mant <<= shift;
    }
    return (b >> 63) ? -mant : mant;
}
// fma with rounding toward zero, exact for integer operands: the exact sum, truncated to 53
// significant bits.
inline double fma_rz(double a, double b, double c) {
    __int128 s = to_int(a) * to_int(b) + to_int(c);
    bool neg = s < 0;
    unsigned __int128 m = neg ? (unsigned __int128)(-s) : (unsigned __int128)s;
    int len = 0;
    for (unsigned __int128 t = m; t != 0; t >>= 1) len++;
    int drop = len > 53 ? len - 53 : 0;
    m = (m >> drop) << drop;
    double r = (double)(uint64_t)(m >> drop);
    for (int i = 0; i < drop; i++) r *= 2.0;
    return neg ? -r : r;
}
#endif

// Terms of the form bits(l) and bits(h) that column k of a 2N-column product receives: N·N pairs
// from a·b and N·N from the reduction, each adding one low half at i + j and one high half at
// i + j + 1.
FR_HD constexpr uint64_t pairs_at(int n, int k) {
    return (k < 0 || k > 2 * n - 2) ? 0 : (uint64_t)((k < n ? k : 2 * n - 2 - k) + 1);
}
FR_HD constexpr uint64_t offset(int n, int k) {
    return 2 * pairs_at(n, k) * E52 + 2 * pairs_at(n, k - 1) * E104;
}

// The split product a·b into columns lo (weight 1) and hi (weight 2^52).
FR_HD void mul_acc(double a, double b, uint64_t& lo, uint64_t& hi) {
    double h = fma_rz(a, b, TWO104);
    double l = fma_rz(a, b, TWO104_52 - h);
    lo += bits(l);
    hi += bits(h);
}

// The exact double of the low 52 bits of x.
FR_HD double low52(uint64_t x) { return from_bits((x & MASK) | E52) - TWO52; }

// The Montgomery product a·b·2^(-52·N) mod m of N-limb operands, in product-scanning order with
// the reduction folded in (the "FIPS" form): column k gathers every a_i·b_j and q_i·m_j with
// i + j = k, then (k < N) takes its quotient digit q_k from its low 52 bits. Only two 64-bit
// columns are live at a time. `out` receives N columns, each below 2^52 but the top one; their
// value is below 2m (see Bounds). `m` holds m's limbs and `m_inv` is -m^-1 mod 2^52, all exact
// doubles.
template <int N>
FR_HD void mul(const double (&a)[N], const double (&b)[N], const double (&m)[N], double m_inv,
                  uint64_t (&out)[N]) {
    double q[N];
    uint64_t cur = 0 - offset(N, 0);
#pragma unroll
    for (int k = 0; k < 2 * N; k++) {
        uint64_t nxt = 0 - offset(N, k + 1);
        const int lo = k - N + 1 > 0 ? k - N + 1 : 0;
        const int hi = k < N - 1 ? k : N - 1;
#pragma unroll
        for (int i = lo; i <= hi; i++) mul_acc(a[i], b[k - i], cur, nxt);
#pragma unroll
        for (int i = lo; i <= hi; i++) {
            if (i < k) mul_acc(q[i], m[k - i], cur, nxt);
        }
        if (k < N) {
            double c = low52(cur);
            double qh = fma_rz(c, m_inv, TWO104);
            q[k] = fma_rz(c, m_inv, TWO104_52 - qh) - TWO52;
            mul_acc(q[k], m[0], cur, nxt);
        } else {
            out[k - N] = k == 2 * N - 1 ? cur : cur & MASK;
        }
        nxt += cur >> 52;
        cur = nxt;
    }
}

}  // namespace mont52

// ---------------------------------------------------------------------------------------------
// Fr with 52-bit limbs: five limbs, R' = 2^260. A multiplier is kept as the limbs of 16·b mod r
// (`fr52::multiplier`), so that the 2^-260 of the reduction becomes 2^-256:
// fr_mul52(a, multiplier(b)) equals fr_mul(a, b), and values in the ordinary Montgomery form
// (R = 2^256) stay in it.
// ---------------------------------------------------------------------------------------------
struct fr52_t {
    double l[5];
};

namespace fr52 {

FR_HD constexpr double modulus(int i) {
    return (double)(i == 0 ? 0xfffff00000001ull : i == 1 ? 0x2fffe5bfefffull
                    : i == 2 ? 0x9a1d80553bda4ull : i == 3 ? 0x7d483339d8080ull
                    : 0x73eda753299dull);
}
constexpr double MINV = (double)0xffffeffffffffull;  // -r^-1 mod 2^52

// The five 52-bit limbs of x < 2^256 as exact doubles.
FR_HD fr52_t split(const fr_t& x) {
    uint64_t u0 = x.l[0] | ((uint64_t)x.l[1] << 32), u1 = x.l[2] | ((uint64_t)x.l[3] << 32);
    uint64_t u2 = x.l[4] | ((uint64_t)x.l[5] << 32), u3 = x.l[6] | ((uint64_t)x.l[7] << 32);
    const uint64_t M = mont52::MASK;
    uint64_t v[5] = {u0 & M, ((u0 >> 52) | (u1 << 12)) & M, ((u1 >> 40) | (u2 << 24)) & M,
                     ((u2 >> 28) | (u3 << 36)) & M, u3 >> 16};
    fr52_t r;
#pragma unroll
    for (int i = 0; i < 5; i++) r.l[i] = mont52::low52(v[i]);
    return r;
}

// A multiplier: the limbs of 16·b mod r (b < r), so that
// fr_mul52(a, multiplier(b)) = fr_mul(a, b).
FR_HD fr52_t multiplier(const fr_t& b) {
    fr_t x = fr_double(fr_double(fr_double(fr_double(b))));
    return split(x);
}

// The canonical value of five 52-bit columns holding a value below 2r.
FR_HD fr_t pack(const uint64_t (&c)[5]) {
    // The top column is at most 48 bits wide here: the value is below 2r < 2^256.
    uint64_t w0 = c[0] | (c[1] << 52), w1 = (c[1] >> 12) | (c[2] << 40);
    uint64_t w2 = (c[2] >> 24) | (c[3] << 28), w3 = (c[3] >> 36) | (c[4] << 16);
    fr_t s;
    s.l[0] = (uint32_t)w0; s.l[1] = (uint32_t)(w0 >> 32);
    s.l[2] = (uint32_t)w1; s.l[3] = (uint32_t)(w1 >> 32);
    s.l[4] = (uint32_t)w2; s.l[5] = (uint32_t)(w2 >> 32);
    s.l[6] = (uint32_t)w3; s.l[7] = (uint32_t)(w3 >> 32);
    return fr_reduce_once(s);
}

}  // namespace fr52

// a·b·2^-256 mod r, canonical, for a < 2^256 and b = fr52::multiplier(b') with b' < r: the same
// value as fr_mul(a, b').
FR_HD fr_t fr_mul52(const fr_t& a, const fr52_t& b) {
    const double m[5] = {fr52::modulus(0), fr52::modulus(1), fr52::modulus(2), fr52::modulus(3),
                         fr52::modulus(4)};
    fr52_t x = fr52::split(a);
    uint64_t c[5];
    mont52::mul<5>(x.l, b.l, m, fr52::MINV, c);
    return fr52::pack(c);
}
