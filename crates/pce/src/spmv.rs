//! Sparse matrix-vector products `A·z`, `B·z`, `C·z`, fused with the satisfaction check.
//!
//! Rows are split into blocks of at least [`ROWS_PER_TASK`] for rayon; `C·z` first, then `A·z`
//! and `B·z` together with the `a·b = c` check of each row. The inner loop does no field multiplication for the common cases: a value known
//! to be zero is skipped, a value known to be one adds its coefficient, and coefficients `±1`,
//! `±2` add, subtract or double the value; only other coefficients of other values multiply.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use cuzk_field::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::mapped::advise_huge_pages;
use crate::record::{COEFF_MINUS_ONE, COEFF_ONE, INPUT_FLAG};
use crate::witness::{limbs, VALUE_ONE, VALUE_ZERO};

/// Rows per rayon task: large enough to amortise scheduling, small enough to balance 2–200
/// threads.
pub(crate) const ROWS_PER_TASK: usize = 4096;

/// Rows per release of the file's pages (about 0.7 MiB of a PoRep-shaped file).
pub(crate) const RELEASE_ROWS: usize = 1 << 14;

/// How a coefficient is applied to a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    One,
    MinusOne,
    Two,
    MinusTwo,
    General,
}

impl Kind {
    pub fn of(c: &Scalar) -> Self {
        let two = Scalar::ONE.double();
        if *c == Scalar::ONE {
            Kind::One
        } else if *c == -Scalar::ONE {
            Kind::MinusOne
        } else if *c == two {
            Kind::Two
        } else if *c == -two {
            Kind::MinusTwo
        } else {
            Kind::General
        }
    }
}

/// One matrix, borrowed from the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Matrix<'a> {
    pub row_ptr: &'a [u32],
    pub cols: &'a [u32],
    pub coeffs: &'a [u32],
}

/// A coefficient that is no small integer (see [`small_integer`]).
pub(crate) const NOT_SMALL: i64 = i64::MIN;

/// The coefficient as a signed integer if its magnitude is below 2^40, else [`NOT_SMALL`]:
/// a row sums such coefficients of one-valued variables as integers and adds one field element.
pub(crate) fn small_integer(c: &Scalar) -> i64 {
    let as_int = |c: &Scalar| {
        let bytes = c.to_bytes_le();
        if bytes[5..].iter().all(|&b| b == 0) {
            let mut low = [0u8; 8];
            low[..5].copy_from_slice(&bytes[..5]);
            Some(i64::from_le_bytes(low))
        } else {
            None
        }
    };
    as_int(c)
        .or_else(|| as_int(&-*c).map(|v| -v))
        .unwrap_or(NOT_SMALL)
}

/// Small integers `−SMALL..=SMALL` as field elements, so most rows convert their integer part
/// with a table look-up.
pub(crate) const SMALL: i64 = 64;

/// The field elements `−SMALL..=SMALL`.
pub(crate) fn small_table() -> Vec<Scalar> {
    (-SMALL..=SMALL)
        .map(|v| {
            let m = Scalar::from(v.unsigned_abs());
            if v < 0 {
                -m
            } else {
                m
            }
        })
        .collect()
}

/// What the products read: the witness, its value classes, and the coefficient table.
pub(crate) struct Ctx<'a> {
    pub input: &'a [Scalar],
    pub input_class: &'a [u8],
    pub aux: &'a [Scalar],
    pub aux_class: &'a [u8],
    pub coeffs: &'a [Scalar],
    pub kinds: &'a [Kind],
    /// Per coefficient: [`small_integer`].
    pub small: &'a [i64],
    /// [`small_table`].
    pub small_table: &'a [Scalar],
}

impl Ctx<'_> {
    #[inline(always)]
    fn add_term(&self, acc: &mut Scalar, value: &Scalar, k: u32) {
        match k {
            COEFF_ONE => *acc += value,
            COEFF_MINUS_ONE => *acc -= value,
            _ => match self.kinds[k as usize] {
                Kind::One => *acc += value,
                Kind::MinusOne => *acc -= value,
                Kind::Two => *acc += value.double(),
                Kind::MinusTwo => *acc -= value.double(),
                Kind::General => *acc += *value * self.coeffs[k as usize],
            },
        }
    }

    /// Row `r` of `m` applied to the witness. Zero values are skipped; one values with a
    /// small-integer coefficient add up as integers (one field addition per row at most); other
    /// values take [`add_term`](Self::add_term).
    #[inline(always)]
    fn row(&self, m: &Matrix<'_>, r: usize) -> Scalar {
        let (start, end) = (m.row_ptr[r] as usize, m.row_ptr[r + 1] as usize);
        if start == end {
            return Scalar::ZERO;
        }
        let mut acc = Scalar::ZERO;
        let mut touched = false;
        let mut int: i128 = 0;
        for (&col, &k) in m.cols[start..end].iter().zip(&m.coeffs[start..end]) {
            let is_input = col & INPUT_FLAG != 0;
            let index = (col & !INPUT_FLAG) as usize;
            let class = if is_input {
                self.input_class[index]
            } else {
                self.aux_class[index]
            };
            match class {
                VALUE_ZERO => {}
                VALUE_ONE => {
                    let small = self.small[k as usize];
                    if small != NOT_SMALL {
                        int += i128::from(small);
                    } else {
                        acc += self.coeffs[k as usize];
                        touched = true;
                    }
                }
                _ => {
                    let value = if is_input {
                        &self.input[index]
                    } else {
                        &self.aux[index]
                    };
                    self.add_term(&mut acc, value, k);
                    touched = true;
                }
            }
        }
        if int != 0 {
            let int = self.int_scalar(int);
            if touched {
                acc += int;
            } else {
                acc = int;
            }
        }
        acc
    }

    /// `v` as a field element.
    #[inline(always)]
    fn int_scalar(&self, v: i128) -> Scalar {
        if (-i128::from(SMALL)..=i128::from(SMALL)).contains(&v) {
            self.small_table[(v + i128::from(SMALL)) as usize]
        } else {
            let m = Scalar::from_u128(v.unsigned_abs());
            if v < 0 {
                -m
            } else {
                m
            }
        }
    }
}

