//! BLS12-381 for cuzk.
//!
//! The curve and field types are blstrs' (re-exported here so that every cuzk crate and every user
//! names the same types bellperson uses). On top of them this crate owns:
//!
//! - [`domain`]: the radix-2 evaluation domain of a Groth16 QAP (roots of unity, the coset
//!   generator, the vanishing polynomial on the coset);
//! - [`layout`]: `#[repr(C)]` limb structs byte-identical to blst's Montgomery form, the layout the
//!   GPU kernels read, with compile-time size checks and lossless conversions;
//! - [`bitmap`]: the density bitmaps that say which variables occur in a query.
//!
//! **Architecture invariant:** this crate never links CUDA.

pub mod bitmap;
pub mod domain;
pub mod layout;

pub use blstrs::{
    Bls12, Compress, Fp, Fp12, Fp2, G1Affine, G1Compressed, G1Projective, G1Uncompressed, G2Affine,
    G2Compressed, G2Prepared, G2Projective, G2Uncompressed, Gt, Scalar,
};
pub use {blstrs, ff, group, pairing};

pub use bitmap::Bitmap;
pub use domain::Domain;

/// Errors of this crate.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FieldError {
    /// The requested domain is larger than the 2-adicity of Fr allows (2^32).
    #[error("evaluation domain of 2^{log_n} points is too large: Fr has 2-adicity {max}")]
    DomainTooLarge { log_n: u32, max: u32 },
    /// A byte string is not the canonical encoding of a field element.
    #[error("{0} bytes are not a canonical field element")]
    NotCanonical(&'static str),
    /// A slice had the wrong length.
    #[error("length mismatch: expected {expected}, got {got}")]
    LengthMismatch { expected: usize, got: usize },
}
