//! The backends workers prove on. A worker holds one [`ProofBackend`] and hands it one
//! partition at a time; the CPU backend wraps cuzk-pipeline's prover, and a GPU backend plugs
//! in behind the same trait (one worker per device and worker slot) without the engine
//! changing.

use std::fmt::Debug;

use blstrs::Scalar;
use cuzk_groth16::{Parameters, Proof, ProvingAssignment};
use cuzk_pipeline::{CpuBackend, JobContext, PartitionTiming, Prover, ProverConfig};
use ff::Field;

/// An error from a backend, kept with its source.
pub type BackendError = Box<dyn std::error::Error + Send + Sync>;

/// Something that proves one partition: the engine's only view of a device.
pub trait ProofBackend: Send + Sync + Debug {
    /// The device's name in spans, status and metrics (`cpu`, `gpu0`, ...).
    fn device(&self) -> String;

    /// Proves partition `partition` of job `ctx.job` against `params`, with fresh random `r`
    /// and `s`, returning the proof and its stage timings.
    fn prove_partition(
        &self,
        params: &Parameters,
        assignment: ProvingAssignment,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError>;
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
        params: &Parameters,
        assignment: ProvingAssignment,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        let mut rng = rand::thread_rng();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        Ok(self
            .prover
            .prove(params, assignment, r, s, ctx, partition)?)
    }
}