/// `a·b = c`, with the multiplication skipped where a factor is zero or one (compared by limbs,
/// in variable time: the witness is not secret from its own prover's timing here, as in
/// bellperson's `is_zero_vartime` evaluation).
#[inline(always)]
fn holds(a: &Scalar, b: &Scalar, c: &Scalar, one: &[u64; 4]) -> bool {
    let (la, lb) = (limbs(a), limbs(b));
    if la == [0; 4] || lb == [0; 4] {
        limbs(c) == [0; 4]
    } else if la == *one {
        lb == limbs(c)
    } else if lb == *one {
        la == limbs(c)
    } else {
        limbs(&(*a * b)) == limbs(c)
    }
}

/// The three products over `rows` rows, and the first row where `a·b ≠ c` (if any).
///
/// `C·z` is computed first; `A·z` and `B·z` then come together, each row checked against its
/// `c` while its `a` and `b` are in registers. Every vector is written once, straight into its
/// final allocation (no zero-fill pass).
///
/// `release(matrix, rows)` is called once per [`RELEASE_ROWS`] rows of each matrix, after the row
/// that ends them: the caller may drop those rows' part of the file from memory (a row of the
/// same block still in flight on another thread reads it back).
pub(crate) fn evaluate(
    ctx: &Ctx<'_>,
    [ma, mb, mc]: [Matrix<'_>; 3],
    rows: usize,
    release: &(dyn Fn(usize, Range<usize>) + Sync),
) -> (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>, Option<usize>) {
    let done = |matrices: &[usize], r: usize| {
        if (r + 1) % RELEASE_ROWS == 0 || r + 1 == rows {
            let block = r / RELEASE_ROWS * RELEASE_ROWS..r + 1;
            for &m in matrices {
                release(m, block.clone());
            }
        }
    };
    // Room for the evaluation domain (the next power of two), which the prover pads a, b, c to:
    // padding a vector of exactly `rows` reallocates it, and moving huge pages made that a copy
    // (1.5 s a GiB; a 2^27 partition's `ntt_h` took 12 s instead of 1.2 s of device time).
    let capacity = rows.next_power_of_two();
    let mut c = Vec::with_capacity(capacity);
    advise_huge_pages(&mut c);
    (0..rows)
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map(|r| {
            let vc = ctx.row(&mc, r);
            done(&[2], r);
            vc
        })
        .collect_into_vec(&mut c);
    let first_bad = AtomicUsize::new(usize::MAX);
    let one = limbs(&Scalar::ONE);
    let (mut a, mut b) = (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
    advise_huge_pages(&mut a);
    advise_huge_pages(&mut b);
    (0..rows)
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map(|r| {
            let (va, vb) = (ctx.row(&ma, r), ctx.row(&mb, r));
            if !holds(&va, &vb, &c[r], &one) {
                first_bad.fetch_min(r, Ordering::Relaxed);
            }
            done(&[0, 1], r);
            (va, vb)
        })
        .unzip_into_vecs(&mut a, &mut b);
    let bad = first_bad.into_inner();
    (a, b, c, (bad != usize::MAX).then_some(bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_integers_are_recognised_below_2_40() {
        let int = |v: i64| {
            let m = Scalar::from(v.unsigned_abs());
            if v < 0 {
                -m
            } else {
                m
            }
        };
        for v in [0, 1, -1, 2, -2, 64, -65, (1 << 40) - 1, -((1 << 40) - 1)] {
            assert_eq!(small_integer(&int(v)), v, "{v}");
        }
        for big in [
            int(1 << 40),
            int(-(1 << 40)),
            Scalar::from(u64::MAX),
            -Scalar::from(u64::MAX),
        ] {
            assert_eq!(small_integer(&big), NOT_SMALL);
        }
        let table = small_table();
        assert_eq!(table[SMALL as usize], Scalar::ZERO);
        assert_eq!(table[0], int(-SMALL));
        assert_eq!(table[2 * SMALL as usize], int(SMALL));
    }
}
