//! cuzk's proving engine: the service behind the daemon, with no network or configuration
//! file of its own.
//!
//! - [`Engine`]: accepts jobs ([`JobRequest`]), journals them durably before answering,
//!   orders them by priority ([`queue`]), runs them on workers (one per [`ProofBackend`]),
//!   and answers `await`, `cancel`, status and metrics.
//! - [`journal`] and [`spool`]: the crash-safe record (SQLite in WAL mode, and synced spool
//!   files for the large inputs); a restart runs pending and interrupted jobs again and still
//!   answers for ended ones within the retention.
//! - [`params`]: the parameter manager (hot, warm, cold tiers, a memory budget, LRU that never
//!   evicts parameters in use).
//! - [`run`]: one job on one backend, every kind: Filecoin's (through cuzk-filecoin, the engine
//!   its `PartitionProver`, with pre-compiled circuits from a `PceStore` when `pce_dir` is set)
//!   and the built-in [`synthetic`] circuit, whose partitions idle workers (of any device) help
//!   prove.
//! - [`local`]: one job in this process, without a journal (`cuzk prove`).
//! - [`backend`]: the CPU backend, and with the `cuda` feature [`gpu`]: workers on CUDA devices
//!   with the parameters resident in device memory.
//!
//! **Architecture Invariant:** the engine reads no configuration file or environment
//! variable; everything comes in through [`EngineConfig`].
//!
//! Besides cuzk-pipeline, cuzk-groth16 and cuzk-telemetry it depends on cuzk-filecoin (the
//! Filecoin kinds are jobs it runs) and cuzk-pce (pre-compiled circuits are how it may
//! synthesise them). It has no async runtime and no network code: the daemon serves it.

#![forbid(unsafe_code)]

pub mod backend;
mod engine;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod job;
pub mod journal;
pub mod local;
mod lock;
mod metrics;
pub mod params;
pub mod queue;
pub mod run;
pub mod spool;
pub mod spread;
mod status;
pub mod synthetic;
mod worker;

use std::path::PathBuf;

/// cuzk-filecoin, re-exported so the daemon reads the job files the engine's kinds take.
pub use cuzk_filecoin as filecoin;
/// cuzk-telemetry, re-exported so the daemon records the engine's spans without naming it.
pub use cuzk_telemetry as telemetry;

pub use backend::{BackendCounters, BackendError, CpuProofBackend, DeviceMemory, ProofBackend};
pub use engine::{Engine, EngineConfig};
pub use job::{
    JobOutcome, JobRequest, JobState, JobTimings, Priority, ProofKind, ProvenPartition, Submitted,
};
pub use lock::DataDirLock;
pub use metrics::parse_exposition;
pub use params::{CircuitId, ParamConfig, ParamManager, ParamStatus, Tier};
pub use run::default_synthesis_threads;
pub use status::{EngineStatus, KindQueue, WorkerStatus};

