//! The daemon's soak test, for `cargo xtask bench daemon --soak`: many small jobs of every kind
//! from many clients while the daemon is killed (SIGKILL) and stopped (SIGTERM) and restarted on
//! the same data folder at random points; then every job is checked. Prints a markdown table on
//! stdout and exits 1 when a job was lost, duplicated or wrong.
//!
//! `daemon_soak --cuzk PATH --params DIR [--jobs 1000] [--clients 32] [--restarts 6] [--seed 1]
//! [--log-size 10] [--filecoin-every 100] [--timeout-secs 3600]`
//!
//! Job `i` is a synthetic proof (seed `i`, so every job's public inputs differ; one or two
//! partitions) unless `--filecoin-every K` makes every K-th one a Filecoin 2 KiB job, cycling
//! WinningPoSt, WindowPoSt, SnapDeals, PoRep C2 (`testdata/filecoin/`'s inputs). Its request id
//! is `soak-<seed>-<i>`. A client submits, awaits, and on any transport error or an engine
//! stopping resubmits the same request id and awaits again. The restarts happen once the
//! completed count passes points drawn from the seed, after a random delay of up to half a
//! second; they alternate SIGKILL and SIGTERM. After the clients end, the daemon is stopped
//! (SIGTERM) and started once more, and every job is read back from it.
//!
//! What counts:
//! - lost: accepted (a `SubmitProof` answered) but not COMPLETED at the end: the job is unknown,
//!   FAILED or CANCELLED, or unfinished when the time limit passed;
//! - duplicated: a request id answered with two job ids (during the run, or when resubmitted at
//!   the end), or whose proof bytes read at the end differ from those its client read;
//! - wrong: a proof that does not verify: a synthetic one against a key this process makes with
//!   the same seeded setup (the daemon's files are not used), partition by partition, with the
//!   job's own public inputs; a Filecoin one with filecoin-proofs' verifier.
//!
//! Latencies: submit is the first answered `SubmitProof` of a job; end to end runs from it to
//! the proof in the client's hands, restarts and resubmissions included.

#[cfg(feature = "daemon")]
fn main() -> anyhow::Result<()> {
    soak::main()
}

#[cfg(not(feature = "daemon"))]
fn main() {
    eprintln!("daemon_soak needs cuzk's `daemon` feature");
    std::process::exit(2);
}

