//! `cuzk prove` as a user runs it: the built-in 2 KiB WindowPoSt proven on the engine, its
//! bytes written and verified, and the input mistakes a user makes refused with messages that
//! name them. The test parameters are cuzk's shared cache folder's (made there when missing).
#![cfg(feature = "filecoin")]

use std::process::{Command, Output};

fn cuzk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args(args)
        .output()
        .expect("running cuzk")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn prove_window_writes_a_verified_proof() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("proof.bin");
    let output = cuzk(&[
        "prove",
        "window",
        "--backend",
        "cpu",
        "--workers",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("backend cpu"), "{stdout}");
    assert!(stdout.contains("2 worker(s)"), "{stdout}");
    assert!(stdout.contains("verified"), "{stdout}");
    assert_eq!(std::fs::read(&out).unwrap().len(), 192);
}

#[test]
fn input_mistakes_are_refused_with_their_cause() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.json");
    std::fs::write(&job, "not json").unwrap();
    let output = cuzk(&["prove", "winning", "--input", job.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("the job file"),
        "{}",
        text(&output.stderr)
    );

    let output = cuzk(&["prove", "porep", "--c1", job.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("--miner-id is required"),
        "{}",
        text(&output.stderr)
    );

    let output = cuzk(&["prove", "snap", "--workers", "0"]);
    assert!(!output.status.success(), "no workers is no prover");
}

/// A build without CUDA says how to get one, rather than proving elsewhere than asked.
#[cfg(not(feature = "cuda"))]
#[test]
fn backend_gpu_without_cuda_names_the_feature() {
    let output = cuzk(&["prove", "window", "--backend", "gpu"]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("--features cuda"),
        "{}",
        text(&output.stderr)
    );
}
