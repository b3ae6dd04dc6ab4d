//! What the engine reports about itself: [`EngineStatus`] (workers, queues, parameters,
//! counters) and the Prometheus text of the metrics, and the recent proofs' waterfall.
//!
//! Both are served from a snapshot, rebuilt at every job event (submitted, started, ended,
//! cancelled) by the thread of that event and at least once a second by a thread of its own,
//! which also asks the devices for their memory: reading them takes no engine lock and queries
//! no device, so a status request on an async runtime thread never waits for either.

use std::fmt::Write;
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use crate::backend::{BackendCounters, DeviceMemory};
use crate::engine::{Engine, Shared, State, Worker};
use crate::job::{JobState, ProofKind};
use crate::params::{ParamStatus, Tier};

/// A worker as status reports it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WorkerStatus {
    /// The worker's index.
    pub index: u32,
    /// Its device (`cpu`, `gpu0`).
    pub device: String,
    /// The device's product name as its driver reports it (`None` on the CPU).
    pub product: Option<String>,
    /// The job it proves now.
    pub current_job_id: Option<String>,
    /// That job's kind.
    pub current_kind: Option<String>,
    /// The fraction of the engine's uptime it spent proving.
    pub busy_fraction: f64,
    /// Its device's memory (`None` on the CPU).
    pub memory: Option<DeviceMemory>,
}

/// Pending and running jobs of one kind.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KindQueue {
    /// The kind (`porep`, `winning`, ...).
    pub kind: String,
    /// Queued.
    pub pending: u32,
    /// On a worker.
    pub in_progress: u32,
}

/// The engine's state at one moment.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct EngineStatus {
    /// Seconds since the engine started.
    pub uptime_seconds: u64,
    /// Every worker.
    pub workers: Vec<WorkerStatus>,
    /// Every kind.
    pub queues: Vec<KindQueue>,
    /// Pending jobs by priority (`critical`, `high`, `normal`, `low`).
    pub pending_by_priority: Vec<(String, u32)>,
    /// Every circuit's parameters.
    #[serde(serialize_with = "serialize_params")]
    pub params: Vec<ParamStatus>,
    /// Proofs completed since the start.
    pub completed: u64,
    /// Proofs failed since the start.
    pub failed: u64,
    /// Mean of each stage over completed jobs, in ms.
    pub mean_stage_ms: Vec<(String, f64)>,
    /// The process's peak host memory (`VmHWM`), where the kernel reports it.
    pub peak_rss_bytes: Option<u64>,
    /// Page-locked host memory the GPU workers hold now: pinned staging buffers and parameters
    /// mapped for a device to read in place (`cuzk_gpu::pinned_host_bytes`; 0 on the CPU).
    pub pinned_host_bytes: u64,
}

fn serialize_params<S: serde::Serializer>(p: &[ParamStatus], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(p.len()))?;
    for p in p {
        seq.serialize_element(&serde_json::json!({
            "circuit_id": p.circuit_id,
            "tier": p.tier.name(),
            "size_bytes": p.size_bytes,
            "ref_count": p.ref_count,
        }))?;
    }
    seq.end()
}

/// What status and metrics requests read.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    status: EngineStatus,
    metrics: String,
}

/// Rebuilds the snapshot from `state` (the caller holds its lock).
pub(crate) fn refresh(shared: &Shared, state: &State) {
    let status = build_status(shared, state);
    let mut metrics = String::new();
    state.metrics.write(&mut metrics);
    write_metrics(&status, &mut metrics);
    write_worker_counters(&state.workers, &mut metrics);
    *shared
        .snapshot
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Arc::new(Snapshot { status, metrics });
}

/// Every second while the engine exists: each device's memory asked (with no engine lock
/// held), then the snapshot rebuilt, so uptime, busy fractions and memory stay current.
pub(crate) fn refresher(shared: Weak<Shared>) {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let backends: Vec<_> = shared
            .state()
            .workers
            .iter()
            .map(|w| Arc::clone(&w.backend))
            .collect();
        let memory: Vec<_> = backends.iter().map(|b| b.memory()).collect();
        let mut state = shared.state();
        for (w, m) in state.workers.iter_mut().zip(memory) {
            w.memory = m;
        }
        refresh(&shared, &state);
    }
}

/// Page-locked host memory of the process (the GPU backends' pinned buffers and mappings).
fn pinned_host_bytes() -> u64 {
    #[cfg(feature = "cuda")]
    return cuzk_gpu::pinned_host_bytes();
    #[cfg(not(feature = "cuda"))]
    0
}

