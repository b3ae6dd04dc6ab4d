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
//! With the `cuda` feature, `gpu` runs MSMs and batch additions on the GPU, with the
//! same results point for point (feature `emu`: the same kernels on a host emulator, for tests).
//!
//! # Which path is used
//!
//! [`fast::msm`] is blst's Pippenger, which measured 1.3–1.5× faster than ours
//! ([`fast::pippenger`]) at every size in both groups on the development machine (its buckets
//! are in XYZZ coordinates, its field arithmetic in assembly); ours stays as the parallel twin
//! of the reference and of the GPU kernels. [`batch_add`] uses batch-affine addition (blst's bulk
//! addition on blocks gathered by rayon jobs), which measured 1.6–2.4× faster than mixed
//! additions ([`batch_add_mixed`]).

pub mod batch;
mod curve;
pub mod fast;
// With `emu` alone the GPU code is compiled for the crate's tests only: nothing else runs on
// the emulator.
#[cfg(any(feature = "cuda", all(feature = "emu", test)))]
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
