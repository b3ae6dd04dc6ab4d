//! The engine's workers from the configuration: `cpu_workers` CPU backends, or with `[gpus]
//! devices` one set of `gpu_workers_per_device` GPU workers per device (feature `cuda`), each
//! set sharing its device's resident parameters and interlock policy.

use std::sync::Arc;

use cuzk_engine::{CpuProofBackend, ProofBackend};

use crate::config::Resolved;
use crate::DaemonError;

/// The workers `config` asks for.
pub fn backends(config: &Resolved) -> Result<Vec<Arc<dyn ProofBackend>>, DaemonError> {
    match &config.gpus {
        None => Ok((0..config.cpu_workers)
            .map(|_| {
                Arc::new(CpuProofBackend::new(config.check_satisfied)) as Arc<dyn ProofBackend>
            })
            .collect()),
        Some(gpus) => gpu_backends(gpus, config.check_satisfied),
    }
}

#[cfg(feature = "cuda")]
fn gpu_backends(
    gpus: &crate::config::GpuWorkers,
    check_satisfied: bool,
) -> Result<Vec<Arc<dyn ProofBackend>>, DaemonError> {
    use crate::config::GpuPolicy;
    use cuzk_engine::gpu::{GpuProofBackend, PolicyKind};
    let policy = match gpus.policy {
        GpuPolicy::Budget => PolicyKind::VramBudget,
        GpuPolicy::Two => PolicyKind::TwoLock,
        GpuPolicy::Single => PolicyKind::SingleLock,
    };
    let fallback = gpus
        .cpu_fallback
        .then(|| Arc::new(CpuProofBackend::new(check_satisfied)));
    let mut out: Vec<Arc<dyn ProofBackend>> = Vec::new();
    for &ordinal in &gpus.devices {
        let workers = GpuProofBackend::workers(
            ordinal as usize,
            gpus.workers_per_device as usize,
            policy,
            check_satisfied,
            fallback.clone(),
        )?;
        tracing::info!(
            device = ordinal,
            workers = workers.len(),
            policy = ?gpus.policy,
            cpu_fallback = gpus.cpu_fallback,
            "GPU workers ready"
        );
        out.extend(
            workers
                .into_iter()
                .map(|w| Arc::new(w) as Arc<dyn ProofBackend>),
        );
    }
    Ok(out)
}

#[cfg(not(feature = "cuda"))]
fn gpu_backends(
    gpus: &crate::config::GpuWorkers,
    _check_satisfied: bool,
) -> Result<Vec<Arc<dyn ProofBackend>>, DaemonError> {
    // `Config::resolve` refuses devices in such a build already; this is the same answer.
    Err(DaemonError::Config(format!(
        "[gpus] devices = {:?}: this cuzk was built without the GPU backend (the `cuda` feature)",
        gpus.devices
    )))
}
