// Random gathers of G1 base coordinates as the batch-affine pairs and sums make them: how the
// bases' layout in device memory changes the time of the first round's reads.
// nvcc -O3 -arch=sm_90 -o gather_probe gather_probe.cu && ./gather_probe
// Each thread loads 16 references (coalesced), then for each the base's x (48 bytes, three
// 16-byte loads) or x and y (96 bytes), and writes one 16-byte word of their xor.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <random>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)

template <int WHAT>  // 0: x, 1: x and y, 2: y
__global__ void gather(uint4* out, const uint32_t* refs, const uint8_t* bases, uint32_t stride,
                       uint32_t y_off, uint32_t threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads) return;
    uint32_t r[16];
#pragma unroll
    for (int k = 0; k < 16; k++) r[k] = refs[(uint64_t)k * threads + t];
    uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < 16; k++) {
        const uint4* p = reinterpret_cast<const uint4*>(bases + (uint64_t)r[k] * stride);
        const uint4* q = reinterpret_cast<const uint4*>(bases + (uint64_t)r[k] * stride + y_off);
#pragma unroll
        for (int i = 0; i < 3; i++) {
            if (WHAT != 2) { uint4 v = p[i]; acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w; }
            if (WHAT != 0) { uint4 v = q[i]; acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w; }
        }
    }
    out[t] = acc;
}


// Cooperative: a warp loads the x of its 32 lanes' references together, three lanes per point
// (lane l of load j takes 16-byte word (32j + l) % 3 of point (32j + l) / 3), staged through
// shared memory, so that each load instruction touches about 11 points instead of 32.
__global__ void gather_coop(uint4* out, const uint32_t* refs, const uint8_t* bases, uint32_t stride,
                            uint32_t threads) {
    __shared__ uint4 stage[8][96];
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t r[16];
#pragma unroll
    for (int k = 0; k < 16; k++) r[k] = refs[(uint64_t)k * threads + t];
    uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < 16; k++) {
        uint4 v[3];
#pragma unroll
        for (int j = 0; j < 3; j++) {
            uint32_t word = 32 * j + lane;
            uint32_t ref = __shfl_sync(0xffffffffu, r[k], word / 3);
            v[j] = reinterpret_cast<const uint4*>(bases + (uint64_t)ref * stride)[word % 3];
        }
#pragma unroll
        for (int j = 0; j < 3; j++) stage[warp][32 * j + lane] = v[j];
        __syncwarp();
#pragma unroll
        for (int i = 0; i < 3; i++) { uint4 w = stage[warp][3 * lane + i]; acc.x ^= w.x; acc.y ^= w.y; acc.z ^= w.z; acc.w ^= w.w; }
        __syncwarp();
    }
    out[t] = acc;
}

template <int HINT>  // 1: __ldg, 2: __ldcg, 3: __ldcs
__global__ void gather_hint(uint4* out, const uint32_t* refs, const uint8_t* bases, uint32_t stride,
                            uint32_t threads) {
    uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t r[16];
#pragma unroll
    for (int k = 0; k < 16; k++) r[k] = refs[(uint64_t)k * threads + t];
    uint4 acc = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < 16; k++) {
        const uint4* p = reinterpret_cast<const uint4*>(bases + (uint64_t)r[k] * stride);
#pragma unroll
        for (int i = 0; i < 3; i++) {
            uint4 v = HINT == 1 ? __ldg(&p[i]) : HINT == 2 ? __ldcg(&p[i]) : __ldcs(&p[i]);
            acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
        }
    }
    out[t] = acc;
}

__global__ void fill(uint32_t* p, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = (uint32_t)(i * 0x9e3779b97f4a7c15ull >> 32);
}

int main() {
    const uint32_t n = 1u << 24;          // bases
    const uint32_t threads = 1u << 22;    // 2^26 references, 16 per thread
    std::vector<uint32_t> refs((size_t)threads * 16);
    std::mt19937 rng(1);
    for (auto& r : refs) r = rng() % n;
    uint8_t* bases; uint32_t* drefs; uint4* out;
    CHECK(cudaMalloc(&bases, (size_t)n * 128 + 256));
    fill<<<1024, 256>>>(reinterpret_cast<uint32_t*>(bases), ((size_t)n * 128 + 256) / 4);
    CHECK(cudaMalloc(&drefs, refs.size() * 4));
    CHECK(cudaMemcpy(drefs, refs.data(), refs.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&out, (size_t)threads * 16));
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    struct V { const char* name; int what; uint32_t stride, y_off; };
    V vs[] = {{"x, 96-byte points (now)", 0, 96, 48}, {"x, 128-byte points", 0, 128, 64},
              {"x, 48-byte x array", 0, 48, 0},     {"x, 64-byte x array", 0, 64, 0},
              {"x+y, 96-byte points (now)", 1, 96, 48}, {"x+y, 128-byte points", 1, 128, 64},
              {"y, 96-byte points (now)", 2, 96, 48}, {"y, 128-byte points", 2, 128, 64},
              {"x, 96, three lanes a point", 3, 96, 0}, {"x, 96, __ldg", 4, 96, 0},
              {"x, 96, __ldcg", 5, 96, 0}, {"x, 96, __ldcs", 6, 96, 0}};
    for (int rep = 0; rep < 1; rep++)
    for (auto& v : vs) {
        std::vector<float> ms;
        for (int i = 0; i < 7; i++) {
            cudaEventRecord(a);
            dim3 grid((threads + 255) / 256), block(256);
            if (v.what == 0) gather<0><<<grid, block>>>(out, drefs, bases, v.stride, v.y_off, threads);
            if (v.what == 1) gather<1><<<grid, block>>>(out, drefs, bases, v.stride, v.y_off, threads);
            if (v.what == 2) gather<2><<<grid, block>>>(out, drefs, bases, v.stride, v.y_off, threads);
            if (v.what == 3) gather_coop<<<grid, block>>>(out, drefs, bases, v.stride, threads);
            if (v.what == 4) gather_hint<1><<<grid, block>>>(out, drefs, bases, v.stride, threads);
            if (v.what == 5) gather_hint<2><<<grid, block>>>(out, drefs, bases, v.stride, threads);
            if (v.what == 6) gather_hint<3><<<grid, block>>>(out, drefs, bases, v.stride, threads);
            cudaEventRecord(b);
            CHECK(cudaEventSynchronize(b));
            float t; cudaEventElapsedTime(&t, a, b); ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        std::vector<uint4> h(threads);
        CHECK(cudaMemcpy(h.data(), out, (size_t)threads * 16, cudaMemcpyDeviceToHost));
        uint32_t sum = 0;
        for (auto& w : h) sum ^= w.x ^ (w.y * 3) ^ (w.z * 5) ^ (w.w * 7);
        double per = ms[3] * 1e6 / ((double)threads * 16);
        printf("gather | %-28s | %8.3f ms | %6.2f ns/ref·1e3 | %5.1f G refs/s | check %08x\n", v.name, ms[3], per * 1000,
               (double)threads * 16 / (ms[3] * 1e-3) / 1e9, sum);
    }
    return 0;
}
