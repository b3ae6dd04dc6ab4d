//! What the engine refuses, and that a refusal touches nothing it accepted: a submission beyond
//! `max_pending_jobs` or `max_spool_bytes` is `Exhausted` while the accepted jobs finish; a
//! synthetic job or preload is refused unless `allow_synthetic`, and without
//! `generate_test_params` a synthetic circuit's missing parameters are an error, not hours of
//! setup. (A full disk while accepting: `spool.rs`'s and `journal.rs`'s unit tests.)

mod common;

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use cuzk_engine::{
    BackendError, CpuProofBackend, Engine, EngineConfig, EngineError, JobRequest, JobState,
    ProofBackend,
};
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::{JobContext, PartitionInput, PartitionTiming};

const WAIT: Option<Duration> = Some(Duration::from_secs(120));

/// The CPU backend behind a gate: partitions wait until it opens, so the jobs behind the first
/// stay pending for as long as the test needs.
#[derive(Debug, Default)]
struct Gated {
    cpu: CpuProofBackend,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gated {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl ProofBackend for Gated {
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
        let open = self.open.lock().unwrap();
        drop(self.opened.wait_while(open, |open| !*open).unwrap());
        self.cpu.prove_partition(params, input, ctx, partition)
    }
}

/// An engine on one gated worker, its first job (`seed` 0) running behind the closed gate.
fn gated_engine(dir: &Path, config: impl FnOnce(&mut EngineConfig)) -> (Engine, Arc<Gated>) {
    let mut c = common::config(dir);
    config(&mut c);
    let gate = Arc::new(Gated::default());
    let e = Engine::start(c, vec![Arc::clone(&gate) as Arc<dyn ProofBackend>], None).unwrap();
    e.submit(JobRequest::synthetic(6, 0, 1)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !e.status().queues.iter().any(|q| q.in_progress > 0) {
        assert!(Instant::now() < deadline, "no job started in 60 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    (e, gate)
}

fn exhausted(e: &Engine, r: JobRequest, key: &str) {
    match e.submit(r) {
        Err(EngineError::Exhausted(what)) => assert!(what.contains(key), "{what}"),
        other => panic!("accepted beyond {key}: {other:?}"),
    }
}

/// Every job `ids` names completes.
fn all_complete(e: &Engine, ids: &[String]) {
    for id in ids {
        let out = e.await_job(id, WAIT).unwrap();
        assert_eq!(out.state, JobState::Completed, "{}", out.error);
    }
}

/// With 3 pending jobs allowed, a 4th is refused while a resubmission of an accepted request
/// is still answered; the accepted jobs all finish, and then there is room again.
#[test]
fn submissions_beyond_max_pending_jobs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (e, gate) = gated_engine(dir.path(), |c| c.max_pending_jobs = 3);
    let mut first = JobRequest::synthetic(6, 1, 1);
    first.request_id = "req-1".into();
    let mut ids = vec![e.submit(first.clone()).unwrap().job_id];
    ids.extend((2..4).map(|seed| e.submit(JobRequest::synthetic(6, seed, 1)).unwrap().job_id));
    exhausted(&e, JobRequest::synthetic(6, 4, 1), "max_pending_jobs");
    let again = e.submit(first).unwrap();
    assert!(again.existing && again.job_id == ids[0]);
    gate.open();
    all_complete(&e, &ids);
    all_complete(
        &e,
        &[e.submit(JobRequest::synthetic(6, 4, 1)).unwrap().job_id],
    );
    e.shutdown(Duration::from_secs(5));
}

/// With room for two spool files, a third is refused (inputs kept inline in the journal are not
/// counted); the accepted jobs finish, their files are removed, and there is room again.
#[test]
fn submissions_beyond_max_spool_bytes_are_refused() {
    let file = |seed| {
        let r = JobRequest::synthetic(6, seed, 1);
        cuzk_engine::spool::encoded_len(&r.vanilla_proof, &r.vanilla_proofs) as u64
    };
    let dir = tempfile::tempdir().unwrap();
    let (e, gate) = gated_engine(dir.path(), |c| {
        // `JobRequest::synthetic`'s 38-byte inputs go to files, `inline`'s 23 stay inline.
        c.spool_threshold = 30;
        // The running job's file, and two more.
        c.max_spool_bytes = file(0) + file(1) + file(2);
    });
    let ids: Vec<String> = (1..3)
        .map(|seed| e.submit(JobRequest::synthetic(6, seed, 1)).unwrap().job_id)
        .collect();
    exhausted(&e, JobRequest::synthetic(6, 3, 1), "max_spool_bytes");
    // The same job with the partition count left to its default.
    let inline = JobRequest {
        vanilla_proof: br#"{"log_size":6,"seed":3}"#.to_vec(),
        ..JobRequest::synthetic(6, 3, 1)
    };
    assert!(inline.payload_bytes() < 30 && JobRequest::synthetic(6, 3, 1).payload_bytes() >= 30);
    let inline = e.submit(inline).unwrap().job_id;
    gate.open();
    all_complete(&e, &ids);
    all_complete(&e, &[inline]);
    let spool = common::config(dir.path()).data_dir.join("spool");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(&spool).unwrap().count() > 0 {
        assert!(Instant::now() < deadline, "spool files left behind");
        std::thread::sleep(Duration::from_millis(10));
    }
    all_complete(
        &e,
        &[e.submit(JobRequest::synthetic(6, 3, 1)).unwrap().job_id],
    );
    e.shutdown(Duration::from_secs(5));
}

/// Without `allow_synthetic` a synthetic job and a synthetic preload are refused, naming the
/// key; with it but without `generate_test_params`, the missing parameters fail the job and the
/// preload, and nothing is generated.
#[test]
fn synthetic_work_needs_the_configuration_to_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.allow_synthetic = false;
    let backends = || vec![Arc::new(CpuProofBackend::new(true)) as Arc<dyn ProofBackend>];
    let e = Engine::start(config.clone(), backends(), None).unwrap();
    for refused in [
        e.submit(JobRequest::synthetic(6, 1, 1)).map(|_| ()),
        e.preload("synthetic-6").map(|_| ()),
    ] {
        match refused {
            Err(err @ EngineError::SyntheticDisabled) => {
                assert!(err.to_string().contains("allow_synthetic"), "{err}")
            }
            other => panic!("synthetic work without allow_synthetic: {other:?}"),
        }
    }
    e.shutdown(Duration::from_secs(5));

    config.allow_synthetic = true;
    config.params.generate_test_params = false;
    let e = Engine::start(config.clone(), backends(), None).unwrap();
    let id = e.submit(JobRequest::synthetic(6, 1, 1)).unwrap().job_id;
    let out = e.await_job(&id, WAIT).unwrap();
    assert_eq!(out.state, JobState::Failed);
    assert!(out.error.contains("generate_test_params"), "{}", out.error);
    assert!(matches!(
        e.preload("synthetic-6"),
        Err(EngineError::MissingParameters { .. })
    ));
    assert!(
        !config.params.synthetic_dir.exists()
            || std::fs::read_dir(&config.params.synthetic_dir)
                .unwrap()
                .next()
                .is_none(),
        "parameters were generated"
    );
    e.shutdown(Duration::from_secs(5));
}
