//! The engine in-process, on the synthetic kind: jobs end with verified proofs and timings,
//! request ids are idempotency keys, a cancel ends a pending job at once and a running one at
//! its next partition, and a restart on the same folder runs what had not ended and still
//! answers for what had; with pre-compiled circuits, partitions reach the backends as their
//! witness. (The daemon's tests drive the same through the binary.)

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk_engine::{
    BackendError, CpuProofBackend, Engine, EngineError, JobRequest, JobState, Priority,
    ProofBackend,
};
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::{JobContext, PartitionInput, PartitionTiming};

fn engine(dir: &Path) -> Engine {
    engine_with(dir, 1)
}

fn engine_with(dir: &Path, workers: usize) -> Engine {
    let config = common::config(dir);
    let backends: Vec<Arc<dyn ProofBackend>> = (0..workers)
        .map(|_| Arc::new(CpuProofBackend::new(true)) as Arc<dyn ProofBackend>)
        .collect();
    Engine::start(config, backends, None).unwrap()
}

const WAIT: Option<Duration> = Some(Duration::from_secs(120));

fn until_running(e: &Engine) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !e.status().queues.iter().any(|q| q.in_progress > 0) {
        assert!(Instant::now() < deadline, "no job started in 60 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn jobs_prove_cancel_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (done, long, queued, idem);
    {
        let e = engine(dir.path());
        let mut r = JobRequest::synthetic(8, 1, 2);
        r.request_id = "req-a".into();
        let s = e.submit(r.clone()).unwrap();
        assert!(!s.existing);
        assert!(
            e.submit(r).unwrap().existing,
            "the same request id, the same job"
        );
        let out = e.await_job(&s.job_id, WAIT).unwrap();
        assert_eq!(out.state, JobState::Completed, "{}", out.error);
        assert_eq!(out.proof.len(), 2 * 192);
        assert!(out.timings.total >= out.timings.proving);
        assert!(out.started_ms >= 1 && out.finished_ms >= out.started_ms);
        done = (s.job_id, out.proof);
        idem = "req-a";

        // A running job stops at its next partition; a pending one ends at once.
        long = e.submit(JobRequest::synthetic(8, 2, 200)).unwrap().job_id;
        until_running(&e);
        let pending = e.submit(JobRequest::synthetic(8, 3, 1)).unwrap().job_id;
        assert!(!e.cancel(&pending).unwrap());
        assert_eq!(
            e.await_job(&pending, WAIT).unwrap().state,
            JobState::Cancelled
        );
        assert!(e.cancel(&long).unwrap());
        assert_eq!(e.await_job(&long, WAIT).unwrap().state, JobState::Cancelled);

        // Left pending behind a running job, then the engine stops without waiting.
        let running = e.submit(JobRequest::synthetic(8, 4, 200)).unwrap().job_id;
        until_running(&e);
        let mut r = JobRequest::synthetic(8, 5, 1);
        r.priority = Priority::Critical;
        queued = (running, e.submit(r).unwrap().job_id);
        // Half a second of grace, then the running job stops at its next partition (a few ms).
        e.shutdown(Duration::from_millis(500));
        assert!(matches!(
            e.submit(JobRequest::synthetic(8, 6, 1)),
            Err(EngineError::ShuttingDown)
        ));
    }
    let e = engine(dir.path());
    let out = e.await_job(&done.0, Some(Duration::ZERO)).unwrap();
    assert_eq!(
        (out.state, &out.proof),
        (JobState::Completed, &done.1),
        "kept across the restart"
    );
    assert_eq!(
        e.await_job(&long, Some(Duration::ZERO)).unwrap().state,
        JobState::Cancelled
    );
    let mut r = JobRequest::synthetic(8, 1, 2);
    r.request_id = idem.into();
    assert_eq!(e.submit(r).unwrap().job_id, done.0);
    for id in [&queued.0, &queued.1] {
        let out = e.await_job(id, WAIT).unwrap();
        assert_eq!(out.state, JobState::Completed, "{}", out.error);
    }
    assert_eq!(
        e.status().completed,
        2,
        "only the two unfinished jobs ran again"
    );
    assert!(matches!(
        e.await_job("job-none", None),
        Err(EngineError::UnknownJob(_))
    ));
    e.shutdown(Duration::from_secs(5));
}

/// With idle workers, a job's partitions spread over them: the proofs still come back in
/// partition order (each verified against its own partition's inputs), and a cancel stops a
/// spread job at its next partition boundary with no partition left behind.
#[test]
fn partitions_spread_over_idle_workers() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine_with(dir.path(), 3);
    let id = e.submit(JobRequest::synthetic(8, 11, 6)).unwrap().job_id;
    let out = e.await_job(&id, WAIT).unwrap();
    assert_eq!(out.state, JobState::Completed, "{}", out.error);
    assert_eq!(out.proof.len(), 6 * 192);
    let long = e.submit(JobRequest::synthetic(8, 12, 200)).unwrap().job_id;
    until_running(&e);
    assert!(e.cancel(&long).unwrap());
    assert_eq!(e.await_job(&long, WAIT).unwrap().state, JobState::Cancelled);
    let out = e.await_job(
        &e.submit(JobRequest::synthetic(8, 13, 2)).unwrap().job_id,
        WAIT,
    );
    assert_eq!(out.unwrap().state, JobState::Completed);
    e.shutdown(Duration::from_secs(5));
}

