//! The daemon as a production fleet runs it: signals during a preload, one daemon per data
//! folder, connection limits, TLS and the refusals that keep a token off the network, the
//! configuration check, and systemd's readiness protocol. Every wait is bounded.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cuzk_daemon::proto;

use crate::daemon_support::*;

/// `cuzk daemon --config FILE`, its output captured.
fn spawn_daemon(config: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--config"])
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning cuzk daemon")
}

/// Waits at most `limit` for `child` to exit.
fn wait_exit(child: &mut Child, limit: Duration) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the process did not exit in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_all(r: Option<impl std::io::Read>) -> String {
    let mut text = String::new();
    if let Some(mut r) = r {
        r.read_to_string(&mut text).unwrap();
    }
    text
}

/// Waits (at most 60 s) until `cond` holds.
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_preload_stops_cleanly_and_a_second_daemon_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(tmp.path(), "", "");
    let data = tmp.path().join("data");
    // A first run journals a job that ends.
    let mut d = Daemon::start(tmp.path());
    // The socket was bound in a private folder, given its mode and moved into place.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("cuzk.sock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o660);
        let names: Vec<String> = std::fs::read_dir(&data)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.starts_with(".cuzk-bind")),
            "{names:?}"
        );
    }
    let mut c = d.client().await;
    let done = run(&mut c, synthetic(6, 1, 1)).await;
    completed(&done);
    drop(c);
    assert!(d.terminate().success());

    // Parameters that take minutes to make: the SIGTERM comes during their preload.
    let plain = std::fs::read_to_string(&config).unwrap();
    let preloading_config = plain.replace(
        "generate_test_params = true\n",
        "generate_test_params = true\npreload = [\"synthetic-22\"]\n",
    );
    assert_ne!(plain, preloading_config);
    std::fs::write(&config, preloading_config).unwrap();
    let mut first = spawn_daemon(&config);
    let pid = first.id().to_string();
    // The lock is taken and the socket bound before the engine starts and preloads.
    until("the daemon locks its folder and binds", || {
        std::fs::read_to_string(data.join("lock")).is_ok_and(|t| t.trim() == pid)
            && data.join("cuzk.sock").exists()
    });

    // A second daemon on the same folder refuses to start and names the first one.
    let mut second = spawn_daemon(&config);
    let status = wait_exit(&mut second, Duration::from_secs(60));
    let stderr = read_all(second.stderr.take());
    assert!(!status.success(), "a second daemon started: {stderr}");
    assert!(
        stderr.contains("in use") && stderr.contains(&pid),
        "the refusal does not name the holder ({pid}): {stderr}"
    );
    assert!(
        data.join("cuzk.sock").exists(),
        "the second daemon removed the first one's socket"
    );

    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !data.join("daemon.json").exists(),
        "the preload ended before the signal; the test proves nothing"
    );
    let term = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(term.success());
    let status = wait_exit(&mut first, Duration::from_secs(60));
    let stdout = read_all(first.stdout.take());
    let stderr = read_all(first.stderr.take());
    assert!(status.success(), "{status}: {stderr}");
    assert!(stdout.contains("stopped before serving"), "{stdout}");
    assert!(
        !data.join("cuzk.sock").exists(),
        "the socket is left behind"
    );

    // The journal is intact: the next daemon still answers for the job that ended.
    std::fs::write(&config, plain).unwrap();
    let d = Daemon::start(tmp.path());
    let mut c = d.client().await;
    let again = await_job(&mut c, &done.job_id).await;
    completed(&again);
    assert_eq!(again.proof, done.proof);
}

