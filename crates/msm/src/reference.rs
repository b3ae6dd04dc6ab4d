//! A clear, single-threaded Pippenger: the oracle for the fast paths and the GPU kernels.
//!
//! Every step is a public function with the same shape a GPU kernel has, so a kernel can be
//! debugged step by step against it:
//!
//! 1. [`signed_digits`]: each canonical scalar `s < r < 2^255` is split into `W = ⌊255/c⌋ + 1`
//!    windows of `c = window_bits` bits, `s = Σ_w d_w·2^(c·w)`, with signed digits
//!    `d_w ∈ (−2^(c−1), 2^(c−1)]`: a window value above `2^(c−1)` becomes `value − 2^c` and
//!    carries one into the next window. The extra window holds the last carry.
//! 2. [`bucket_accumulate`], per window: `2^(c−1)` buckets; bucket `k` (stored at index `k − 1`)
//!    collects `Σ_{d_i = k} P_i − Σ_{d_i = −k} P_i` by mixed additions. Digit zero adds nothing.
//! 3. [`bucket_reduce`], per window: `Σ_k k·B_k` by the running-sum trick: walking `k` from the
//!    top, `running += B_k; sum += running` (two projective additions per bucket).
//! 4. [`combine_windows`]: Horner's rule from the top window,
//!    `acc = 2^c·acc + S_w` (`c` doublings between windows).
//!
//! The cost is `W·n` mixed additions and `W·2^c` projective ones; [`default_window_bits`] picks
//! `c` to minimise it.

use cuzk_field::Scalar;

use crate::scalar::{bits_at, limbs_from_le_bytes, Scalars, SCALAR_BITS};
use crate::{MsmCurve, MsmError};

/// The widest window supported: digits must fit an `i32`, and `2^(c−1)` buckets must fit memory
/// (2^23 G2 buckets are 2.4 GB).
pub const MAX_WINDOW_BITS: u32 = 24;

/// Checks `window_bits ∈ 1..=MAX_WINDOW_BITS`.
pub(crate) fn check_window_bits(window_bits: u32) -> Result<(), MsmError> {
    if (1..=MAX_WINDOW_BITS).contains(&window_bits) {
        Ok(())
    } else {
        Err(MsmError::WindowBits {
            window_bits,
            max: MAX_WINDOW_BITS,
        })
    }
}

/// The number of windows of `window_bits` bits a canonical scalar has: `⌊255/c⌋ + 1`.
///
/// The top window holds `255 mod c < c` bits of the scalar, so its value plus the incoming carry
/// is at most `2^(c−1)` and never carries further. `window_bits` must be at least 1.
pub(crate) fn num_windows(window_bits: u32) -> usize {
    (SCALAR_BITS / window_bits + 1) as usize
}

/// Signed digits of canonical limbs; `window_bits` already checked.
pub(crate) fn signed_digits_of_limbs(limbs: &[u64; 4], window_bits: u32) -> Vec<i32> {
    let half = 1i64 << (window_bits - 1);
    let full = 1i64 << window_bits;
    let mut carry = 0i64;
    let digits: Vec<i32> = (0..num_windows(window_bits))
        .map(|w| {
            let value = bits_at(limbs, w * window_bits as usize, window_bits) as i64 + carry;
            let digit = if value > half { value - full } else { value };
            carry = i64::from(value > half);
            digit as i32
        })
        .collect();
    debug_assert_eq!(carry, 0, "the top window never carries");
    digits
}

/// The signed base-`2^c` digits of a scalar, lowest window first.
///
/// Returns `⌊255/c⌋ + 1` digits `d_w ∈ (−2^(c−1), 2^(c−1)]` with `Σ_w d_w·2^(c·w) = s` exactly
/// (as integers, `s` canonical). Fails when `window_bits` is outside `1..=MAX_WINDOW_BITS`.
pub fn signed_digits(scalar: &Scalar, window_bits: u32) -> Result<Vec<i32>, MsmError> {
    signed_digits_canonical(&scalar.to_bytes_le(), window_bits)
}

/// [`signed_digits`] of a canonical little-endian scalar; fails when it is not below `r`.
pub fn signed_digits_canonical(scalar: &[u8; 32], window_bits: u32) -> Result<Vec<i32>, MsmError> {
    check_window_bits(window_bits)?;
    Scalars::Canonical(std::slice::from_ref(scalar)).check_canonical()?;
    Ok(signed_digits_of_limbs(
        &limbs_from_le_bytes(scalar),
        window_bits,
    ))
}

