//! The backends workers prove on. A worker holds one [`ProofBackend`] and hands it one
//! partition at a time; the CPU backend wraps cuzk-pipeline's prover, and the GPU backend
//! ([`crate::gpu`], feature `cuda`) plugs in behind the same trait, one worker per device and
//! worker slot, without the engine changing.
//!
//! Parameters reach a backend as the parameter manager's `Arc`, so a backend that keeps them
//! elsewhere (a GPU's memory) can key what it keeps by that `Arc` and hold it; the manager
//! calls [`ProofBackend::preload`] when a client preloads them (`PreloadSRS`), and
//! [`ProofBackend::release`] when it drops them from its hot tier.

use std::fmt::Debug;
use std::sync::Arc;

use blstrs::Scalar;
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::{
    CpuBackend, JobContext, PartitionInput, PartitionTiming, PipelineError, Prover, ProverConfig,
};
use ff::Field;

/// An error from a backend, kept with its source (a [`PipelineError`] for the backends here:
/// [`PipelineError::Device`] names a failed device).
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// Something that proves one partition: the engine's only view of a device.
pub trait ProofBackend: Send + Sync + Debug {
    /// The device's name in spans, status and metrics (`cpu`, `gpu0`, ...).
    fn device(&self) -> String;

    /// Proves partition `partition` of job `ctx.job` from `input` (a full assignment, or a
    /// pre-compiled circuit's witness whose a, b, c the backend makes) against `params` (the
    /// manager's hot copy), with fresh random `r` and `s`, returning the proof and its stage
    /// timings.
    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError>;

    /// A client preloaded `params` (the manager's hot copy): make them ready to prove with
    /// (a GPU copies their bases into its memory), so that the first job does not pay for it.
    /// The default decodes every query into host memory, where the CPU reads them.
    fn preload(&self, params: &Arc<Parameters>) -> Result<(), BackendError> {
        Ok(params.to_host()?)
    }

    /// The parameter manager dropped `params` from its hot tier: let go of anything kept for
    /// them (a device's resident copy). The default keeps nothing.
    fn release(&self, params: &Arc<Parameters>) {
        let _ = params;
    }

    /// The device's memory, for status; `None` for a backend without device memory (the CPU).
    fn memory(&self) -> Option<DeviceMemory> {
        None
    }

    /// The device's product name as its driver reports it ("NVIDIA H100 80GB HBM3"), for
    /// status; `None` for the CPU. Asked once, when the engine starts.
    fn product(&self) -> Option<String> {
        None
    }

    /// What this backend counted of its device's failures, for metrics. Read under the
    /// engine's state lock at every job event, so it must not block or ask the device (a
    /// couple of atomic loads). The default counts nothing.
    fn counters(&self) -> BackendCounters {
        BackendCounters::default()
    }
}

/// A backend's failure counters since it was made ([`ProofBackend::counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackendCounters {
    /// Device failures it saw (out of memory, a kernel fault, a lost device), whether the
    /// partition then failed or was proven on the CPU instead.
    pub device_failures: u64,
    /// Partitions it proved again on the CPU after its device failed.
    pub cpu_fallbacks: u64,
}

/// A device's memory as status reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceMemory {
    /// The device's memory.
    pub total_bytes: u64,
    /// What new work can still take: the free bytes of the device's arena, which resident
    /// parameters and running partitions' reservations are taken from.
    pub free_bytes: u64,
    /// The most the arena has held at once (resident parameters and partitions' buffers).
    pub peak_in_use_bytes: u64,
    /// Host bytes of parameters the device reads in place (mapped: the queries that did not
    /// fit on it).
    pub mapped_bytes: u64,
}

/// Fresh random `r` and `s` for one partition.
pub(crate) fn random_rs() -> (Scalar, Scalar) {
    let mut rng = rand::thread_rng();
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

/// cuzk-pipeline's prover on the CPU.
#[derive(Debug, Default)]
pub struct CpuProofBackend {
    prover: Prover<CpuBackend>,
}

impl CpuProofBackend {
    /// A CPU backend; `check_satisfied` checks every constraint before proving.
    pub fn new(check_satisfied: bool) -> Self {
        Self {
            prover: Prover::new(CpuBackend, ProverConfig { check_satisfied }),
        }
    }
}

impl ProofBackend for CpuProofBackend {
    fn device(&self) -> String {
        "cpu".into()
    }

    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        let (r, s) = random_rs();
        Ok(self.prover.prove(params, input, r, s, ctx, partition)?)
    }
}

/// The engine's error for a backend's: a failed device keeps its name
/// ([`crate::EngineError::Device`]), anything else is [`crate::EngineError::Backend`].
pub(crate) fn engine_error(e: BackendError) -> crate::EngineError {
    match e.downcast::<PipelineError>() {
        Ok(p) => match *p {
            PipelineError::Device { device, source } => {
                crate::EngineError::Device { device, source }
            }
            other => crate::EngineError::Backend(Box::new(other)),
        },
        Err(other) => match other.downcast::<crate::EngineError>() {
            Ok(engine) => *engine,
            Err(other) => crate::EngineError::Backend(other),
        },
    }
}
