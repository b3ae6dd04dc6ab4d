// Element-wise Fp, Fp2, G1 and G2 kernels for differential tests against blstrs, and an Fp
// multiplication throughput probe for the benchmark floors. Rust wrappers:
// crates/msm/src/gpu/testops.rs. One thread per element; every element is read and written once.
#include "curve/xyzz.cuh"

// Operation codes shared with `FieldOp` in testops.rs.
#define MSM_TEST_ADD 0u
#define MSM_TEST_SUB 1u
#define MSM_TEST_NEG 2u
#define MSM_TEST_MUL 3u
#define MSM_TEST_SQR 4u
#define MSM_TEST_DBL 5u
#define MSM_TEST_INV 6u

template <class F>
__device__ __forceinline__ F msm_test_field_op(uint32_t op, const F& a, const F& b) {
    switch (op) {
        case MSM_TEST_ADD: return f_add(a, b);
        case MSM_TEST_SUB: return f_sub(a, b);
        case MSM_TEST_NEG: return f_cneg(a, true);
        case MSM_TEST_MUL: return f_mul(a, b);
        case MSM_TEST_SQR: return f_sqr(a);
        case MSM_TEST_INV: return f_inv(a);
        default: return f_dbl(a);
    }
}

// out[i] = op(a[i], b[i]) in Fp.
extern "C" __global__ void msm_test_fp(uint32_t op, fp_t* out, const fp_t* a, const fp_t* b, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = msm_test_field_op(op, a[i], b[i]);
}

// out[i] = op(a[i], b[i]) in Fp2.
extern "C" __global__ void msm_test_fp2(uint32_t op, fp2_t* out, const fp2_t* a, const fp2_t* b, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = msm_test_field_op(op, a[i], b[i]);
}

// Operation codes shared with `PointOp` in testops.rs.
#define MSM_TEST_MADD 0u  // a + p
#define MSM_TEST_MSUB 1u  // a - p
#define MSM_TEST_XADD 2u  // a + b
#define MSM_TEST_XDBL 3u  // 2a
#define MSM_TEST_ADBL 4u  // 2p

template <class F>
__device__ __forceinline__ void msm_test_point(uint32_t op, xyzz_t<F>* out, const xyzz_t<F>* a, const xyzz_t<F>* b,
                                               const affine_t<F>* p, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    xyzz_t<F> acc = a[i];
    affine_t<F> q = p[i];
    switch (op) {
        case MSM_TEST_MADD: xyzz_add_affine(acc, q); break;
        case MSM_TEST_MSUB:
            q.y = f_cneg(q.y, true);
            xyzz_add_affine(acc, q);
            break;
        case MSM_TEST_XADD: xyzz_add(acc, b[i]); break;
        case MSM_TEST_XDBL: acc = xyzz_dbl(acc); break;
        default: acc = xyzz_dbl_affine(q); break;
    }
    out[i] = acc;
}

extern "C" __global__ void msm_test_g1(uint32_t op, g1_xyzz_t* out, const g1_xyzz_t* a, const g1_xyzz_t* b,
                                       const g1_affine_t* p, uint32_t n) {
    msm_test_point(op, out, a, b, p, n);
}

extern "C" __global__ void msm_test_g2(uint32_t op, g2_xyzz_t* out, const g2_xyzz_t* a, const g2_xyzz_t* b,
                                       const g2_affine_t* p, uint32_t n) {
    msm_test_point(op, out, a, b, p, n);
}

// Fp multiplication throughput: thread i reads data[2i] and data[2i+1], runs four independent
// chains of `iters` Montgomery multiplications each and writes their sum back to data[2i].
// Multiplications per launch: 4 · iters · threads; memory traffic is negligible.
extern "C" __global__ void msm_bench_fp_mul(fp_t* data, uint32_t iters) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x = data[2 * i];
    fp_t y = data[2 * i + 1];
    fp_t c0 = x, c1 = y, c2 = fp_add(x, y), c3 = fp_sub(x, y);
    for (uint32_t k = 0; k < iters; k++) {
        c0 = fp_mul(c0, y);
        c1 = fp_mul(c1, x);
        c2 = fp_mul(c2, y);
        c3 = fp_mul(c3, x);
    }
    data[2 * i] = fp_add(fp_add(c0, c1), fp_add(c2, c3));
}

// Mixed-addition throughput, as msm_accumulate's inner loop runs it (one XYZZ accumulator per
// thread, the same launch bounds): thread i adds `iters` of the mask + 1 bases (a power of two),
// bases[(i + j·MSM_BENCH_STRIDE) & mask] negated when j is odd, and writes its accumulator to
// out[i]. Additions per launch: iters · threads. It isolates the point formula's speed from the
// sort and the bucket traffic (it showed G2's formula code waiting on the instruction cache:
// kernels/msm/README.md).
#define MSM_BENCH_STRIDE 40503u

template <class F>
__device__ __forceinline__ void msm_bench_madd(xyzz_t<F>* out, const affine_t<F>* bases, uint32_t mask,
                                               uint32_t iters) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    xyzz_t<F> acc = xyzz_t<F>::inf();
    for (uint32_t j = 0; j < iters; j++) {
        affine_t<F> p = bases[(i + j * MSM_BENCH_STRIDE) & mask];
        p.y = f_cneg(p.y, (j & 1) != 0);
        xyzz_add_affine(acc, p);
    }
    out[i] = acc;
}

extern "C" __global__ void __launch_bounds__(128, 3)
    msm_bench_madd_g1(g1_xyzz_t* out, const g1_affine_t* bases, uint32_t mask, uint32_t iters) {
    msm_bench_madd(out, bases, mask, iters);
}

extern "C" __global__ void __launch_bounds__(128, 3)
    msm_bench_madd_g2(g2_xyzz_t* out, const g2_affine_t* bases, uint32_t mask, uint32_t iters) {
    msm_bench_madd(out, bases, mask, iters);
}
