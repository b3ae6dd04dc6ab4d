// Session 8's standalone G2 (and G1) mixed-addition harness, kept as the record of the figures it
// produced in docs/benchmarks.md (session 8); the in-tree probe `msm_bench_madd_<g>`
// (kernels/msm/msm_test.cu, `GpuMsm::mixed_add_rate`) measures the same loop now. Not part of
// any build. Built here against a kernels/ folder (the tree's, or a variant's copy) with the
// pinned nvcc, statically linked, and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -L <nvcc's lib folder> -cudart static \
//        -DMINB=3 -DVARIANT='"M"' [-DBLOCK=64 -DSHARED_ACC] [-DG1] -o h docs/results/session-8/madd-harness.cu
// Each thread adds `iters` gathered points (any field elements: the formula's cost does not
// depend on the points being on the curve) into one XYZZ accumulator; eight waves of blocks.
// G2 mixed-addition throughput probe: each thread adds `iters` gathered affine points into its
// XYZZ accumulator (as msm_accumulate does), timed with CUDA events.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstdint>
#include <cuda_runtime.h>
#include "curve/xyzz.cuh"
#ifndef MINB
#define MINB 3
#endif
#ifndef BLOCK
#define BLOCK 128
#endif
#ifdef G1
typedef fp_t FF;
#define FPM 10
#else
typedef fp2_t FF;
#define FPM 24
#endif
extern "C" __global__ void __launch_bounds__(BLOCK, MINB) probe_g2(xyzz_t<FF>* out, const affine_t<FF>* bases, const uint32_t* idx, uint32_t iters, uint32_t mask) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef SHARED_ACC
    __shared__ uint32_t sh[97 * BLOCK];
    xyzz_t<FF>& acc = *reinterpret_cast<xyzz_t<FF>*>(&sh[97 * threadIdx.x]);
    acc = xyzz_t<FF>::inf();
#else
    xyzz_t<FF> acc = xyzz_t<FF>::inf();
#endif
    for (uint32_t j = 0; j < iters; j++) {
        uint32_t ref = idx[(t * 7919u + j * 104729u) & mask];
        affine_t<FF> p = bases[ref & 0xffffu];
        p.y = f_cneg(p.y, (ref >> 31) != 0);
        xyzz_add_affine(acc, p);
    }
    out[t] = acc;
}
static uint32_t P[12] = {0xffffaaab,0xb9feffff,0xb153ffff,0x1eabfffe,0xf6b0f624,0x6730d2a0,0xf38512bf,0x64774b84,0x434bacd7,0x4b1ba7b6,0x397fe69a,0x1a0111ea};
int main(int argc, char** argv) {
    int blocks_per_sm = MINB;
    uint32_t iters = 256;
    int sms = 132;
    size_t npts = 1 << 16;
    std::vector<uint32_t> h(npts * 48);
    srand(1);
    for (size_t i = 0; i < npts * 4; i++) { // 4 fp elements per point
        uint32_t* e = &h[i * 12];
        for (int k = 0; k < 12; k++) e[k] = ((uint32_t)rand() << 16) ^ (uint32_t)rand();
        e[11] &= 0x0fffffff; // below p
    }
    uint32_t mask = (1u << 22) - 1;
    std::vector<uint32_t> idx(mask + 1);
    for (auto& v : idx) v = ((uint32_t)rand() << 16) ^ (uint32_t)rand();
    void *d_b, *d_i, *d_o;
    cudaMalloc(&d_b, h.size() * 4); cudaMalloc(&d_i, idx.size() * 4);
    cudaMemcpy(d_b, h.data(), h.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_i, idx.data(), idx.size() * 4, cudaMemcpyHostToDevice);
    for (int waves : {4, 8}) {
        int blocks = sms * blocks_per_sm * waves;
        cudaMalloc(&d_o, (size_t)blocks * BLOCK * 384);
        cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
        probe_g2<<<blocks, BLOCK>>>((xyzz_t<FF>*)d_o, (affine_t<FF>*)d_b, (uint32_t*)d_i, 8, mask);
        std::vector<float> ts;
        for (int r = 0; r < 5; r++) {
            cudaEventRecord(a);
            probe_g2<<<blocks, BLOCK>>>((xyzz_t<FF>*)d_o, (affine_t<FF>*)d_b, (uint32_t*)d_i, iters, mask);
            cudaEventRecord(b); cudaEventSynchronize(b);
            float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms);
        }
        cudaError_t e = cudaGetLastError();
        std::sort(ts.begin(), ts.end());
        double madds = (double)blocks * BLOCK * iters;
        printf("%s block=%d minb=%d waves=%d: %.3f ms, %.3f G madd/s, %.2f G Fp-mul/s (%d per madd) err=%s\n", VARIANT, BLOCK, MINB, waves, ts[2], madds / ts[2] / 1e6, FPM * madds / ts[2] / 1e6, FPM, cudaGetErrorString(e));
        cudaFree(d_o);
    }
    return 0;
}
