//! The engine: jobs in memory and in the journal, the queue, the workers, and the answers to
//! submit, await, cancel, status and metrics.
//!
//! One mutex guards the in-memory state (jobs, queue, partitions offered by running jobs,
//! workers, counters); the journal has its own. A submission reserves its request id in the
//! state, then writes and syncs its inputs holding neither, so submissions do not queue behind
//! each other's disk syncs. Workers wait on one condition variable for work (an offered
//! partition first, then the queue's next job), awaiters on another for jobs ending. Nothing
//! blocks while holding the state lock except short journal writes.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cuzk_telemetry::RecorderHandle;

use crate::backend::ProofBackend;
use crate::job::JobControl;
use crate::job::{JobOutcome, JobRequest, JobState, JobTimings, ProofKind, Submitted};
use crate::journal::{now_ms, Journal};
use crate::metrics::Metrics;
use crate::params::{ParamConfig, ParamManager};
use crate::queue::{JobQueue, Queued};
use crate::run::{circuit_of, validate};
use crate::spool::Spool;
use crate::spread::{Helpers, Offered, PartitionTask};
use crate::worker::worker_loop;
use crate::EngineError;

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
    /// Pending jobs (queued, not running) beyond which a submission is refused
    /// ([`EngineError::Exhausted`]); the daemon's `[scheduler] max_pending_jobs`.
    pub max_pending_jobs: usize,
    /// Bytes of spool files beyond which a submission that needs one is refused
    /// ([`EngineError::Exhausted`]); the daemon's `[daemon] max_spool_bytes`.
    pub max_spool_bytes: u64,
    /// Whether synthetic jobs and circuits are accepted (a test and benchmark kind whose
    /// parameters a client could otherwise make the engine generate); the daemon's
    /// `[daemon] allow_synthetic`.
    pub allow_synthetic: bool,
    /// Partitions of one job synthesised at once, each on a thread of its own (at least 1;
    /// [`default_synthesis_threads`](crate::default_synthesis_threads)); how many may wait for
    /// a worker besides is bounded by the memory budget left beside the hot parameters.
    pub synthesis_threads: usize,
}

#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) seq: u64,
    pub(crate) request: Arc<JobRequest>,
    pub(crate) circuit_id: Option<String>,
    pub(crate) state: JobState,
    pub(crate) control: Arc<JobControl>,
    pub(crate) submitted_ms: u64,
    pub(crate) attempts: u32,
    pub(crate) proof: Vec<u8>,
    pub(crate) error: String,
    pub(crate) timings: JobTimings,
    pub(crate) started_ms: u64,
    /// When it ended (ms since the Unix epoch; 0: not yet): what the retention counts from,
    /// across restarts too.
    pub(crate) finished_ms: u64,
    /// Turns true once the job has ended, or the engine stops: what async waiters await.
    pub(crate) signal: tokio::sync::watch::Sender<bool>,
    /// The job's `queue_wait` span (cuzk-telemetry's convention), open from submission (or
    /// restart) until a worker takes it.
    pub(crate) queue_span: Option<tracing::Span>,
}

impl Job {
    /// What `await` reports about the job now.
    pub(crate) fn outcome(&self, job_id: &str) -> JobOutcome {
        JobOutcome {
            job_id: job_id.to_string(),
            state: self.state,
            proof: self.proof.clone(),
            error: self.error.clone(),
            timings: self.timings,
            started_ms: self.started_ms,
            finished_ms: self.finished_ms,
        }
    }
}

/// A `queue_wait` span for job `seq`; its worker and device are recorded when one takes it.
pub(crate) fn queue_span(seq: u64) -> tracing::Span {
    tracing::info_span!(
        "queue_wait",
        job = seq,
        partition = 0u64,
        worker = tracing::field::Empty,
        device = tracing::field::Empty
    )
}