/// One engine per data folder: a second one on the same folder is refused with the holder's
/// process id, and once the first has shut down the folder opens again.
#[test]
fn a_data_folder_serves_one_engine_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let first = engine(dir.path());
    let second = Engine::start(
        common::config(dir.path()),
        vec![Arc::new(CpuProofBackend::new(true)) as Arc<dyn ProofBackend>],
        None,
    );
    match second {
        Err(EngineError::DataDirInUse { dir: d, holder }) => {
            assert_eq!(d, common::config(dir.path()).data_dir);
            assert_eq!(holder, std::process::id().to_string());
        }
        Err(e) => panic!("a second engine on the folder: {e}"),
        Ok(_) => panic!("a second engine opened the same folder"),
    }
    first.shutdown(Duration::from_secs(5));
    let again = engine(dir.path());
    again.shutdown(Duration::from_secs(5));
}

/// The CPU backend, counting the partitions it is handed by kind of input.
#[derive(Debug, Default)]
struct Counting {
    cpu: CpuProofBackend,
    witnesses: AtomicUsize,
    assignments: AtomicUsize,
}

impl ProofBackend for Counting {
    fn device(&self) -> String {
        self.cpu.device()
    }

    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        let count = match &input {
            PartitionInput::Witness { .. } => &self.witnesses,
            PartitionInput::Assignment(_) => &self.assignments,
        };
        count.fetch_add(1, Ordering::Relaxed);
        self.cpu.prove_partition(params, input, ctx, partition)
    }
}

/// With a folder of pre-compiled circuits, a synthetic job's partitions go to the backend as
/// the circuit's witness (the backend makes a, b, c), and prove to verified proofs; without,
/// as full assignments.
#[test]
fn pre_compiled_partitions_reach_the_backend_as_witnesses() {
    for pre_compiled in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = common::config(dir.path());
        if pre_compiled {
            config.pce_dir = Some(dir.path().join("pce"));
        }
        let backend = Arc::new(Counting::default());
        let e = Engine::start(
            config,
            vec![Arc::clone(&backend) as Arc<dyn ProofBackend>],
            None,
        )
        .unwrap();
        let id = e.submit(JobRequest::synthetic(8, 21, 3)).unwrap().job_id;
        let out = e.await_job(&id, WAIT).unwrap();
        assert_eq!(out.state, JobState::Completed, "{}", out.error);
        assert_eq!(out.proof.len(), 3 * 192);
        e.shutdown(Duration::from_secs(5));
        let witnesses = backend.witnesses.load(Ordering::Relaxed);
        let assignments = backend.assignments.load(Ordering::Relaxed);
        if pre_compiled {
            assert_eq!((witnesses, assignments), (3, 0));
        } else {
            assert_eq!((witnesses, assignments), (0, 3));
        }
    }
}

