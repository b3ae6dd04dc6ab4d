//! The daemon's costs, for `cargo xtask bench daemon`: a small proof through the daemon
//! (Prove over the unix socket: journal row and spool file synced, queue, worker, answer)
//! against the same job run by the library directly (`cuzk_engine::run::run_job`, parameters
//! hot in both); parameter load cold against hot; `SubmitProof`'s latency on an idle daemon, beside
//! a running job, and beside the same job with 1,000 clients awaiting it; and `cuzk client batch`
//! throughput. Prints a markdown table.
//!
//! `bench_daemon --cuzk PATH [--runs N] [--log-size L] [--params DIR]`

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cuzk_daemon::proto;
use cuzk_daemon::service::wire_request;
use cuzk_engine::job::JobControl;
use cuzk_engine::params::{CircuitId, ParamConfig, ParamManager};
use cuzk_engine::run::run_job;
use cuzk_engine::spool::SpoolData;
use cuzk_engine::spread::{Alone, JobSite};
use cuzk_engine::{CpuProofBackend, JobRequest};

struct Args {
    cuzk: PathBuf,
    runs: usize,
    log_size: u32,
    params: Option<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        cuzk: PathBuf::new(),
        runs: 20,
        log_size: 10,
        params: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--cuzk" => a.cuzk = value().into(),
            "--runs" => a.runs = value().parse().expect("--runs N"),
            "--log-size" => a.log_size = value().parse().expect("--log-size L"),
            "--params" => a.params = Some(value().into()),
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        a.cuzk.is_file(),
        "--cuzk PATH to the cuzk binary is required"
    );
    a
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Submits measured one after the other.
const SUBMITS: usize = 40;
/// Clients awaiting one job while submits are measured.
const WAITERS: usize = 1000;
/// Connections the waiters share (a connection carries at most `max_concurrent_streams`).
const WAITER_CONNECTIONS: usize = 4;

/// `SUBMITS` submits of small synthetic jobs, one after the other: each one's latency.
async fn submit_latencies(c: &mut cuzk_daemon::client::Client, log: u32) -> Vec<Duration> {
    let mut out = Vec::with_capacity(SUBMITS);
    for seed in 0..SUBMITS as u64 {
        let start = Instant::now();
        c.submit_proof(wire_request(JobRequest::synthetic(log, seed, 1)))
            .await
            .expect("submit");
        out.push(start.elapsed());
    }
    out
}

/// Median `SubmitProof` latency with the daemon idle, beside a long job, and beside a long job
/// that `WAITERS` clients await (each kept as a pending `AwaitProof`); each long job is cancelled
/// after.
async fn submit_under_waiters(addr: &str, log: u32) -> (Duration, Duration, Duration) {
    let mut c = cuzk_daemon::client::connect(addr, None)
        .await
        .expect("connect");
    let idle = median(submit_latencies(&mut c, log).await);
    // A job of many partitions that outlasts the measurement; cancelled once it is taken.
    let long = |seed| wire_request(JobRequest::synthetic(14, seed, 64));
    let cancel = |mut c: cuzk_daemon::client::Client, id: String| async move {
        c.cancel_proof(proto::CancelProofRequest { job_id: id })
            .await
            .expect("cancel");
    };
    let busy_job = c
        .submit_proof(long(1))
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy = median(submit_latencies(&mut c, log).await);
    cancel(c.clone(), busy_job).await;

    let awaited = c
        .submit_proof(long(2))
        .await
        .expect("submit")
        .into_inner()
        .job_id;
    let mut connections = Vec::new();
    for _ in 0..WAITER_CONNECTIONS {
        connections.push(
            cuzk_daemon::client::connect(addr, None)
                .await
                .expect("connect"),
        );
    }
    let waiters: Vec<_> = (0..WAITERS)
        .map(|i| {
            let mut w = connections[i % WAITER_CONNECTIONS].clone();
            let job_id = awaited.clone();
            tokio::spawn(async move {
                let _ = w
                    .await_proof(proto::AwaitProofRequest {
                        job_id,
                        timeout_ms: 0,
                    })
                    .await;
            })
        })
        .collect();
    // Every waiter's request reaches the daemon before the measurement.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let under = median(submit_latencies(&mut c, log).await);
    assert!(
        waiters.iter().all(|w| !w.is_finished()),
        "the awaited job ended before the measurement did"
    );
    cancel(c.clone(), awaited).await;
    for w in waiters {
        let _ = w.await;
    }
    (idle, busy, under)
}