/// The time worker `w` spent proving, the job or partition it has now included.
fn busy(w: &Worker) -> Duration {
    w.busy + w.busy_since.map(|s| s.elapsed()).unwrap_or_default()
}

fn build_status(shared: &Shared, state: &State) -> EngineStatus {
    {
        let uptime = shared.started.elapsed();
        let workers = state
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let busy = busy(w);
                WorkerStatus {
                    index: i as u32,
                    device: w.device.clone(),
                    product: w.product.clone(),
                    current_job_id: w.current.as_ref().map(|(id, _)| id.clone()),
                    current_kind: w.current.as_ref().map(|(_, k)| k.name().to_string()),
                    busy_fraction: busy.as_secs_f64() / uptime.as_secs_f64().max(1e-9),
                    memory: w.memory,
                }
            })
            .collect();
        // From the queue and the workers, not every job kept for the retention.
        let mut live: Vec<(ProofKind, JobState)> = state
            .queue
            .iter()
            .filter_map(|q| state.jobs.get(&q.job_id))
            .map(|j| (j.request.kind, j.state))
            .collect();
        let mut seen = std::collections::HashSet::new();
        for (id, _) in state.workers.iter().filter_map(|w| w.current.as_ref()) {
            if let Some(j) = state.jobs.get(id) {
                if j.state == JobState::Running && seen.insert(id) {
                    live.push((j.request.kind, j.state));
                }
            }
        }
        let queues = ProofKind::ALL
            .iter()
            .map(|kind| {
                let (mut pending, mut in_progress) = (0, 0);
                for (_, s) in live.iter().filter(|(k, _)| k == kind) {
                    match s {
                        JobState::Pending => pending += 1,
                        JobState::Running => in_progress += 1,
                        _ => {}
                    }
                }
                KindQueue {
                    kind: kind.name().to_string(),
                    pending,
                    in_progress,
                }
            })
            .collect();
        EngineStatus {
            uptime_seconds: uptime.as_secs(),
            peak_rss_bytes: cuzk_telemetry::peak_rss_bytes(),
            pinned_host_bytes: pinned_host_bytes(),
            workers,
            queues,
            pending_by_priority: state
                .queue
                .depths()
                .iter()
                .map(|(p, n)| (p.name().to_string(), *n as u32))
                .collect(),
            params: shared.params.status(),
            completed: state.metrics.completed(),
            failed: state.metrics.failed(),
            mean_stage_ms: crate::metrics::STAGES
                .iter()
                .map(|s| (s.to_string(), state.metrics.mean(s).as_secs_f64() * 1e3))
                .collect(),
        }
    }
}

