//! The daemon as a subprocess on a temporary folder, a client of it, and the checks of its
//! proofs (filecoin-proofs' verifiers for the Filecoin kinds, the synthetic circuit's key).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cuzk_daemon::client::Client;
use cuzk_daemon::engine::synthetic::SyntheticInput;
use cuzk_daemon::engine::JobRequest;
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus};
use cuzk_daemon::service::wire_request;
use cuzk_filecoin::filecoin_proofs::{self, PublicReplicaInfo, SectorShape2KiB};
use cuzk_filecoin::post::{post_config, PostKind};
use cuzk_filecoin::RegisteredSealProof;

pub const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");

/// The shared 2 KiB parameter folder (the one `cuzk prove` and cuzk-filecoin's tests use),
/// where filecoin-proofs' verifiers read the verifying keys.
pub fn filecoin_params_dir() -> PathBuf {
    let dir = cuzk_filecoin::params::test_params_dir().expect("CUZK_CACHE_DIR or HOME");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    dir
}

/// A daemon process; killed when dropped.
pub struct Daemon {
    pub child: Child,
    pub dir: PathBuf,
    pub addr: String,
    pub status_url: Option<String>,
}

/// The config file of a test daemon in `dir`, with `extra` TOML appended to `[daemon]`'s
/// defaults (extra sections may follow).
pub fn write_config(dir: &Path, daemon_extra: &str, rest: &str) -> PathBuf {
    let config = format!(
        "[daemon]\ndata_dir = \"{data}\"\nshutdown_grace_secs = 5\nallow_synthetic = true\n\
         {daemon_extra}\n\
         [srs]\nparam_cache = \"{params}\"\ngenerate_test_params = true\n\
         [logging]\nlevel = \"warn\"\n{rest}\n",
        data = dir.join("data").display(),
        params = filecoin_params_dir().display(),
    );
    let path = dir.join("cuzk.toml");
    std::fs::write(&path, config).unwrap();
    path
}

