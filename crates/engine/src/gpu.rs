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
//! A partition of a pre-compiled circuit ([`PartitionInput::Witness`]) reaches the device as
//! its witness alone: the first one of a topology makes the circuit's matrices resident
//! ([`GpuBackend::preload_circuit`], before its parameters when they are not resident yet), and
//! a, b, c are then made on the device. Matrices that do not fit leave the products on the
//! host; that is tried again once the manager frees parameters from the device.
//!
//! A device failure (out of memory, a kernel fault, a lost device) is
//! [`PipelineError::Device`], which the engine reports as [`crate::EngineError::Device`]
//! naming the device; with a CPU fallback configured the partition is proven again on the CPU
//! instead. That keeps a copy of the partition's witness in host memory while it proves on the
//! device (the prover consumes its input), so the fallback is off by default.
//!
//! Status reports each device's memory and its arena's free bytes (what new work can still
//! take); metrics count each worker's device failures and CPU fallbacks
//! ([`ProofBackend::counters`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cuzk_groth16::{Parameters, Proof};
use cuzk_pce::PreCompiled;
use cuzk_pipeline::gpu::{GpuBackend, GpuConfig};
use cuzk_pipeline::{
    Backend, JobContext, PartitionInput, PartitionTiming, PipelineError, Prover, ProverConfig,
};

pub use cuzk_pipeline::gpu::PolicyKind;

use crate::backend::{
    random_rs, BackendCounters, BackendError, CpuProofBackend, DeviceMemory, ProofBackend,
};
use crate::EngineError;

/// What a device's workers know of its residency.
#[derive(Debug, Default)]
struct Residency {
    /// The pre-compiled circuits' topologies whose matrices were offered to the device: whether
    /// they are resident (`false`: they did not fit, and their products are made on the host).
    circuits: HashMap<[u8; 32], bool>,
}

/// One worker's backend on a CUDA device.
#[derive(Debug)]
pub struct GpuProofBackend {
    prover: Prover<GpuBackend>,
    /// Held while making parameters or pre-compiled matrices resident, shared by the device's
    /// workers, so that two workers starting on new parameters (or a new circuit) upload them
    /// once.
    residency: Arc<Mutex<Residency>>,
    /// Where a partition goes again when the device fails, if anywhere.
    fallback: Option<Arc<CpuProofBackend>>,
    /// Device failures this worker saw, for metrics.
    device_failures: AtomicU64,
    /// Partitions this worker proved again on the CPU, for metrics.
    cpu_fallbacks: AtomicU64,
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
        Ok(Self::from_workers(gpus, check_satisfied, fallback))
    }

    /// The engine's workers for one device's `gpus` (made together by
    /// [`GpuBackend::workers`]: they share its arena and policy), which share its resident
    /// parameters.
    pub fn from_workers(
        gpus: Vec<GpuBackend>,
        check_satisfied: bool,
        fallback: Option<Arc<CpuProofBackend>>,
    ) -> Vec<Self> {
        let residency = Arc::new(Mutex::new(Residency::default()));
        gpus.into_iter()
            .map(|gpu| Self {
                prover: Prover::new(gpu, ProverConfig { check_satisfied }),
                residency: Arc::clone(&residency),
                fallback: fallback.clone(),
                device_failures: AtomicU64::new(0),
                cpu_fallbacks: AtomicU64::new(0),
            })
            .collect()
    }

    /// The device's backend.
    pub fn gpu(&self) -> &GpuBackend {
        self.prover.backend()
    }

    /// Device bytes of total memory, for status.
    pub fn total_memory(&self) -> u64 {
        self.gpu().gpu().info().total_memory as u64
    }

    fn residency(&self) -> MutexGuard<'_, Residency> {
        self.residency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `params` resident on the device, once for all its workers: a lookup when they
    /// are already.
    fn make_resident(&self, params: &Arc<Parameters>) -> Result<(), PipelineError> {
        let _one = self.residency();
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

    /// Offers `circuit`'s matrices to the device once per topology, for all its workers (they
    /// share the device's resident circuits): later partitions of that topology find them
    /// resident, or, when they did not fit, have their products made on the host. Returns
    /// whether they are resident.
    pub fn preload_circuit(&self, circuit: &PreCompiled) -> Result<bool, PipelineError> {
        let mut residency = self.residency();
        let topology = circuit.topology();
        if let Some(&resident) = residency.circuits.get(&topology) {
            return Ok(resident);
        }
        let resident = self.gpu().preload_circuit(circuit)?;
        residency.circuits.insert(topology, resident);
        Ok(resident)
    }

    /// `result`, with a device failure counted.
    fn counted<T>(&self, result: Result<T, PipelineError>) -> Result<T, PipelineError> {
        if let Err(PipelineError::Device { .. }) = &result {
            self.device_failures.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn prove_on_device(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), PipelineError> {
        // The matrices before the parameters: they take the room the parameters would
        // otherwise have (whatever of the parameters does not fit is read in place).
        if let PartitionInput::Witness { circuit, .. } = &input {
            self.preload_circuit(circuit)?;
        }
        self.make_resident(params)?;
        let (r, s) = random_rs();
        self.prover.prove(params, input, r, s, ctx, partition)
    }
}

impl ProofBackend for GpuProofBackend {
    fn device(&self) -> String {
        self.gpu().device().to_string()
    }

    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        let Some(cpu) = &self.fallback else {
            return Ok(self.counted(self.prove_on_device(params, input, ctx, partition))?);
        };
        let again = input.clone();
        match self.counted(self.prove_on_device(params, input, ctx, partition)) {
            Err(PipelineError::Device { device, source }) => {
                tracing::warn!(
                    job = ctx.job,
                    partition,
                    device = %device,
                    error = %source,
                    "device failed; proving the partition on the CPU"
                );
                self.cpu_fallbacks.fetch_add(1, Ordering::Relaxed);
                let proven = cpu.prove_partition(params, again, ctx, partition);
                // The CPU decoded the queries the device keeps: the device's copies stay the
                // ones partitions read, so the host's go again.
                self.gpu().release_host_copies(params);
                proven
            }
            other => Ok(other?),
        }
    }

    fn preload(&self, params: &Arc<Parameters>) -> Result<(), BackendError> {
        Ok(self.counted(self.make_resident(params))?)
    }

    fn release(&self, params: &Arc<Parameters>) {
        if self.gpu().evict(params) {
            tracing::info!(device = %self.gpu().device(), "parameters freed from the device");
            // The room they leave may fit matrices that did not: offer those again.
            self.residency().circuits.retain(|_, resident| *resident);
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

    fn product(&self) -> Option<String> {
        Some(self.gpu().gpu().info().name.clone())
    }

    fn counters(&self) -> BackendCounters {
        BackendCounters {
            device_failures: self.device_failures.load(Ordering::Relaxed),
            cpu_fallbacks: self.cpu_fallbacks.load(Ordering::Relaxed),
        }
    }
}
