//! cuzk: a Groth16 prover for BLS12-381, drop-in for bellperson's users.
//!
//! Swap one import: `use bellperson::groth16::...` becomes `use cuzk::groth16::...`. Circuits
//! implement `bellpepper_core::Circuit<blstrs::Scalar>` as before; parameter, verifying-key and
//! proof files are bellperson's formats; and for the same `r` and `s` the proof bytes are
//! bellperson's.
//!
//! ```
//! use cuzk::groth16::{create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof};
//! use cuzk::circuits::SquaringChain;
//! use rand_core::SeedableRng;
//!
//! let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
//! let circuit = SquaringChain::new(3u64.into(), 8);
//! let params = generate_random_parameters(circuit.clone(), &mut rng).unwrap();
//! let proof = create_random_proof(circuit.clone(), &params, &mut rng).unwrap();
//! let pvk = prepare_verifying_key(&params.vk);
//! assert!(verify_proof(&pvk, &proof, &circuit.public_inputs()).unwrap());
//! ```

pub mod circuits;
pub mod golden;
mod prove;

pub use cuzk_field as field;
pub use cuzk_groth16::{Bls12, Circuit, ConstraintSystem, Groth16Error, SynthesisError};
pub use cuzk_pipeline as pipeline;
pub use prove::{
    create_proof, create_proof_batch, create_proof_batch_with, create_random_proof,
    create_random_proof_batch, ProveError,
};

/// bellperson's `groth16` module, item for item.
pub mod groth16 {
    pub use crate::prove::{
        create_proof, create_proof_batch, create_random_proof, create_random_proof_batch,
    };
    pub use cuzk_groth16::{
        generate_parameters, generate_random_parameters, prepare_verifying_key, verify_proof,
        verify_proofs_batch, MappedParameters, ParameterSource, Parameters, PreparedVerifyingKey,
        Proof, VerifyingKey,
    };
}
