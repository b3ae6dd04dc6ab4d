//! Filecoin's proof kinds for cuzk: inputs as filecoin-proofs serialises them, circuits
//! through its public API, parameter files by its names, proof bytes as it writes them.
//!
//! - [`c1`]: the C1 output (PoRep phase 1) in Curio's wrapper, filecoin-proofs-api's JSON or
//!   filecoin-proofs' own; [`C1Summary`] reads it without its vanilla proofs, so a service can
//!   check a request when it arrives ([`PorepJob::check`], [`post::check_vanilla_count`],
//!   [`snap::check_vanilla_count`]).
//! - [`porep`]: PoRep C2, partition by partition: circuits from `StackedCompound`, proofs from
//!   the caller's [`porep::PartitionProver`] (cuzk's pipeline), each verified, concatenated as
//!   `seal_commit_phase2` returns them.
//! - [`post`]: WinningPoSt from the vanilla proofs `generate_winning_post_with_vanilla` takes.
//! - [`snap`]: SnapDeals from the vanilla proofs `generate_empty_sector_update_proof_with_vanilla`
//!   takes.
//! - [`jobs`]: the JSON job files of the vanilla-proof kinds, and the one base64 and hex
//!   decoding every input uses.
//! - [`kinds`]: every circuit by kind and sector size: its parameter files, and generating them.
//! - [`params`]: filecoin-proofs' parameter cache (`v28-<id>.params`, `.vk`, `.meta`), read
//!   with cuzk's reader and generated with cuzk's setup for test sector sizes.
//! - [`registered`]: registered seal proofs by number and name, sector sizes, prover ids.
//!
//! filecoin-proofs is used as published (CPU only, no fork or patch). This crate produces
//! partition inputs (proving assignments, or a pre-compiled circuit's witnesses) and never
//! depends on cuzk's pipeline: the prover is passed in.

pub mod c1;
mod error;
pub mod jobs;
pub mod kinds;
pub mod params;
pub mod porep;
pub mod post;
mod prove;
pub mod registered;
pub mod snap;

pub use c1::{C1Output, C1Summary};
pub use error::FilecoinError;
pub use jobs::{PostJobFile, SnapJobFile};
pub use kinds::{CircuitKind, FilecoinCircuit};
pub use params::ParamFiles;
pub use porep::{PorepJob, SectorId};
pub use prove::{
    read_checked, synthesize_partition, FilecoinProof, PartitionProver, PartitionReport, Proven,
    ProverError, PROOF_BYTES,
};
pub use registered::{parse_sector_size, prover_id, RegisteredSealProof};

/// The filecoin-proofs this crate builds circuits with, re-exported so callers name the same
/// types (sector shapes, the verifier).
pub use filecoin_proofs;
