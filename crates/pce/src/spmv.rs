//! Sparse matrix-vector products `A·z`, `B·z`, `C·z`, fused with the satisfaction check.
//!
//! Rows are split into blocks of at least [`ROWS_PER_TASK`] for rayon; `C·z` first, then `A·z`
//! and `B·z` together with the `a·b = c` check of each row. The inner loop does no field multiplication for the common cases: a value known
//! to be zero is skipped, a value known to be one adds its coefficient, and coefficients `±1`,
//! `±2` add, subtract or double the value; only other coefficients of other values multiply.

use std::sync::atomic::{AtomicUsize, Ordering};

use cuzk_field::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::record::{COEFF_MINUS_ONE, COEFF_ONE, INPUT_FLAG};
use crate::witness::{limbs, VALUE_ONE, VALUE_ZERO};

/// Rows per rayon task: large enough to amortise scheduling, small enough to balance 2–200
/// threads.
pub(crate) const ROWS_PER_TASK: usize = 4096;

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

/// What the products read: the witness, its value classes, and the coefficient table.
pub(crate) struct Ctx<'a> {
    pub input: &'a [Scalar],
    pub aux: &'a [Scalar],
    pub aux_class: &'a [u8],
    pub coeffs: &'a [Scalar],
    pub kinds: &'a [Kind],
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

    /// Row `r` of `m` applied to the witness.
    #[inline(always)]
    fn row(&self, m: &Matrix<'_>, r: usize) -> Scalar {
        let (start, end) = (m.row_ptr[r] as usize, m.row_ptr[r + 1] as usize);
        let mut acc = Scalar::ZERO;
        for (&col, &k) in m.cols[start..end].iter().zip(&m.coeffs[start..end]) {
            if col & INPUT_FLAG != 0 {
                self.add_term(&mut acc, &self.input[(col & !INPUT_FLAG) as usize], k);
            } else {
                let j = col as usize;
                match self.aux_class[j] {
                    VALUE_ZERO => {}
                    VALUE_ONE => acc += self.coeffs[k as usize],
                    _ => self.add_term(&mut acc, &self.aux[j], k),
                }
            }
        }
        acc
    }
}

/// `a·b = c`, with the multiplication skipped where a factor is zero or one (compared by limbs,
/// in variable time: the witness is not secret from its own prover's timing here, as in
/// bellperson's `is_zero_vartime` evaluation).
#[inline(always)]
fn holds(a: &Scalar, b: &Scalar, c: &Scalar, one: &[u64; 4]) -> bool {
    let (la, lb, lc) = (limbs(a), limbs(b), limbs(c));
    if la == [0; 4] || lb == [0; 4] {
        lc == [0; 4]
    } else if la == *one {
        lb == lc
    } else if lb == *one {
        la == lc
    } else {
        limbs(&(*a * b)) == lc
    }
}

/// The three products over `rows` rows, and the first row where `a·b ≠ c` (if any).
///
/// `C·z` is computed first; `A·z` and `B·z` then come together, each row checked against its
/// `c` while its `a` and `b` are in registers. Every vector is written once, straight into its
/// final allocation (no zero-fill pass).
pub(crate) fn evaluate(
    ctx: &Ctx<'_>,
    [ma, mb, mc]: [Matrix<'_>; 3],
    rows: usize,
) -> (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>, Option<usize>) {
    let mut c = Vec::with_capacity(rows);
    (0..rows)
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map(|r| ctx.row(&mc, r))
        .collect_into_vec(&mut c);
    let first_bad = AtomicUsize::new(usize::MAX);
    let one = limbs(&Scalar::ONE);
    let (mut a, mut b) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    (0..rows)
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map(|r| {
            let (va, vb) = (ctx.row(&ma, r), ctx.row(&mb, r));
            if !holds(&va, &vb, &c[r], &one) {
                first_bad.fetch_min(r, Ordering::Relaxed);
            }
            (va, vb)
        })
        .unzip_into_vecs(&mut a, &mut b);
    let bad = first_bad.into_inner();
    (a, b, c, (bad != usize::MAX).then_some(bad))
}
