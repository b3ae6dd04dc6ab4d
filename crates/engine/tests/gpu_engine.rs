//! The engine with GPU workers on the kernel emulator (feature `emu`): jobs of the synthetic
//! kind prove and verify on one device and spread over two, a Filecoin job (2 KiB WindowPoSt)
//! is proven by the idle worker of another device and accepted by filecoin-proofs, parameters
//! are resident on each device that proved with them and freed when the manager evicts them,
//! and a device failure fails its job with an error naming the device (or, with the CPU
//! fallback, the partition is proven on the CPU), after which the next job proves on the same
//! device. A job run in this process (`cuzk prove`'s path) proves on a device's workers.
//! `PreloadSRS` makes parameters resident on every device before any job, and status
//! reports each device's memory. With pre-compiled circuits, the first partition of a circuit
//! makes its matrices resident on the device, where its partitions' a, b, c are made.
//!
//! Each test uses devices of its own (the emulator's injected faults are per device and tests
//! run at once).
#![cfg(feature = "emu")]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cuzk_engine::gpu::{GpuProofBackend, PolicyKind};
use cuzk_engine::{
    CircuitId, CpuProofBackend, Engine, EngineConfig, JobRequest, JobState, ProofBackend, ProofKind,
};
use cuzk_filecoin::filecoin_proofs::{self, PublicReplicaInfo, SectorShape2KiB};
use cuzk_filecoin::post::{post_config, PostKind};
use cuzk_filecoin::{CircuitKind, PostJobFile};
use cuzk_gpu::emu::{fail_next, set_device_count, Fault};

const WAIT: Option<Duration> = Some(Duration::from_secs(120));

/// Workers on each of `devices` (`per_device` each) and the engine over them.
fn engine(
    dir: &Path,
    devices: &[usize],
    per_device: usize,
    fallback: bool,
) -> (Engine, Vec<Arc<GpuProofBackend>>) {
    engine_with(common::config(dir), devices, per_device, fallback)
}

/// [`engine`] with `config`.
fn engine_with(
    config: EngineConfig,
    devices: &[usize],
    per_device: usize,
    fallback: bool,
) -> (Engine, Vec<Arc<GpuProofBackend>>) {
    set_device_count(10);
    let fallback = fallback.then(|| Arc::new(CpuProofBackend::new(true)));
    let gpus: Vec<Arc<GpuProofBackend>> = devices
        .iter()
        .flat_map(|&d| {
            GpuProofBackend::workers(
                d,
                per_device,
                PolicyKind::VramBudget,
                true,
                fallback.clone(),
            )
            .unwrap()
        })
        .map(Arc::new)
        .collect();
    let backends: Vec<Arc<dyn ProofBackend>> = gpus
        .iter()
        .map(|g| Arc::clone(g) as Arc<dyn ProofBackend>)
        .collect();
    (Engine::start(config, backends, None).unwrap(), gpus)
}

/// Runs a job to its end; returns its state and error.
fn run(e: &Engine, r: JobRequest) -> (JobState, String) {
    let id = e.submit(r).unwrap().job_id;
    let out = e.await_job(&id, WAIT).unwrap();
    if out.state == JobState::Completed {
        // The engine verified each partition's proof before answering.
        assert_eq!(out.proof.len() % 192, 0);
    }
    (out.state, out.error)
}

#[test]
fn pre_compiled_partitions_make_their_matrices_resident_and_prove() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = common::config(dir.path());
    config.pce_dir = Some(dir.path().join("pce"));
    let (e, gpus) = engine_with(config, &[8], 2, false);
    assert_eq!(gpus[0].gpu().circuit_bytes(), 0);
    let (state, error) = run(&e, JobRequest::synthetic(6, 7, 3));
    assert_eq!(state, JobState::Completed, "{error}");
    assert!(
        gpus[0].gpu().circuit_bytes() > 0,
        "the circuit's matrices are resident"
    );
    // The device's workers share them: a second job (either worker) finds them there.
    let bytes = gpus[0].gpu().circuit_bytes();
    let (state, error) = run(&e, JobRequest::synthetic(6, 8, 2));
    assert_eq!(state, JobState::Completed, "{error}");
    assert_eq!(gpus[1].gpu().circuit_bytes(), bytes);
    e.shutdown(Duration::from_secs(10));
}

#[test]
fn one_device_proves_and_keeps_parameters_resident_until_evicted() {
    let dir = tempfile::tempdir().unwrap();
    let (e, gpus) = engine(dir.path(), &[0], 2, false);
    // Each worker names its device by label and by the product name its driver reports.
    assert!(e
        .status()
        .workers
        .iter()
        .all(|w| w.device == "gpu0" && w.product.as_deref() == Some(cuzk_gpu::emu::EMULATED_NAME)));
    let id = e.submit(JobRequest::synthetic(6, 1, 2)).unwrap().job_id;
    let out = e.await_job(&id, WAIT).unwrap();
    assert_eq!(out.state, JobState::Completed, "{}", out.error);
    // The device's own (event-timed) time of the partitions, whichever worker proved them.
    assert!(out.timings.device > Duration::ZERO, "{:?}", out.timings);
    assert!(gpus[0].gpu().resident_bytes() > 0, "resident after a proof");
    e.params().evict("synthetic-6").unwrap();
    assert_eq!(gpus[0].gpu().resident_bytes(), 0, "freed with the hot copy");
    let (state, error) = run(&e, JobRequest::synthetic(6, 2, 1));
    assert_eq!(state, JobState::Completed, "{error}");
    e.shutdown(Duration::from_secs(10));
}

