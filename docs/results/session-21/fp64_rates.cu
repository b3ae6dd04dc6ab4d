// Session 21 probe (not part of the build): the FP64 pipe's issue rate on the H200, for the
// operations fp_mul48 (kernels/field/fp48.cuh) is made of. Eight independent chains per thread,
// 132 x 8 blocks of 256 threads, the best of five CUDA-event timings. Build and run:
//   nvcc -O3 -arch=sm_90 -o fp64_rates docs/results/session-21/fp64_rates.cu && ./fp64_rates
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define ITERS 1024
#define CH 8
// DFMA with a register multiplier and a constant addend (as the product split).
__global__ void k_dfma(double* out, double a0, double b) {
    double acc[CH];
    for (int i = 0; i < CH; i++) acc[i] = a0 + threadIdx.x + i;
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) acc[i] = __fma_rz(acc[i], b, 1.5);
    }
    double s = 0; for (int i = 0; i < CH; i++) s += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// DFMA with three register operands.
__global__ void k_dfma3(double* out, double a0, double b) {
    double acc[CH], c[CH];
    for (int i = 0; i < CH; i++) { acc[i] = a0 + threadIdx.x + i; c[i] = b * i + threadIdx.x; }
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) acc[i] = __fma_rz(acc[i], b, c[i]);
    }
    double s = 0; for (int i = 0; i < CH; i++) s += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void k_dadd(double* out, double a0, double b) {
    double acc[CH];
    for (int i = 0; i < CH; i++) acc[i] = a0 + threadIdx.x + i;
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) acc[i] = __dadd_rz(acc[i], b);
    }
    double s = 0; for (int i = 0; i < CH; i++) s += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// DFMA interleaved with 64-bit integer additions of its bit pattern (the column sums).
__global__ void k_dfma_add(double* out, double a0, double b) {
    double acc[CH]; uint64_t col[CH];
    for (int i = 0; i < CH; i++) { acc[i] = a0 + threadIdx.x + i; col[i] = i; }
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) { acc[i] = __fma_rz(acc[i], b, 1.5); col[i] += (uint64_t)__double_as_longlong(acc[i]); }
    }
    double s = 0; for (int i = 0; i < CH; i++) s += acc[i] + (double)col[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// The same DFMA chains with, beside each, an IMAD.WIDE.U32.X carry-chain pair (as fp_mul's
// products): do the FP64 pipe and the heavy multiply pipe overlap?
__global__ void k_dfma_wide(double* out, double a0, double b) {
    double acc[CH]; uint32_t lo[CH], hi[CH], a[CH];
    for (int i = 0; i < CH; i++) { acc[i] = a0 + threadIdx.x + i; lo[i] = threadIdx.x + i; hi[i] = i; a[i] = 77u * i + threadIdx.x; }
    uint32_t bb = (uint32_t)__double_as_longlong(b), c = 0;
    for (int it = 0; it < ITERS; it++) {
        asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[0]), "+r"(hi[0]) : "r"(a[0]), "r"(bb));
#pragma unroll
        for (int i = 1; i < CH; i++)
            asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[i]), "+r"(hi[i]) : "r"(a[i]), "r"(bb));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(c));
#pragma unroll
        for (int i = 0; i < CH; i++) acc[i] = __fma_rz(acc[i], b, 1.5);
    }
    double s = c; for (int i = 0; i < CH; i++) s += acc[i] + (double)(lo[i] ^ hi[i]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// The carry-chain pairs alone, as in k_dfma_wide (the session-15 probe's widex).
__global__ void k_wide(double* out, double a0, double b) {
    uint32_t lo[CH], hi[CH], a[CH];
    for (int i = 0; i < CH; i++) { lo[i] = threadIdx.x + i; hi[i] = i; a[i] = 77u * i + threadIdx.x; }
    uint32_t bb = (uint32_t)__double_as_longlong(b), c = 0;
    for (int it = 0; it < ITERS; it++) {
        asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[0]), "+r"(hi[0]) : "r"(a[0]), "r"(bb));
#pragma unroll
        for (int i = 1; i < CH; i++)
            asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[i]), "+r"(hi[i]) : "r"(a[i]), "r"(bb));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(c));
    }
    double s = c; for (int i = 0; i < CH; i++) s += (double)(lo[i] ^ hi[i]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// DFMA chains beside 32-bit integer additions (IADD3, ALU pipe), one each.
__global__ void k_dfma_iadd(double* out, double a0, double b) {
    double acc[CH]; uint32_t col[CH];
    uint32_t bb = (uint32_t)__double_as_longlong(b);
    for (int i = 0; i < CH; i++) { acc[i] = a0 + threadIdx.x + i; col[i] = i * threadIdx.x; }
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) {
            acc[i] = __fma_rz(acc[i], b, 1.5);
            asm volatile("add.u32 %0, %0, %1;" : "+r"(col[i]) : "r"(bb));
        }
    }
    double s = 0; for (int i = 0; i < CH; i++) s += acc[i] + (double)col[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// 32-bit additions alone.
__global__ void k_iadd(double* out, double a0, double b) {
    uint32_t col[CH];
    uint32_t bb = (uint32_t)__double_as_longlong(b);
    for (int i = 0; i < CH; i++) col[i] = i * threadIdx.x + (uint32_t)a0;
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) asm volatile("add.u32 %0, %0, %1;" : "+r"(col[i]) : "r"(bb));
    }
    double s = 0; for (int i = 0; i < CH; i++) s += (double)col[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
template <class K>
void run(const char* name, K k) {
    double* d; cudaMalloc(&d, 132 * 8 * 256 * sizeof(double));
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    k<<<132 * 8, 256>>>(d, 1.0, 0.999); cudaDeviceSynchronize();
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0); k<<<132 * 8, 256>>>(d, 1.0, 0.999); cudaEventRecord(e1);
        cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
    }
    double ops = 132.0 * 8 * 256 * ITERS * CH;
    printf("%-12s %.3f ms  %.2f T ops/s  %.1f per SM per cycle at 1980 MHz\n", name, best, ops / best / 1e9,
           ops / best * 1e3 / 132 / 1.98e9);
    cudaFree(d);
}
int main() {
    run("dfma", k_dfma);
    run("dfma3", k_dfma3);
    run("dadd", k_dadd);
    run("dfma+add64", k_dfma_add);
    // Per (DFMA + one other) group below: ops counts each DFMA (and its partner) once.
    run("wide pairs", k_wide);
    run("dfma+wide", k_dfma_wide);
    run("iadd", k_iadd);
    run("dfma+iadd", k_dfma_iadd);
    return 0;
}
