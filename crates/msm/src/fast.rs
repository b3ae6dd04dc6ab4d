//! The fast CPU path: blst's parallel Pippenger, and a parallel signed-digit Pippenger of our
//! own with the structure of the GPU kernels.
//!
//! [`msm`] (and [`msm_canonical`], [`msm_g1`], [`msm_g2`]) hand the work to blst
//! (`blst::MultiPoint::mult` with 255-bit scalars), which splits the points and windows into
//! tiles on its own thread pool and accumulates buckets in XYZZ coordinates. Montgomery scalars
//! are converted to canonical little-endian bytes first, in parallel on rayon.
//!
//! [`pippenger`] is ours: the algorithm of [`crate::reference`], in parallel. Scalars are shifted
//! once, `t = s + K` with `K = Σ_w (2^(c−1) − 1)·2^(c·w)`, so that the signed digit of window `w`
//! is read straight off `t` as `bits_w(t) − (2^(c−1) − 1)`, with no carry chain between windows
//! (the digits are exactly those of [`crate::reference::signed_digits`]). Then rayon runs one
//! task per (window, chunk of points): mixed additions into `2^(c−1)` projective buckets,
//! reduced by running sums; chunk sums are added per window and the windows combined by
//! Horner's rule.
//! Points are split into chunks only when there are fewer windows than about twice the threads.
//!
//! blst measured 1.3–1.5× faster than ours at every size in G1 and G2 (see the crate
//! documentation), so [`msm`] uses blst.

use cuzk_field::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use rayon::prelude::*;

use crate::reference::{bucket_reduce, check_window_bits, combine_windows, num_windows};
use crate::scalar::Scalars;
use crate::{MsmCurve, MsmError, G1, G2};

/// Scalars converted per rayon job, so that short inputs do not pay for splitting.
const CONVERT_MIN_LEN: usize = 1 << 10;

/// `Σ sᵢ·Pᵢ` by blst's parallel Pippenger, the default fast path.
///
/// Scalars are converted out of Montgomery form to little-endian bytes in parallel. Returns the
/// identity for no points; fails when the lengths differ. Points at infinity among the bases are
/// handled (they add nothing).
pub fn msm<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
) -> Result<C::Projective, MsmError> {
    if bases.len() != scalars.len() {
        return Err(MsmError::LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        });
    }
    let bytes: Vec<[u8; 32]> = scalars
        .par_iter()
        .with_min_len(CONVERT_MIN_LEN)
        .map(Scalar::to_bytes_le)
        .collect();
    C::blst_msm(bases, &bytes)
}

/// [`msm`] taking the scalars by value: they are converted to canonical form in place
/// ([`cuzk_field::layout::CanonicalScalars`]), so no second vector of the same size is made. For
/// the large dense MSMs of a proof (`h`), whose scalars are not needed afterwards.
pub fn msm_owned<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: Vec<Scalar>,
) -> Result<C::Projective, MsmError> {
    if bases.len() != scalars.len() {
        return Err(MsmError::LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        });
    }
    let canonical = cuzk_field::layout::CanonicalScalars::from_montgomery(scalars);
    C::blst_msm(bases, canonical.as_bytes())
}

/// [`msm`] with canonical little-endian scalars, passed to blst without copying; fails when one
/// is not below `r`.
pub fn msm_canonical<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[[u8; 32]],
) -> Result<C::Projective, MsmError> {
    C::blst_msm(bases, scalars)
}

/// [`msm`] in G1.
pub fn msm_g1(bases: &[G1Affine], scalars: &[Scalar]) -> Result<G1Projective, MsmError> {
    msm::<G1>(bases, scalars)
}

/// [`msm`] in G2.
pub fn msm_g2(bases: &[G2Affine], scalars: &[Scalar]) -> Result<G2Projective, MsmError> {
    msm::<G2>(bases, scalars)
}

/// `Σ sᵢ·Pᵢ` by our parallel signed-digit Pippenger with windows of `window_bits` bits
/// ([`crate::reference::default_window_bits`] is a good choice).
///
/// Fails when the lengths differ or `window_bits` is outside `1..=MAX_WINDOW_BITS`.
pub fn pippenger<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
    window_bits: u32,
) -> Result<C::Projective, MsmError> {
    pippenger_scalars::<C>(bases, Scalars::Montgomery(scalars), window_bits)
}

/// [`pippenger`] with canonical little-endian scalars; also fails when one is not below `r`.
pub fn pippenger_canonical<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[[u8; 32]],
    window_bits: u32,
) -> Result<C::Projective, MsmError> {
    pippenger_scalars::<C>(bases, Scalars::Canonical(scalars), window_bits)
}

/// A scalar shifted by the digit offset `K`; five limbs because `t < 2^(c·W)` may exceed 2^256.
type Shifted = [u64; 5];

/// `K = Σ_w (2^(c−1) − 1)·2^(c·w)` over the `W` windows of `window_bits` bits.
fn digit_offset(window_bits: u32) -> Shifted {
    let mut offset = [0u64; 5];
    let digit_bias = (1u64 << (window_bits - 1)) - 1;
    for w in 0..num_windows(window_bits) {
        let bit = w * window_bits as usize;
        offset[bit / 64] |= digit_bias << (bit % 64);
        if bit % 64 + window_bits as usize > 64 {
            offset[bit / 64 + 1] |= digit_bias >> (64 - bit % 64);
        }
    }
    offset
}

