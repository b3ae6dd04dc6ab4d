//! The daemon end to end: `cuzk daemon` as a subprocess on a temporary folder, driven over its
//! unix socket (or loopback TCP) by the Rust client. Every kind proves and verifies; priorities
//! order work; a `kill -9` loses no accepted job and runs none twice; bad input fails only its
//! own request; 64 concurrent clients all get their proofs. Every wait is bounded.

#![cfg(feature = "daemon")]

mod daemon_fleet;
mod daemon_support;

use std::time::{Duration, Instant};

use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus, ProofKind};
use cuzk_daemon::tonic::Code;
use cuzk_filecoin::post::PostKind;
use daemon_support::*;

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

async fn status(c: &mut cuzk_daemon::client::Client) -> proto::GetStatusResponse {
    c.get_status(proto::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner()
}

/// Waits (at most 60 s) until a job is running.
async fn until_running(c: &mut cuzk_daemon::client::Client) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if status(c).await.queues.iter().any(|q| q.in_progress > 0) {
            return;
        }
        assert!(Instant::now() < deadline, "no job started in 60 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_kind_proves_and_verifies() {
    let tmp = tempdir();
    write_config(tmp.path(), "", "");
    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let data = tmp.path().join("data");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data), 0o700, "the data folder is the daemon's own");
        assert_eq!(
            mode(&data.join("cuzk.sock")),
            0o660,
            "the socket is owner and group only"
        );
    }
    reflection_lists_the_services(&d.addr).await;

    // The synthetic kind: the first proof loads (here: makes) the parameters, the second
    // finds them hot and reports no load time.
    let first = run(&mut c, synthetic(8, 1, 2)).await;
    completed(&first);
    verify_synthetic(&data, 8, 1, &first.proof);
    assert!(
        first.srs_load_ms > 0,
        "the first proof makes and loads the parameters: {first:?}"
    );
    let second = c
        .prove(proto::ProveRequest {
            submit: Some(synthetic(8, 7, 1)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    completed(&second);
    verify_synthetic(&data, 8, 7, &second.proof);
    assert_eq!(second.srs_load_ms, 0, "hot parameters cost no load time");

    // The Filecoin kinds at 2 KiB, submitted together.
    let jobs = [
        ("porep", submit(&mut c, porep_request()).await),
        (
            "winning",
            submit(&mut c, post_request(ProofKind::WinningPost)).await,
        ),
        (
            "window",
            submit(&mut c, post_request(ProofKind::WindowPostPartition)).await,
        ),
        ("snap", submit(&mut c, snap_request()).await),
    ];
    for (kind, id) in jobs {
        let r = await_job(&mut c, &id).await;
        completed(&r);
        assert!(r.total_ms >= r.synthesis_ms + r.proving_ms, "{r:?}");
        // No device time on the CPU: gpu_compute_ms is the devices' own (event-timed) time.
        assert_eq!(r.gpu_compute_ms, 0, "{r:?}");
        match kind {
            "porep" => verify_porep(&r.proof),
            "winning" => verify_post(PostKind::Winning, &r.proof),
            "window" => verify_post(PostKind::Window, &r.proof),
            _ => verify_snap(&r.proof),
        }
    }
    let s = status(&mut c).await;
    assert_eq!(s.total_proofs_completed, 6);
    assert_eq!(s.total_proofs_failed, 0);
    assert!(s
        .loaded_srs
        .iter()
        .any(|p| p.circuit_id == "porep-2k" && p.tier == proto::srs_status::Tier::Hot as i32));

    // The HTTP status listener is off by default; metrics come over gRPC.
    let m = c
        .get_metrics(proto::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    assert!(
        m.contains("cuzk_proofs_completed_total{kind=\"porep\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("cuzk_proofs_completed_total{kind=\"synthetic\"} 2"),
        "{m}"
    );
}

/// Server reflection (what grpcurl uses) lists the proving, health and reflection services.
async fn reflection_lists_the_services(addr: &str) {
    use cuzk_daemon::tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use cuzk_daemon::tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use cuzk_daemon::tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use cuzk_daemon::tonic_reflection::pb::v1::ServerReflectionRequest;
    let channel = cuzk_daemon::client::channel(addr).await.unwrap();
    let mut r = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = r
        .server_reflection_info(cuzk_daemon::tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = stream.message().await.unwrap().expect("one answer");
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("not a service list: {answer:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for name in ["cuzk.v1.ProvingEngine", "grpc.health.v1.Health"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} missing from {names:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_journals_the_running_job_and_the_restart_finishes_it() {
    let tmp = tempdir();
    write_config(tmp.path(), "", "");
    // One second of grace: the long job is stopped at a partition boundary and journaled.
    let config = tmp.path().join("cuzk.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("shutdown_grace_secs = 5", "shutdown_grace_secs = 1"),
    )
    .unwrap();
    let mut d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let long = submit(&mut c, synthetic(10, 0, 120)).await;
    until_running(&mut c).await;
    let queued = submit(&mut c, synthetic(8, 1, 1)).await;
    drop(c);
    let exit = d.terminate();
    assert!(exit.success(), "{exit}");

    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let data = tmp.path().join("data");
    for (id, log, seed) in [(&long, 10, 0), (&queued, 8, 1)] {
        let r = await_job(&mut c, id).await;
        completed(&r);
        verify_synthetic(&data, log, seed, &r.proof);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pre_compiled_circuits_give_proofs_that_verify() {
    let tmp = tempdir();
    write_config(tmp.path(), "", "[pce]\nenabled = true\n");
    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let data = tmp.path().join("data");
    // The first job of each circuit records it; the next ones synthesise from the witness.
    for seed in [1, 2] {
        let r = run(&mut c, synthetic(8, seed, 2)).await;
        completed(&r);
        verify_synthetic(&data, 8, seed, &r.proof);
    }
    for (kind, post) in [
        (ProofKind::WinningPost, PostKind::Winning),
        (ProofKind::WindowPostPartition, PostKind::Window),
    ] {
        let r = run(&mut c, post_request(kind)).await;
        completed(&r);
        verify_post(post, &r.proof);
    }
    let files: Vec<String> = std::fs::read_dir(data.join("pce"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 3, "one file per circuit: {files:?}");
    assert!(
        files.iter().any(|f| f == "cuzk-synthetic-8.pce"),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("proof-of-spacetime-fallback")),
        "{files:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn critical_job_behind_twenty_normal_ones_starts_next() {
    let tmp = tempdir();
    write_config(tmp.path(), "", "[scheduler]\ngroup_window = 0\n");
    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    // A long job holds the one worker while the queue fills.
    let blocker = submit(&mut c, synthetic(10, 0, 60)).await;
    until_running(&mut c).await;
    let mut normal = Vec::new();
    for seed in 1..=20 {
        normal.push(submit(&mut c, synthetic(8, seed, 1)).await);
    }
    let mut critical = synthetic(8, 100, 1);
    critical.priority = proto::Priority::Critical as i32;
    let r = c.submit_proof(critical).await.unwrap().into_inner();
    assert_eq!(r.queue_position, 0, "CRITICAL goes to the front");
    let still = c
        .await_proof(proto::AwaitProofRequest {
            job_id: blocker.clone(),
            timeout_ms: 1,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        still.status,
        AwaitStatus::Timeout as i32,
        "the blocker ended before the queue was filled; the test proves nothing"
    );
    let crit = await_job(&mut c, &r.job_id).await;
    completed(&crit);
    let first_normal_start = {
        let mut min = u64::MAX;
        for id in &normal {
            let n = await_job(&mut c, id).await;
            completed(&n);
            min = min.min(n.started_unix_ms);
        }
        min
    };
    let b = await_job(&mut c, &blocker).await;
    completed(&b);
    assert!(b.finished_unix_ms <= crit.started_unix_ms);
    assert!(
        crit.finished_unix_ms <= first_normal_start,
        "a NORMAL job started ({first_normal_start}) before the CRITICAL one ended ({})",
        crit.finished_unix_ms
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_loses_no_accepted_job_and_runs_none_twice() {
    let tmp = tempdir();
    // Every job's inputs in a spool file, so one can be damaged.
    write_config(
        tmp.path(),
        "spool_threshold = \"0\"",
        "[scheduler]\ngroup_window = 0\n",
    );
    let data = tmp.path().join("data");
    let mut d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let mut jobs = Vec::new();
    // One job running when the daemon dies, six pending; the last one's spool file is
    // damaged while the daemon is down.
    let mut r = synthetic(10, 0, 40);
    r.request_id = "crash-0".into();
    jobs.push((submit(&mut c, r).await, 0u64));
    until_running(&mut c).await;
    for i in 1..=6u64 {
        let mut r = synthetic(8, 10 * i, 1);
        r.request_id = format!("crash-{i}");
        jobs.push((submit(&mut c, r).await, 10 * i));
    }
    let s = status(&mut c).await;
    assert_eq!(
        s.total_proofs_completed, 0,
        "the running job ended before the kill"
    );
    d.kill9();
    drop(c);

    let damaged = &jobs[6].0;
    let spool = data.join(format!("spool/{damaged}.job"));
    let bytes = std::fs::read(&spool).unwrap();
    std::fs::write(&spool, &bytes[..bytes.len() / 2]).unwrap();

    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    // The same request id names the same job after the restart.
    let mut again = synthetic(8, 30, 1);
    again.request_id = "crash-3".into();
    assert_eq!(submit(&mut c, again).await, jobs[3].0);
    for (i, (id, seed)) in jobs.iter().enumerate() {
        let r = await_job(&mut c, id).await;
        if i == 6 {
            assert_eq!(r.status, AwaitStatus::Failed as i32, "{r:?}");
            assert!(
                r.error_message.contains("damaged") && r.error_message.contains(damaged.as_str()),
                "{}",
                r.error_message
            );
        } else {
            completed(&r);
            let log = if i == 0 { 10 } else { 8 };
            verify_synthetic(&data, log, *seed, &r.proof);
        }
    }
    // Exactly once: the restarted daemon ran each surviving job one time.
    let s = status(&mut c).await;
    assert_eq!(s.total_proofs_completed, 6);
    assert_eq!(s.total_proofs_failed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_input_fails_its_own_request_and_the_daemon_keeps_serving() {
    let tmp = tempdir();
    write_config(tmp.path(), "max_message_size = \"1MiB\"", "");
    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let data = tmp.path().join("data");

    // Refused at submission, with the code and a message naming the cause.
    let mut unknown_kind = synthetic(8, 1, 1);
    unknown_kind.proof_kind = 77;
    let mut unspecified = synthetic(8, 1, 1);
    unspecified.proof_kind = 0;
    let mut bad_synthetic = synthetic(8, 1, 1);
    bad_synthetic.vanilla_proof = b"{\"log_size\": 99, \"seed\": 1}".to_vec();
    let mut wrong_size = post_request(ProofKind::WinningPost);
    wrong_size.sector_size = 8 << 20;
    let mut unknown_registered = post_request(ProofKind::WinningPost);
    unknown_registered.registered_proof = 42;
    let mut no_inputs = post_request(ProofKind::WindowPostPartition);
    no_inputs.vanilla_proofs.clear();
    let mut oversized = synthetic(8, 1, 1);
    oversized.vanilla_proof = vec![b' '; 2 << 20];
    // Inputs are checked when they arrive, not when the job runs.
    let c1 = porep_request().vanilla_proof;
    let mut truncated = porep_request();
    truncated.vanilla_proof = c1[..c1.len() / 2].to_vec();
    let mut random = porep_request();
    random.vanilla_proof = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let mut other_miner = porep_request();
    other_miner.miner_id = 1001;
    let mut short_comm = snap_request();
    short_comm.comm_r_new.truncate(31);
    let mut too_many = post_request(ProofKind::WinningPost);
    too_many.vanilla_proofs.push(vec![7; 100]);
    let refused = [
        (unknown_kind, Code::InvalidArgument, "unknown proof kind"),
        (unspecified, Code::InvalidArgument, "unknown proof kind"),
        (bad_synthetic, Code::InvalidArgument, "log_size"),
        (wrong_size, Code::InvalidArgument, "does not match"),
        (unknown_registered, Code::InvalidArgument, "registered"),
        (no_inputs, Code::InvalidArgument, "vanilla_proofs"),
        (oversized, Code::ResourceExhausted, "limit"),
        (truncated, Code::InvalidArgument, "JSON"),
        (random, Code::InvalidArgument, "C1 output"),
        (
            other_miner,
            Code::InvalidArgument,
            "belongs to another miner",
        ),
        (
            short_comm,
            Code::InvalidArgument,
            "comm_r_new must be 32 bytes",
        ),
        (too_many, Code::InvalidArgument, "number of vanilla proofs"),
    ];
    for (request, code, text) in refused {
        let e = c.submit_proof(request).await.unwrap_err();
        assert_eq!(e.code(), code, "{e:?}");
        assert!(
            e.message().contains(text),
            "{:?} lacks {text:?}",
            e.message()
        );
        // The daemon answers the next request.
        let ok = run(&mut c, synthetic(6, 2, 1)).await;
        completed(&ok);
    }

    // Accepted, then failed with a message naming the cause: what only proving finds.
    let mut garbage_post = post_request(ProofKind::WinningPost);
    garbage_post.vanilla_proofs = vec![vec![7; 100]];
    let mut wrong_randomness = post_request(ProofKind::WinningPost);
    wrong_randomness.randomness[0] ^= 1;
    let failed = [
        (garbage_post, "vanilla"),
        (wrong_randomness, "vanilla proofs failed to verify"),
        (tampered_porep_request(), "not satisfied"),
    ];
    for (request, text) in failed {
        let r = run(&mut c, request).await;
        assert_eq!(r.status, AwaitStatus::Failed as i32, "{r:?}");
        assert!(
            r.error_message.contains(text),
            "{:?} lacks {text:?}",
            r.error_message
        );
        assert!(r.proof.is_empty());
    }

    // Unknown ids.
    for e in [
        c.await_proof(proto::AwaitProofRequest {
            job_id: "job-nope".into(),
            timeout_ms: 10,
        })
        .await
        .unwrap_err(),
        c.cancel_proof(proto::CancelProofRequest {
            job_id: "job-nope".into(),
        })
        .await
        .unwrap_err(),
    ] {
        assert_eq!(e.code(), Code::NotFound);
    }
    let e = c
        .preload_srs(proto::PreloadSrsRequest {
            circuit_id: "porep-3k".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);

    let ok = run(&mut c, synthetic(6, 3, 1)).await;
    completed(&ok);
    verify_synthetic(&data, 6, 3, &ok.proof);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_clients_each_get_their_proof_once() {
    let tmp = tempdir();
    write_config(tmp.path(), "", "[gpus]\ncpu_workers = 2\n");
    let d = Daemon::start(tmp.path());
    let data = tmp.path().join("data");
    let mut tasks = Vec::new();
    for i in 0..64u64 {
        let addr = d.addr.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = cuzk_daemon::client::connect(&addr, None).await.unwrap();
            let mut r = synthetic(6, 1000 + i, 1);
            r.request_id = format!("load-{i}");
            let id = submit(&mut c, r.clone()).await;
            // Submitting again is idempotent.
            assert_eq!(submit(&mut c, r).await, id);
            (i, id.clone(), await_job(&mut c, &id).await)
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        let (i, id, r) = tokio::time::timeout(Duration::from_secs(300), t)
            .await
            .expect("a client waited 300 s")
            .unwrap();
        completed(&r);
        verify_synthetic(&data, 6, 1000 + i, &r.proof);
        assert!(ids.insert(id), "two clients got the same job");
    }
    let mut c = d.client().await;
    let s = status(&mut c).await;
    assert_eq!(s.total_proofs_completed, 64, "none lost, none duplicated");
    assert!(s.gpus.is_empty(), "CPU workers are not GPUs: {:?}", s.gpus);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_pending_and_running_jobs() {
    let tmp = tempdir();
    write_config(tmp.path(), "", "");
    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let running = submit(&mut c, synthetic(10, 0, 200)).await;
    until_running(&mut c).await;
    let pending = submit(&mut c, synthetic(8, 1, 1)).await;
    let cancel = |id: &str| proto::CancelProofRequest { job_id: id.into() };
    let r = c.cancel_proof(cancel(&pending)).await.unwrap().into_inner();
    assert!(!r.was_running);
    let r = c.cancel_proof(cancel(&running)).await.unwrap().into_inner();
    assert!(r.was_running);
    for id in [&pending, &running] {
        let r = await_job(&mut c, id).await;
        assert_eq!(r.status, AwaitStatus::Cancelled as i32, "{r:?}");
    }
    let ok = run(&mut c, synthetic(8, 2, 1)).await;
    completed(&ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_with_token_health_http_status_and_graceful_stop() {
    let tmp = tempdir();
    let token = tmp.path().join("token");
    std::fs::write(&token, "0123456789abcdef-test-token\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    write_config(
        tmp.path(),
        &format!(
            "listen = \"127.0.0.1:0\"\nstatus_listen = \"127.0.0.1:0\"\nauth_token_file = \"{}\"",
            token.display()
        ),
        "",
    );
    let mut d = Daemon::start(tmp.path());
    // No token, or the wrong one: UNAUTHENTICATED, on every service.
    for t in [None, Some("0123456789abcdef-wrong-token")] {
        let mut c = cuzk_daemon::client::connect(&d.addr, t).await.unwrap();
        let e = c.get_status(proto::GetStatusRequest {}).await.unwrap_err();
        assert_eq!(e.code(), Code::Unauthenticated);
    }
    let channel = cuzk_daemon::client::channel(&d.addr).await.unwrap();
    let mut health =
        cuzk_daemon::tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let e = health
        .check(cuzk_daemon::tonic_health::pb::HealthCheckRequest {
            service: "cuzk.v1.ProvingEngine".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let auth = cuzk_daemon::client::Auth::new(Some("0123456789abcdef-test-token")).unwrap();
    let mut authed =
        cuzk_daemon::tonic_health::pb::health_client::HealthClient::with_interceptor(channel, auth);
    let h = authed
        .check(cuzk_daemon::tonic_health::pb::HealthCheckRequest {
            service: "cuzk.v1.ProvingEngine".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        h.status,
        cuzk_daemon::tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );

    let mut c = cuzk_daemon::client::connect(&d.addr, Some("0123456789abcdef-test-token"))
        .await
        .unwrap();
    let r = c
        .prove(proto::ProveRequest {
            submit: Some(synthetic(6, 5, 1)),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    completed(&r);

    // The HTTP listener: metrics, JSON status and the page.
    let base = d.status_url.clone().expect("status_listen is set");
    for (path, needle) in [
        (
            "metrics",
            "cuzk_proofs_completed_total{kind=\"synthetic\"} 1",
        ),
        ("status", "\"completed\": 1"),
        ("", "<h1>cuzk daemon</h1>"),
        ("", "<svg"),
    ] {
        let body = http_get(&format!("{base}{path}")).await;
        assert!(body.contains(needle), "/{path} lacks {needle:?}:\n{body}");
    }

    // SIGTERM: a clean exit, the socket files gone.
    let exit = d.terminate();
    assert!(exit.success(), "{exit}");
    assert!(!tmp.path().join("data/daemon.json").exists());
}

/// A GET over a plain TCP connection (HTTP/1.0, so the server closes it).
async fn http_get(url: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut s = tokio::net::TcpStream::connect(host).await.unwrap();
    s.write_all(format!("GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    out
}
