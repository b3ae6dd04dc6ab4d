// Fr elements in global memory: vectors of `uint4`, two 16-byte words an element (the layout of
// fr.cuh, byte-identical to blst's), loaded and stored whole. Shared by ntt/ and pce/.
#pragma once

#include "field/fr.cuh"

namespace fr_io {

// Element i of a vector this kernel may also write.
FR_D fr_t load(const uint4* base, uint64_t i) {
    uint4 a = base[2 * i], b = base[2 * i + 1];
    fr_t r;
    r.l[0] = a.x; r.l[1] = a.y; r.l[2] = a.z; r.l[3] = a.w;
    r.l[4] = b.x; r.l[5] = b.y; r.l[6] = b.z; r.l[7] = b.w;
    return r;
}

// Element i of a vector that is read-only for the kernel's lifetime (through the read-only
// data cache).
FR_D fr_t load_ro(const uint4* base, uint64_t i) {
    uint4 a = __ldg(base + 2 * i), b = __ldg(base + 2 * i + 1);
    fr_t r;
    r.l[0] = a.x; r.l[1] = a.y; r.l[2] = a.z; r.l[3] = a.w;
    r.l[4] = b.x; r.l[5] = b.y; r.l[6] = b.z; r.l[7] = b.w;
    return r;
}

FR_D void store(uint4* base, uint64_t i, const fr_t& r) {
    base[2 * i] = make_uint4(r.l[0], r.l[1], r.l[2], r.l[3]);
    base[2 * i + 1] = make_uint4(r.l[4], r.l[5], r.l[6], r.l[7]);
}

}  // namespace fr_io
