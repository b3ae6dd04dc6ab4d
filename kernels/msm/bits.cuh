// Bit scans of 64-bit words, shared by the MSM's bitmap batch addition (msm.cu) and the query
// split (split.cu): the device's intrinsics, or the host compiler's builtins for the emulator.
#pragma once

#include "field/fr.cuh"

// The index of the lowest set bit of x (x non-zero).
FR_HD uint32_t msm_ctz64(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __ffsll((long long)x) - 1;
#else
    return (uint32_t)__builtin_ctzll(x);
#endif
}

// The number of set bits of x.
FR_HD uint32_t msm_popc64(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __popcll(x);
#else
    return (uint32_t)__builtin_popcountll(x);
#endif
}