#[derive(Debug)]
pub(crate) struct Worker {
    pub(crate) device: String,
    /// Its device's product name (`None` on the CPU).
    pub(crate) product: Option<String>,
    /// Its backend, asked for the device's memory by status.
    pub(crate) backend: Arc<dyn ProofBackend>,
    pub(crate) current: Option<(String, ProofKind)>,
    pub(crate) busy: Duration,
    pub(crate) busy_since: Option<Instant>,
    /// Its device's memory as last asked (by the status refresher, never on a request).
    pub(crate) memory: Option<crate::backend::DeviceMemory>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) jobs: HashMap<String, Job>,
    pub(crate) by_request: HashMap<String, String>,
    pub(crate) queue: JobQueue,
    /// Partitions of running jobs offered to idle workers, and the workers waiting for work.
    pub(crate) offered: Offered,
    pub(crate) workers: Vec<Worker>,
    pub(crate) stopping: bool,
    pub(crate) metrics: Metrics,
    pub(crate) last_purge: Option<Instant>,
    pub(crate) jobs_since_trace_clear: u32,
    /// Submissions admitted and still writing their inputs: counted with the queue against
    /// `max_pending_jobs`, so concurrent ones cannot pass it together.
    pub(crate) accepting: usize,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: EngineConfig,
    pub(crate) journal: Mutex<Journal>,
    pub(crate) spool: Spool,
    pub(crate) params: ParamManager,
    pub(crate) pce: Option<crate::run::PceStore>,
    pub(crate) state: Mutex<State>,
    pub(crate) work: Condvar,
    pub(crate) ended: Condvar,
    /// What status and metrics requests read ([`crate::status`]).
    pub(crate) snapshot: Mutex<Arc<crate::status::Snapshot>>,
    /// Told when a submission's request id is accepted or let go.
    pub(crate) accepted: Condvar,
    pub(crate) started: Instant,
    pub(crate) telemetry: Option<RecorderHandle>,
    /// The data folder's lock: held while the engine runs, let go once a shutdown has seen
    /// every worker leave (else when the last reference to the engine's state drops).
    pub(crate) lock: Mutex<Option<crate::lock::DataDirLock>>,
}

impl Helpers for Shared {
    fn offer(&self, task: Box<PartitionTask>) -> Result<(), Box<PartitionTask>> {
        let mut state = self.state();
        // A worker takes offered partitions before jobs and before it leaves on shutdown: none
        // is left behind.
        let stopping = state.stopping;
        state.offered.offer(task, stopping)?;
        drop(state);
        self.work.notify_all();
        Ok(())
    }

