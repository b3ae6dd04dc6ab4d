//! The typed errors of cuzk-filecoin.

use std::path::PathBuf;

/// Errors of cuzk-filecoin: each names its cause, so a service can tell bad input from missing
/// parameters from a prover failure.
#[derive(Debug, thiserror::Error)]
pub enum FilecoinError {
    /// The input is not JSON, or not the JSON of a C1 output or job file (truncated, wrong
    /// fields).
    #[error("the input is not valid JSON of a known form: {0}")]
    Json(#[source] serde_json::Error),
    /// A value that must be base64 is not (Curio's `Phase1Out`, a job file's vanilla proof).
    #[error("{what} is not valid base64: {detail}")]
    Base64 { what: String, detail: String },
    /// A value that must be 32 bytes in hex is not (a job file's commitment or randomness).
    #[error("{what} is not 32 bytes in hex: {detail}")]
    Hex { what: String, detail: String },
    /// A registered proof name or number that filecoin-proofs does not know.
    #[error("unknown registered proof {0}")]
    UnknownRegisteredProof(String),
    /// A registered proof of a family cuzk does not prove (synthetic or non-interactive PoRep).
    #[error("registered seal proof {0} is not supported (only the V1 and V1_1 families are)")]
    UnsupportedRegisteredProof(String),
    /// A sector size that is not one of Filecoin's.
    #[error("unknown sector size {0} bytes")]
    UnknownSectorSize(u64),
    /// Two parts of the request disagree (the wrapper's sector size and the registered proof,
    /// the wrapper's sector number and the request's, ...).
    #[error("mismatched request: {what} is {got}, but {expected} was expected")]
    Mismatch {
        what: &'static str,
        expected: String,
        got: String,
    },
    /// The C1 output carries no registered proof and none was given.
    #[error("the C1 output names no registered proof; pass one")]
    MissingRegisteredProof,
    /// A value of the input that filecoin-proofs rejects (in a C1 output: an all-zero
    /// commitment, no vanilla proofs, a commitment that is not a field element, the wrong number
    /// of partitions; a vanilla proof that does not decode; an unknown circuit kind).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The vanilla proofs of `partition` do not satisfy its circuit: they were tampered with, or
    /// belong to another sector, miner or seed.
    #[error("partition {partition}: the circuit is not satisfied (constraint {constraint} fails): the vanilla proofs were altered or belong to other public inputs")]
    Unsatisfied { partition: usize, constraint: usize },
    /// A parameter or verifying-key file is missing from the cache.
    #[error("parameter file {path} is missing; generate it with `cuzk params --sector-size {sector_size}`")]
    MissingParameters { path: PathBuf, sector_size: String },
    /// A parameter file that does not belong to this circuit.
    #[error("parameters {path} do not match the circuit: {detail}")]
    ParameterMismatch { path: PathBuf, detail: String },
    /// cuzk-groth16 failed (reading parameters, synthesis, verification).
    #[error(transparent)]
    Groth16(#[from] cuzk_groth16::Groth16Error),
    /// filecoin-proofs or storage-proofs failed while building public parameters or circuits.
    #[error("filecoin-proofs: {0:#}")]
    FilecoinProofs(anyhow::Error),
    /// A pre-compiled circuit could not be recorded, read or evaluated.
    #[error("pre-compiled circuit: {0}")]
    Pce(#[from] cuzk_pce::PceError),
    /// The prover the caller passed in failed.
    #[error("proving failed: {0}")]
    Prover(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The prover returned a proof that does not verify: never returned as a result.
    #[error("partition {partition}: the proof does not verify")]
    ProofInvalid { partition: usize },
    /// An I/O error on `path`.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl FilecoinError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| FilecoinError::Io { path, source }
    }
}