/// A job interrupted by a graceful stop does not use up an attempt: with one attempt allowed,
/// a long job stopped three times (each a shutdown while it runs) still completes after the
/// fourth start. Only a start that a crash ended counts.
#[test]
fn graceful_stops_do_not_use_up_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.max_attempts = 1;
    let start = || {
        let cpu: Arc<dyn ProofBackend> = Arc::new(CpuProofBackend::new(true));
        Engine::start(config.clone(), vec![cpu], None).unwrap()
    };
    let mut id = None;
    for cycle in 0..3 {
        let e = start();
        if cycle == 0 {
            // The parameters made first, so each stop finds the long job proving.
            let warm = e.submit(JobRequest::synthetic(8, 30, 1)).unwrap().job_id;
            assert_eq!(e.await_job(&warm, WAIT).unwrap().state, JobState::Completed);
        }
        let job =
            id.get_or_insert_with(|| e.submit(JobRequest::synthetic(8, 31, 64)).unwrap().job_id);
        let state = e.await_job(job, Some(Duration::ZERO)).unwrap().state;
        assert!(!state.is_terminal(), "start {cycle}: the job is {state:?}");
        until_running(&e);
        // No grace: the job stops at its next partition boundary, then the workers leave.
        e.shutdown(Duration::ZERO);
        let deadline = Instant::now() + Duration::from_secs(60);
        let state = loop {
            let state = e.await_job(job, Some(Duration::ZERO)).unwrap().state;
            if state != JobState::Running || Instant::now() > deadline {
                break state;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        e.shutdown(Duration::from_secs(5));
        assert_eq!(
            state,
            JobState::Pending,
            "stop {cycle}: the job ended before the stop; the test proves nothing"
        );
    }
    let e = start();
    let out = e.await_job(id.as_ref().unwrap(), WAIT).unwrap();
    assert_eq!(out.state, JobState::Completed, "{}", out.error);
    assert_eq!(out.proof.len(), 64 * 192);
    e.shutdown(Duration::from_secs(5));
}

/// Ended jobs keep their real end time across a restart: a job that ended before the restart
/// is forgotten once the retention has passed since it ended, not since the restart.
#[test]
fn retention_counts_from_the_end_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.retention = Duration::from_secs(2);
    let start = || {
        let cpu: Arc<dyn ProofBackend> = Arc::new(CpuProofBackend::new(true));
        Engine::start(config.clone(), vec![cpu], None).unwrap()
    };
    let e = start();
    let id = e.submit(JobRequest::synthetic(6, 41, 1)).unwrap().job_id;
    let ended = e.await_job(&id, WAIT).unwrap();
    assert_eq!(ended.state, JobState::Completed, "{}", ended.error);
    // Restart halfway through the retention: the job is still there.
    std::thread::sleep(Duration::from_secs(1));
    e.shutdown(Duration::from_secs(5));
    let e = start();
    assert_eq!(
        e.await_job(&id, Some(Duration::ZERO)).unwrap().finished_ms,
        ended.finished_ms
    );
    // Past the retention since the job ended (but not since the restart), another job's end
    // purges: the first is gone.
    let expiry = ended.finished_ms + 2_100;
    let now = cuzk_engine::journal::now_ms();
    std::thread::sleep(Duration::from_millis(expiry.saturating_sub(now)));
    let other = e.submit(JobRequest::synthetic(6, 42, 1)).unwrap().job_id;
    assert_eq!(
        e.await_job(&other, WAIT).unwrap().state,
        JobState::Completed
    );
    assert!(matches!(
        e.await_job(&id, Some(Duration::ZERO)),
        Err(EngineError::UnknownJob(_))
    ));
    e.shutdown(Duration::from_secs(5));
}

/// No global lock across a parameter load: while one circuit's parameters load (here: are
/// made, which takes a while), a CRITICAL job of another circuit on the second worker loads
/// its own, proves and ends before that load does.
#[test]
fn a_parameter_load_does_not_hold_up_another_circuit() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine_with(dir.path(), 2);
    let slow = e.submit(JobRequest::synthetic(15, 51, 1)).unwrap().job_id;
    until_running(&e);
    let mut r = JobRequest::synthetic(6, 52, 1);
    r.priority = Priority::Critical;
    let quick = e.submit(r).unwrap().job_id;
    let quick = e.await_job(&quick, WAIT).unwrap();
    assert_eq!(quick.state, JobState::Completed, "{}", quick.error);
    let slow = e.await_job(&slow, WAIT).unwrap();
    assert_eq!(slow.state, JobState::Completed, "{}", slow.error);
    let load_end = slow.started_ms + slow.timings.param_load.as_millis() as u64;
    assert!(
        quick.finished_ms <= load_end,
        "the quick job ended at {} ms, after the other circuit's load ({} ms from {})",
        quick.finished_ms,
        slow.timings.param_load.as_millis(),
        slow.started_ms
    );
    e.shutdown(Duration::from_secs(5));
}

/// The CPU backend, whose memory query blocks while `stuck` is set (a device that stopped
/// answering).
#[derive(Debug, Default)]
struct StuckDevice {
    cpu: CpuProofBackend,
    stuck: std::sync::Mutex<bool>,
    unstuck: std::sync::Condvar,
}

impl ProofBackend for StuckDevice {
    fn device(&self) -> String {
        "stuck0".into()
    }

    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        self.cpu.prove_partition(params, input, ctx, partition)
    }

    fn memory(&self) -> Option<cuzk_engine::DeviceMemory> {
        let mut stuck = self.stuck.lock().unwrap();
        while *stuck {
            stuck = self.unstuck.wait(stuck).unwrap();
        }
        Some(cuzk_engine::DeviceMemory::default())
    }
}