#[cfg(feature = "daemon")]
mod soak {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use anyhow::{bail, ensure, Context};
    use cuzk_daemon::client::Client;
    use cuzk_daemon::engine::filecoin::filecoin_proofs::{
        self, PublicReplicaInfo, SectorShape2KiB,
    };
    use cuzk_daemon::engine::filecoin::post::{post_config, PostKind};
    use cuzk_daemon::engine::filecoin::{jobs::decode_hex32, prover_id, RegisteredSealProof};
    use cuzk_daemon::engine::params::{CircuitId, ParamConfig, ParamManager};
    use cuzk_daemon::engine::synthetic::SyntheticInput;
    use cuzk_daemon::engine::JobRequest;
    use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus};
    use cuzk_daemon::service::wire_request;
    use cuzk_daemon::tonic::Code;

    const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");

    /// The daemon is given this long to start serving or to stop.
    const START_STOP_LIMIT: Duration = Duration::from_secs(180);

    struct Args {
        cuzk: PathBuf,
        params: PathBuf,
        jobs: usize,
        clients: usize,
        restarts: usize,
        seed: u64,
        log_size: u32,
        filecoin_every: usize,
        timeout: Duration,
    }

    fn args() -> anyhow::Result<Args> {
        let mut a = Args {
            cuzk: PathBuf::new(),
            params: PathBuf::new(),
            jobs: 1000,
            clients: 32,
            restarts: 6,
            seed: 1,
            log_size: 10,
            filecoin_every: 100,
            timeout: Duration::from_secs(3600),
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            let bad = || format!("{flag} {value}");
            match flag.as_str() {
                "--cuzk" => a.cuzk = value.into(),
                "--params" => a.params = value.into(),
                "--jobs" => a.jobs = value.parse().with_context(bad)?,
                "--clients" => a.clients = value.parse().with_context(bad)?,
                "--restarts" => a.restarts = value.parse().with_context(bad)?,
                "--seed" => a.seed = value.parse().with_context(bad)?,
                "--log-size" => a.log_size = value.parse().with_context(bad)?,
                "--filecoin-every" => a.filecoin_every = value.parse().with_context(bad)?,
                "--timeout-secs" => {
                    a.timeout = Duration::from_secs(value.parse().with_context(bad)?)
                }
                other => bail!("unknown argument {other}"),
            }
        }
        ensure!(
            a.cuzk.is_file(),
            "--cuzk PATH to the cuzk binary is required"
        );
        ensure!(
            a.params.is_dir(),
            "--params DIR (the 2 KiB parameters) is required"
        );
        ensure!(
            a.jobs > 0 && a.clients > 0,
            "--jobs and --clients must be positive"
        );
        Ok(a)
    }

    /// splitmix64: the schedule's random numbers, the same for the same seed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Uniform in `lo..hi` (`hi > lo`).
        fn range(&mut self, lo: u64, hi: u64) -> u64 {
            lo + self.next() % (hi - lo)
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    enum Kind {
        Synthetic { seed: u64, partitions: u32 },
        Winning,
        Window,
        Snap,
        Porep,
    }

    impl Kind {
        fn name(self) -> &'static str {
            match self {
                Kind::Synthetic { .. } => "synthetic",
                Kind::Winning => "WinningPoSt",
                Kind::Window => "WindowPoSt",
                Kind::Snap => "SnapDeals",
                Kind::Porep => "PoRep C2",
            }
        }
    }

    /// Job `i`'s kind.
    fn plan(a: &Args) -> Vec<Kind> {
        let mut rng = Rng(a.seed ^ 0x5eed);
        let cycle = [Kind::Winning, Kind::Window, Kind::Snap, Kind::Porep];
        (0..a.jobs)
            .map(|i| {
                let k = a.filecoin_every;
                if k > 0 && i % k == k - 1 {
                    cycle[(i / k) % cycle.len()]
                } else {
                    Kind::Synthetic {
                        seed: i as u64,
                        partitions: 1 + (rng.next() % 2) as u32,
                    }
                }
            })
            .collect()
    }

    fn testdata(file: &str) -> anyhow::Result<String> {
        std::fs::read_to_string(Path::new(TESTDATA).join(file))
            .with_context(|| format!("{TESTDATA}/{file}"))
    }

    /// The requests of every Filecoin kind, read once.
    struct Inputs {
        winning: proto::SubmitProofRequest,
        window: proto::SubmitProofRequest,
        snap: proto::SubmitProofRequest,
        porep: proto::SubmitProofRequest,
    }

    impl Inputs {
        fn read() -> anyhow::Result<Self> {
            use cuzk_daemon::engine::filecoin::{PostJobFile, SnapJobFile};
            let c1 = testdata("porep-2KiB.c1.json")?.into_bytes();
            let mut porep = JobRequest::porep(c1, 1000, 1, 5);
            porep.sector_size = 2048;
            let post = |file: &str, kind| -> anyhow::Result<proto::SubmitProofRequest> {
                let file = PostJobFile::parse(&testdata(file)?)?;
                Ok(wire_request(JobRequest::post(file, kind)?))
            };
            let snap = SnapJobFile::parse(&testdata("snap-2KiB.json")?)?;
            Ok(Inputs {
                winning: post("winning-2KiB.json", PostKind::Winning)?,
                window: post("window-2KiB.json", PostKind::Window)?,
                snap: wire_request(JobRequest::snap(snap)?),
                porep: wire_request(porep),
            })
        }

        fn request(&self, kind: Kind, log_size: u32) -> proto::SubmitProofRequest {
            match kind {
                Kind::Synthetic { seed, partitions } => {
                    wire_request(JobRequest::synthetic(log_size, seed, partitions))
                }
                Kind::Winning => self.winning.clone(),
                Kind::Window => self.window.clone(),
                Kind::Snap => self.snap.clone(),
                Kind::Porep => self.porep.clone(),
            }
        }
    }

    /// The daemon process on the soak's data folder.
    struct Daemon {
        cuzk: PathBuf,
        dir: PathBuf,
        child: Child,
        starts: usize,
    }

    impl Daemon {
        fn spawn(cuzk: &Path, dir: &Path, starts: usize) -> anyhow::Result<Child> {
            let log = std::fs::File::create(dir.join(format!("daemon-{starts}.log")))?;
            let child = Command::new(cuzk)
                .args(["daemon", "--config"])
                .arg(dir.join("cuzk.toml"))
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .context("spawning cuzk daemon")?;
            let endpoints = dir.join("data/daemon.json");
            let deadline = Instant::now() + START_STOP_LIMIT;
            let mut child = child;
            loop {
                if let Ok(text) = std::fs::read_to_string(&endpoints) {
                    if let Ok(e) = serde_json::from_str::<cuzk_daemon::server::Endpoints>(&text) {
                        if e.pid == child.id() {
                            return Ok(child);
                        }
                    }
                }
                if let Some(status) = child.try_wait()? {
                    bail!(
                        "the daemon exited before serving ({status}); see {}",
                        dir.display()
                    );
                }
                ensure!(
                    Instant::now() < deadline,
                    "the daemon did not start in time"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        fn start(cuzk: &Path, dir: &Path) -> anyhow::Result<Daemon> {
            Ok(Daemon {
                cuzk: cuzk.to_path_buf(),
                dir: dir.to_path_buf(),
                child: Self::spawn(cuzk, dir, 0)?,
                starts: 1,
            })
        }

        /// SIGKILL or SIGTERM, then a new daemon on the same folder; the time until it serves.
        fn restart(&mut self, kill: bool) -> anyhow::Result<Duration> {
            let start = Instant::now();
            if kill {
                self.child.kill()?;
            } else {
                let pid = self.child.id().to_string();
                ensure!(Command::new("kill")
                    .args(["-TERM", &pid])
                    .status()?
                    .success());
            }
            let deadline = Instant::now() + START_STOP_LIMIT;
            let status = loop {
                if let Some(status) = self.child.try_wait()? {
                    break status;
                }
                ensure!(Instant::now() < deadline, "the daemon did not stop in time");
                std::thread::sleep(Duration::from_millis(10));
            };
            ensure!(
                kill || status.success(),
                "SIGTERM: the daemon exited with {status}"
            );
            self.child = Self::spawn(&self.cuzk, &self.dir, self.starts)?;
            self.starts += 1;
            Ok(start.elapsed())
        }
    }

    impl Drop for Daemon {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// What became of one job, as its client saw it.
    #[derive(Default)]
    struct Record {
        /// Every job id a `SubmitProof` of this request id answered.
        job_ids: BTreeSet<String>,
        /// The first answered `SubmitProof`'s latency.
        submit: Option<Duration>,
        /// From the first `SubmitProof` to the proof in hand.
        end_to_end: Option<Duration>,
        proof: Option<Vec<u8>>,
        /// Why the job has no proof, when it has none.
        error: Option<String>,
        /// `SubmitProof` calls after the first answered one.
        resubmits: usize,
        /// Calls that failed with a transient error.
        failed_calls: usize,
    }

    /// A job whose calls failed this many times is given up (each restart costs a few).
    const MAX_FAILED_CALLS: usize = 200;

    /// Errors a client gets while the daemon stops, is down or starts (a connection cut under a
    /// call can surface as `Internal`, an h2 error).
    fn transient(code: Code) -> bool {
        matches!(
            code,
            Code::Unavailable
                | Code::Unknown
                | Code::Internal
                | Code::Cancelled
                | Code::DeadlineExceeded
                | Code::Aborted
                | Code::ResourceExhausted
        )
    }

    async fn connect(addr: &str, deadline: Instant) -> Option<Client> {
        while Instant::now() < deadline {
            if let Ok(c) = cuzk_daemon::client::connect(addr, None).await {
                return Some(c);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Submits `request` and awaits it until it ends, resubmitting after every failure the
    /// daemon's restarts cause.
    async fn run_job(
        addr: &str,
        client: &mut Option<Client>,
        request: proto::SubmitProofRequest,
        deadline: Instant,
    ) -> Record {
        let mut r = Record::default();
        let start = Instant::now();
        let mut last_failure = String::new();
        loop {
            if Instant::now() > deadline || r.failed_calls >= MAX_FAILED_CALLS {
                r.error = Some(format!(
                    "unfinished after {} failed calls ({last_failure}) and {:.0} s",
                    r.failed_calls,
                    start.elapsed().as_secs_f64()
                ));
                return r;
            }
            if r.failed_calls > 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let Some(c) = client.as_mut() else {
                *client = connect(addr, deadline).await;
                continue;
            };
            let t = Instant::now();
            let job_id = match c.submit_proof(request.clone()).await {
                Ok(answer) => {
                    if r.submit.is_none() {
                        r.submit = Some(t.elapsed());
                    } else {
                        r.resubmits += 1;
                    }
                    let id = answer.into_inner().job_id;
                    r.job_ids.insert(id.clone());
                    id
                }
                Err(s) if transient(s.code()) => {
                    (r.failed_calls, last_failure) = (r.failed_calls + 1, s.to_string());
                    *client = None;
                    continue;
                }
                Err(s) => {
                    r.error = Some(format!("SubmitProof refused: {s}"));
                    return r;
                }
            };
            let wait = proto::AwaitProofRequest {
                job_id,
                timeout_ms: 0,
            };
            match c.await_proof(wait).await.map(|a| a.into_inner()) {
                Ok(a) if a.status == AwaitStatus::Completed as i32 => {
                    r.end_to_end = Some(start.elapsed());
                    r.proof = Some(a.proof);
                    return r;
                }
                Ok(a) if a.status == AwaitStatus::Timeout as i32 => {
                    // The engine stopped under the wait: resubmit once it is back.
                    r.failed_calls += 1;
                    last_failure = "the engine stopped".into();
                }
                Ok(a) => {
                    r.error = Some(format!("ended without a proof: {}", a.error_message));
                    return r;
                }
                Err(s) if transient(s.code()) => {
                    (r.failed_calls, last_failure) = (r.failed_calls + 1, s.to_string());
                    *client = None;
                }
                Err(s) => {
                    r.error = Some(format!("AwaitProof: {s}"));
                    return r;
                }
            }
        }
    }

    /// Checks proofs: synthetic ones against a key made here, Filecoin ones with
    /// filecoin-proofs' verifiers (which read the verifying keys from `params`).
    struct Verifier {
        synthetic: cuzk::groth16::PreparedVerifyingKey<cuzk::Bls12>,
        log_size: u32,
    }

    fn json(file: &str) -> anyhow::Result<serde_json::Value> {
        Ok(serde_json::from_str(&testdata(file)?)?)
    }

    fn hex32(v: &serde_json::Value) -> anyhow::Result<[u8; 32]> {
        let text = v.as_str().context("a hex string")?;
        Ok(decode_hex32("a 32-byte value", text)?)
    }

    impl Verifier {
        fn new(log_size: u32, dir: &Path) -> anyhow::Result<Self> {
            let manager = ParamManager::new(ParamConfig {
                filecoin_dir: dir.join("unused"),
                synthetic_dir: dir.join("checker-params"),
                generate_test_params: true,
                budget_bytes: u64::MAX,
            });
            let (lease, _) = manager.acquire(CircuitId::Synthetic(log_size))?;
            Ok(Verifier {
                synthetic: cuzk::groth16::prepare_verifying_key(&lease.params().vk),
                log_size,
            })
        }

        fn verify(&self, kind: Kind, proof: &[u8]) -> anyhow::Result<bool> {
            match kind {
                Kind::Synthetic { seed, partitions } => {
                    ensure!(
                        proof.len() == 192 * partitions as usize,
                        "{} proof bytes",
                        proof.len()
                    );
                    let input = SyntheticInput {
                        log_size: self.log_size,
                        seed,
                        partitions,
                    };
                    for (k, bytes) in proof.chunks(192).enumerate() {
                        let p = cuzk::groth16::Proof::<cuzk::Bls12>::from_bytes(bytes)?;
                        let inputs = input.partition(k as u32).public_inputs();
                        if !cuzk::groth16::verify_proof(&self.synthetic, &p, &inputs)? {
                            return Ok(false);
                        }
                    }
                    Ok(true)
                }
                Kind::Porep => {
                    let m = json("porep-2KiB.meta.json")?;
                    let config = RegisteredSealProof::STACKED_DRG_2KIB_V1_1.porep_config();
                    Ok(filecoin_proofs::verify_seal::<SectorShape2KiB>(
                        &config,
                        hex32(&m["comm_r"])?,
                        hex32(&m["comm_d"])?,
                        prover_id(1000),
                        1u64.into(),
                        hex32(&m["ticket"])?,
                        hex32(&m["seed"])?,
                        proof,
                    )?)
                }
                Kind::Winning | Kind::Window => {
                    let (post, file) = if kind == Kind::Winning {
                        (PostKind::Winning, "winning-2KiB.json")
                    } else {
                        (PostKind::Window, "window-2KiB.json")
                    };
                    let v = json(file)?;
                    let config = post_config(post, 2048)?;
                    let replica = PublicReplicaInfo::new(hex32(&v["comm_r"])?)?;
                    let sector = v["sector_number"].as_u64().context("sector_number")?.into();
                    let miner = prover_id(v["miner_id"].as_u64().context("miner_id")?);
                    let randomness = hex32(&v["randomness"])?;
                    Ok(if post == PostKind::Winning {
                        filecoin_proofs::verify_winning_post::<SectorShape2KiB>(
                            &config,
                            &randomness,
                            &[(sector, replica)],
                            miner,
                            proof,
                        )?
                    } else {
                        filecoin_proofs::verify_window_post::<SectorShape2KiB>(
                            &config,
                            &randomness,
                            &[(sector, replica)].into_iter().collect(),
                            miner,
                            proof,
                        )?
                    })
                }
                Kind::Snap => {
                    let v = json("snap-2KiB.json")?;
                    let config = RegisteredSealProof::STACKED_DRG_2KIB_V1_1.porep_config();
                    Ok(filecoin_proofs::verify_empty_sector_update_proof::<
                        SectorShape2KiB,
                    >(
                        &config,
                        proof,
                        hex32(&v["comm_r_old"])?,
                        hex32(&v["comm_r_new"])?,
                        hex32(&v["comm_d_new"])?,
                    )?)
                }
            }
        }
    }

    /// The nearest-rank percentile `p` (0-100) of `v`, in milliseconds.
    fn percentile(v: &mut [Duration], p: usize) -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort();
        let rank = (v.len() * p).div_ceil(100).max(1);
        v[rank - 1].as_secs_f64() * 1e3
    }

    pub fn main() -> anyhow::Result<()> {
        let a = args()?;
        // filecoin-proofs' verifiers read their keys from here.
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &a.params);
        let kinds = plan(&a);
        let inputs = Inputs::read()?;
        let tmp = tempfile::tempdir()?;
        let dir = tmp.path();
        let verifier = Verifier::new(a.log_size, dir)?;

        // The restart points: after `at` jobs completed, plus a delay; SIGKILL first.
        let mut rng = Rng(a.seed);
        let mut points: Vec<(usize, Duration)> = (0..a.restarts)
            .map(|_| {
                let lo = (a.jobs / 10) as u64;
                let at = rng.range(lo, (a.jobs * 9 / 10).max(a.jobs / 10 + 1) as u64);
                (at as usize, Duration::from_millis(rng.range(0, 500)))
            })
            .collect();
        points.sort();
        let kills = a.restarts.div_ceil(2);

        let data = dir.join("data");
        std::fs::write(
            dir.join("cuzk.toml"),
            format!(
                "[daemon]\ndata_dir = \"{data}\"\nshutdown_grace_secs = 2\nallow_synthetic = true\n\
                 [gpus]\ncpu_workers = 2\n\
                 [scheduler]\nmax_attempts = {attempts}\n\
                 [srs]\nparam_cache = \"{params}\"\ngenerate_test_params = true\n\
                 [logging]\nlevel = \"warn\"\n",
                data = data.display(),
                params = a.params.display(),
                attempts = kills + 2,
            ),
        )?;
        let mut daemon = Daemon::start(&a.cuzk, dir)?;
        let addr = format!("unix://{}", data.join("cuzk.sock").display());

        let rt = tokio::runtime::Runtime::new()?;
        let wall = Instant::now();
        let deadline = wall + a.timeout;
        let next = Arc::new(AtomicUsize::new(0));
        let completed = Arc::new(AtomicUsize::new(0));
        let records: Arc<Vec<Mutex<Record>>> =
            Arc::new((0..a.jobs).map(|_| Mutex::new(Record::default())).collect());
        let requests: Arc<Vec<proto::SubmitProofRequest>> = Arc::new(
            kinds
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let mut r = inputs.request(*k, a.log_size);
                    r.request_id = format!("soak-{}-{i}", a.seed);
                    r
                })
                .collect(),
        );
        let clients: Vec<_> = (0..a.clients)
            .map(|_| {
                let (next, completed, records, requests) = (
                    Arc::clone(&next),
                    Arc::clone(&completed),
                    Arc::clone(&records),
                    Arc::clone(&requests),
                );
                let addr = addr.clone();
                rt.spawn(async move {
                    let mut client = None;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= requests.len() {
                            return;
                        }
                        let r = run_job(&addr, &mut client, requests[i].clone(), deadline).await;
                        *records[i].lock().expect("record") = r;
                        completed.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();

        // The restarts, from this thread while the clients run.
        let mut downtimes = Vec::new();
        for (n, (at, delay)) in points.iter().enumerate() {
            while completed.load(Ordering::Relaxed) < *at && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(*delay);
            let kill = n % 2 == 0;
            let down = daemon.restart(kill)?;
            eprintln!(
                "soak: restart {} ({}) after {} of {} jobs; serving again after {:.0} ms",
                n + 1,
                if kill { "SIGKILL" } else { "SIGTERM" },
                completed.load(Ordering::Relaxed),
                a.jobs,
                down.as_secs_f64() * 1e3
            );
            downtimes.push(down);
        }
        rt.block_on(async {
            for c in clients {
                c.await.expect("client task");
            }
        });
        let wall = wall.elapsed();

        // The journal read back by a fresh daemon: every job by its id, and by its request id.
        daemon.restart(false)?;
        let mut lost = Vec::new();
        let mut duplicated = Vec::new();
        let mut wrong = Vec::new();
        let records: Vec<Record> = records
            .iter()
            .map(|r| std::mem::take(&mut *r.lock().expect("record")))
            .collect();
        rt.block_on(async {
            let mut c = cuzk_daemon::client::connect(&addr, None).await?;
            for (i, r) in records.iter().enumerate() {
                let rid = &requests[i].request_id;
                if r.job_ids.len() > 1 {
                    duplicated.push(format!("{rid}: job ids {:?}", r.job_ids));
                }
                let (Some(job_id), Some(proof)) = (r.job_ids.iter().next(), &r.proof) else {
                    let why = r.error.as_deref().unwrap_or("no answer");
                    lost.push(format!("{rid} ({:?}): {why}", r.job_ids));
                    continue;
                };
                let again = c
                    .await_proof(proto::AwaitProofRequest {
                        job_id: job_id.clone(),
                        timeout_ms: 1,
                    })
                    .await
                    .map(|a| a.into_inner());
                match again {
                    Ok(a) if a.status == AwaitStatus::Completed as i32 => {
                        if a.proof != *proof {
                            duplicated.push(format!("{rid}: its proof changed between reads"));
                        }
                    }
                    Ok(a) => lost.push(format!(
                        "{rid} ({job_id}): status {} at the end: {}",
                        a.status, a.error_message
                    )),
                    Err(s) => lost.push(format!("{rid} ({job_id}): {s}")),
                }
                let same = c
                    .submit_proof(requests[i].clone())
                    .await?
                    .into_inner()
                    .job_id;
                if same != *job_id {
                    duplicated.push(format!("{rid}: resubmitted, answered {same} for {job_id}"));
                }
            }
            anyhow::Ok(())
        })?;
        for (i, r) in records.iter().enumerate() {
            if let Some(proof) = &r.proof {
                match verifier.verify(kinds[i], proof) {
                    Ok(true) => {}
                    Ok(false) => wrong.push(format!("{}: does not verify", requests[i].request_id)),
                    Err(e) => wrong.push(format!("{}: {e:#}", requests[i].request_id)),
                }
            }
        }
        drop(daemon);

        let mut submit: Vec<Duration> = records.iter().filter_map(|r| r.submit).collect();
        let mut e2e: Vec<Duration> = records.iter().filter_map(|r| r.end_to_end).collect();
        let resubmits: usize = records.iter().map(|r| r.resubmits).sum();
        let mut by_kind = std::collections::BTreeMap::<&str, usize>::new();
        for k in &kinds {
            *by_kind.entry(k.name()).or_default() += 1;
        }
        let mix: Vec<String> = by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let mut downs = downtimes.clone();
        println!("| measurement | value |\n|---|---|");
        println!(
            "| jobs | {} from {} clients: {} (Filecoin 2 KiB, synthetic 2^{}) |",
            a.jobs,
            a.clients,
            mix.join(", "),
            a.log_size
        );
        println!(
            "| restarts | {} ({kills} SIGKILL, {} SIGTERM) + 1 SIGTERM before the checks; down p50 {:.0} ms, max {:.0} ms |",
            a.restarts,
            a.restarts - kills,
            percentile(&mut downs, 50),
            percentile(&mut downs, 100)
        );
        println!(
            "| lost / duplicated / wrong | **{} / {} / {}** |",
            lost.len(),
            duplicated.len(),
            wrong.len()
        );
        println!("| resubmissions after a failure | {resubmits} |");
        println!(
            "| `SubmitProof` p50 / p99 | {:.1} / {:.1} ms |",
            percentile(&mut submit, 50),
            percentile(&mut submit, 99)
        );
        println!(
            "| end to end p50 / p99 | {:.0} / {:.0} ms |",
            percentile(&mut e2e, 50),
            percentile(&mut e2e, 99)
        );
        println!(
            "| wall | {:.1} s ({:.2} jobs/s) |",
            wall.as_secs_f64(),
            a.jobs as f64 / wall.as_secs_f64()
        );
        let failures: Vec<&String> = lost.iter().chain(&duplicated).chain(&wrong).collect();
        if !failures.is_empty() {
            for f in failures.iter().take(20) {
                eprintln!("soak: {f}");
            }
            let kept = tmp.keep();
            eprintln!(
                "soak: the daemon's folder and logs are kept in {}",
                kept.display()
            );
            std::process::exit(1);
        }
        Ok(())
    }
}