    fn withdraw(&self, job: u64) -> usize {
        self.state().offered.withdraw(job)
    }
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn journal(&self) -> MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The engine. Dropping it does not stop its workers: call [`Engine::shutdown`].
#[derive(Debug)]
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
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
        let lock = crate::DataDirLock::acquire(&config.data_dir)?;
        Self::start_locked(config, backends, telemetry, lock)
    }

    /// [`Engine::start`] with the data folder's lock already held: a daemon takes it before
    /// it binds its sockets, so a second one on the same folder stops before it touches them.
    /// `lock` must be `config.data_dir`'s.
    pub fn start_locked(
        config: EngineConfig,
        backends: Vec<Arc<dyn ProofBackend>>,
        telemetry: Option<RecorderHandle>,
        lock: crate::DataDirLock,
    ) -> Result<Self, EngineError> {
        debug_assert_eq!(lock.dir(), config.data_dir, "the lock of another folder");
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
                signal: tokio::sync::watch::Sender::new(row.state.is_terminal()),
                queue_span: (!row.state.is_terminal()).then(|| queue_span(row.seq)),
            };
            if !job.state.is_terminal() {
                if job.attempts >= config.max_attempts {
                    job.state = JobState::Failed;
                    job.error = EngineError::TooManyAttempts(job.attempts).to_string();
                    job.finished_ms = now_ms();
                    job.signal.send_replace(true);
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
                product: b.product(),
                backend: Arc::clone(b),
                current: None,
                busy: Duration::ZERO,
                busy_since: None,
                memory: b.memory(),
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
            accepted: Condvar::new(),
            snapshot: Mutex::default(),
            started: Instant::now(),
            telemetry,
            lock: Mutex::new(Some(lock)),
        });
        crate::status::refresh(&shared, &shared.state());
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("cuzk-status".into())
            .spawn(move || crate::status::refresher(weak))
            .map_err(EngineError::io("status thread"))?;
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

    /// Loads circuit `circuit_id`'s parameters into the hot tier ([`ParamManager::preload`]):
    /// whether they were hot already, and the load's time. A synthetic circuit is refused
    /// unless the engine allows them.
    pub fn preload(&self, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
        let circuit = crate::params::CircuitId::parse(circuit_id)?;
        if matches!(circuit, crate::params::CircuitId::Synthetic(_))
            && !self.shared.config.allow_synthetic
        {
            return Err(EngineError::SyntheticDisabled);
        }
        self.shared.params.preload(circuit_id)
    }

    /// Accepts a job: checks it, writes its inputs (to a spool file, synced, when large) and
    /// its journal row (synced), queues it. A request id seen before returns that job instead.
    ///
    /// No engine lock is held while the inputs are written and synced: the request id is
    /// reserved first (a second submission of it waits for the first to be accepted or
    /// refused), and the journal's UNIQUE request id is the backstop. The inputs are written
    /// from the request as it came, never copied.
    pub fn submit(&self, request: JobRequest) -> Result<Submitted, EngineError> {
        let shared = &self.shared;
        if request.kind == ProofKind::Synthetic && !shared.config.allow_synthetic {
            return Err(EngineError::SyntheticDisabled);
        }
        // Before anything is written: bad input is refused now, not when the job runs.
        let circuit_id = validate(&request)?.map(|c| c.id());
        let job_id = new_job_id();
        let request_id = request.request_id.clone();
        // The bytes of its spool file (None: its inputs go in the journal row).
        let spooled = (request.payload_bytes() >= shared.config.spool_threshold).then(|| {
            crate::spool::encoded_len(&request.vanilla_proof, &request.vanilla_proofs) as u64
        });
        {
            let mut state = shared.state();
            loop {
                if state.stopping {
                    return Err(EngineError::ShuttingDown);
                }
                if request_id.is_empty() {
                    admit(shared, &mut state, spooled)?;
                    break;
                }
                match state.by_request.get(&request_id) {
                    Some(id) if state.jobs.contains_key(id) => {
                        return Ok(existing(&state, id.clone()));
                    }
                    // Reserved by a submission still writing its inputs.
                    Some(_) => {
                        state = shared
                            .accepted
                            .wait_timeout(state, Duration::from_secs(1))
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                    }
                    None => {
                        admit(shared, &mut state, spooled)?;
                        state.by_request.insert(request_id.clone(), job_id.clone());
                        break;
                    }
                }
            }
        }
        let accepted = self.accept(&job_id, request, circuit_id, spooled);
        let mut state = shared.state();
        state.accepting -= 1;
        let out = match accepted {
            Ok(Accepted::New(seq, priority)) => {
                let circuit = state.jobs.get(&job_id).and_then(|j| j.circuit_id.clone());
                state
                    .queue
                    .push(priority, Queued::new(job_id.clone(), seq, circuit));
                let queue_position = state.queue.position(&job_id).unwrap_or(0);
                crate::status::refresh(shared, &state);
                Ok(Submitted {
                    job_id,
                    queue_position,
                    existing: false,
                    device: None,
                })
            }
            Ok(Accepted::Journaled(other)) => {
                state.by_request.insert(request_id.clone(), other.clone());
                Ok(existing(&state, other))
            }
            Err(e) => {
                if state.by_request.get(&request_id) == Some(&job_id) {
                    state.by_request.remove(&request_id);
                }
                Err(e)
            }
        };
        drop(state);
        shared.accepted.notify_all();
        shared.work.notify_one();
        out
    }

    /// Writes job `job_id`'s inputs (to a spool file of `spooled` bytes, reserved by
    /// [`admit`], or inline) and journal row (no engine lock held while they sync) and puts it
    /// in memory; the caller queues it. On failure nothing of it is left on disk.
    fn accept(
        &self,
        job_id: &str,
        request: JobRequest,
        circuit_id: Option<String>,
        spooled: Option<u64>,
    ) -> Result<Accepted, EngineError> {
        let shared = &self.shared;
        let payload = match spooled {
            None => Some(crate::spool::encode_parts(
                &request.vanilla_proof,
                &request.vanilla_proofs,
            )),
            Some(bytes) => {
                let written = shared.spool.write_parts(
                    job_id,
                    &request.vanilla_proof,
                    &request.vanilla_proofs,
                );
                if let Err(e) = written {
                    shared.spool.release(bytes);
                    return Err(e);
                }
                None
            }
        };
        let submitted_ms = now_ms();
        // The inputs are on disk: from here the request is kept without them.
        let small = JobRequest {
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            ..request
        };
        let inserted = shared
            .journal()
            .insert(job_id, &small, payload.as_deref(), submitted_ms);
        let seq = match inserted {
            Ok(seq) => seq,
            Err(e) => {
                shared.spool.remove(job_id);
                // The backstop: the request id was journaled by another submission.
                if !small.request_id.is_empty() {
                    if let Ok(Some(other)) = shared.journal().find_request(&small.request_id) {
                        if shared.state().jobs.contains_key(&other) {
                            return Ok(Accepted::Journaled(other));
                        }
                    }
                }
                return Err(e);
            }
        };
        let priority = small.priority;
        shared.state().jobs.insert(
            job_id.to_string(),
            Job {
                seq,
                request: Arc::new(small),
                circuit_id,
                state: JobState::Pending,
                control: Arc::default(),
                submitted_ms,
                attempts: 0,
                proof: Vec::new(),
                error: String::new(),
                timings: JobTimings::default(),
                started_ms: 0,
                finished_ms: 0,
                signal: tokio::sync::watch::Sender::new(false),
                queue_span: Some(queue_span(seq)),
            },
        );
        Ok(Accepted::New(seq, priority))
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
                return Ok(job.outcome(job_id));
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

    /// `job_id` as it stands now, without waiting.
    pub fn outcome(&self, job_id: &str) -> Result<JobOutcome, EngineError> {
        let state = self.shared.state();
        let job = state
            .jobs
            .get(job_id)
            .ok_or_else(|| EngineError::UnknownJob(job_id.to_string()))?;
        Ok(job.outcome(job_id))
    }

    /// A watch on `job_id` that turns true once it has ended or the engine stops (then
    /// [`Engine::outcome`] says which): an async waiter awaits it with its own deadline and
    /// holds no thread. It also ends (an error) if the job is forgotten meanwhile.
    pub fn watch_job(
        &self,
        job_id: &str,
    ) -> Result<tokio::sync::watch::Receiver<bool>, EngineError> {
        let state = self.shared.state();
        let job = state
            .jobs
            .get(job_id)
            .ok_or_else(|| EngineError::UnknownJob(job_id.to_string()))?;
        if state.stopping {
            job.signal.send_replace(true);
        }
        Ok(job.signal.subscribe())
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
                job.finished_ms = now_ms();
                job.signal.send_replace(true);
                let finished_ms = job.finished_ms;
                job.timings.total =
                    Duration::from_millis(now_ms().saturating_sub(job.submitted_ms));
                let (kind, timings, error) = (job.request.kind, job.timings, job.error.clone());
                state.metrics.record(kind, None, &timings);
                crate::status::refresh(shared, &state);
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

    /// Stops: accepts nothing new, lets running jobs finish for up to `grace`, then stops
    /// them at their next partition boundary (they stay pending in the journal and run again
    /// on restart), and waits up to `grace` again for the workers to leave.
    pub fn shutdown(&self, grace: Duration) {
        let shared = &self.shared;
        {
            let mut state = shared.state();
            state.stopping = true;
            // Async waiters return, as the blocking ones do below.
            for job in state.jobs.values() {
                job.signal.send_replace(true);
            }
        }
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

/// How [`Engine::accept`] ended.
enum Accepted {
    /// A new job, with its sequence number and priority.
    New(u64, crate::job::Priority),
    /// The request id was journaled already, by this job.
    Journaled(String),
}

/// Admits a new submission of `spooled` spool bytes under the limits, or refuses it: counts
/// it among those accepting and reserves its spool bytes.
fn admit(shared: &Shared, state: &mut State, spooled: Option<u64>) -> Result<(), EngineError> {
    let config = &shared.config;
    let pending = state.queue.len() + state.accepting;
    if pending >= config.max_pending_jobs {
        return Err(EngineError::Exhausted(format!(
            "{pending} jobs are pending, the limit ([scheduler] max_pending_jobs = {})",
            config.max_pending_jobs
        )));
    }
    if let Some(bytes) = spooled {
        if !shared.spool.reserve(bytes, config.max_spool_bytes) {
            return Err(EngineError::Exhausted(format!(
                "the spool holds {} bytes, and {bytes} more would pass its limit ([daemon] \
                 max_spool_bytes = {})",
                shared.spool.bytes(),
                config.max_spool_bytes
            )));
        }
    }
    state.accepting += 1;
    Ok(())
}

/// What `submit` answers for an existing job `id`.
fn existing(state: &State, id: String) -> Submitted {
    let device = state
        .workers
        .iter()
        .find(|w| w.current.as_ref().is_some_and(|(j, _)| *j == id))
        .map(|w| w.device.clone());
    Submitted {
        queue_position: state.queue.position(&id).unwrap_or(0),
        job_id: id,
        existing: true,
        device,
    }
}

fn new_job_id() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut bytes);
    format!("job-{}", hex::encode(bytes))
}
