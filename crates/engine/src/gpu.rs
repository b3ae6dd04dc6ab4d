//! The GPU backend (feature `cuda`): workers that prove on CUDA devices through
//! cuzk-pipeline's [`GpuBackend`].
//!
//! [`GpuProofBackend::workers`] opens one device and makes `n` workers that share its resident
//! parameters and its interlock policy (`VramBudget`, `TwoLock` or `SingleLock`), so one
//! worker's host work overlaps another's kernels. Several devices are several such sets; the
//! engine spreads one job's partitions over every idle worker ([`crate::run`]).
//!
//! Residency follows the parameter manager: a partition's parameters are the manager's hot
//! `Arc`, made resident on the device by `PreloadSRS` ([`ProofBackend::preload`]) or else by the
//! first partition that uses them there (later ones find them resident), and freed from the
//! device when the manager drops them from its hot tier ([`ProofBackend::release`]).
//!
//! A device failure (out of memory, a kernel fault, a lost device) is
//! [`PipelineError::Device`], which the engine reports as [`crate::EngineError::Device`]
//! naming the device; with a CPU fallback configured the partition is proven again on the CPU
//! instead. That keeps a copy of the partition's witness in host memory while it proves on the
//! device (the prover consumes its input), so the fallback is off by default.
//!
//! Status reports each device's memory and its arena's free bytes (what new work can still
//! take).

use std::sync::{Arc, Mutex, PoisonError};

use cuzk_groth16::{Parameters, Proof, ProvingAssignment};
use cuzk_pipeline::gpu::{GpuBackend, GpuConfig};
use cuzk_pipeline::{Backend, JobContext, PartitionTiming, PipelineError, Prover, ProverConfig};

pub use cuzk_pipeline::gpu::PolicyKind;

use crate::backend::{random_rs, BackendError, CpuProofBackend, DeviceMemory, ProofBackend};
use crate::EngineError;

/// One worker's backend on a CUDA device.
#[derive(Debug)]
pub struct GpuProofBackend {
    prover: Prover<GpuBackend>,
    /// Held while making parameters resident, shared by the device's workers, so that two
    /// workers starting on new parameters upload them once.
    residency: Arc<Mutex<()>>,
    /// Where a partition goes again when the device fails, if anywhere.
    fallback: Option<Arc<CpuProofBackend>>,
}

impl GpuProofBackend {
    /// `workers` workers on device `ordinal` (named `gpu<ordinal>`) under `policy`;
    /// `check_satisfied` checks every constraint before proving; `fallback` proves a partition
    /// again on the CPU when the device fails.
    pub fn workers(
        ordinal: usize,
        workers: usize,
        policy: PolicyKind,
        check_satisfied: bool,
        fallback: Option<Arc<CpuProofBackend>>,
    ) -> Result<Vec<Self>, EngineError> {
        let gpus =
            GpuBackend::workers(ordinal, GpuConfig::default(), workers, policy).map_err(|e| {
                EngineError::Device {
                    device: format!("gpu{ordinal}"),
                    source: Box::new(e),
                }
            })?;
        let residency = Arc::new(Mutex::new(()));
        Ok(gpus
            .into_iter()
            .map(|gpu| Self {
                prover: Prover::new(gpu, ProverConfig { check_satisfied }),
                residency: Arc::clone(&residency),
                fallback: fallback.clone(),
            })
            .collect())
    }

    /// The device's backend.
    pub fn gpu(&self) -> &GpuBackend {
        self.prover.backend()
    }

    /// Device bytes of total memory, for status.
    pub fn total_memory(&self) -> u64 {
        self.gpu().gpu().info().total_memory as u64
    }

    /// Makes `params` resident on the device, once for all its workers: a lookup when they
    /// are already.
    fn make_resident(&self, params: &Arc<Parameters>) -> Result<(), PipelineError> {
        let _one = self
            .residency
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let bytes = self.gpu().preload(params)?;
        if bytes > 0 {
            let mapped = self.gpu().mapped_bytes();
            tracing::info!(
                device = %self.gpu().device(),
                bytes,
                mapped,
                "parameters made resident (mapped: read in place from host memory)"
            );
        }
        Ok(())
    }

    fn prove_on_device(
        &self,
        params: &Arc<Parameters>,
        assignment: ProvingAssignment,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), PipelineError> {
        self.make_resident(params)?;
        let (r, s) = random_rs();
        self.prover.prove(params, assignment, r, s, ctx, partition)
    }
}

impl ProofBackend for GpuProofBackend {
    fn device(&self) -> String {
        self.gpu().device().to_string()
    }

    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        assignment: ProvingAssignment,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        let Some(cpu) = &self.fallback else {
            return Ok(self.prove_on_device(params, assignment, ctx, partition)?);
        };
        let again = assignment.clone();
        match self.prove_on_device(params, assignment, ctx, partition) {
            Err(PipelineError::Device { device, source }) => {
                tracing::warn!(
                    job = ctx.job,
                    partition,
                    device = %device,
                    error = %source,
                    "device failed; proving the partition on the CPU"
                );
                cpu.prove_partition(params, again, ctx, partition)
            }
            other => Ok(other?),
        }
    }

    fn preload(&self, params: &Arc<Parameters>) -> Result<(), BackendError> {
        Ok(self.make_resident(params)?)
    }

    fn release(&self, params: &Arc<Parameters>) {
        if self.gpu().evict(params) {
            tracing::info!(device = %self.gpu().device(), "parameters freed from the device");
        }
    }

    fn memory(&self) -> Option<DeviceMemory> {
        let stats = self.gpu().arena().stats();
        Some(DeviceMemory {
            total_bytes: self.total_memory(),
            free_bytes: stats.free,
            peak_in_use_bytes: stats.peak_in_use,
            mapped_bytes: self.gpu().mapped_bytes(),
        })
    }
}
