// A pre-compiled circuit's products on the device: a = A·z, b = B·z, c = C·z over every row of
// the constraint system, each row's a·b = c checked, written straight into the NTT's input
// (a ‖ b ‖ c, each n elements; rows past the circuit's are zero, the domain's padding). Rust
// launch wrapper: crates/pce/src/gpu.rs (`GpuProducts`); the image it reads:
// crates/pce/src/image.rs.
//
// Algorithm. One thread per row r < n. For each matrix, the row's entries (CSR: row pointers,
// 32-bit columns, narrow coefficient ids) are summed in registers: a column's value is read from
// `values` (input ‖ aux, Montgomery form; a column with the top bit set is input `col & 0x7fffffff`,
// else aux `col`), skipped when zero, added for id 0 (+1), subtracted for id 1 (−1), else
// multiplied by the coefficient table's entry. Field addition is exact, so the sums equal the
// host's (crates/pce/src/spmv.rs) whatever the order. Then a·b is compared with c; a row where it
// differs lowers `first_bad` to its index (atomicMin), so the caller names the first failing row
// as the host does.
//
// Launch shape: ceil(n / 256) blocks of 256 threads. Memory traffic: the image once (row pointers,
// 4 bytes a column, id_bytes an id), one 32-byte value read per non-zero entry (neighbouring rows
// read neighbouring variables, mostly from L2), 3·32·n bytes written.
#include "field/fr.cuh"
#include "field/fr_io.cuh"

// Where each section lies in the image, in 32-bit words from its start (see image.rs).
struct PceProductsParams {
    uint64_t row_ptr[3];
    uint64_t cols[3];
    uint64_t ids[3];
    uint64_t coeffs;
    uint64_t rows;
    uint64_t n;
    uint32_t num_inputs;
    uint32_t id_bytes;
};
static_assert(sizeof(PceProductsParams) == 104, "mirrored by crates/pce/src/gpu.rs");

namespace pce {

using fr_io::load_ro;
using fr_io::store;

FR_D bool equal(const fr_t& x, const fr_t& y) {
    uint32_t diff = 0;
    for (int i = 0; i < 8; i++) diff |= x.l[i] ^ y.l[i];
    return diff == 0;
}

FR_D uint32_t coeff_id(const uint32_t* ids, uint32_t id_bytes, uint32_t e) {
    if (id_bytes == 1) return __ldg(reinterpret_cast<const uint8_t*>(ids) + e);
    if (id_bytes == 2) return __ldg(reinterpret_cast<const uint16_t*>(ids) + e);
    return __ldg(ids + e);
}

// Row r of matrix m (0, 1, 2: A, B, C) applied to the values.
FR_D fr_t row(const uint32_t* image, const PceProductsParams& p, int m, const uint4* values,
              uint64_t r) {
    const uint32_t* row_ptr = image + p.row_ptr[m];
    const uint32_t* cols = image + p.cols[m];
    const uint32_t* ids = image + p.ids[m];
    const uint4* coeffs = reinterpret_cast<const uint4*>(image + p.coeffs);
    fr_t acc = fr_t::zero();
    const uint32_t end = __ldg(row_ptr + r + 1);
    for (uint32_t e = __ldg(row_ptr + r); e < end; e++) {
        const uint32_t col = __ldg(cols + e);
        const uint64_t at = (col & 0x80000000u) ? (uint64_t)(col & 0x7fffffffu)
                                                : (uint64_t)p.num_inputs + col;
        const fr_t x = load_ro(values, at);
        if (x.is_zero()) continue;
        const uint32_t k = coeff_id(ids, p.id_bytes, e);
        if (k == 0) {
            acc = fr_add(acc, x);
        } else if (k == 1) {
            acc = fr_sub(acc, x);
        } else {
            acc = fr_add(acc, fr_mul(x, load_ro(coeffs, k)));
        }
    }
    return acc;
}

}  // namespace pce

// abc: 3·n elements (a, then b, then c); first_bad: one word, u32::MAX before the launch;
// values: input ‖ aux; image: the matrices and the coefficient table (PceProductsParams).
extern "C" __global__ void pce_products(uint4* abc, uint32_t* first_bad, const uint4* values,
                                        const uint32_t* image, PceProductsParams p) {
    const uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= p.n) return;
    if (r >= p.rows) {
        const fr_t zero = fr_t::zero();
        pce::store(abc, r, zero);
        pce::store(abc, p.n + r, zero);
        pce::store(abc, 2 * p.n + r, zero);
        return;
    }
    const fr_t a = pce::row(image, p, 0, values, r);
    const fr_t b = pce::row(image, p, 1, values, r);
    const fr_t c = pce::row(image, p, 2, values, r);
    pce::store(abc, r, a);
    pce::store(abc, p.n + r, b);
    pce::store(abc, 2 * p.n + r, c);
    if (!pce::equal(fr_mul(a, b), c)) atomicMin(first_bad, (uint32_t)r);
}
