//! The engine's workers from the configuration: `cpu_workers` CPU backends, or with `[gpus]
//! devices` one set of `gpu_workers_per_device` GPU workers per device (feature `cuda`), each
//! set sharing its device's resident parameters and interlock policy.

use std::sync::Arc;

use cuzk_engine::{CpuProofBackend, ProofBackend, WorkerStatus};

use crate::config::Resolved;
use crate::proto;
use crate::DaemonError;

/// `GetStatus`'s GPU list: one entry per device the workers prove on, by its CUDA ordinal (a
/// device's workers share it), its product name as the driver reports it (the engine's label,
/// `gpu0`, where a backend does not say), its memory as its
/// arena counts it (free: what resident parameters and running partitions leave), and a job
/// one of its workers runs. CPU workers are not GPUs and are not listed: a CPU daemon's list is
/// empty (its workers are in `/status`).
pub fn gpu_statuses(workers: &[WorkerStatus]) -> Vec<proto::GpuStatus> {
    let mut devices = std::collections::BTreeMap::<u32, proto::GpuStatus>::new();
    for w in workers {
        let Some(ordinal) = w.device.strip_prefix("gpu").and_then(|n| n.parse().ok()) else {
            continue;
        };
        let gpu = devices.entry(ordinal).or_insert_with(|| proto::GpuStatus {
            ordinal,
            name: w.product.clone().unwrap_or_else(|| w.device.clone()),
            ..Default::default()
        });
        if let Some(m) = w.memory {
            gpu.vram_total_bytes = m.total_bytes;
            gpu.vram_free_bytes = m.free_bytes;
        }
        if let (true, Some(job)) = (gpu.current_job_id.is_empty(), &w.current_job_id) {
            gpu.current_job_id = job.clone();
            gpu.current_proof_kind = w.current_kind.clone().unwrap_or_default();
        }
    }
    devices.into_values().collect()
}

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
    use cuzk_engine::gpu::GpuProofBackend;
    let policy = gpus.policy;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(index: u32, device: &str, job: Option<&str>, free: u64) -> WorkerStatus {
        WorkerStatus {
            index,
            device: device.into(),
            product: (device == "gpu1").then(|| "NVIDIA H100 80GB HBM3".into()),
            current_job_id: job.map(Into::into),
            current_kind: job.map(|_| "porep".into()),
            busy_fraction: 0.0,
            memory: (device != "cpu").then_some(cuzk_engine::DeviceMemory {
                total_bytes: 80 << 30,
                free_bytes: free,
                ..Default::default()
            }),
        }
    }

    #[test]
    fn gpus_are_listed_once_each_by_ordinal_and_cpu_workers_not_at_all() {
        let gpus = gpu_statuses(&[
            worker(0, "gpu1", None, 5),
            worker(1, "gpu1", Some("job-b"), 5),
            worker(2, "gpu0", Some("job-a"), 7),
            worker(3, "gpu0", None, 7),
            worker(4, "cpu", Some("job-c"), 0),
        ]);
        let seen: Vec<_> = gpus
            .iter()
            .map(|g| {
                (
                    g.ordinal,
                    g.name.as_str(),
                    g.vram_free_bytes,
                    g.current_job_id.as_str(),
                )
            })
            .collect();
        // A backend that names its product is listed by it; one that does not, by its label.
        assert_eq!(
            seen,
            [
                (0, "gpu0", 7, "job-a"),
                (1, "NVIDIA H100 80GB HBM3", 5, "job-b")
            ]
        );
        assert!(gpus.iter().all(|g| g.vram_total_bytes == 80 << 30));
        assert!(gpu_statuses(&[worker(0, "cpu", None, 0)]).is_empty());
    }
}
