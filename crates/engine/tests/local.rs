//! One job in this process (`cuzk_engine::local`, what `cuzk prove` runs): the engine's path
//! gives the bytes cuzk-filecoin's partition loop gives on cuzk's CPU pipeline for the same r
//! and s, alone or with helpers taking partitions; its partitions' timings come back; a bad
//! request is refused before anything runs.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use blstrs::Scalar;
use cuzk_engine::filecoin::post::PostKind;
use cuzk_engine::filecoin::{CircuitKind, PostJobFile};
use cuzk_engine::job::JobControl;
use cuzk_engine::{
    BackendError, EngineError, JobRequest, ParamConfig, ParamManager, ProofBackend, ProofKind,
};
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::{CpuBackend, JobContext, PartitionInput, PartitionTiming, Prover};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const WINDOW: &str = include_str!("../../../testdata/filecoin/window-2KiB.json");

/// r and s of partition `k`: the same whichever worker proves it.
fn fixed_rs(k: usize) -> (Scalar, Scalar) {
    let mut rng = ChaCha20Rng::seed_from_u64(7000 + k as u64);
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

/// cuzk's CPU pipeline with [`fixed_rs`], counting the partitions it proves.
#[derive(Debug, Default)]
struct FixedRs {
    prover: Prover<CpuBackend>,
    proved: AtomicUsize,
}

impl ProofBackend for FixedRs {
    fn device(&self) -> String {
        "cpu".into()
    }

    fn prove_partition(
        &self,
        params: &Arc<Parameters>,
        input: PartitionInput,
        ctx: JobContext,
        partition: usize,
    ) -> Result<(Proof, PartitionTiming), BackendError> {
        let (r, s) = fixed_rs(partition);
        let out = self.prover.prove(params, input, r, s, ctx, partition)?;
        self.proved.fetch_add(1, Ordering::Relaxed);
        Ok(out)
    }
}

fn manager(dir: &Path, filecoin_dir: PathBuf) -> ParamManager {
    ParamManager::new(ParamConfig {
        filecoin_dir,
        ..common::config(dir).params
    })
}

/// `n` fixed-r,s backends, and the same as the engine's trait objects.
fn backends(n: usize) -> (Vec<Arc<FixedRs>>, Vec<Arc<dyn ProofBackend>>) {
    let ours: Vec<Arc<FixedRs>> = (0..n).map(|_| Arc::new(FixedRs::default())).collect();
    let dyns = ours
        .iter()
        .map(|b| Arc::clone(b) as Arc<dyn ProofBackend>)
        .collect();
    (ours, dyns)
}

#[test]
fn a_synthetic_job_gives_the_same_bytes_with_helpers_as_alone() {
    let dir = tempfile::tempdir().unwrap();
    let params = manager(dir.path(), dir.path().join("filecoin"));
    let request = JobRequest::synthetic(10, 3, 4);
    let mut runs = Vec::new();
    // One worker synthesising one partition at a time; three workers and three partitions
    // synthesised at once, handed over as they are done.
    for (workers, threads) in [(1, 1), (3, 3)] {
        let (ours, dyns) = backends(workers);
        let control = Arc::new(JobControl::default());
        let result =
            cuzk_engine::local::prove(request.clone(), &dyns, &params, None, threads, &control)
                .unwrap();
        assert_eq!(result.proof.len(), 4 * 192);
        let mut proven: Vec<usize> = control.proven().iter().map(|p| p.partition).collect();
        proven.sort_unstable();
        assert_eq!(proven, [0, 1, 2, 3], "every partition's timing, once");
        let proved: usize = ours.iter().map(|b| b.proved.load(Ordering::Relaxed)).sum();
        assert_eq!(proved, 4, "each partition proven once, by one worker");
        runs.push(result.proof);
    }
    assert_eq!(runs[0], runs[1]);
}

#[test]
fn a_window_post_through_the_engine_is_cuzk_filecoins_proof() {
    let dir = tempfile::tempdir().unwrap();
    let filecoin_dir = cuzk_engine::filecoin::params::test_params_dir().expect("a cache folder");
    let file = PostJobFile::parse(WINDOW).unwrap();
    CircuitKind::Window
        .generate_params(&filecoin_dir, file.sector_size, 0)
        .unwrap();

    // cuzk-filecoin's loop on cuzk's CPU pipeline, as `cuzk prove window` proved before.
    let prover = Prover::new(CpuBackend, Default::default());
    let mut direct = |params: &Parameters, input: PartitionInput, k: usize| {
        let (r, s) = fixed_rs(k);
        let (proof, _) = prover.prove(params, input, r, s, JobContext::default(), k)?;
        Ok::<_, cuzk_engine::filecoin::ProverError>(proof)
    };
    let want = file
        .job(PostKind::Window)
        .prove(&filecoin_dir, &mut direct)
        .unwrap();

    let request = JobRequest {
        sector_size: file.sector_size,
        registered_proof: CircuitKind::Window
            .registered_proof(file.sector_size)
            .unwrap(),
        miner_id: file.miner_id,
        randomness: file.randomness.to_vec(),
        partition_index: file.partition_index as u32,
        vanilla_proofs: file.vanilla_proofs.clone(),
        ..JobRequest::new(ProofKind::WindowPost)
    };
    let (_, dyns) = backends(2);
    let control = Arc::new(JobControl::default());
    let params = manager(dir.path(), filecoin_dir);
    let got = cuzk_engine::local::prove(request, &dyns, &params, None, 2, &control).unwrap();
    assert_eq!(got.proof, want.bytes);
    assert_eq!(got.partitions.len(), 1);
    assert_eq!(control.timings().len(), 1);
}

#[test]
fn bad_requests_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let params = manager(dir.path(), dir.path().join("filecoin"));
    let control = Arc::new(JobControl::default());
    let (ours, dyns) = backends(1);
    let request = JobRequest {
        registered_proof: 42,
        randomness: vec![0; 32],
        ..JobRequest::new(ProofKind::WinningPost)
    };
    let e = cuzk_engine::local::prove(request, &dyns, &params, None, 1, &control).unwrap_err();
    assert!(matches!(e, EngineError::InvalidRequest(_)), "{e}");
    assert!(
        e.to_string()
            .contains("unknown registered WinningPoSt proof 42"),
        "{e}"
    );
    let e = cuzk_engine::local::prove(
        JobRequest::synthetic(10, 1, 1),
        &[],
        &params,
        None,
        1,
        &control,
    )
    .unwrap_err();
    assert!(e.to_string().contains("no backend"), "{e}");
    assert_eq!(ours[0].proved.load(Ordering::Relaxed), 0);
}
