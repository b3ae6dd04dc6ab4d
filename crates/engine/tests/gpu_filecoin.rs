//! Filecoin's circuits on the GPU backend: a 2 KiB WindowPoSt (21,889 constraints) and, on a
//! real GPU, WinningPoSt (90,883) job, proven through cuzk-filecoin's partition loop with r and
//! s fixed per partition, gives on the GPU the CPU backend's bytes (each verified by the loop
//! against the verifier's public inputs). The kernel emulator (feature `emu`, as CI runs it)
//! proves the WindowPoSt circuit in about half a minute and WinningPoSt's in minutes, so it
//! proves WindowPoSt alone; the 2 KiB PoRep (about 2.7M constraints) and SnapDeals circuits
//! are far larger and stay with the CPU tests of cuzk-filecoin.
//!
//! The parameters are cuzk's (seed 0) in the shared cache folder
//! (`cuzk_filecoin::params::test_params_dir`), made there when missing; the job files are
//! built into the binary, so it runs from any folder. Skips (and passes) without a device.
#![cfg(feature = "cuda")]

use std::path::PathBuf;
use std::time::Instant;

use blstrs::Scalar;
use cuzk_filecoin::post::PostKind;
use cuzk_filecoin::{CircuitKind, FilecoinProof, PartitionProver, PostJobFile, ProverError};
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::gpu::{GpuBackend, GpuConfig};
use cuzk_pipeline::{Backend, CpuBackend, JobContext, PartitionInput, Prover, ProverConfig};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const WINNING: &str = include_str!("../../../testdata/filecoin/winning-2KiB.json");
const WINDOW: &str = include_str!("../../../testdata/filecoin/window-2KiB.json");

/// The shared parameter folder of cuzk's CLI and tests.
fn params_dir() -> PathBuf {
    cuzk_engine::filecoin::params::test_params_dir().expect("CUZK_CACHE_DIR or HOME")
}

/// r and s of partition `k`.
fn fixed_rs(k: usize) -> (Scalar, Scalar) {
    let mut rng = ChaCha20Rng::seed_from_u64(4000 + k as u64);
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

/// `prover` as cuzk-filecoin's prover, with [`fixed_rs`].
fn with_fixed_rs<B: Backend>(
    prover: &Prover<B>,
) -> impl FnMut(&Parameters, PartitionInput, usize) -> Result<Proof, ProverError> + '_ {
    move |params, input, k| {
        let (r, s) = fixed_rs(k);
        let (proof, _) = prover.prove(params, input, r, s, JobContext::default(), k)?;
        Ok(proof)
    }
}

/// Proves the job of `file` (of `kind`) with `prover`, timed.
fn prove(kind: PostKind, file: &PostJobFile, prover: &mut dyn PartitionProver) -> FilecoinProof {
    let start = Instant::now();
    let proof = file.job(kind).prove(&params_dir(), prover).unwrap();
    let constraints: usize = proof.partitions.iter().map(|p| p.constraints).sum();
    eprintln!(
        "{kind:?}: {} partition(s), {constraints} constraints, {:.1} s",
        proof.partitions.len(),
        start.elapsed().as_secs_f64()
    );
    proof
}

#[test]
fn post_circuits_prove_on_the_gpu_as_on_the_cpu() {
    // The emulator's device memory is host memory, mapped where written: a small arena.
    let config = GpuConfig {
        arena_bytes: Some(1 << 30),
        ..GpuConfig::default()
    };
    let gpu = match GpuBackend::new(0, config) {
        Ok(gpu) => Prover::new(gpu, ProverConfig::default()),
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: no CUDA device ({e})");
            return;
        }
    };
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let kinds: &[_] = if cfg!(feature = "emu") {
        &[(PostKind::Window, WINDOW)]
    } else {
        &[(PostKind::Window, WINDOW), (PostKind::Winning, WINNING)]
    };
    for &(kind, text) in kinds {
        let file = PostJobFile::parse(text).unwrap();
        CircuitKind::from(kind)
            .generate_params(&params_dir(), file.sector_size, 0)
            .unwrap();
        let want = prove(kind, &file, &mut with_fixed_rs(&cpu));
        let got = prove(kind, &file, &mut with_fixed_rs(&gpu));
        assert_eq!(got.bytes.len(), 192);
        assert_eq!(
            got.bytes, want.bytes,
            "{kind:?}: the GPU's bytes are the CPU's"
        );
    }
}
