// Element-wise Fr kernels for differential tests against blstrs, and a multiplication
// throughput probe for the benchmark floors. Rust wrappers: crates/gpu/src/fr.rs.
//
// fr_test_<op>(out, a, b, n): out[i] = op(a[i], b[i]) for i < n, one thread per element (unary
// ops ignore b; for pow, b[i] is the exponent as a plain 256-bit integer). Each element is 32
// bytes, read and written once.
#include "field/fr.cuh"
#include "field/mont52.cuh"

#define FR_TEST_KERNEL(name, expr)                                                          \
    extern "C" __global__ void name(fr_t* out, const fr_t* a, const fr_t* b, uint32_t n) { \
        uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;                                 \
        if (i >= n) return;                                                                 \
        fr_t x = a[i];                                                                      \
        fr_t y = b[i];                                                                      \
        (void)y;                                                                            \
        out[i] = (expr);                                                                    \
    }

FR_TEST_KERNEL(fr_test_add, fr_add(x, y))
FR_TEST_KERNEL(fr_test_sub, fr_sub(x, y))
FR_TEST_KERNEL(fr_test_neg, fr_neg(x))
FR_TEST_KERNEL(fr_test_mul, fr_mul(x, y))
FR_TEST_KERNEL(fr_test_mul52, fr_mul52(x, fr52::multiplier(y)))
FR_TEST_KERNEL(fr_test_sqr, fr_sqr(x))
FR_TEST_KERNEL(fr_test_pow, fr_pow(x, y.l))
FR_TEST_KERNEL(fr_test_inv, fr_inv(x))
FR_TEST_KERNEL(fr_test_to_mont, fr_to_mont(x))
FR_TEST_KERNEL(fr_test_from_mont, fr_from_mont(x))

// Multiplication throughput: thread i reads data[2i] and data[2i+1], runs four independent chains
// of `iters` Montgomery multiplications each, and writes their sum back to data[2i] (so the work
// cannot be optimised away). Multiplications per launch: 4 · iters · threads. Memory traffic is
// negligible. KIND: 0 integer (fr_mul), 1 FP64 pipe (fr_mul52, multipliers converted once),
// 2 hybrid (two chains of each, interleaved).
namespace fr_bench {
template <int KIND>
FR_D void mul_chains(fr_t* data, uint32_t iters) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    fr_t x = data[2 * i];
    fr_t y = data[2 * i + 1];
    fr_t c0 = x, c1 = y, c2 = fr_add(x, y), c3 = fr_sub(x, y);
    fr52_t x52, y52;
    if (KIND != 0) {
        x52 = fr52::multiplier(x);
        y52 = fr52::multiplier(y);
    }
    for (uint32_t k = 0; k < iters; k++) {
        if (KIND == 0) {
            c0 = fr_mul(c0, y);
            c1 = fr_mul(c1, x);
            c2 = fr_mul(c2, y);
            c3 = fr_mul(c3, x);
        } else if (KIND == 1) {
            c0 = fr_mul52(c0, y52);
            c1 = fr_mul52(c1, x52);
            c2 = fr_mul52(c2, y52);
            c3 = fr_mul52(c3, x52);
        } else {
            c0 = fr_mul(c0, y);
            c1 = fr_mul52(c1, x52);
            c2 = fr_mul(c2, y);
            c3 = fr_mul52(c3, x52);
        }
    }
    data[2 * i] = fr_add(fr_add(c0, c1), fr_add(c2, c3));
}
}  // namespace fr_bench

extern "C" __global__ void fr_bench_mul(fr_t* data, uint32_t iters) { fr_bench::mul_chains<0>(data, iters); }

// The same probe held to 64 registers (4 blocks of 256 threads per SM): how the multiplication
// rate scales with occupancy.
extern "C" __global__ void __launch_bounds__(256, 4) fr_bench_mul_o4(fr_t* data, uint32_t iters) {
    fr_bench::mul_chains<0>(data, iters);
}

// The FP64-pipe multiplication (mont52.cuh), and half of each kind.
extern "C" __global__ void fr_bench_mul52(fr_t* data, uint32_t iters) { fr_bench::mul_chains<1>(data, iters); }
extern "C" __global__ void fr_bench_mul_hybrid(fr_t* data, uint32_t iters) { fr_bench::mul_chains<2>(data, iters); }