impl Daemon {
    /// Starts `cuzk daemon --config <dir>/cuzk.toml` and waits (at most 120 s) until it
    /// serves.
    pub fn start(dir: &Path) -> Daemon {
        let child = Command::new(env!("CARGO_BIN_EXE_cuzk"))
            .args(["daemon", "--config"])
            .arg(dir.join("cuzk.toml"))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning cuzk daemon");
        let endpoints = dir.join("data/daemon.json");
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut child = child;
        loop {
            if let Ok(text) = std::fs::read_to_string(&endpoints) {
                if let Ok(e) = serde_json::from_str::<cuzk_daemon::server::Endpoints>(&text) {
                    if e.pid == child.id() {
                        return Daemon {
                            child,
                            dir: dir.to_path_buf(),
                            addr: e.listen,
                            status_url: e.status_url,
                        };
                    }
                }
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the daemon exited before serving: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not start in 120 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub async fn client(&self) -> Client {
        cuzk_daemon::client::connect(&self.addr, None)
            .await
            .expect("connecting")
    }

    /// SIGKILL, and reap.
    pub fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, and wait (at most 60 s) for a clean exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the daemon did not stop in 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Submits `r`, returning the job id.
pub async fn submit(c: &mut Client, r: proto::SubmitProofRequest) -> String {
    c.submit_proof(r).await.expect("submit").into_inner().job_id
}

/// Awaits `job_id` with no limit.
pub async fn await_job(c: &mut Client, job_id: &str) -> proto::AwaitProofResponse {
    c.await_proof(proto::AwaitProofRequest {
        job_id: job_id.to_string(),
        timeout_ms: 0,
    })
    .await
    .expect("await")
    .into_inner()
}

/// Submits `r` and awaits it.
pub async fn run(c: &mut Client, r: proto::SubmitProofRequest) -> proto::AwaitProofResponse {
    let id = submit(c, r).await;
    await_job(c, &id).await
}

/// Asserts a result is COMPLETED.
pub fn completed(r: &proto::AwaitProofResponse) {
    assert_eq!(
        r.status,
        AwaitStatus::Completed as i32,
        "job {} did not complete: {}",
        r.job_id,
        r.error_message
    );
}

/// Checks a synthetic proof (its partitions' 192-byte proofs) against the key the daemon made
/// in `data_dir`.
pub fn verify_synthetic(data_dir: &Path, log_size: u32, seed: u64, proof: &[u8]) {
    let vk_path = data_dir.join(format!("params/cuzk-synthetic-{log_size}-seed0.vk"));
    let vk = cuzk_groth16::VerifyingKey::read(std::fs::File::open(&vk_path).unwrap()).unwrap();
    let pvk = cuzk_groth16::prepare_verifying_key(&vk);
    assert!(
        !proof.is_empty() && proof.len() % 192 == 0,
        "{} proof bytes",
        proof.len()
    );
    let input = SyntheticInput {
        log_size,
        seed,
        partitions: (proof.len() / 192) as u32,
    };
    for (k, bytes) in proof.chunks(192).enumerate() {
        let part = input.partition(k as u32);
        let p = cuzk_groth16::Proof::from_bytes(bytes).expect("192 proof bytes");
        assert!(
            cuzk_groth16::verify_proof(&pvk, &p, &part.public_inputs()).unwrap(),
            "synthetic proof (2^{log_size}, seed {seed}, partition {k}) does not verify"
        );
    }
}

/// A synthetic request.
pub fn synthetic(log_size: u32, seed: u64, partitions: u32) -> proto::SubmitProofRequest {
    wire_request(JobRequest::synthetic(log_size, seed, partitions))
}

fn json(file: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(Path::new(TESTDATA).join(file)).unwrap()).unwrap()
}

fn hex32(v: &serde_json::Value) -> [u8; 32] {
    cuzk_filecoin::jobs::decode_hex32("a 32-byte value", v.as_str().unwrap()).unwrap()
}

/// The built-in 2 KiB requests (testdata/filecoin/).
pub fn porep_request() -> proto::SubmitProofRequest {
    let c1 = std::fs::read(Path::new(TESTDATA).join("porep-2KiB.c1.json")).unwrap();
    let mut r = JobRequest::porep(c1, 1000, 1, 5);
    r.sector_size = 2048;
    wire_request(r)
}

/// The built-in PoRep request with one digit of its first data leaf changed: well-formed
/// input that does not satisfy the circuit.
pub fn tampered_porep_request() -> proto::SubmitProofRequest {
    use cuzk_filecoin::jobs::{decode_base64, encode_base64};
    let mut r = porep_request();
    let mut wrapper: serde_json::Value = serde_json::from_slice(&r.vanilla_proof).unwrap();
    let inner = decode_base64("Phase1Out", wrapper["Phase1Out"].as_str().unwrap()).unwrap();
    let raw = String::from_utf8(inner).unwrap();
    let at = raw.find("\"leaf\":[").unwrap();
    let digits = raw[at..].find(|c: char| c.is_ascii_digit()).unwrap() + at;
    let end = raw[digits..].find(|c: char| !c.is_ascii_digit()).unwrap() + digits;
    let old: u32 = raw[digits..end].parse().unwrap();
    let new = format!("{}{}{}", &raw[..digits], (old + 1) % 100, &raw[end..]);
    wrapper["Phase1Out"] = serde_json::Value::String(encode_base64(new.as_bytes()));
    r.vanilla_proof = serde_json::to_vec(&wrapper).unwrap();
    r
}

pub fn post_request(kind: proto::ProofKind) -> proto::SubmitProofRequest {
    let (file, kind) = if kind == proto::ProofKind::WinningPost {
        ("winning-2KiB.json", PostKind::Winning)
    } else {
        ("window-2KiB.json", PostKind::Window)
    };
    let text = std::fs::read_to_string(Path::new(TESTDATA).join(file)).unwrap();
    let file = cuzk_filecoin::PostJobFile::parse(&text).unwrap();
    wire_request(JobRequest::post(file, kind).unwrap())
}

pub fn snap_request() -> proto::SubmitProofRequest {
    let text = std::fs::read_to_string(Path::new(TESTDATA).join("snap-2KiB.json")).unwrap();
    let file = cuzk_filecoin::SnapJobFile::parse(&text).unwrap();
    wire_request(JobRequest::snap(file).unwrap())
}

/// filecoin-proofs' `verify_seal` on the built-in sector's proof.
pub fn verify_porep(proof: &[u8]) {
    filecoin_params_dir();
    let m = json("porep-2KiB.meta.json");
    let config = RegisteredSealProof::STACKED_DRG_2KIB_V1_1.porep_config();
    let ok = filecoin_proofs::verify_seal::<SectorShape2KiB>(
        &config,
        hex32(&m["comm_r"]),
        hex32(&m["comm_d"]),
        cuzk_filecoin::prover_id(1000),
        1u64.into(),
        hex32(&m["ticket"]),
        hex32(&m["seed"]),
        proof,
    )
    .unwrap();
    assert!(ok, "verify_seal rejects the daemon's proof");
}

/// filecoin-proofs' `verify_winning_post` / `verify_window_post`.
pub fn verify_post(kind: PostKind, proof: &[u8]) {
    filecoin_params_dir();
    let v = json(match kind {
        PostKind::Winning => "winning-2KiB.json",
        PostKind::Window => "window-2KiB.json",
    });
    let config = post_config(kind, 2048).unwrap();
    let replica = PublicReplicaInfo::new(hex32(&v["comm_r"])).unwrap();
    let sector = v["sector_number"].as_u64().unwrap().into();
    let prover_id = cuzk_filecoin::prover_id(v["miner_id"].as_u64().unwrap());
    let randomness = hex32(&v["randomness"]);
    let ok = match kind {
        PostKind::Winning => filecoin_proofs::verify_winning_post::<SectorShape2KiB>(
            &config,
            &randomness,
            &[(sector, replica)],
            prover_id,
            proof,
        ),
        PostKind::Window => filecoin_proofs::verify_window_post::<SectorShape2KiB>(
            &config,
            &randomness,
            &[(sector, replica)].into_iter().collect(),
            prover_id,
            proof,
        ),
    }
    .unwrap();
    assert!(ok, "filecoin-proofs rejects the daemon's {kind:?} proof");
}

/// filecoin-proofs' `verify_empty_sector_update_proof`.
pub fn verify_snap(proof: &[u8]) {
    filecoin_params_dir();
    let v = json("snap-2KiB.json");
    let config = RegisteredSealProof::STACKED_DRG_2KIB_V1_1.porep_config();
    let ok = filecoin_proofs::verify_empty_sector_update_proof::<SectorShape2KiB>(
        &config,
        proof,
        hex32(&v["comm_r_old"]),
        hex32(&v["comm_r_new"]),
        hex32(&v["comm_d_new"]),
    )
    .unwrap();
    assert!(
        ok,
        "verify_empty_sector_update_proof rejects the daemon's proof"
    );
}