fn write_metrics(status: &EngineStatus, out: &mut String) {
    {
        let _ = writeln!(
            out,
            "# HELP cuzk_queue_depth Pending jobs by priority.\n# TYPE cuzk_queue_depth gauge"
        );
        for (p, n) in &status.pending_by_priority {
            let _ = writeln!(out, "cuzk_queue_depth{{priority=\"{p}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP cuzk_jobs_running Jobs on a worker now.\n# TYPE cuzk_jobs_running gauge"
        );
        let running: u32 = status.queues.iter().map(|q| q.in_progress).sum();
        let _ = writeln!(out, "cuzk_jobs_running {running}");
        let _ = writeln!(
            out,
            "# HELP cuzk_param_bytes Parameter bytes by tier.\n# TYPE cuzk_param_bytes gauge"
        );
        for tier in [Tier::Hot, Tier::Warm, Tier::Cold] {
            let bytes: u64 = status
                .params
                .iter()
                .filter(|p| p.tier == tier)
                .map(|p| p.size_bytes)
                .sum();
            let _ = writeln!(out, "cuzk_param_bytes{{tier=\"{}\"}} {bytes}", tier.name());
        }
        let _ = writeln!(
            out,
            "# HELP cuzk_device_busy_fraction Fraction of uptime each worker spent proving.\n# TYPE cuzk_device_busy_fraction gauge"
        );
        for w in &status.workers {
            let _ = writeln!(
                out,
                "cuzk_device_busy_fraction{{device=\"{}\",worker=\"{}\"}} {:.6}",
                w.device, w.index, w.busy_fraction
            );
        }
        if let Some(peak) = status.peak_rss_bytes {
            let _ = writeln!(
                out,
                "# HELP cuzk_peak_rss_bytes The process's peak host memory (VmHWM).\n# TYPE cuzk_peak_rss_bytes gauge\ncuzk_peak_rss_bytes {peak}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP cuzk_pinned_host_bytes Page-locked host memory held now (pinned staging, parameters mapped for a device).\n# TYPE cuzk_pinned_host_bytes gauge\ncuzk_pinned_host_bytes {}",
            status.pinned_host_bytes
        );
        // One line set per device, from its first worker (the workers of a device share it).
        let mut seen = std::collections::BTreeSet::new();
        let devices: Vec<_> = status
            .workers
            .iter()
            .filter_map(|w| Some((w.device.as_str(), w.memory?)))
            .filter(|(device, _)| seen.insert(*device))
            .collect();
        let _ = writeln!(
            out,
            "# HELP cuzk_device_memory_bytes Each device's memory: its size, its arena's free bytes, and the host bytes of parameters it reads in place (mapped).\n# TYPE cuzk_device_memory_bytes gauge"
        );
        for (device, m) in &devices {
            for (what, bytes) in [
                ("total", m.total_bytes),
                ("free", m.free_bytes),
                ("mapped_host", m.mapped_bytes),
            ] {
                let _ = writeln!(
                    out,
                    "cuzk_device_memory_bytes{{device=\"{device}\",what=\"{what}\"}} {bytes}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP cuzk_peak_vram_bytes The most each device's arena has held at once (resident parameters, pre-compiled circuits and partitions' buffers): cuzk's peak device memory.\n# TYPE cuzk_peak_vram_bytes gauge"
        );
        for (device, m) in &devices {
            let _ = writeln!(
                out,
                "cuzk_peak_vram_bytes{{device=\"{device}\"}} {}",
                m.peak_in_use_bytes
            );
        }
        let _ = writeln!(
            out,
            "# HELP cuzk_uptime_seconds Seconds since the engine started.\n# TYPE cuzk_uptime_seconds gauge\ncuzk_uptime_seconds {}",
            status.uptime_seconds
        );
    }
}

/// The workers' counters: the time each spent proving, and each device's failures and CPU
/// fallbacks (summed over its workers; atomics the backends keep, read without waiting).
fn write_worker_counters(workers: &[Worker], out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP cuzk_worker_busy_seconds_total Seconds each worker spent proving (its jobs and the partitions it helped with).\n# TYPE cuzk_worker_busy_seconds_total counter"
    );
    for (i, w) in workers.iter().enumerate() {
        let _ = writeln!(
            out,
            "cuzk_worker_busy_seconds_total{{device=\"{}\",worker=\"{i}\"}} {:.3}",
            w.device,
            busy(w).as_secs_f64()
        );
    }
    let mut devices = std::collections::BTreeMap::<&str, BackendCounters>::new();
    for w in workers {
        let c = w.backend.counters();
        let sum = devices.entry(w.device.as_str()).or_default();
        sum.device_failures += c.device_failures;
        sum.cpu_fallbacks += c.cpu_fallbacks;
    }
    for (name, help, value) in [
        (
            "cuzk_device_failures_total",
            "Device failures (out of memory, a kernel fault, a lost device), whether the partition then failed or was proven on the CPU.",
            (|c: &BackendCounters| c.device_failures) as fn(&BackendCounters) -> u64,
        ),
        (
            "cuzk_cpu_fallbacks_total",
            "Partitions proven again on the CPU after their device failed ([gpus] cpu_fallback).",
            |c| c.cpu_fallbacks,
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for (device, c) in &devices {
            let _ = writeln!(out, "{name}{{device=\"{device}\"}} {}", value(c));
        }
    }
}

impl Engine {
    /// The engine's state, as of its last job event (at most a second old); takes no engine
    /// lock.
    pub fn status(&self) -> EngineStatus {
        self.snapshot().status.clone()
    }

    /// The metrics in Prometheus text format, from the same snapshot as [`Engine::status`].
    pub fn metrics_text(&self) -> String {
        self.snapshot().metrics.clone()
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(
            &self
                .shared
                .snapshot
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// The recent proofs' stages as an SVG waterfall, when the engine records telemetry.
    pub fn waterfall_svg(&self) -> Option<String> {
        let timeline = self.shared.telemetry.as_ref()?.snapshot();
        (!timeline.spans.is_empty()).then(|| timeline.to_svg_waterfall())
    }
}