fn main() {
    let a = args();
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = a.log_size;

    // The library directly: parameters made and leased once, then the job's runs.
    let manager = ParamManager::new(ParamConfig {
        filecoin_dir: tmp.path().join("unused"),
        synthetic_dir: tmp.path().join("direct-params"),
        generate_test_params: true,
        budget_bytes: u64::MAX,
    });
    let (_lease, _) = manager.acquire(CircuitId::Synthetic(log)).expect("params");
    let backend = CpuProofBackend::new(true);
    let request = JobRequest::synthetic(log, 1, 1);
    let data = SpoolData {
        vanilla_proof: request.vanilla_proof.clone(),
        vanilla_proofs: Vec::new(),
    };
    let control = std::sync::Arc::new(JobControl::default());
    let site = JobSite {
        job_id: "direct",
        backend: &backend,
        helpers: &Alone,
        control: &control,
        ctx: Default::default(),
        synthesis_threads: 1,
    };
    let direct_run = || {
        let start = Instant::now();
        run_job(&request, &data, &manager, None, site).expect("direct proof");
        start.elapsed()
    };
    direct_run();

    // The daemon.
    let data_dir = tmp.path().join("data");
    let params = a
        .params
        .clone()
        .unwrap_or_else(|| tmp.path().join("filecoin"));
    std::fs::write(
        tmp.path().join("cuzk.toml"),
        format!(
            "[daemon]\ndata_dir = \"{}\"\nallow_synthetic = true\n[srs]\nparam_cache = \"{}\"\ngenerate_test_params = true\n[logging]\nlevel = \"warn\"\n",
            data_dir.display(),
            params.display()
        ),
    )
    .expect("config");
    let mut daemon = Command::new(&a.cuzk)
        .args(["daemon", "--config"])
        .arg(tmp.path().join("cuzk.toml"))
        .stdout(Stdio::null())
        .spawn()
        .expect("cuzk daemon");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !data_dir.join("daemon.json").exists() {
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = format!("unix://{}", data_dir.join("cuzk.sock").display());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (direct, through, cold_ms, hot_ms, porep) = rt.block_on(async {
        let mut c = cuzk_daemon::client::connect(&addr, None)
            .await
            .expect("connect");
        let prove = |mut c: cuzk_daemon::client::Client| async move {
            let start = Instant::now();
            let r = c
                .prove(proto::ProveRequest {
                    submit: Some(wire_request(JobRequest::synthetic(log, 1, 1))),
                })
                .await
                .expect("prove")
                .into_inner()
                .result
                .expect("result");
            assert_eq!(r.status, 1, "{}", r.error_message);
            start.elapsed()
        };
        prove(c.clone()).await;
        // Interleaved, so a change in the machine's load touches both alike.
        let (mut direct, mut through) = (Vec::new(), Vec::new());
        for _ in 0..a.runs {
            direct.push(direct_run());
            through.push(prove(c.clone()).await);
        }
        let preload = |mut c: cuzk_daemon::client::Client, id: String| async move {
            c.evict_srs(proto::EvictSrsRequest {
                circuit_id: id.clone(),
            })
            .await
            .expect("evict");
            let cold = c
                .preload_srs(proto::PreloadSrsRequest {
                    circuit_id: id.clone(),
                })
                .await
                .expect("preload")
                .into_inner();
            let hot = c
                .preload_srs(proto::PreloadSrsRequest { circuit_id: id })
                .await
                .expect("preload")
                .into_inner();
            (cold.load_time_ms, hot.load_time_ms)
        };
        let (cold, hot) = preload(c.clone(), format!("synthetic-{log}")).await;
        let porep = if a.params.is_some() {
            Some(preload(c.clone(), "porep-2k".to_string()).await)
        } else {
            None
        };
        let _ = c.get_status(proto::GetStatusRequest {}).await;
        (direct, through, cold, hot, porep)
    });
    let batch = Command::new(&a.cuzk)
        .args([
            "client",
            "--addr",
            &addr,
            "batch",
            "--count",
            "20",
            "--concurrency",
            "4",
        ])
        .args(["--kind", "synthetic", "--log-size", &log.to_string()])
        .output()
        .expect("cuzk client batch");
    // Last: its submits leave small jobs queued behind the cancelled long ones.
    let submits = rt.block_on(submit_under_waiters(&addr, log));
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status();
    let _ = daemon.wait();
    assert!(
        batch.status.success(),
        "batch failed: {}",
        String::from_utf8_lossy(&batch.stderr)
    );

    let (d, t) = (median(direct), median(through));
    let overhead = t.as_secs_f64() - d.as_secs_f64();
    println!("| measurement | value |\n|---|---|");
    println!(
        "| synthetic 2^{log} proof, medians of {}: library call / daemon `Prove` | {:.2} ms / {:.2} ms |",
        a.runs,
        ms(d),
        ms(t)
    );
    println!(
        "| daemon overhead (goal: at most 5 ms or 5%) | {:.2} ms ({:.1}%) |",
        overhead * 1e3,
        100.0 * overhead / d.as_secs_f64()
    );
    let porep = porep
        .map(|(cold, hot)| format!("; `porep-2k` {cold} / {hot} ms"))
        .unwrap_or_default();
    println!("| parameter load, cold / hot | `synthetic-{log}` {cold_ms} / {hot_ms} ms{porep} |");
    let (idle, busy, under) = submits;
    println!(
        "| `SubmitProof` median of {SUBMITS}: idle / beside a running job / beside it with \
         {WAITERS} clients awaiting it (goal: within 2× of idle) | {:.2} / {:.2} / {:.2} ms \
         ({:.2}×) |",
        ms(idle),
        ms(busy),
        ms(under),
        under.as_secs_f64() / idle.as_secs_f64()
    );
    // Its first line: proofs done, wall and throughput.
    let text = String::from_utf8_lossy(&batch.stdout);
    println!(
        "| `cuzk client batch --count 20 --concurrency 4`, synthetic 2^{log} | {} |",
        text.lines().next().unwrap_or_default()
    );
}
