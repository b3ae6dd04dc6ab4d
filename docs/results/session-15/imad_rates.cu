// Session 15 probe (not part of the build): the issue rate of the multiply instructions that
// cuzk's Fr and Fp multiplications are made of, on the H200. Build and run:
//   nvcc -O3 -arch=sm_90 -L<nvcc's lib folder> -o imad imad_rates.cu && ./imad
//   cuobjdump -sass imad    (the instruction mix of each kernel)
// Results and their reading: docs/benchmarks.md, GPU NTT, session 15.
// Throughput of the multiply instructions an Fp/Fr multiplication is made of (session 15 probe).
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
#define ITERS 2048
#define CH 8
__global__ void k_wide(uint64_t* out, uint32_t a0, uint32_t b) {
    uint64_t acc[CH]; uint32_t a[CH];
    for (int i = 0; i < CH; i++) { acc[i] = threadIdx.x + i; a[i] = a0 + i * 77 + threadIdx.x; }
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++)
            asm volatile("{ .reg .b32 lo, hi; mov.b64 {lo, hi}, %0; mad.wide.u32 %0, lo, %1, %0; }" : "+l"(acc[i]) : "r"(b));
    }
    uint64_t s = 0; for (int i = 0; i < CH; i++) s ^= acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// Carry chains: per iteration, one mad.lo.cc/madc.hi.cc pair then CH-1 madc pairs (IMAD.WIDE.U32 + IMAD.WIDE.U32.X), closed by addc.
__global__ void k_widex(uint64_t* out, uint32_t a0, uint32_t b) {
    uint32_t lo[CH], hi[CH], a[CH];
    for (int i = 0; i < CH; i++) { lo[i] = threadIdx.x + i; hi[i] = i; a[i] = a0 + i * 77 + threadIdx.x; }
    uint32_t c = 0;
    for (int it = 0; it < ITERS; it++) {
        asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[0]), "+r"(hi[0]) : "r"(a[0]), "r"(b));
#pragma unroll
        for (int i = 1; i < CH; i++)
            asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;" : "+r"(lo[i]), "+r"(hi[i]) : "r"(a[i]), "r"(b));
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(c));
    }
    uint64_t s = c; for (int i = 0; i < CH; i++) s ^= ((uint64_t)hi[i] << 32) | lo[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__global__ void k_imad(uint64_t* out, uint32_t a0, uint32_t b) {
    uint32_t acc[CH], a[CH];
    for (int i = 0; i < CH; i++) { acc[i] = threadIdx.x + i; a[i] = a0 + i * 77 + threadIdx.x; }
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) asm volatile("mad.lo.u32 %0, %1, %2, %0;" : "+r"(acc[i]) : "r"(a[i]), "r"(b));
    }
    uint64_t s = 0; for (int i = 0; i < CH; i++) s ^= acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
// 64-bit additions (IADD3 + IADD3.X), the carry handling a wide product needs when chained by hand.
__global__ void k_add64(uint64_t* out, uint32_t a0, uint32_t b) {
    uint64_t acc[CH]; uint64_t a[CH];
    for (int i = 0; i < CH; i++) { acc[i] = threadIdx.x + i; a[i] = ((uint64_t)(a0 + i) << 20) | b; }
    for (int it = 0; it < ITERS; it++) {
#pragma unroll
        for (int i = 0; i < CH; i++) asm volatile("add.u64 %0, %0, %1;" : "+l"(acc[i]) : "l"(a[i]));
    }
    uint64_t s = 0; for (int i = 0; i < CH; i++) s ^= acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
template <class K>
void run(const char* name, K k, double ops_per_thread_iter) {
    int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    int blocks = sms * 8, threads = 256;
    uint64_t* out; cudaMalloc(&out, (size_t)blocks * threads * 8);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    k<<<blocks, threads>>>(out, 12345u, 0x9e3779b9u);
    float best = 1e9;
    for (int r = 0; r < 5; r++) {
        cudaEventRecord(e0); k<<<blocks, threads>>>(out, 12345u + r, 0x9e3779b9u); cudaEventRecord(e1);
        cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
    }
    double ops = (double)blocks * threads * ITERS * ops_per_thread_iter;
    printf("%-8s %8.3f ms  %6.2f T instr/s (thread ops)  %s\n", name, best, ops / best / 1e9, cudaGetErrorString(cudaGetLastError()));
    cudaFree(out);
}
int main() {
    run("imad", k_imad, CH);
    run("wide", k_wide, CH);
    run("widex", k_widex, CH);   // counted as CH wide multiplies (pairs) per iteration
    run("add64", k_add64, CH);
    return 0;
}
