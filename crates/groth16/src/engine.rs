//! The engine type parameter.
//!
//! bellperson's types are generic over a pairing engine (`Proof<Bls12>`, `Parameters<Bls12>`).
//! cuzk supports exactly one, BLS12-381, but keeps the parameter (defaulting to [`Bls12`]) so
//! that code written against bellperson compiles unchanged after swapping the import.

pub use cuzk_field::Bls12;

mod sealed {
    pub trait Sealed {}
    impl Sealed for cuzk_field::Bls12 {}
}

/// The pairing engines cuzk supports: only [`Bls12`].
pub trait Engine: sealed::Sealed + Send + Sync + 'static {}

impl Engine for Bls12 {}
