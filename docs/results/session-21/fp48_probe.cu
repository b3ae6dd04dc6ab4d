// Session 21 probe (not part of the build): Fp multiplication on the FP64 pipe (fp_mul48,
// fp48.cuh beside this file) against the integer fp_mul (fp.cuh) on the H200: agreement on device,
// then throughput with 1, 2 and 4 independent chains per thread, and a hybrid (two integer chains
// beside two FP64 chains), and fp_mul48 held to fewer registers. Build here and run there (the
// pinned nvcc's lib folder on -L; round 0 was built with __launch_bounds__(128) alone):
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -I docs/results/session-21 -Xptxas -v -o fp48_probe docs/results/session-21/fp48_probe.cu
//   ./fp48_probe
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <cuda_runtime.h>
#include "fp48.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)


// Variant B: each column's halves into two accumulators (pairs of i alternately), joined when the
// column closes: half the length of the dependent 64-bit addition chains.
__device__ __forceinline__ fp_t fp_mul48b(const fp_t& a, const fp_t& b) {
    double x[8], y[8], q[8];
    fp48::split(a, x);
    fp48::split(b, y);
    uint64_t out[8];
    uint64_t cur = 0 - fp48::offset(0), cur2 = 0;
#pragma unroll
    for (int k = 0; k < 16; k++) {
        uint64_t nxt = 0 - fp48::offset(k + 1), nxt2 = 0;
        const int lo = k - 7 > 0 ? k - 7 : 0;
        const int hi = k < 7 ? k : 7;
#pragma unroll
        for (int i = lo; i <= hi; i++) {
            if (i & 1) fp48::mul_acc(x[i], y[k - i], cur2, nxt2);
            else fp48::mul_acc(x[i], y[k - i], cur, nxt);
        }
#pragma unroll
        for (int i = lo; i <= hi; i++) {
            if (i < k) {
                if (i & 1) fp48::mul_acc(q[i], fp48::modulus(k - i), cur, nxt);
                else fp48::mul_acc(q[i], fp48::modulus(k - i), cur2, nxt2);
            }
        }
        cur += cur2;
        if (k < 8) {
            uint64_t qk = ((cur & fp48::MASK) * fp48::MINV) & fp48::MASK;
            q[k] = fp48::from_parts((uint32_t)qk, (uint32_t)(qk >> 32));
            fp48::mul_acc(q[k], fp48::modulus(0), cur, nxt);
        } else {
            out[k - 8] = k == 15 ? cur : cur & fp48::MASK;
        }
        nxt += cur >> 48;
        cur = nxt;
        cur2 = nxt2;
    }
    return fp48::pack(out);
}

__global__ void k_check(const fp_t* a, const fp_t* b, uint32_t* bad, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fp_t r1 = fp_mul(a[i], b[i]), r2 = fp_mul48(a[i], b[i]);
    if (!fp_eq(r1, r2)) atomicAdd(bad, 1u);
    if (!fp_eq(r1, fp_mul48b(a[i], b[i]))) atomicAdd(bad + 1, 1u);
}

template <int CH, int KIND, int MINB = 1>  // KIND 0 integer, 1 fp48, 2 hybrid (half the chains each), 3 fp48b
__global__ void __launch_bounds__(128, MINB) k_rate(fp_t* data, uint32_t iters) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    fp_t x = data[2 * i], y = data[2 * i + 1];
    fp_t c[CH];
#pragma unroll
    for (int j = 0; j < CH; j++) c[j] = j & 1 ? fp_add(x, y) : x;
    for (uint32_t k = 0; k < iters; k++) {
#pragma unroll
        for (int j = 0; j < CH; j++) {
            const fp_t& m = j & 1 ? x : y;
            if (KIND == 0 || (KIND == 2 && j % 2 == 0)) c[j] = fp_mul(c[j], m);
            else if (KIND == 3) c[j] = fp_mul48b(c[j], m);
            else c[j] = fp_mul48(c[j], m);
        }
    }
    fp_t s = c[0];
