//! Multi-scalar multiplication (MSM) over BLS12-381 G1 and G2 on the CPU, and batch addition.
//!
//! An MSM computes `Σ sᵢ·Pᵢ` for affine bases `Pᵢ` and scalars `sᵢ ∈ Fr`; it is most of the work
//! of a Groth16 proof. Everything here is generic over [`MsmCurve`], implemented by the marker
//! types [`G1`] and [`G2`], and every algorithm is checked against the others in the tests, in
//! both groups:
//!
//! - [`naive_msm`]: one scalar multiplication per point, summed. The simplest oracle.
//! - [`reference`](mod@reference): a clear, single-threaded signed-digit Pippenger whose steps
//!   ([`reference::signed_digits`], [`reference::bucket_accumulate`],
//!   [`reference::bucket_reduce`], [`reference::combine_windows`]) have the shape of the GPU
//!   kernels, so a kernel can be debugged step by step against it.
//! - [`fast`]: the CPU fast path. [`fast::msm`] is blst's parallel Pippenger; [`fast::pippenger`]
//!   is our own parallel signed-digit Pippenger (rayon over windows and chunks of points).
//! - [`batch_add`]: the sum of the bases chosen by a [`Selection`] (a density bitmap, a list of
//!   indices, or all), for the points whose scalar is one.
//!
//! Scalars come as blstrs [`Scalar`]s (Montgomery form inside; the algorithms read their
//! canonical value) or, through the `*_canonical` functions, as canonical little-endian
//! `[u8; 32]`, which must be below the group order `r`. Bad input (lengths that differ, a window
//! width out of range, a non-canonical scalar, a bitmap of the wrong length, an index out of
//! range) gives an [`MsmError`], never a panic.
//!
//! # Speed
//!
//! Measured on the development machine (2 cores, x86-64, release build), best of 3 to 11 runs,
//! taken while the process had both cores to itself (other builds were running on the machine;
//! under contention both paths slow down alike). Random bases and scalars; ours at its default
//! window ([`reference::default_window_bits`]).
//!
//! | operation | n | blst ([`fast::msm`]) | ours ([`fast::pippenger`]) |
//! |---|---|---|---|
//! | G1 MSM | 2^12 | 27 ms | 38 ms (c = 8) |
//! | G2 MSM | 2^12 | 74 ms | 95 ms (c = 8) |
//! | G1 MSM | 2^16 | 0.31 s | 0.42 s (c = 12) |
//! | G2 MSM | 2^16 | 0.83 s | 1.08 s (c = 12) |
//! | G1 MSM | 2^18 | 1.18 s | 1.73 s (c = 15; c = 13 is as fast on one core) |
//!
//! blst is 1.3–1.5× faster at every size in both groups (its buckets are in XYZZ coordinates,
//! its field arithmetic in assembly), so [`fast::msm`] uses blst; ours stays as the parallel
//! twin of the reference and of the GPU kernels.
//!
//! | batch addition, 2^16 bases | [`batch_add`] (batch-affine) | [`batch_add_mixed`] |
//! |---|---|---|
//! | G1, all | 12 ms | 19 ms |
//! | G1, half (bitmap) | 6.4 ms | 10 ms |
//! | G2, all | 25 ms | 59 ms |
//! | G2, half (bitmap), one core | 21 ms | 41 ms |
//!
//! Batch-affine addition (blst's bulk addition on blocks gathered by rayon jobs) is 1.6–2.4×
//! faster, so [`batch_add`] uses it.

pub mod batch;
mod curve;
pub mod fast;
#[cfg(any(feature = "cuda", feature = "emu"))]
pub mod gpu;
pub mod reference;
mod scalar;

#[cfg(test)]
mod tests;

pub use batch::{batch_add, batch_add_mixed, Selection};
pub use curve::{MsmCurve, G1, G2};
pub use cuzk_field::Scalar;

/// Errors of this crate: all of them are bad input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MsmError {
    /// The number of bases and the number of scalars (or digits) differ.
    #[error("{bases} bases but {scalars} scalars")]
    LengthMismatch {
        /// Number of bases.
        bases: usize,
        /// Number of scalars or digits.
        scalars: usize,
    },
    /// A selection index does not name a base.
    #[error("index {index} at position {position} is out of range for {bases} bases")]
    IndexOutOfRange {
        /// Where in the index list it is.
        position: usize,
        /// The index.
        index: u32,
        /// Number of bases.
        bases: usize,
    },
    /// A selection bitmap does not have one bit per base.
    #[error("a bitmap of {bits} bits cannot select among {bases} bases")]
    BitmapLength {
        /// The bitmap's length.
        bits: usize,
        /// Number of bases.
        bases: usize,
    },
    /// A window width outside `1..=max`.
    #[error("a window of {window_bits} bits is not supported (1 to {max})")]
    WindowBits {
        /// The width asked for.
        window_bits: u32,
        /// The widest supported, [`reference::MAX_WINDOW_BITS`].
        max: u32,
    },
    /// A canonical scalar is not below the group order `r`.
    #[error("scalar {index} is not canonical: it is not below the group order")]
    NonCanonicalScalar {
        /// Which scalar.
        index: usize,
    },
    /// A signed digit does not name a bucket of its window.
    #[error("digit {digit} of base {index} does not fit a window of {window_bits} bits")]
    DigitOutOfRange {
        /// Which base it belongs to.
        index: usize,
        /// The digit.
        digit: i32,
        /// The window width.
        window_bits: u32,
    },
}

/// `Σ sᵢ·Pᵢ` as a plain sum of scalar multiplications, on the calling thread: the oracle every
/// other algorithm is checked against. Fails when the lengths differ.
pub fn naive_msm<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
) -> Result<C::Projective, MsmError> {
    if bases.len() != scalars.len() {
        return Err(MsmError::LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        });
    }
    let mut sum = C::identity();
    for (base, scalar) in bases.iter().zip(scalars) {
        C::add_assign(&mut sum, &C::mul(base, scalar));
    }
    Ok(sum)
}
