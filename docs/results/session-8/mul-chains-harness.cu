// Session 8's standalone multiplication-chain harness (Fp and Fp2, C independent chains per
// thread at 12 or 24 warps per SM), kept as the record of the figures it produced in
// docs/benchmarks.md (session 8). Not part of any build. Built like madd-harness.cu
// (`-DVARIANT='"called "'`; `-DFP2INLINE` needs the session's experimental f_mul_inline, not in
// the tree).
// Fp and Fp2 multiplication throughput with C independent chains per thread, at a given occupancy.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>
#include "curve/xyzz.cuh"
template <class F, int C>
__device__ __forceinline__ void chains(F* data, uint32_t iters) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    F x = data[2 * i], y = data[2 * i + 1];
    F c[C];
#pragma unroll
    for (int k = 0; k < C; k++) c[k] = k & 1 ? f_add(x, y) : f_sub(x, y);
    for (uint32_t j = 0; j < iters; j++) {
#pragma unroll
#ifdef FP2INLINE
        for (int k = 0; k < C; k++) c[k] = f_mul_inline(c[k], (k & 1) ? x : y);
#else
        for (int k = 0; k < C; k++) c[k] = f_mul(c[k], (k & 1) ? x : y);
#endif
    }
    F s = c[0];
#pragma unroll
    for (int k = 1; k < C; k++) s = f_add(s, c[k]);
    data[2 * i] = s;
}
#define K(F, C, MINB) extern "C" __global__ void __launch_bounds__(128, MINB) k_##F##_##C##_##MINB(F* d, uint32_t it) { chains<F, C>(d, it); }
K(fp_t, 1, 3) K(fp_t, 2, 3) K(fp_t, 4, 3) K(fp_t, 1, 6) K(fp_t, 2, 6) K(fp_t, 4, 6)
K(fp2_t, 1, 3) K(fp2_t, 2, 3) K(fp2_t, 4, 3) K(fp2_t, 1, 6) K(fp2_t, 2, 6) K(fp2_t, 4, 2)
template <class F>
void run(const char* name, void (*k)(F*, uint32_t), int minb, int chains, double fp_per) {
    int blocks = 132 * minb * 4;
    size_t n = (size_t)blocks * 128 * 2;
    std::vector<uint32_t> h(n * sizeof(F) / 4);
    for (size_t i = 0; i < h.size(); i++) h[i] = (uint32_t)(i * 2654435761u);
    for (size_t i = 0; i < n; i++) ((uint32_t*)&h[0])[i * sizeof(F) / 4 + 11] &= 0x0fffffff;
    if (sizeof(F) == 96) for (size_t i = 0; i < n; i++) ((uint32_t*)&h[0])[i * 24 + 23] &= 0x0fffffff;
    F* d; cudaMalloc(&d, n * sizeof(F)); cudaMemcpy(d, h.data(), n * sizeof(F), cudaMemcpyHostToDevice);
    uint32_t iters = 512 / chains;
    k<<<blocks, 128>>>(d, 4);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    std::vector<float> ts;
    for (int r = 0; r < 5; r++) { cudaEventRecord(a); k<<<blocks, 128>>>(d, iters); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
    std::sort(ts.begin(), ts.end());
    double muls = (double)blocks * 128 * iters * chains;
    printf(VARIANT "%-14s warps/SM=%2d chains=%d: %.2f G mul/s = %.1f G Fp-mul-equiv/s (%s)\n", name, minb * 4, chains, muls / ts[2] / 1e6, fp_per * muls / ts[2] / 1e6, cudaGetErrorString(cudaGetLastError()));
    cudaFree(d);
}
int main() {
    run<fp_t>("fp_mul", k_fp_t_1_3, 3, 1, 1); run<fp_t>("fp_mul", k_fp_t_2_3, 3, 2, 1); run<fp_t>("fp_mul", k_fp_t_4_3, 3, 4, 1);
    run<fp_t>("fp_mul", k_fp_t_1_6, 6, 1, 1); run<fp_t>("fp_mul", k_fp_t_2_6, 6, 2, 1); run<fp_t>("fp_mul", k_fp_t_4_6, 6, 4, 1);
    run<fp2_t>("fp2_mul", k_fp2_t_1_3, 3, 1, 2.5); run<fp2_t>("fp2_mul", k_fp2_t_2_3, 3, 2, 2.5); run<fp2_t>("fp2_mul", k_fp2_t_4_3, 3, 4, 2.5);
    run<fp2_t>("fp2_mul", k_fp2_t_1_6, 6, 1, 2.5); run<fp2_t>("fp2_mul", k_fp2_t_2_6, 6, 2, 2.5); run<fp2_t>("fp2_mul", k_fp2_t_4_2, 2, 4, 2.5);
    return 0;
}