#pragma unroll
    for (int j = 1; j < CH; j++) s = fp_add(s, c[j]);
    data[2 * i] = s;
}

template <int CH, int KIND, int MINB = 1>
void rate(const char* name, fp_t* d, int blocks, uint32_t iters) {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    k_rate<CH, KIND, MINB><<<blocks, 128>>>(d, 2); CK(cudaDeviceSynchronize());
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0); k_rate<CH, KIND, MINB><<<blocks, 128>>>(d, iters); cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1)); float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
    }
    cudaFuncAttributes at; cudaFuncGetAttributes(&at, k_rate<CH, KIND, MINB>);
    int per_sm = 0; cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_rate<CH, KIND, MINB>, 128, 0);
    double muls = (double)CH * iters * blocks * 128;
    printf("%-22s chains %d  regs %3d  blocks/SM %2d  %.3f ms  %.2f G mul/s\n", name, CH, at.numRegs, per_sm, best, muls / best / 1e6);
}

int main() {
    const uint32_t n = 132 * 32 * 128;  // threads of the rate kernels, and check elements
    std::mt19937_64 rng(7);
    fp_t* h = (fp_t*)malloc(sizeof(fp_t) * 2 * n);
    for (uint32_t i = 0; i < 2 * n; i++) {
        for (int k = 0; k < 12; k++) h[i].l[k] = (uint32_t)rng();
        if (i % 5 == 0) for (int k = 0; k < 12; k++) h[i].l[k] = (rng() & 1) ? 0xffffffffu : (uint32_t)(rng() & 3);
        h[i].l[11] &= 0x1fffffffu;
        h[i] = fp_reduce_once(h[i]);
    }
    fp_t *a, *d; uint32_t* bad;
    CK(cudaMalloc(&a, sizeof(fp_t) * 2 * n)); CK(cudaMalloc(&d, sizeof(fp_t) * 2 * n)); CK(cudaMalloc(&bad, 8));
    CK(cudaMemcpy(a, h, sizeof(fp_t) * 2 * n, cudaMemcpyHostToDevice));
    CK(cudaMemset(bad, 0, 8));
    k_check<<<(n + 127) / 128, 128>>>(a, a + n, bad, n); CK(cudaDeviceSynchronize());
    uint32_t nbs[2]; CK(cudaMemcpy(nbs, bad, 8, cudaMemcpyDeviceToHost)); uint32_t nb = nbs[0] + nbs[1];
    printf("device check: %u (fp_mul48) and %u (fp_mul48b) of %u products differ from fp_mul\n", nbs[0], nbs[1], n);
    CK(cudaMemcpy(d, h, sizeof(fp_t) * 2 * n, cudaMemcpyHostToDevice));
    int blocks = 132 * 32;
    rate<4, 0>("integer fp_mul", d, blocks, 64);
    rate<4, 1>("fp_mul48", d, blocks, 64);
    rate<2, 0>("integer fp_mul", d, blocks, 128);
    rate<2, 1>("fp_mul48", d, blocks, 128);
    rate<1, 0>("integer fp_mul", d, blocks, 256);
    rate<1, 1>("fp_mul48", d, blocks, 256);
    rate<1, 3>("fp_mul48b", d, blocks, 256);
    rate<2, 3>("fp_mul48b", d, blocks, 128);
    rate<4, 2>("hybrid (2 int + 2 fp48)", d, blocks, 64);
    rate<2, 2>("hybrid (1 int + 1 fp48)", d, blocks, 128);
    // Occupancy: fp_mul48 held to fewer registers (more warps to hide its latencies).
    rate<1, 1, 8>("fp_mul48 (128, 8)", d, blocks, 256);
    rate<1, 1, 10>("fp_mul48 (128, 10)", d, blocks, 256);
    rate<1, 0, 10>("integer (128, 10)", d, blocks, 256);
    rate<2, 2, 6>("hybrid 1+1 (128, 6)", d, blocks, 128);
    return nb != 0;
}