/// `s + K` with carries.
fn shift_scalar(limbs: &[u64; 4], offset: &Shifted) -> Shifted {
    let mut out = [0u64; 5];
    let mut carry = false;
    for (i, out) in out.iter_mut().enumerate() {
        let s = limbs.get(i).copied().unwrap_or(0);
        let (sum, c1) = s.overflowing_add(offset[i]);
        let (sum, c2) = sum.overflowing_add(u64::from(carry));
        *out = sum;
        carry = c1 || c2;
    }
    debug_assert!(!carry);
    out
}

/// The signed digit of window `w` of a shifted scalar.
///
/// `t = s + K` has window values `u_w = d_w + 2^(c−1) − 1 ∈ [0, 2^c)`, one per digit of the
/// (unique) representation of `s` with digits in `(−2^(c−1), 2^(c−1)]`, so no window of `t`
/// overflows into the next and `d_w = u_w − (2^(c−1) − 1)`.
fn window_digit(shifted: &Shifted, w: usize, window_bits: u32) -> i32 {
    let value = crate::scalar::bits_at(shifted, w * window_bits as usize, window_bits) as i64;
    (value - ((1i64 << (window_bits - 1)) - 1)) as i32
}

/// How many chunks to split the points into: enough that there are about twice as many
/// (window, chunk) tasks as threads, but never chunks shorter than the bucket count (each chunk
/// pays a full bucket reduction).
pub(crate) fn chunk_count(n_points: usize, n_windows: usize, window_bits: u32) -> usize {
    let wanted = (2 * rayon::current_num_threads()).div_ceil(n_windows);
    let worthwhile = (n_points >> window_bits).max(1);
    wanted.min(worthwhile).max(1)
}

fn pippenger_scalars<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: Scalars<'_>,
    window_bits: u32,
) -> Result<C::Projective, MsmError> {
    check_window_bits(window_bits)?;
    if bases.len() != scalars.len() {
        return Err(MsmError::LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        });
    }
    scalars.check_canonical()?;
    let n_points = bases.len();
    if n_points == 0 {
        return Ok(C::identity());
    }

    let offset = digit_offset(window_bits);
    let shifted: Vec<Shifted> = (0..n_points)
        .into_par_iter()
        .with_min_len(CONVERT_MIN_LEN)
        .map(|i| shift_scalar(&scalars.limbs(i), &offset))
        .collect();

    let n_windows = num_windows(window_bits);
    let n_chunks = chunk_count(n_points, n_windows, window_bits);
    let chunk_len = n_points.div_ceil(n_chunks);
    let n_buckets = 1usize << (window_bits - 1);

    // One task per (window, chunk): accumulate the chunk's points into the window's buckets and
    // reduce them to Σ k·B_k.
    let partial_sums: Vec<C::Projective> = (0..n_windows * n_chunks)
        .into_par_iter()
        .with_max_len(1)
        .map(|task| {
            let (window_idx, chunk_idx) = (task / n_chunks, task % n_chunks);
            let start = (chunk_idx * chunk_len).min(n_points);
            let end = (start + chunk_len).min(n_points);
            let mut buckets = vec![C::identity(); n_buckets];
            for (base, t) in bases[start..end].iter().zip(&shifted[start..end]) {
                let digit = window_digit(t, window_idx, window_bits);
                match digit.signum() {
                    1 => C::add_assign_mixed(&mut buckets[digit as usize - 1], base),
                    -1 => {
                        C::sub_assign_mixed(&mut buckets[digit.unsigned_abs() as usize - 1], base)
                    }
                    _ => {}
                }
            }
            bucket_reduce::<C>(&buckets)
        })
        .collect();

    let window_sums: Vec<C::Projective> = partial_sums
        .chunks(n_chunks)
        .map(|chunk_sums| {
            let mut sum = C::identity();
            for chunk_sum in chunk_sums {
                C::add_assign(&mut sum, chunk_sum);
            }
            sum
        })
        .collect();
    Ok(combine_windows::<C>(&window_sums, window_bits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{signed_digits, MAX_WINDOW_BITS};
    use crate::scalar::limbs_from_le_bytes;
    use ff::Field;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    /// The shifted-scalar digits are exactly the reference's carry-propagated digits.
    fn check(scalar: Scalar) {
        for window_bits in 1..=MAX_WINDOW_BITS {
            let expected = signed_digits(&scalar, window_bits).unwrap();
            let shifted = shift_scalar(
                &limbs_from_le_bytes(&scalar.to_bytes_le()),
                &digit_offset(window_bits),
            );
            let digits: Vec<i32> = (0..expected.len())
                .map(|w| window_digit(&shifted, w, window_bits))
                .collect();
            assert_eq!(
                digits, expected,
                "scalar {scalar:?}, window_bits {window_bits}"
            );
            // Nothing is left above the top window.
            let top = expected.len() * window_bits as usize;
            assert_eq!(crate::scalar::bits_at(&shifted, top, 32), 0);
        }
    }

    #[test]
    fn shifted_digits_match_reference() {
        for scalar in [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            -Scalar::ONE.double(),
        ] {
            check(scalar);
        }
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for _ in 0..32 {
            check(Scalar::random(&mut rng));
        }
    }
}