#[test]
fn a_job_in_this_process_proves_on_a_devices_workers() {
    // `cuzk prove`'s path: no journal, two synthesis threads, both workers proving.
    set_device_count(10);
    let dir = tempfile::tempdir().unwrap();
    let gpus = GpuProofBackend::workers(9, 2, PolicyKind::VramBudget, true, None).unwrap();
    let backends: Vec<Arc<dyn ProofBackend>> = gpus
        .into_iter()
        .map(|g| Arc::new(g) as Arc<dyn ProofBackend>)
        .collect();
    let params = cuzk_engine::ParamManager::new(common::config(dir.path()).params);
    params.attach(&backends);
    let control = Arc::new(cuzk_engine::job::JobControl::default());
    let result = cuzk_engine::local::prove(
        JobRequest::synthetic(6, 4, 3),
        &backends,
        &params,
        None,
        2,
        &control,
    )
    .unwrap();
    assert_eq!(result.proof.len(), 3 * 192);
    assert_eq!(control.timings().len(), 3);
    assert!(result.device > Duration::ZERO, "event-timed device time");
}

#[test]
fn two_devices_share_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let (e, gpus) = engine(dir.path(), &[0, 1], 1, false);
    let (state, error) = run(&e, JobRequest::synthetic(6, 3, 3));
    assert_eq!(state, JobState::Completed, "{error}");
    // The job's worker offered its first partition to the idle worker of the other device
    // and proved the next while that one did (synthesis at 2^6 is much faster than emulated
    // proving): both devices proved with the parameters, so both hold them.
    for g in &gpus {
        assert!(
            g.gpu().resident_bytes() > 0,
            "{} proved nothing",
            g.device()
        );
    }
    e.shutdown(Duration::from_secs(10));
}

#[test]
fn a_failed_device_fails_its_job_and_the_next_job_proves() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _gpus) = engine(dir.path(), &[2], 1, false);
    fail_next(2, Fault::Launch);
    let (state, error) = run(&e, JobRequest::synthetic(6, 4, 1));
    assert_eq!(state, JobState::Failed);
    assert!(
        error.contains("device gpu2") && error.contains("injected"),
        "{error}"
    );
    let metrics = e.metrics_text();
    assert!(
        metrics.contains("cuzk_device_failures_total{device=\"gpu2\"} 1\n")
            && metrics.contains("cuzk_cpu_fallbacks_total{device=\"gpu2\"} 0\n"),
        "{metrics}"
    );
    let (state, error) = run(&e, JobRequest::synthetic(6, 5, 1));
    assert_eq!(state, JobState::Completed, "{error}");
    e.shutdown(Duration::from_secs(10));
}

#[test]
fn a_failed_partition_falls_back_to_the_cpu_where_configured() {
    let dir = tempfile::tempdir().unwrap();
    let (e, _gpus) = engine(dir.path(), &[3], 1, true);
    fail_next(3, Fault::Launch);
    let (state, error) = run(&e, JobRequest::synthetic(6, 6, 1));
    assert_eq!(state, JobState::Completed, "{error}");
    // The CPU decoded the parameters to prove; the device's copies stay the only ones.
    let (lease, _) = e.params().acquire(CircuitId::Synthetic(6)).unwrap();
    assert_eq!(lease.params().host_bytes(), 0);
    drop(lease);
    let metrics = e.metrics_text();
    assert!(
        metrics.contains("cuzk_device_failures_total{device=\"gpu3\"} 1\n")
            && metrics.contains("cuzk_cpu_fallbacks_total{device=\"gpu3\"} 1\n"),
        "{metrics}"
    );
    let (state, error) = run(&e, JobRequest::synthetic(6, 7, 1));
    assert_eq!(state, JobState::Completed, "{error}");
    e.shutdown(Duration::from_secs(10));
}

