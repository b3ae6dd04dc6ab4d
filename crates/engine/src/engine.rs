//! The engine: jobs in memory and in the journal, the queue, the workers, and the answers to
//! submit, await, cancel, status and metrics.
//!
//! One mutex guards the in-memory state (jobs, queue, partitions offered by running jobs,
//! workers, counters); the journal has its own, and a third serialises submissions so a
//! request id is journaled once. Workers wait on one condition variable for work (an offered
//! partition first, then the queue's next job), awaiters on another for jobs ending. Nothing
//! blocks while holding the state lock except short journal writes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cuzk_pipeline::JobContext;
use cuzk_telemetry::RecorderHandle;

use crate::backend::{DeviceMemory, ProofBackend};
use crate::job::{JobOutcome, JobRequest, JobState, JobTimings, Priority, ProofKind, Submitted};
use crate::journal::{now_ms, Journal};
use crate::metrics::Metrics;
use crate::params::{ParamConfig, ParamManager, ParamStatus};
use crate::queue::{JobQueue, Queued};
use crate::run::{circuit_of, run_job, JobControl, JobSite};
use crate::spool::{Spool, SpoolData};
use crate::spread::{panic_text, Helpers, PartitionTask};
use crate::{error_chain, EngineError};

/// What the engine needs to run.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The folder of the journal (`journal.sqlite`) and the spool (`spool/`).
    pub data_dir: PathBuf,
    /// The parameter manager's settings.
    pub params: ParamConfig,
    /// How far behind the head of a priority a worker may look for a job whose parameters
    /// are hot (0: strict FIFO).
    pub group_window: usize,
    /// How long ended jobs' results are kept for `await`.
    pub retention: Duration,
    /// Starts of one job (each ended by a crash) after which it fails instead of running again.
    pub max_attempts: u32,
    /// Inputs of at least this many bytes go to a spool file; smaller ones are kept in the
    /// journal row (one disk sync per submission instead of three).
    pub spool_threshold: usize,
    /// Where pre-compiled circuits (cuzk-pce) are recorded and read; None: full synthesis.
    pub pce_dir: Option<PathBuf>,
}

#[derive(Debug)]
struct Job {
    seq: u64,
    request: Arc<JobRequest>,
    circuit_id: Option<String>,
    state: JobState,
    control: Arc<JobControl>,
    submitted_ms: u64,
    attempts: u32,
    proof: Vec<u8>,
    error: String,
    timings: JobTimings,
    started_ms: u64,
    finished_ms: u64,
    ended: Option<Instant>,
    /// The job's `queue_wait` span (cuzk-telemetry's convention), open from submission (or
    /// restart) until a worker takes it.
    queue_span: Option<tracing::Span>,
}

/// A `queue_wait` span for job `seq`; its worker and device are recorded when one takes it.
fn queue_span(seq: u64) -> tracing::Span {
    tracing::info_span!(
        "queue_wait",
        job = seq,
        partition = 0u64,
        worker = tracing::field::Empty,
        device = tracing::field::Empty
    )
}

#[derive(Debug)]
struct Worker {
    device: String,
    /// Its backend, asked for the device's memory by status.
    backend: Arc<dyn ProofBackend>,
    current: Option<(String, ProofKind)>,
    busy: Duration,
    busy_since: Option<Instant>,
}

#[derive(Debug, Default)]
struct State {
    jobs: HashMap<String, Job>,
    by_request: HashMap<String, String>,
    queue: JobQueue,
    /// Partitions of running jobs offered to idle workers.
    partitions: VecDeque<Box<PartitionTask>>,
    /// Workers waiting for work.
    idle: usize,
    workers: Vec<Worker>,
    stopping: bool,
    metrics: Metrics,
    last_purge: Option<Instant>,
    jobs_since_trace_clear: u32,
}