/// Reads one HTTP/2 frame header and payload: (type, flags, payload), None at the end.
async fn read_frame(s: &mut tokio::net::TcpStream) -> Option<(u8, u8, Vec<u8>)> {
    use tokio::io::AsyncReadExt;
    let mut head = [0u8; 9];
    s.read_exact(&mut head).await.ok()?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).await.ok()?;
    Some((head[3], head[4], payload))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_drops_a_silent_peer_and_a_connection_runs_its_limit_of_requests() {
    use tokio::io::AsyncWriteExt;
    let tmp = tempfile::tempdir().unwrap();
    write_config(
        tmp.path(),
        "listen = \"127.0.0.1:0\"\nkeepalive_interval_secs = 1\nkeepalive_timeout_secs = 1\n\
         max_concurrent_streams = 1",
        "",
    );
    let d = Daemon::start(tmp.path());

    // A peer that opens an HTTP/2 connection and then answers nothing, pings included: the
    // daemon pings it and hangs up. Without keepalive it would hold the connection forever.
    let mut peer = tokio::net::TcpStream::connect(&d.addr).await.unwrap();
    peer.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    peer.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    let mut pinged = false;
    let closed = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some((kind, flags, _)) = read_frame(&mut peer).await {
            match (kind, flags & 1) {
                // The server's SETTINGS: acknowledged, so the connection is a proper one.
                (4, 0) => peer.write_all(&[0, 0, 0, 4, 1, 0, 0, 0, 0]).await.unwrap(),
                (6, 0) => pinged = true,
                _ => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "a silent peer kept its connection for 20 s");
    assert!(pinged, "the daemon closed the connection without pinging");

    // One request in flight per connection: a status call queues behind a 1.5 s wait on the
    // same connection, and not behind it on another.
    let mut c = d.client().await;
    let long = submit(&mut c, synthetic(10, 0, 200)).await;
    let mut waiting = c.clone();
    let job = long.clone();
    let start = Instant::now();
    let wait = tokio::spawn(async move {
        let r = waiting
            .await_proof(proto::AwaitProofRequest {
                job_id: job,
                timeout_ms: 1500,
            })
            .await;
        (r, start.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut other = d.client().await;
    other.get_status(proto::GetStatusRequest {}).await.unwrap();
    let other_done = start.elapsed();
    c.get_status(proto::GetStatusRequest {}).await.unwrap();
    let same_done = start.elapsed();
    let (r, wait_done) = wait.await.unwrap();
    let r = r.unwrap().into_inner();
    assert_eq!(
        r.status,
        proto::await_proof_response::Status::Timeout as i32,
        "the long job ended within 1.5 s; the test proves nothing"
    );
    assert!(
        other_done < wait_done,
        "another connection waited for the first one's request ({other_done:?}, {wait_done:?})"
    );
    assert!(
        same_done >= wait_done,
        "two requests ran at once on one connection ({same_done:?} < {wait_done:?})"
    );
    c.cancel_proof(proto::CancelProofRequest { job_id: long })
        .await
        .unwrap();
}

/// A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, in
/// `dir` (keys with mode 0600): (ca, server cert, server key, client cert, client key).
fn certificates(dir: &Path) -> [std::path::PathBuf; 5] {
    use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
    use std::os::unix::fs::PermissionsExt;
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(
        vec!["127.0.0.1".into(), "localhost".into()],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (client_cert, client_key) =
        leaf(vec!["client".into()], ExtendedKeyUsagePurpose::ClientAuth);
    let files = [
        ("ca.pem", ca.pem()),
        ("server.pem", server_cert),
        ("server.key", server_key),
        ("client.pem", client_cert),
        ("client.key", client_key),
    ];
    files.map(|(name, text)| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_serves_clients_with_a_certificate_and_no_others() {
    use cuzk_daemon::client::{connect_with, ClientTls};
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let [ca, cert, key, client_cert, client_key] = certificates(tmp.path());
    let token = tmp.path().join("token");
    std::fs::write(&token, "0123456789abcdef-tls-token\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    write_config(
        tmp.path(),
        &format!(
            "listen = \"127.0.0.1:0\"\nauth_token_file = \"{}\"\ntls_cert = \"{}\"\n\
             tls_key = \"{}\"\ntls_client_ca = \"{}\"",
            token.display(),
            cert.display(),
            key.display(),
            ca.display()
        ),
        "",
    );
    let d = Daemon::start(tmp.path());
    let token_text = Some("0123456789abcdef-tls-token");
    let full = ClientTls::read(&ca, Some((&client_cert, &client_key)), None).unwrap();
    let mut c = connect_with(&d.addr, token_text, Some(&full))
        .await
        .unwrap();
    c.get_status(proto::GetStatusRequest {}).await.unwrap();

    // Plaintext, TLS without a client certificate, and TLS trusting another CA all fail.
    let other_dir = tempfile::tempdir().unwrap();
    let [other_ca, ..] = certificates(other_dir.path());
    let no_identity = ClientTls::read(&ca, None, None).unwrap();
    let wrong_ca = ClientTls::read(&other_ca, Some((&client_cert, &client_key)), None).unwrap();
    for (what, tls) in [
        ("plaintext", None),
        ("no client certificate", Some(&no_identity)),
        ("another CA", Some(&wrong_ca)),
    ] {
        let refused = match connect_with(&d.addr, token_text, tls).await {
            Err(_) => true,
            Ok(mut c) => c.get_status(proto::GetStatusRequest {}).await.is_err(),
        };
        assert!(refused, "{what}: served");
    }

    // `cuzk client` with the matching options.
    let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["client", "--addr", &d.addr, "--tls-ca"])
        .arg(&ca)
        .arg("--tls-cert")
        .arg(&client_cert)
        .arg("--tls-key")
        .arg(&client_key)
        .arg("--token-file")
        .arg(&token)
        .arg("status")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("uptime"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn check_config_prints_a_valid_file_resolved_and_refuses_a_bad_one() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let token = tmp.path().join("token");
    std::fs::write(&token, "0123456789abcdef-check-token\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = write_config(
        tmp.path(),
        &format!(
            "listen = \"127.0.0.1:0\"\nauth_token_file = \"{}\"",
            token.display()
        ),
        "format = \"json\"",
    );
    let check = |path: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(["daemon", "--check-config"])
            .arg(path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let (ok, text) = check(&config);
    assert!(ok, "{text}");
    for needle in ["127.0.0.1", "log_json: true", "shutdown_grace", "valid"] {
        assert!(text.contains(needle), "lacks {needle:?}:\n{text}");
    }
    assert!(
        !text.contains("0123456789abcdef-check-token") && text.contains("<redacted>"),
        "{text}"
    );
    assert!(
        !tmp.path().join("data").exists(),
        "checking created the data folder"
    );

    // A public listener without TLS, and an unknown key: refused, each naming the cause.
    let public = std::fs::read_to_string(&config)
        .unwrap()
        .replace("127.0.0.1:0", "0.0.0.0:0");
    std::fs::write(&config, public).unwrap();
    let (ok, text) = check(&config);
    assert!(!ok && text.contains("insecure_plaintext"), "{text}");
    let typo = tmp.path().join("typo.toml");
    std::fs::write(&typo, "[daemon]\nlisen = \"127.0.0.1:0\"\n").unwrap();
    let (ok, text) = check(&typo);
    assert!(!ok && text.contains("lisen"), "{text}");
}

#[test]
fn systemd_hears_ready_once_serving_and_stopping_at_a_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(tmp.path(), "", "");
    let socket_path = tmp.path().join("notify");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(["daemon", "--config"])
        .arg(&config)
        .env("NOTIFY_SOCKET", &socket_path)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let receive = || {
        let mut buf = [0u8; 256];
        let n = socket.recv(&mut buf).expect("no notification in 120 s");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let first = receive();
    assert_eq!(first, "READY=1");
    assert!(
        tmp.path().join("data/daemon.json").exists(),
        "READY came before the daemon served"
    );
    let term = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert_eq!(receive(), "STOPPING=1");
    let status = wait_exit(&mut daemon, Duration::from_secs(60));
    assert!(status.success(), "{status}");
}