/// Accumulates one window: `2^(c−1)` buckets, bucket `k` at index `k − 1` holding
/// `Σ_{d_i = k} P_i − Σ_{d_i = −k} P_i`.
///
/// `digits_of_window[i]` is the digit of base `i` in this window. Digits must lie in
/// `[−2^(c−1), 2^(c−1)]` (a bucket exists for either sign of `2^(c−1)`).
pub fn bucket_accumulate<C: MsmCurve>(
    bases: &[C::Affine],
    digits_of_window: &[i32],
    window_bits: u32,
) -> Result<Vec<C::Projective>, MsmError> {
    check_window_bits(window_bits)?;
    if bases.len() != digits_of_window.len() {
        return Err(MsmError::LengthMismatch {
            bases: bases.len(),
            scalars: digits_of_window.len(),
        });
    }
    let half = 1i64 << (window_bits - 1);
    if let Some(index) = digits_of_window
        .iter()
        .position(|&d| i64::from(d).abs() > half)
    {
        return Err(MsmError::DigitOutOfRange {
            index,
            digit: digits_of_window[index],
            window_bits,
        });
    }
    let mut buckets = vec![C::identity(); 1 << (window_bits - 1)];
    for (base, &digit) in bases.iter().zip(digits_of_window) {
        match digit.signum() {
            1 => C::add_assign_mixed(&mut buckets[digit as usize - 1], base),
            -1 => C::sub_assign_mixed(&mut buckets[digit.unsigned_abs() as usize - 1], base),
            _ => {}
        }
    }
    Ok(buckets)
}

/// Reduces one window's buckets to `Σ_k k·B_k` (bucket `k` at index `k − 1`).
///
/// Running sums from the top bucket down: after visiting bucket `k`, `running = Σ_{j≥k} B_j`,
/// and adding `running` once per bucket adds each `B_j` exactly `j` times.
pub fn bucket_reduce<C: MsmCurve>(buckets: &[C::Projective]) -> C::Projective {
    let mut running = C::identity();
    let mut sum = C::identity();
    for bucket in buckets.iter().rev() {
        C::add_assign(&mut running, bucket);
        C::add_assign(&mut sum, &running);
    }
    sum
}

/// Combines window sums, lowest window first, into `Σ_w 2^(c·w)·S_w` by Horner's rule from the
/// top window: `window_bits` doublings between consecutive windows.
pub fn combine_windows<C: MsmCurve>(
    window_sums: &[C::Projective],
    window_bits: u32,
) -> C::Projective {
    combine_windows_of_widths::<C>(window_sums, |_| window_bits)
}

/// Combines window sums, lowest window first, into `Σ_w 2^(o_w)·S_w`, window `w` holding
/// `width(w)` bits and `o_w` the bits of the windows below it, by Horner's rule from the top
/// window: `width(w)` doublings between windows `w + 1` and `w`.
pub fn combine_windows_of_widths<C: MsmCurve>(
    window_sums: &[C::Projective],
    width: impl Fn(usize) -> u32,
) -> C::Projective {
    let mut acc = C::identity();
    for (w, window_sum) in window_sums.iter().enumerate().rev() {
        if w + 1 < window_sums.len() {
            for _ in 0..width(w) {
                acc = C::double(&acc);
            }
        }
        C::add_assign(&mut acc, window_sum);
    }
    acc
}

/// The window width minimising the estimated cost `(⌊255/c⌋ + 1)·(n + 2·2^c)` of an MSM of `n`
/// points, searched over `1..=20`.
///
/// Per window: `n` mixed additions into buckets, then two projective additions for each of the
/// `2^(c−1)` buckets, a projective addition weighing about two mixed ones (it costs more field
/// multiplications, and wider windows spill the buckets out of cache). The weight was fitted on
/// [`crate::fast::pippenger`] in G1 and G2: it picks 8 bits at 2^12 points, 12 at 2^16, 13 at
/// 2^18, each within a few percent of the best measured width.
pub fn default_window_bits(n: usize) -> u32 {
    let cost = |c: u32| num_windows(c) as f64 * (n as f64 + 2.0 * (1u64 << c) as f64);
    (1..=20).fold(1, |best, c| if cost(c) < cost(best) { c } else { best })
}

/// `Σ sᵢ·Pᵢ` by the steps above, one window at a time, on the calling thread.
///
/// Fails when the lengths differ or `window_bits` is outside `1..=MAX_WINDOW_BITS`.
pub fn msm<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
    window_bits: u32,
) -> Result<C::Projective, MsmError> {
    msm_scalars::<C>(bases, Scalars::Montgomery(scalars), window_bits)
}

/// [`msm`] with canonical little-endian scalars; also fails when one is not below `r`.
pub fn msm_canonical<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[[u8; 32]],
    window_bits: u32,
) -> Result<C::Projective, MsmError> {
    msm_scalars::<C>(bases, Scalars::Canonical(scalars), window_bits)
}

fn msm_scalars<C: MsmCurve>(
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
    let digits: Vec<Vec<i32>> = (0..scalars.len())
        .map(|i| signed_digits_of_limbs(&scalars.limbs(i), window_bits))
        .collect();
    let window_sums = (0..num_windows(window_bits))
        .map(|w| {
            let digits_of_window: Vec<i32> = digits.iter().map(|d| d[w]).collect();
            let buckets = bucket_accumulate::<C>(bases, &digits_of_window, window_bits)?;
            Ok(bucket_reduce::<C>(&buckets))
        })
        .collect::<Result<Vec<_>, MsmError>>()?;
    Ok(combine_windows::<C>(&window_sums, window_bits))
}
