//! `cuzk bench` as a user runs it: the built-in PoRep-shaped circuit proven on the engine's
//! workers, several partitions synthesised at once ahead of them, in full and pre-compiled, two
//! proofs one after the other, every proof verified.
#![cfg(feature = "filecoin")]

use std::process::Command;

fn bench(extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_cuzk"))
        .args([
            "bench",
            "--backend",
            "cpu",
            "--log-size",
            "10",
            "--partitions",
            "3",
            "--proofs",
            "2",
            "--workers",
            "2",
            "--synthesis-threads",
            "2",
        ])
        .args(extra)
        .output()
        .expect("running cuzk");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn bench_proves_on_the_engines_workers_and_verifies() {
    let full = bench(&[]);
    assert!(full.contains("backend cpu"), "{full}");
    assert!(
        full.contains("2 at once beside the proving, at most 3 ahead"),
        "{full}"
    );
    assert!(full.contains("proofs: 2 done at"), "{full}");
    assert!(full.contains("verify: ok"), "{full}");

    let dir = tempfile::tempdir().unwrap();
    let pce = bench(&[
        "--pce",
        "--pce-dir",
        dir.path().to_str().unwrap(),
        "--in-flight",
        "1",
    ]);
    assert!(pce.contains("pre-compiled circuit"), "{pce}");
    assert!(
        pce.contains("1 at once beside the proving, at most 1 ahead"),
        "{pce}"
    );
    assert!(pce.contains("verify: ok"), "{pce}");
}
