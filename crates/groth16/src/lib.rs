//! Groth16 over BLS12-381, compatible with bellperson 0.27 byte for byte.
//!
//! - [`Parameters`] / [`MappedParameters`]: the `.params` format (read checked or unchecked,
//!   streamed or memory-mapped, decoded in parallel) and [`VerifyingKey`];
//! - [`Proof`]: 192 bytes of compressed points;
//! - [`verify_proof`], [`verify_proofs_batch`] over a [`PreparedVerifyingKey`];
//! - [`synthesize`]: a bellpepper `ConstraintSystem` yielding the [`ProvingAssignment`] the prover
//!   consumes; [`Ahead`]: a proof's partitions synthesised on several threads ahead of the
//!   prover, with a bound on how many exist at once;
//! - [`generate_random_parameters`]: a test setup (seeded), identical to bellperson's.
//!
//! Proving itself lives in `cuzk-pipeline`; the `cuzk` crate puts the two behind bellperson's
//! function names.

mod ahead;
mod codec;
pub mod engine;
mod error;
mod params;
mod points;
mod proof;
mod setup;
mod synthesis;
mod timing;
mod verify;
mod vk;

pub use ahead::{Ahead, Made};
pub use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
pub use codec::Check;
pub use engine::{Bls12, Engine};
pub use error::{Groth16Error, Section};
pub use params::{MappedParameters, ParameterSource, Parameters, Query, RELEASE_BYTES};
pub use points::{PointSource, Points, PointsId};
pub use proof::Proof;
pub use setup::{
    generate_parameters, generate_parameters_with, generate_random_parameters, ToxicWaste,
};
pub use synthesis::{synthesize, synthesize_with_capacity, Capacity, ProvingAssignment};
pub use timing::{timing_parameters, timing_parameters_for, CircuitShape};
pub use verify::{prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey};
pub use vk::VerifyingKey;