#[derive(Debug)]
struct Shared {
    config: EngineConfig,
    journal: Mutex<Journal>,
    spool: Spool,
    params: ParamManager,
    pce: Option<crate::run::PceStore>,
    state: Mutex<State>,
    work: Condvar,
    ended: Condvar,
    submit: Mutex<()>,
    started: Instant,
    telemetry: Option<RecorderHandle>,
    /// The data folder's lock: held while the engine runs, let go once a shutdown has seen
    /// every worker leave (else when the last reference to the engine's state drops).
    lock: Mutex<Option<crate::lock::DataDirLock>>,
}

impl Helpers for Shared {
    fn offer(&self, task: Box<PartitionTask>) -> Result<(), Box<PartitionTask>> {
        let mut state = self.state();
        // Each offered partition is matched with a worker waiting now, which takes offered
        // partitions before jobs and before it leaves on shutdown: none is left behind.
        if state.stopping || state.idle <= state.partitions.len() {
            return Err(task);
        }
        state.partitions.push_back(task);
        drop(state);
        self.work.notify_all();
        Ok(())
    }

    fn withdraw(&self, job: u64) -> usize {
        let mut state = self.state();
        let before = state.partitions.len();
        state.partitions.retain(|t| t.ctx.job != job);
        before - state.partitions.len()
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn journal(&self) -> MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A worker as status reports it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WorkerStatus {
    /// The worker's index.
    pub index: u32,
    /// Its device (`cpu`, `gpu0`).
    pub device: String,
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
#[derive(Clone, Debug, serde::Serialize)]
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

/// The engine. Dropping it does not stop its workers: call [`Engine::shutdown`].
#[derive(Debug)]
pub struct Engine {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Engine {
    /// Opens the journal in `config.data_dir`, queues again the jobs it holds that had not
    /// ended, and starts one worker per backend.
    pub fn start(
        config: EngineConfig,
        backends: Vec<Arc<dyn ProofBackend>>,
        telemetry: Option<RecorderHandle>,
    ) -> Result<Self, EngineError> {
        std::fs::create_dir_all(&config.data_dir).map_err(EngineError::io(&config.data_dir))?;
        // Before anything in the folder is read: one engine per journal and spool.
        let lock = crate::lock::DataDirLock::acquire(&config.data_dir)?;
        let journal = Journal::open(&config.data_dir.join("journal.sqlite"))?;
        let spool = Spool::open(&config.data_dir.join("spool"))?;
        journal.purge(config.retention)?;
        let mut state = State::default();
        let mut requeued = 0;
        for row in journal.load()? {
            let mut job = Job {
                seq: row.seq,
                circuit_id: circuit_of(&row.request).ok().flatten().map(|c| c.id()),
                request: Arc::new(row.request),
                state: row.state,
                control: Arc::default(),
                submitted_ms: row.submitted_ms,
                attempts: row.attempts,
                proof: row.proof,
                error: row.error,
                timings: row.timings,
                started_ms: row.started_ms,
                finished_ms: row.finished_ms,
                ended: row.state.is_terminal().then(Instant::now),
                queue_span: (!row.state.is_terminal()).then(|| queue_span(row.seq)),
            };
            if !job.state.is_terminal() {
                if job.attempts >= config.max_attempts {
                    job.state = JobState::Failed;
                    job.error = EngineError::TooManyAttempts(job.attempts).to_string();
                    job.ended = Some(Instant::now());
                    job.finished_ms = now_ms();
                    journal.finish(
                        &row.job_id,
                        job.state,
                        &[],
                        &job.error,
                        &job.timings,
                        job.finished_ms,
                    )?;
                } else {
                    job.state = JobState::Pending;
                    journal.mark_pending(&row.job_id)?;
                    state.queue.push(
                        job.request.priority,
                        Queued::new(row.job_id.clone(), job.seq, job.circuit_id.clone()),
                    );
                    requeued += 1;
                }
            }
            if !job.request.request_id.is_empty() {
                state
                    .by_request
                    .insert(job.request.request_id.clone(), row.job_id.clone());
            }
            state.jobs.insert(row.job_id, job);
        }
        let live: HashSet<String> = state
            .jobs
            .iter()
            .filter(|(_, j)| !j.state.is_terminal())
            .map(|(id, _)| id.clone())
            .collect();
        let swept = spool.sweep(&live)?;
        tracing::info!(jobs = state.jobs.len(), requeued, swept, "journal loaded");
        state.workers = backends
            .iter()
            .map(|b| Worker {
                device: b.device(),
                backend: Arc::clone(b),
                current: None,
                busy: Duration::ZERO,
                busy_since: None,
            })
            .collect();
        let params = ParamManager::new(config.params.clone());
        params.attach(&backends);
        let shared = Arc::new(Shared {
            params,
            pce: config.pce_dir.clone().map(crate::run::PceStore::new),
            config,
            journal: Mutex::new(journal),
            spool,
            state: Mutex::new(state),
            work: Condvar::new(),
            ended: Condvar::new(),
            submit: Mutex::new(()),
            started: Instant::now(),
            telemetry,
            lock: Mutex::new(Some(lock)),
        });
        let threads = backends
            .into_iter()
            .enumerate()
            .map(|(index, backend)| {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("cuzk-worker-{index}"))
                    .spawn(move || worker_loop(&shared, index, backend.as_ref()))
                    .map_err(EngineError::io("worker thread"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// The parameter manager.
    pub fn params(&self) -> &ParamManager {
        &self.shared.params
    }

    /// Accepts a job: checks it, writes its inputs (to a spool file, synced, when large) and
    /// its journal row (synced), queues it. A request id seen before returns that job instead.
    pub fn submit(&self, request: JobRequest) -> Result<Submitted, EngineError> {
        let shared = &self.shared;
        let circuit_id = circuit_of(&request)?.map(|c| c.id());
        check_shape(&request)?;
        let _submit = shared.submit.lock().unwrap_or_else(PoisonError::into_inner);
        {
            let state = shared.state();
            if state.stopping {
                return Err(EngineError::ShuttingDown);
            }
            if !request.request_id.is_empty() {
                if let Some(id) = state.by_request.get(&request.request_id) {
                    let device = state
                        .workers
                        .iter()
                        .find(|w| w.current.as_ref().is_some_and(|(j, _)| j == id))
                        .map(|w| w.device.clone());
                    return Ok(Submitted {
                        job_id: id.clone(),
                        queue_position: state.queue.position(id).unwrap_or(0),
                        existing: true,
                        device,
                    });
                }
            }
        }
        let job_id = new_job_id();
        let data = SpoolData {
            vanilla_proof: request.vanilla_proof.clone(),
            vanilla_proofs: request.vanilla_proofs.clone(),
        };
        let inline = request.payload_bytes() < shared.config.spool_threshold;
        let payload = if inline {
            Some(crate::spool::encode(&data))
        } else {
            shared.spool.write(&job_id, &data)?;
            None
        };
        drop(data);
        let submitted_ms = now_ms();
        let small = JobRequest {
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            ..request
        };
        let seq = match shared
            .journal()
            .insert(&job_id, &small, payload.as_deref(), submitted_ms)
        {
            Ok(seq) => seq,
            Err(e) => {
                shared.spool.remove(&job_id);
                return Err(e);
            }
        };
        let mut state = shared.state();
        let priority = small.priority;
        if !small.request_id.is_empty() {
            state
                .by_request
                .insert(small.request_id.clone(), job_id.clone());
        }
        state.jobs.insert(
            job_id.clone(),
            Job {
                seq,
                request: Arc::new(small),
                circuit_id: circuit_id.clone(),
                state: JobState::Pending,
                control: Arc::default(),
                submitted_ms,
                attempts: 0,
                proof: Vec::new(),
                error: String::new(),
                timings: JobTimings::default(),
                started_ms: 0,
                finished_ms: 0,
                ended: None,
                queue_span: Some(queue_span(seq)),
            },
        );
        state
            .queue
            .push(priority, Queued::new(job_id.clone(), seq, circuit_id));
        let queue_position = state.queue.position(&job_id).unwrap_or(0);
        drop(state);
        shared.work.notify_one();
        Ok(Submitted {
            job_id,
            queue_position,
            existing: false,
            device: None,
        })
    }

    /// Waits until `job_id` ends or `timeout` passes (None: no limit) and reports it; a job
    /// still pending or running when the wait ends is reported in that state.
    pub fn await_job(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<JobOutcome, EngineError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut state = self.shared.state();
        loop {
            let job = state
                .jobs
                .get(job_id)
                .ok_or_else(|| EngineError::UnknownJob(job_id.to_string()))?;
            let now = Instant::now();
            let expired = deadline.is_some_and(|d| now >= d);
            if job.state.is_terminal() || expired || (state.stopping && !job.state.is_terminal()) {
                return Ok(JobOutcome {
                    job_id: job_id.to_string(),
                    state: job.state,
                    proof: job.proof.clone(),
                    error: job.error.clone(),
                    timings: job.timings,
                    started_ms: job.started_ms,
                    finished_ms: job.finished_ms,
                });
            }
            // Waking at least once a second keeps a shutdown from leaving waiters behind.
            let wait = deadline
                .map(|d| d - now)
                .unwrap_or(Duration::from_secs(1))
                .min(Duration::from_secs(1));
            state = self
                .shared
                .ended
                .wait_timeout(state, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Cancels `job_id`: a pending job ends at once, a running one at its next partition
    /// boundary. Returns whether it was running; an ended job is left as it is.
    pub fn cancel(&self, job_id: &str) -> Result<bool, EngineError> {
        let shared = &self.shared;
        let mut state = shared.state();
        let job = state
            .jobs
            .get(job_id)
            .ok_or_else(|| EngineError::UnknownJob(job_id.to_string()))?;
        match job.state {
            JobState::Running => {
                job.control.cancel.store(true, Ordering::SeqCst);
                Ok(true)
            }
            JobState::Pending => {
                state.queue.remove(job_id);
                let job = state.jobs.get_mut(job_id).expect("found above");
                job.queue_span = None;
                job.state = JobState::Cancelled;
                job.error = EngineError::Cancelled.to_string();
                job.ended = Some(Instant::now());
                job.finished_ms = now_ms();
                let finished_ms = job.finished_ms;
                job.timings.total =
                    Duration::from_millis(now_ms().saturating_sub(job.submitted_ms));
                let (kind, timings, error) = (job.request.kind, job.timings, job.error.clone());
                state.metrics.record(kind, None, &timings);
                shared.journal().finish(
                    job_id,
                    JobState::Cancelled,
                    &[],
                    &error,
                    &timings,
                    finished_ms,
                )?;
                drop(state);
                shared.spool.remove(job_id);
                shared.ended.notify_all();
                Ok(false)
            }
            _ => Ok(false),
        }
    }

    /// The engine's state now.
    pub fn status(&self) -> EngineStatus {
        let state = self.shared.state();
        let uptime = self.shared.started.elapsed();
        let workers = state
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let busy = w.busy + w.busy_since.map(|s| s.elapsed()).unwrap_or_default();
                WorkerStatus {
                    index: i as u32,
                    device: w.device.clone(),
                    current_job_id: w.current.as_ref().map(|(id, _)| id.clone()),
                    current_kind: w.current.as_ref().map(|(_, k)| k.name().to_string()),
                    busy_fraction: busy.as_secs_f64() / uptime.as_secs_f64().max(1e-9),
                    memory: w.backend.memory(),
                }
            })
            .collect();
        let queues = ProofKind::ALL
            .iter()
            .map(|kind| {
                let (mut pending, mut in_progress) = (0, 0);
                for job in state.jobs.values().filter(|j| j.request.kind == *kind) {
                    match job.state {
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
            workers,
            queues,
            pending_by_priority: state
                .queue
                .depths()
                .iter()
                .map(|(p, n)| (p.name().to_string(), *n as u32))
                .collect(),
            params: self.shared.params.status(),
            completed: state.metrics.completed(),
            failed: state.metrics.failed(),
            mean_stage_ms: crate::metrics::STAGES
                .iter()
                .map(|s| (s.to_string(), state.metrics.mean(s).as_secs_f64() * 1e3))
                .collect(),
        }
    }

    /// The metrics in Prometheus text format.
    pub fn metrics_text(&self) -> String {
        let status = self.status();
        let mut out = String::new();
        self.shared.state().metrics.write(&mut out);
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
        for (tier, bytes) in self.shared.params.bytes_by_tier() {
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
            "# HELP cuzk_device_memory_bytes Each device's memory: its size, its arena's free bytes, the most its arena has held, and the host bytes of parameters it reads in place (mapped).\n# TYPE cuzk_device_memory_bytes gauge"
        );
        // One line set per device, from its first worker (the workers of a device share it).
        let mut seen = std::collections::BTreeSet::new();
        for w in &status.workers {
            let Some(m) = w.memory else { continue };
            if !seen.insert(w.device.clone()) {
                continue;
            }
            for (what, bytes) in [
                ("total", m.total_bytes),
                ("free", m.free_bytes),
                ("peak_in_use", m.peak_in_use_bytes),
                ("mapped_host", m.mapped_bytes),
            ] {
                let _ = writeln!(
                    out,
                    "cuzk_device_memory_bytes{{device=\"{}\",what=\"{what}\"}} {bytes}",
                    w.device
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP cuzk_uptime_seconds Seconds since the engine started.\n# TYPE cuzk_uptime_seconds gauge\ncuzk_uptime_seconds {}",
            status.uptime_seconds
        );
        out
    }

    /// The recent proofs' stages as an SVG waterfall, when the engine records telemetry.
    pub fn waterfall_svg(&self) -> Option<String> {
        let timeline = self.shared.telemetry.as_ref()?.snapshot();
        (!timeline.spans.is_empty()).then(|| timeline.to_svg_waterfall())
    }

    /// Stops: accepts nothing new, lets running jobs finish for up to `grace`, then stops
    /// them at their next partition boundary (they stay pending in the journal and run again
    /// on restart), and waits up to `grace` again for the workers to leave.
    pub fn shutdown(&self, grace: Duration) {
        let shared = &self.shared;
        shared.state().stopping = true;
        shared.work.notify_all();
        shared.ended.notify_all();
        let deadline = Instant::now() + grace;
        let running = || shared.state().workers.iter().any(|w| w.current.is_some());
        while running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        {
            let state = shared.state();
            for job in state.jobs.values().filter(|j| j.state == JobState::Running) {
                job.control.interrupt.store(true, Ordering::SeqCst);
            }
        }
        let deadline = Instant::now() + grace;
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut all_left = true;
        for t in threads.drain(..) {
            if t.is_finished() {
                let _ = t.join();
            } else {
                all_left = false;
            }
        }
        // Nothing writes the journal or the spool any more: another engine may open them.
        if all_left {
            shared
                .lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
        }
    }
}

/// Cheap checks a request must pass to be accepted; deeper ones fail the job.
fn check_shape(r: &JobRequest) -> Result<(), EngineError> {
    let empty = match r.kind {
        ProofKind::PorepSealCommit | ProofKind::Synthetic => r.vanilla_proof.is_empty(),
        _ => r.vanilla_proofs.is_empty(),
    };
    if empty {
        return Err(EngineError::InvalidRequest(format!(
            "a {} request needs {}",
            r.kind,
            if matches!(r.kind, ProofKind::PorepSealCommit | ProofKind::Synthetic) {
                "vanilla_proof"
            } else {
                "vanilla_proofs"
            }
        )));
    }
    Ok(())
}

fn new_job_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("job-{}", hex::encode(bytes))
}

/// What a worker takes next.
enum Work {
    /// A partition another worker's job offered.
    Partition(Box<PartitionTask>),
    /// The queue's next job.
    Job(String, Arc<JobRequest>, Arc<JobControl>, u64),
}

/// The next work for worker `index`: an offered partition first, then the queue's next job;
/// `None` when the engine stops.
fn next_work(shared: &Shared, index: usize) -> Option<Work> {
    let mut state = shared.state();
    loop {
        if let Some(task) = state.partitions.pop_front() {
            let w = &mut state.workers[index];
            w.current = Some((task.job_id.clone(), task.kind));
            w.busy_since = Some(Instant::now());
            return Some(Work::Partition(task));
        }
        if state.stopping {
            return None;
        }
        let window = shared.config.group_window;
        let params = &shared.params;
        if let Some(next) = state.queue.pop(window, |c| params.is_hot(c)) {
            let device = state.workers[index].device.clone();
            let job = state.jobs.get_mut(&next.job_id).expect("queued jobs exist");
            job.state = JobState::Running;
            job.attempts += 1;
            if let Some(span) = job.queue_span.take() {
                span.record("worker", index as u64);
                span.record("device", device.as_str());
            }
            job.control = Arc::default();
            let (request, control, submitted_ms) = (
                Arc::clone(&job.request),
                Arc::clone(&job.control),
                job.submitted_ms,
            );
            let w = &mut state.workers[index];
            w.current = Some((next.job_id.clone(), request.kind));
            w.busy_since = Some(Instant::now());
            return Some(Work::Job(next.job_id, request, control, submitted_ms));
        }
        state.idle += 1;
        state = shared
            .work
            .wait_timeout(state, Duration::from_secs(5))
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        state.idle -= 1;
    }
}

/// Marks worker `index` idle again, adding the time since it took its work to its busy time.
fn worker_done(state: &mut State, index: usize) {
    let w = &mut state.workers[index];
    w.current = None;
    if let Some(since) = w.busy_since.take() {
        w.busy += since.elapsed();
    }
}

fn worker_loop(shared: &Shared, index: usize, backend: &dyn ProofBackend) {
    loop {
        let (job_id, request, control, submitted_ms) = match next_work(shared, index) {
            None => return,
            Some(Work::Partition(task)) => {
                task.run(backend, index as u64);
                worker_done(&mut shared.state(), index);
                continue;
            }
            Some(Work::Job(job_id, request, control, submitted_ms)) => {
                (job_id, request, control, submitted_ms)
            }
        };
        let started_ms = now_ms();
        if let Some(job) = shared.state().jobs.get_mut(&job_id) {
            job.started_ms = started_ms;
        }
        if let Err(e) = shared.journal().mark_running(&job_id, started_ms) {
            tracing::error!(job = %job_id, error = %e, "journal: marking a job running");
        }
        tracing::info!(job = %job_id, kind = %request.kind, worker = index, "job started");
        let seq = shared.state().jobs.get(&job_id).map(|j| j.seq).unwrap_or(0);
        let ctx = JobContext {
            job: seq,
            worker: index as u64,
        };
        let result = read_inputs(shared, &job_id).and_then(|data| {
            let site = JobSite {
                job_id: &job_id,
                backend,
                helpers: shared,
                control: &control,
                ctx,
            };
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                run_job(&request, &data, &shared.params, shared.pce.as_ref(), site)
            }))
            .unwrap_or_else(|panic| Err(EngineError::Panic(panic_text(panic.as_ref()))))
        });
        finish(
            shared,
            index,
            &job_id,
            &request,
            submitted_ms,
            started_ms,
            result,
        );
    }
}

/// A job's inputs: inline in its journal row, or in its spool file.
fn read_inputs(shared: &Shared, job_id: &str) -> Result<SpoolData, EngineError> {
    let inline = shared.journal().payload(job_id)?;
    match inline {
        Some(bytes) => crate::spool::decode(&bytes).map_err(|detail| EngineError::DamagedSpool {
            path: shared.config.data_dir.join("journal.sqlite"),
            detail: format!("job {job_id}'s inline inputs: {detail}"),
        }),
        None => shared.spool.read(job_id),
    }
}

fn finish(
    shared: &Shared,
    index: usize,
    job_id: &str,
    request: &JobRequest,
    submitted_ms: u64,
    started_ms: u64,
    result: Result<crate::run::RunResult, EngineError>,
) {
    let end_ms = now_ms();
    let mut timings = JobTimings {
        queue_wait: Duration::from_millis(started_ms.saturating_sub(submitted_ms)),
        total: Duration::from_millis(end_ms.saturating_sub(submitted_ms)),
        ..Default::default()
    };
    let (state_after, proof, error) = match result {
        Ok(r) => {
            timings.param_load = r.param_load;
            timings.synthesis = r.synthesis;
            timings.proving = r.proving;
            (JobState::Completed, r.proof, String::new())
        }
        Err(EngineError::Cancelled) => (
            JobState::Cancelled,
            Vec::new(),
            EngineError::Cancelled.to_string(),
        ),
        Err(EngineError::Interrupted) => (JobState::Pending, Vec::new(), String::new()),
        Err(e) => (JobState::Failed, Vec::new(), error_chain(&e)),
    };
    let journaled = if state_after == JobState::Pending {
        shared.journal().mark_pending(job_id)
    } else {
        shared
            .journal()
            .finish(job_id, state_after, &proof, &error, &timings, end_ms)
    };
    if let Err(e) = journaled {
        tracing::error!(job = %job_id, error = %e, "journal: recording a job's end");
    }
    if state_after.is_terminal() {
        shared.spool.remove(job_id);
    }
    match state_after {
        JobState::Completed => {
            tracing::info!(job = %job_id, kind = %request.kind, total_ms = timings.total.as_millis() as u64, "job completed")
        }
        JobState::Failed => {
            tracing::warn!(job = %job_id, kind = %request.kind, error = %error, "job failed")
        }
        _ => tracing::info!(job = %job_id, state = state_after.name(), "job stopped"),
    }
    let mut state = shared.state();
    if let Some(job) = state.jobs.get_mut(job_id) {
        job.state = state_after;
        job.proof = proof;
        job.error = error;
        job.timings = timings;
        job.ended = state_after.is_terminal().then(Instant::now);
        if state_after.is_terminal() {
            job.finished_ms = end_ms;
        }
    }
    if state_after.is_terminal() {
        let ok = match state_after {
            JobState::Completed => Some(true),
            JobState::Failed => Some(false),
            _ => None,
        };
        state.metrics.record(request.kind, ok, &timings);
    }
    worker_done(&mut state, index);
    state.jobs_since_trace_clear += 1;
    if state.jobs_since_trace_clear >= 256 {
        // The timeline keeps the recent proofs only: the status page's waterfall.
        state.jobs_since_trace_clear = 0;
        if let Some(t) = &shared.telemetry {
            t.clear();
        }
    }
    purge(shared, &mut state);
    drop(state);
    shared.ended.notify_all();
}

/// Forgets ended jobs older than the retention (memory and journal), at most once a minute.
fn purge(shared: &Shared, state: &mut State) {
    if state
        .last_purge
        .is_some_and(|t| t.elapsed() < Duration::from_secs(60))
    {
        return;
    }
    state.last_purge = Some(Instant::now());
    let retention = shared.config.retention;
    let old: Vec<String> = state
        .jobs
        .iter()
        .filter(|(_, j)| j.ended.is_some_and(|e| e.elapsed() > retention))
        .map(|(id, _)| id.clone())
        .collect();
    for id in old {
        if let Some(job) = state.jobs.remove(&id) {
            state.by_request.remove(&job.request.request_id);
        }
    }
    if let Err(e) = shared.journal().purge(retention) {
        tracing::error!(error = %e, "journal: purging old jobs");
    }
}

impl Priority {
    /// Parses `critical`, `high`, `normal`, `low` (any case).
    pub fn parse(name: &str) -> Option<Self> {
        Priority::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}