#[test]
fn preload_makes_parameters_resident_on_every_device_and_status_shows_their_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (e, gpus) = engine(dir.path(), &[6, 7], 1, false);
    let free_before: Vec<u64> = e
        .status()
        .workers
        .iter()
        .map(|w| {
            let m = w.memory.expect("a GPU worker reports its memory");
            assert!(m.total_bytes > 0 && m.free_bytes <= m.total_bytes, "{m:?}");
            m.free_bytes
        })
        .collect();
    let (already, _) = e.params().preload("synthetic-6").unwrap();
    assert!(!already);
    for (g, before) in gpus.iter().zip(free_before) {
        let resident = g.gpu().resident_bytes();
        assert!(
            resident > 0,
            "{} holds nothing after the preload",
            g.device()
        );
        let memory = g.memory().unwrap();
        let free = memory.free_bytes;
        assert!(
            free < before,
            "{}: free {free} not below {before}",
            g.device()
        );
        assert!(memory.peak_in_use_bytes >= resident, "{memory:?}");
    }
    // The devices copied every query straight from the file: none was decoded on the host.
    let (lease, _) = e.params().acquire(CircuitId::Synthetic(6)).unwrap();
    assert_eq!(lease.params().host_bytes(), 0);
    drop(lease);
    // The metrics show each device's memory and the process's peak host memory.
    let metrics = e.metrics_text();
    for g in &gpus {
        let peak = format!("cuzk_peak_vram_bytes{{device=\"{}\"}} ", g.device());
        assert!(metrics.contains(&peak), "{metrics}");
    }
    if cfg!(target_os = "linux") {
        assert!(e.status().peak_rss_bytes.is_some_and(|b| b > 0));
        assert!(metrics.contains("cuzk_peak_rss_bytes "), "{metrics}");
    }
    // Preloading again finds everything where it was.
    let resident: Vec<u64> = gpus.iter().map(|g| g.gpu().resident_bytes()).collect();
    assert!(e.params().preload("synthetic-6").unwrap().0);
    let again: Vec<u64> = gpus.iter().map(|g| g.gpu().resident_bytes()).collect();
    assert_eq!(resident, again);
    let (state, error) = run(&e, JobRequest::synthetic(6, 8, 2));
    assert_eq!(state, JobState::Completed, "{error}");
    e.shutdown(Duration::from_secs(10));
}

/// A Filecoin job's partitions go to idle workers of any device, as the synthetic kind's do.
/// Every Filecoin kind has one partition at 2 KiB, so a 2 KiB WindowPoSt job (the smallest
/// circuit, 21,889 constraints, about half a minute on the emulator) shows it with its one
/// partition: the worker that took the job (on one device) synthesises it and hands it to the
/// idle worker of the other device, which proves it while the job's worker waits; with more
/// partitions the job's worker would synthesise the next meanwhile. The proof is verified by
/// the engine against the verifier's public inputs and by filecoin-proofs' `verify_window_post`.
#[test]
fn a_filecoin_job_spreads_to_another_device() {
    let dir = tempfile::tempdir().unwrap();
    let params = filecoin_params_dir();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/filecoin/window-2KiB.json"),
    )
    .unwrap();
    let file = PostJobFile::parse(&text).unwrap();
    CircuitKind::Window
        .generate_params(&params, file.sector_size, 0)
        .unwrap();
    let mut config = common::config(dir.path());
    config.params.filecoin_dir = params;
    let (e, gpus) = engine_with(config, &[4, 5], 1, false);

    let request = JobRequest {
        sector_size: file.sector_size,
        // WindowPoSt V1_2 of a 2 KiB sector.
        registered_proof: 10,
        miner_id: file.miner_id,
        randomness: file.randomness.to_vec(),
        partition_index: file.partition_index as u32,
        vanilla_proofs: file.vanilla_proofs.clone(),
        ..JobRequest::new(ProofKind::WindowPost)
    };
    let id = e.submit(request).unwrap().job_id;
    // Both workers on the job at once: its own and the one proving its partition.
    let mut both = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    let out = loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the job took over 300 s"
        );
        let on_job = e
            .status()
            .workers
            .iter()
            .filter(|w| w.current_job_id.as_deref() == Some(id.as_str()))
            .count();
        both |= on_job == 2;
        let out = e.await_job(&id, Some(Duration::from_millis(50))).unwrap();
        if out.state.is_terminal() {
            break out;
        }
    };
    assert_eq!(out.state, JobState::Completed, "{}", out.error);
    assert!(
        both,
        "the other device's idle worker never took the partition"
    );
    let resident: Vec<bool> = gpus.iter().map(|g| g.gpu().resident_bytes() > 0).collect();
    assert_eq!(
        resident.iter().filter(|r| **r).count(),
        1,
        "one device proved the one partition: {resident:?}"
    );

    let replica = PublicReplicaInfo::new(file.comm_r.expect("comm_r")).unwrap();
    let sector = file.sector_number.expect("sector_number").into();
    let ok = filecoin_proofs::verify_window_post::<SectorShape2KiB>(
        &post_config(PostKind::Window, file.sector_size).unwrap(),
        &file.randomness,
        &[(sector, replica)].into_iter().collect(),
        cuzk_filecoin::prover_id(file.miner_id),
        &out.proof,
    )
    .unwrap();
    assert!(ok, "filecoin-proofs rejects the engine's WindowPoSt proof");
    e.shutdown(Duration::from_secs(10));
}

/// The shared 2 KiB parameter folder of cuzk's CLI and tests
/// ([`cuzk_engine::filecoin::params::test_params_dir`]), where filecoin-proofs' verifiers are told
/// to read the verifying keys.
fn filecoin_params_dir() -> std::path::PathBuf {
    let dir = cuzk_engine::filecoin::params::test_params_dir().expect("CUZK_CACHE_DIR or HOME");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    dir
}
