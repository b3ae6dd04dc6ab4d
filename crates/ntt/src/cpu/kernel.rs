//! In-cache radix-2 kernels and the tables they read.
//!
//! A kernel transforms one contiguous vector of `m = 2^log_m` scalars, small enough to stay in a
//! core's cache, with twiddles read from a [`Twiddles`] table (never recomputed by repeated
//! multiplication on the hot path). The four-step passes call it once per sub-transform.

use ff::Field;
use rayon::prelude::*;

use crate::arith::{add, sub};
use crate::Scalar;

/// Powers computed per parallel chunk; a chunk starts from one `pow_vartime`.
const POWERS_CHUNK: usize = 1 << 10;

/// `[base^0, base^1, ..., base^(count-1)]`, computed in parallel chunks.
pub(crate) fn powers(base: Scalar, count: usize) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; count];
    out.par_chunks_mut(POWERS_CHUNK)
        .enumerate()
        .for_each(|(chunk_idx, chunk)| {
            let mut acc = base.pow_vartime([(chunk_idx * POWERS_CHUNK) as u64]);
            for v in chunk.iter_mut() {
                *v = acc;
                acc *= base;
            }
        });
    out
}

/// The twiddles of a radix-2 transform of size `m` for a primitive `m`-th root `rho`, laid out
/// level by level so that every stage reads its twiddles contiguously: the stage whose butterflies
/// span `half` elements reads `table[half..2 * half]`, where
/// `table[half + i] = rho^(i * m / (2 * half))` (a primitive `2 * half`-th root to the power `i`).
/// Entry 0 is unused; the table has `m` entries.
#[derive(Clone, Debug)]
pub(crate) struct Twiddles {
    table: Vec<Scalar>,
}

impl Twiddles {
    /// The table for size `m` (a power of two) and a primitive `m`-th root of unity `rho`.
    pub(crate) fn new(m: usize, rho: Scalar) -> Self {
        debug_assert!(m.is_power_of_two());
        let half = m / 2;
        let top = powers(rho, half);
        let mut table = vec![Scalar::ONE; m.max(1)];
        if half > 0 {
            table[half..].copy_from_slice(&top);
        }
        let mut level = half / 2;
        while level >= 1 {
            let stride = half / level;
            for i in 0..level {
                table[level + i] = top[i * stride];
            }
            level /= 2;
        }
        Self { table }
    }

    /// The size `m` the table is for.
    pub(crate) fn size(&self) -> usize {
        self.table.len()
    }

    fn level(&self, half: usize) -> &[Scalar] {
        &self.table[half..2 * half]
    }
}

/// Decimation in frequency (Gentleman-Sande): natural order in, bit-reversed order out.
pub(crate) fn dif(a: &mut [Scalar], tw: &Twiddles) {
    let m = a.len();
    debug_assert_eq!(m, tw.size());
    let mut half = m / 2;
    while half >= 2 {
        let twiddles = &tw.level(half)[1..];
        for block in a.chunks_exact_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            // i = 0: the twiddle is one.
            let (u, v) = (lo[0], hi[0]);
            lo[0] = add(u, v);
            hi[0] = sub(u, v);
            for ((x, y), w) in lo[1..].iter_mut().zip(hi[1..].iter_mut()).zip(twiddles) {
                let (u, v) = (*x, *y);
                *x = add(u, v);
                *y = sub(u, v) * w;
            }
        }
        half /= 2;
    }
    if m >= 2 {
        for pair in a.chunks_exact_mut(2) {
            let (u, v) = (pair[0], pair[1]);
            pair[0] = add(u, v);
            pair[1] = sub(u, v);
        }
    }
}

/// Decimation in time (Cooley-Tukey): bit-reversed order in, natural order out.
pub(crate) fn dit(a: &mut [Scalar], tw: &Twiddles) {
    let m = a.len();
    debug_assert_eq!(m, tw.size());
    if m >= 2 {
        for pair in a.chunks_exact_mut(2) {
            let (u, v) = (pair[0], pair[1]);
            pair[0] = add(u, v);
            pair[1] = sub(u, v);
        }
    }
    let mut half = 2;
    while half < m {
        let twiddles = &tw.level(half)[1..];
        for block in a.chunks_exact_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            let (u, v) = (lo[0], hi[0]);
            lo[0] = add(u, v);
            hi[0] = sub(u, v);
            for ((x, y), w) in lo[1..].iter_mut().zip(hi[1..].iter_mut()).zip(twiddles) {
                let v = *y * w;
                let u = *x;
                *x = add(u, v);
                *y = sub(u, v);
            }
        }
        half *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bit_reverse_permute, naive_dft, Domain};

    fn check(log_m: u32) {
        let domain = Domain::new(log_m).unwrap();
        let m = domain.n();
        let tw = Twiddles::new(m, domain.omega());
        let x: Vec<Scalar> = (0..m as u64).map(|i| Scalar::from(i * i + 3)).collect();
        let expected = naive_dft(&x, domain.omega());

        let mut a = x.clone();
        dif(&mut a, &tw);
        bit_reverse_permute(&mut a);
        assert_eq!(a, expected, "dif, m = {m}");

        let mut a = x;
        bit_reverse_permute(&mut a);
        dit(&mut a, &tw);
        assert_eq!(a, expected, "dit, m = {m}");
    }

    #[test]
    fn kernels_match_the_definition() {
        for log_m in 0..=7 {
            check(log_m);
        }
    }

    #[test]
    fn powers_cross_chunks() {
        let base = Scalar::from(5u64);
        assert_eq!(powers(base, 3000), Domain::powers(base, 3000));
    }
}
