// Host emulation of the CUDA features cuzk's kernels use (MSM, NTT, the Fr test kernels), so
// that the very same kernel sources compile with a C++ compiler and run on the CPU (crates/gpu,
// feature `emu`): the GPU code paths (launch sequences, indexing, the kernels' arithmetic) are
// tested without a GPU.
//
// Force-included before the kernel sources (`c++ -include emu/host_cuda.h`). Blocks run one
// after the other; the threads of a block run one after the other, except for kernels that
// synchronise (`__syncthreads`), whose threads run as host threads meeting at a barrier. So
// `__shared__` variables become function-local statics: one copy, used by one block at a time.
// Warp-level intrinsics are not emulated, and the kernels do not use them.
#pragma once

#include <stddef.h>
#include <stdint.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
#define __shared__ static

// A kernel's dynamic shared memory (`extern __shared__` on the device, see msm.cu's
// CUZK_DYNAMIC_SHARED): the launcher's buffer of the launch's size, poisoned before each block.
extern unsigned char* cuzk_emu_dynamic_shared;
#define CUZK_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(cuzk_emu_dynamic_shared)

struct dim3 {
    unsigned x, y, z;
};

extern thread_local dim3 threadIdx;
extern thread_local dim3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

void __syncthreads();

struct uint4 {
    unsigned x, y, z, w;
};

inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

// The read-only data cache load: a plain load on the host.
template <class T>
inline T __ldg(const T* p) {
    return *p;
}

inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}

inline unsigned atomicAdd(unsigned* address, unsigned value) {
    return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}

inline unsigned atomicMin(unsigned* address, unsigned value) {
    unsigned old = __atomic_load_n(address, __ATOMIC_SEQ_CST);
    while (old > value &&
           !__atomic_compare_exchange_n(address, &old, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}

inline unsigned atomicMax(unsigned* address, unsigned value) {
    unsigned old = __atomic_load_n(address, __ATOMIC_SEQ_CST);
    while (old < value &&
           !__atomic_compare_exchange_n(address, &old, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