/// Errors of the engine. Each names its cause, and [`EngineError::is_bad_input`] tells the
/// caller's mistakes from the service's.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request is malformed (an unknown kind, a wrong-sized field, a sector size that does
    /// not match its registered proof).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// No job has this id (or it ended longer ago than the retention).
    #[error("unknown job {0}")]
    UnknownJob(String),
    /// A circuit id that names no circuit.
    #[error("unknown circuit id {0:?} (examples: porep-32g, winning-2k, wpost-2k, snap-2k, synthetic-10)")]
    UnknownCircuit(String),
    /// The parameters are in use by a running job.
    #[error("parameters {0} are in use by a running job")]
    InUse(String),
    /// The parameter files are missing and may not be generated here.
    #[error("parameter file {path} is missing (download it, or set [srs] generate_test_params = true for test sector sizes and synthetic circuits)")]
    MissingParameters {
        /// The missing file.
        path: PathBuf,
    },
    /// The job's stored inputs (its spool file, or its journal row) are unreadable or damaged.
    #[error("the job's inputs in {path} are damaged: {detail}")]
    DamagedSpool {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The engine is shutting down and accepts nothing new.
    #[error("the engine is shutting down")]
    ShuttingDown,
    /// The request was refused for want of room: the queue or the spool is at its configured
    /// limit, or the disk is full. Nothing already accepted is affected; the caller may retry
    /// later.
    #[error("resource exhausted: {0}")]
    Exhausted(String),
    /// A synthetic job or circuit, and the engine was not configured to allow them.
    #[error(
        "the synthetic kind is disabled: set [daemon] allow_synthetic = true to enable it (and \
         [srs] generate_test_params = true to generate its parameters)"
    )]
    SyntheticDisabled,
    /// The job was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The job was stopped by a shutdown; it runs again on restart.
    #[error("interrupted by shutdown")]
    Interrupted,
    /// The job was started too often without ending (each start crashed the service).
    #[error("the job was interrupted {0} times without finishing; giving up")]
    TooManyAttempts(u32),
    /// A proof did not verify: never returned as a result.
    #[error("the proof does not verify")]
    ProofInvalid,
    /// The prover panicked (a caught panic, nothing else).
    #[error("the prover panicked: {0}")]
    Panic(String),
    /// The engine broke one of its own rules (a partition lost, a job stopped with no error
    /// recorded): a bug, never the input's fault.
    #[error("internal error: {0}")]
    Internal(String),
    /// The Filecoin layer rejected the input or failed.
    #[error(transparent)]
    Filecoin(#[from] cuzk_filecoin::FilecoinError),
    /// Groth16 failed (synthesis, parameters).
    #[error(transparent)]
    Groth16(#[from] cuzk_groth16::Groth16Error),
    /// A device failed while proving (out of memory, a kernel fault, a lost device): the job's
    /// input was fine; the device's other work and later jobs go on.
    #[error("device {device} failed: {source}")]
    Device {
        /// The backend's name of the device (`gpu0`).
        device: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The backend failed.
    #[error("backend: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The journal database failed.
    #[error("journal: {0}")]
    Journal(#[source] rusqlite::Error),
    /// The journal holds a row this cuzk cannot read (an unknown state, kind or priority).
    #[error("the journal is corrupt: {0}")]
    JournalCorrupt(String),
    /// The journal was written by a newer cuzk (its schema version is higher than this one's).
    #[error(
        "the journal {path} has schema version {found}, newer than this cuzk's {supported}: run \
         the cuzk that wrote it, or move the data folder aside"
    )]
    JournalVersion {
        /// The journal's file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
    /// Another process holds the data folder (a second daemon on the same journal and spool).
    #[error(
        "{dir} is in use by another cuzk engine (process {holder}): stop it, or give this one \
         another data folder"
    )]
    DataDirInUse {
        /// The data folder.
        dir: PathBuf,
        /// What the holder wrote in the lock file: its process id.
        holder: String,
    },
    /// An I/O error on `path`.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl EngineError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| EngineError::Io { path, source }
    }

    /// Whether the error is the caller's: a malformed request or an unknown id.
    pub fn is_bad_input(&self) -> bool {
        use cuzk_filecoin::FilecoinError as F;
        match self {
            EngineError::InvalidRequest(_)
            | EngineError::UnknownCircuit(_)
            | EngineError::UnknownJob(_) => true,
            EngineError::Filecoin(f) => matches!(
                f,
                F::Json(_)
                    | F::Base64 { .. }
                    | F::Hex { .. }
                    | F::UnknownRegisteredProof(_)
                    | F::UnsupportedRegisteredProof(_)
                    | F::UnknownSectorSize(_)
                    | F::Mismatch { .. }
                    | F::MissingRegisteredProof
                    | F::InvalidInput(_)
                    | F::Unsatisfied { .. }
            ),
            _ => false,
        }
    }
}

/// The full message of an error with its sources, `a: b: c`.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