/// Status and metrics come from a snapshot: a device whose memory query hangs does not hang
/// them, and a job's end is in them when its await returns.
#[test]
fn status_is_served_from_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let backend = Arc::new(StuckDevice::default());
    let e = Arc::new(
        Engine::start(
            common::config(dir.path()),
            vec![Arc::clone(&backend) as Arc<dyn ProofBackend>],
            None,
        )
        .unwrap(),
    );
    let id = e.submit(JobRequest::synthetic(6, 61, 1)).unwrap().job_id;
    assert_eq!(e.await_job(&id, WAIT).unwrap().state, JobState::Completed);
    assert_eq!(e.status().completed, 1);
    *backend.stuck.lock().unwrap() = true;
    // The refresher (once a second) is now stuck in the device's memory query.
    std::thread::sleep(Duration::from_millis(1500));
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = Arc::clone(&e);
    std::thread::spawn(move || {
        let status = reader.status();
        let metrics = reader.metrics_text();
        let _ = tx.send((status.completed, metrics));
    });
    let answered = rx.recv_timeout(Duration::from_secs(10));
    *backend.stuck.lock().unwrap() = false;
    backend.unstuck.notify_all();
    let (completed, metrics) = answered.expect("status waited for a stuck device");
    assert_eq!(completed, 1);
    assert!(metrics.contains("cuzk_proofs_completed_total"), "{metrics}");
    e.shutdown(Duration::from_secs(5));
}

/// The CPU backend posing as a device that has failed three times, twice recovered on the CPU,
/// and held 5 MiB at most.
#[derive(Debug, Default)]
struct WornDevice {
    cpu: CpuProofBackend,
}

impl ProofBackend for WornDevice {
    fn device(&self) -> String {
        "worn0".into()
    }

    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        self.cpu.prove_partition(params, input, ctx, partition)
    }

    fn memory(&self) -> Option<cuzk_engine::DeviceMemory> {
        Some(cuzk_engine::DeviceMemory {
            total_bytes: 64 << 20,
            peak_in_use_bytes: 5 << 20,
            ..Default::default()
        })
    }

    fn counters(&self) -> cuzk_engine::BackendCounters {
        cuzk_engine::BackendCounters {
            device_failures: 3,
            cpu_fallbacks: 2,
        }
    }
}

/// The metrics are valid Prometheus text, and carry every family: stage histograms by kind and
/// stage up to an hour, each worker's busy seconds, each device's failures, CPU fallbacks and
/// peak memory.
#[test]
fn metrics_are_valid_text_with_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let backends: Vec<Arc<dyn ProofBackend>> = vec![
        Arc::new(WornDevice::default()),
        Arc::new(CpuProofBackend::new(true)),
    ];
    let e = Engine::start(common::config(dir.path()), backends, None).unwrap();
    let id = e.submit(JobRequest::synthetic(6, 71, 1)).unwrap().job_id;
    assert_eq!(e.await_job(&id, WAIT).unwrap().state, JobState::Completed);
    let text = e.metrics_text();
    let samples: std::collections::HashMap<String, f64> = cuzk_engine::parse_exposition(&text)
        .unwrap_or_else(|why| panic!("{why}\n{text}"))
        .into_iter()
        .collect();
    let get = |series: &str| {
        *samples
            .get(series)
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    let h = "cuzk_stage_duration_seconds";
    for stage in ["queue_wait", "param_load", "synthesis", "proving", "total"] {
        let labels = format!("kind=\"synthetic\",stage=\"{stage}\"");
        assert_eq!(get(&format!("{h}_count{{{labels}}}")), 1.0);
        assert_eq!(get(&format!("{h}_bucket{{{labels},le=\"3600\"}}")), 1.0);
        assert_eq!(get(&format!("{h}_bucket{{{labels},le=\"+Inf\"}}")), 1.0);
    }
    let busy: f64 = ["worn0\",worker=\"0", "cpu\",worker=\"1"]
        .iter()
        .map(|w| get(&format!("cuzk_worker_busy_seconds_total{{device=\"{w}\"}}")))
        .sum();
    assert!(busy > 0.0, "a job ran, yet no worker was busy:\n{text}");
    assert_eq!(get("cuzk_device_failures_total{device=\"worn0\"}"), 3.0);
    assert_eq!(get("cuzk_device_failures_total{device=\"cpu\"}"), 0.0);
    assert_eq!(get("cuzk_cpu_fallbacks_total{device=\"worn0\"}"), 2.0);
    assert_eq!(
        get("cuzk_peak_vram_bytes{device=\"worn0\"}"),
        (5 << 20) as f64
    );
    if cfg!(target_os = "linux") {
        assert!(get("cuzk_peak_rss_bytes") > 0.0);
    }
    for family in [
        "# TYPE cuzk_stage_duration_seconds histogram",
        "# TYPE cuzk_worker_busy_seconds_total counter",
        "# TYPE cuzk_device_failures_total counter",
        "# TYPE cuzk_cpu_fallbacks_total counter",
        "# TYPE cuzk_peak_vram_bytes gauge",
    ] {
        assert!(text.lines().any(|l| l == family), "no {family:?}");
    }
    e.shutdown(Duration::from_secs(5));
}
