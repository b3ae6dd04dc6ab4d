//! The GPU backend against the CPU backend: for the same circuit, parameters, `r` and `s` the
//! proofs are the same bytes, with the parameters resident on the device or streamed from host
//! memory, for the PoRep-shaped circuit at several sizes, the small built-in circuits, the golden
//! cases (bellperson's bytes) and random satisfiable R1CS. Needs the `cuda` feature; skips (and passes) without a GPU. On the kernel
//! emulator (cuzk-gpu's `emu`, as CI runs it) the PoRep-shaped circuit stops at 2^10.
#![cfg(feature = "cuda")]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use cuzk::circuits::{PorepShaped, SquaringChain, UnusedVariables, WithInputs};
use cuzk::field::Scalar;
use cuzk::groth16::{generate_random_parameters, prepare_verifying_key, verify_proof, Parameters};
use cuzk::pipeline::gpu::{GpuBackend, GpuConfig, PolicyKind};
use cuzk::pipeline::{
    Backend, CpuBackend, Evaluations, PartitionTiming, Prover, ProverConfig, Stage,
};
use cuzk::{Circuit, ConstraintSystem, SynthesisError};
use ff::Field;
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The backends' configuration: an arena per backend of 8 GiB on a GPU (the tests' backends
/// live side by side, and a default arena takes the device's free memory), 1 GiB on the
/// emulator (host memory, mapped only where written).
fn config() -> GpuConfig {
    let gib = if cuzk_gpu::EMULATED { 1 } else { 8 };
    GpuConfig {
        arena_bytes: Some(gib << 30),
        ..GpuConfig::default()
    }
}

/// One backend on device 0 for every test of this file; `None` without a usable GPU.
fn gpu() -> Option<&'static Prover<GpuBackend>> {
    static GPU: OnceLock<Option<Prover<GpuBackend>>> = OnceLock::new();
    GPU.get_or_init(|| {
        let device = cuzk_gpu::device_for_tests()?;
        let backend = GpuBackend::on_device(&device, 0, config())
            .expect("the kernels load on a device that opened");
        Some(Prover::new(backend, ProverConfig::default()))
    })
    .as_ref()
}

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// Proves `circuit` on both backends with the same `r`, `s`: once streaming the bases, once
/// with them resident. Returns the proof bytes after checking all three agree and verify.
fn same_bytes<C: Circuit<Scalar> + Clone + Send>(
    gpu: &Prover<GpuBackend>,
    circuit: C,
    inputs: &[Scalar],
    seed: u64,
) -> Vec<u8> {
    let mut rng = rng(seed);
    let params = Arc::new(generate_random_parameters(circuit.clone(), &mut rng).unwrap());
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let want = one_proof(&cpu, &params, circuit.clone(), r, s);
    let streamed = one_proof(gpu, &params, circuit.clone(), r, s);
    assert_eq!(streamed, want, "bases streamed from host memory");
    assert!(gpu.backend().preload(&params).unwrap() > 0);
    let resident = one_proof(gpu, &params, circuit.clone(), r, s);
    assert_eq!(
        gpu.backend().preload(&params).unwrap(),
        0,
        "already resident"
    );
    assert!(gpu.backend().evict(&params));
    assert_eq!(resident, want, "bases resident on the device");
    let proof = cuzk::groth16::Proof::read(&want[..]).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    assert!(verify_proof(&pvk, &proof, inputs).unwrap());
    want
}

fn one_proof<B: Backend, C: Circuit<Scalar>>(
    prover: &Prover<B>,
    params: &Parameters,
    circuit: C,
    r: Scalar,
    s: Scalar,
) -> Vec<u8> {
    timed_proof(prover, params, circuit, r, s).0
}

/// [`one_proof`] with the partition's stage times.
fn timed_proof<B: Backend, C: Circuit<Scalar>>(
    prover: &Prover<B>,
    params: &Parameters,
    circuit: C,
    r: Scalar,
    s: Scalar,
) -> (Vec<u8>, PartitionTiming) {
    let assignment = cuzk_groth16::synthesize(circuit).unwrap();
    let (proof, timing) = prover
        .prove_batch(params, vec![assignment], &[r], &[s], 0)
        .unwrap()
        .remove(0);
    (proof.to_bytes().to_vec(), timing)
}

#[test]
fn porep_shaped_circuits_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let sizes: &[u32] = if cuzk_gpu::EMULATED {
        &[8, 10]
    } else {
        &[8, 12, 16, 18]
    };
    for &log_size in sizes {
        let c = PorepShaped::new(log_size, 7);
        same_bytes(gpu, c.clone(), &c.public_inputs(), u64::from(log_size));
    }
}

/// The golden proofs (bellperson's bytes, `testdata/golden/`) reproduced on the GPU, with the
/// bases streamed and resident.
#[test]
fn golden_cases_match_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let dir = cuzk::golden::default_dir();
    for case in &cuzk::golden::load(&dir).unwrap().cases {
        let (circuit, params, r, s) = cuzk::golden::case_inputs(&dir, case).unwrap();
        let params = Arc::new(params);
        let streamed = one_proof(gpu, &params, circuit.clone(), r, s);
        assert_eq!(hex::encode(streamed), case.proof, "{}: streamed", case.name);
        gpu.backend().preload(&params).unwrap();
        let resident = one_proof(gpu, &params, circuit, r, s);
        assert!(gpu.backend().evict(&params));
        assert_eq!(hex::encode(resident), case.proof, "{}: resident", case.name);
    }
}

/// Parameters read lazily from their file (as the engine loads them) are made resident straight
/// from it, block by block: no resident query is ever decoded into host memory, and one that
/// was (a host path read it first) is released once the device has it. The proofs are the
/// CPU's bytes throughout, and after the device lets go the host path decodes them again.
#[test]
fn resident_queries_leave_no_host_copy() {
    let Some(gpu) = gpu() else { return };
    let c = PorepShaped::new(if cuzk_gpu::EMULATED { 9 } else { 14 }, 11);
    let mut rng = rng(47);
    let eager = generate_random_parameters(c.clone(), &mut rng).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("porep-shaped.params");
    eager.write(std::fs::File::create(&path).unwrap()).unwrap();
    let map = Arc::new(Parameters::build_mapped_parameters(path, false).unwrap());
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let want = one_proof(&cpu, &eager, c.clone(), r, s);

    // Never decoded: copied block by block from the file.
    let lazy = Arc::new(map.lazy_parameters());
    assert!(gpu.backend().preload(&lazy).unwrap() > 0);
    assert_eq!(gpu.backend().mapped_bytes(), 0, "every query fits");
    assert_eq!(lazy.host_bytes(), 0);
    assert_eq!(
        one_proof(gpu, &lazy, c.clone(), r, s),
        want,
        "copied from the file"
    );
    assert_eq!(lazy.host_bytes(), 0, "proving read no query on the host");
    assert!(gpu.backend().evict(&lazy));
    assert_eq!(
        one_proof(gpu, &lazy, c.clone(), r, s),
        want,
        "decoded again"
    );
    assert!(lazy.host_bytes() > 0);

    // Decoded by a host path first: released once resident.
    assert!(gpu.backend().preload(&lazy).unwrap() > 0);
    assert_eq!(lazy.host_bytes(), 0);
    assert_eq!(one_proof(gpu, &lazy, c.clone(), r, s), want, "released");
    assert!(gpu.backend().evict(&lazy));
    assert_eq!(
        one_proof(&cpu, &lazy, c, r, s),
        want,
        "the CPU decodes them again"
    );
}

#[test]
fn small_circuits_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let chain = SquaringChain::new(Scalar::from(3u64), 20);
    same_bytes(gpu, chain.clone(), &chain.public_inputs(), 1);
    let with = WithInputs::new(vec![Scalar::from(5u64), Scalar::ZERO, Scalar::ONE]);
    same_bytes(gpu, with.clone(), &with.public_inputs(), 2);
    let unused = UnusedVariables::new(Scalar::from(2u64), Scalar::from(9u64), Scalar::ONE);
    same_bytes(gpu, unused.clone(), &unused.public_inputs(), 3);
}

/// A random satisfiable R1CS: private values drawn with many zeros and ones (as in real
/// circuits), each used once as `v·1 = v`, and products `x·y = z` of random pairs of them.
#[derive(Clone, Debug)]
struct RandomR1cs {
    values: Vec<u64>,
    products: Vec<(usize, usize)>,
}

impl Circuit<Scalar> for RandomR1cs {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let vars: Vec<_> = self
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| cs.alloc(|| format!("v{i}"), || Ok(Scalar::from(*v))))
            .collect::<Result<_, _>>()?;
        // Every variable in some constraint (the setup refuses unconstrained ones).
        for (i, v) in vars.iter().enumerate() {
            cs.enforce(
                || format!("u{i}"),
                |lc| lc + *v,
                |lc| lc + CS::one(),
                |lc| lc + *v,
            );
        }
        for (k, (i, j)) in self.products.iter().enumerate() {
            let z = Scalar::from(self.values[*i]) * Scalar::from(self.values[*j]);
            let out = cs.alloc(|| format!("p{k}"), || Ok(z))?;
            cs.enforce(
                || format!("c{k}"),
                |lc| lc + vars[*i],
                |lc| lc + vars[*j],
                |lc| lc + out,
            );
        }
        Ok(())
    }
}

fn random_r1cs() -> impl Strategy<Value = RandomR1cs> {
    (1usize..40).prop_flat_map(|vars| {
        (
            prop::collection::vec(prop_oneof![Just(0u64), Just(1), 2u64..1 << 40], vars),
            prop::collection::vec((0..vars, 0..vars), 1..300),
        )
            .prop_map(|(values, products)| RandomR1cs { values, products })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn random_satisfiable_r1cs_match_the_cpu(circuit in random_r1cs(), seed in any::<u64>()) {
        let Some(gpu) = gpu() else { return Ok(()) };
        same_bytes(gpu, circuit, &[], seed);
    }
}

/// The VRAM design's rule (docs/ARCHITECTURE.md, "Why the arena and the policies"): proving makes
/// no device-global call (no context synchronisation, no pool trim), only stream-ordered work,
/// so workers sharing a device never wait for each other's work. The emulated driver counts
/// them; any test of this process that made one fails this.
#[test]
fn proving_makes_no_device_global_call() {
    let Some(gpu) = gpu() else { return };
    let c = PorepShaped::new(9, 3);
    same_bytes(gpu, c.clone(), &c.public_inputs(), 9);
    // Counted by the emulated driver only.
    let Some(calls) = cuzk_gpu::counted_driver_calls() else {
        return;
    };
    assert_eq!(calls.device_synchronize, 0, "{calls:?}");
    assert_eq!(calls.trim_pool, 0, "{calls:?}");
}

/// Two workers on one device, each with its own streams, sharing the device's resident
/// parameters and taking turns under each interlock policy: every proof is still the CPU's.
#[test]
fn workers_share_a_device_under_every_policy() {
    if gpu().is_none() {
        return;
    }
    let c = PorepShaped::new(9, 5);
    let mut rng = rng(21);
    let params = Arc::new(generate_random_parameters(c.clone(), &mut rng).unwrap());
    let rs: Vec<(Scalar, Scalar)> = (0..4)
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .collect();
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let want: Vec<Vec<u8>> = rs
        .iter()
        .map(|(r, s)| one_proof(&cpu, &params, c.clone(), *r, *s))
        .collect();
    for policy in PolicyKind::ALL {
        let workers = GpuBackend::workers(0, config(), 2, policy).unwrap();
        assert!(workers[0].preload(&params).unwrap() > 0);
        assert_eq!(
            workers[1].resident_bytes(),
            workers[0].resident_bytes(),
            "residency is the device's, not the worker's"
        );
        let provers: Vec<_> = workers
            .into_iter()
            .map(|b| Prover::new(b, ProverConfig::default()))
            .collect();
        let mut got = vec![Vec::new(); rs.len()];
        std::thread::scope(|scope| {
            let handles: Vec<_> = provers
                .iter()
                .enumerate()
                .map(|(w, prover)| {
                    let (params, c, rs) = (&params, &c, &rs);
                    scope.spawn(move || {
                        (w..rs.len())
                            .step_by(2)
                            .map(|k| (k, one_proof(prover, params, c.clone(), rs[k].0, rs[k].1)))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for h in handles {
                for (k, bytes) in h.join().unwrap() {
                    got[k] = bytes;
                }
            }
        });
        assert_eq!(got, want, "{policy:?}");
    }
}

#[test]
fn a_wrong_length_is_an_error_not_a_launch() {
    let Some(gpu) = gpu() else { return };
    let domain = cuzk::field::Domain::new(4).unwrap();
    let long = vec![Scalar::ONE; 17];
    let full = vec![Scalar::ONE; 16];
    let evaluations = Evaluations::Vectors {
        a: long,
        b: full.clone(),
        c: full,
    };
    assert!(gpu.backend().products(&domain, evaluations).is_err());
}

/// A GPU run's telemetry: each device stage reports the device's own time (CUDA events) in
/// `gpu_ns`, host stages do not, each partition's wait for the policy carries its demand, and
/// the recording replays through the interlock simulator.
#[test]
fn device_stages_report_event_time_and_the_run_replays() {
    use cuzk_interlock::replay::{replay, ReplayConfig};
    use cuzk_interlock::sim::{DeviceSpec, Release};
    use cuzk_telemetry::Recorder;
    use tracing_subscriber::prelude::*;

    if gpu().is_none() {
        return;
    }
    let c = PorepShaped::new(9, 5);
    let mut rng = rng(23);
    let params = Arc::new(generate_random_parameters(c.clone(), &mut rng).unwrap());
    let mut workers = GpuBackend::workers(0, config(), 1, PolicyKind::VramBudget).unwrap();
    let backend = workers.remove(0);
    backend.preload(&params).unwrap();
    let prover = Prover::new(backend, ProverConfig::default());
    let (recorder, handle) = Recorder::new();
    // While one dispatcher is registered, tracing asks only the current thread's subscriber
    // whether a call site is enabled, so a stage span first reached on another test's thread
    // (no subscriber) would stay disabled here: a second live dispatcher makes it ask them all.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(recorder), || {
        // Two jobs (the replay counts partitions by job and partition).
        for job in 0..2 {
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let assignment = cuzk_groth16::synthesize(c.clone()).unwrap();
            prover
                .prove_batch(&params, vec![assignment], &[r], &[s], job)
                .unwrap();
        }
    });
    let timeline = handle.snapshot();
    let stage = |name: &'static str| timeline.spans.iter().filter(move |s| s.name == name);
    for name in ["ntt_h", "msm_h"] {
        assert_eq!(stage(name).count(), 2, "{name}");
    }
    // The bases are resident: each query's split and tail MSM run on the device
    // (the values' upload is a split_vectors span too), and nothing is gathered on the host.
    assert_eq!(stage("split_vectors").count(), 2 * 4);
    assert_eq!(stage("tail_msm").count(), 2 * 3);
    for name in ["ntt_h", "msm_h", "split_vectors", "tail_msm"] {
        assert!(
            stage(name).all(|s| s.gpu_ns.is_some()),
            "{name} has device time"
        );
    }
    assert_eq!(stage("prep_msm").count(), 0, "no host gathering");
    assert!(
        stage("epilogue").all(|s| s.gpu_ns.is_none()),
        "epilogue runs on the host"
    );
    let waits: Vec<_> = stage("vram_wait").collect();
    assert_eq!(waits.len(), 2);
    let first = waits[0].demand.expect("the wait carries the demand");
    for w in waits {
        let d = w.demand.expect("the wait carries the demand");
        // Two partitions of one circuit: one shape; a, b, c and h staged (or, if more, the
        // values and a query's split).
        assert_eq!(d, first);
        assert!(d.stage_bytes >= 4 * (1 << 9) * 32);
        assert!(d.compute_bytes > 0);
    }
    let summary = timeline.run_summary();
    let gpu0 = summary.devices.iter().find(|d| d.device == "gpu0").unwrap();
    assert!(gpu0.gpu_ns > 0 && gpu0.busy_fraction <= 1.0, "{gpu0:?}");

    let report = replay(
        &timeline,
        &ReplayConfig {
            policy: PolicyKind::VramBudget,
            device: DeviceSpec::gib(70, Release::StreamOrdered),
            stage_copy_ns: 0,
        },
    )
    .unwrap();
    assert_eq!(report.simulation.partitions, 2);
    assert_eq!(report.simulation.config.workers, 1);
    let svg = timeline.to_svg_waterfall();
    assert!(svg.contains(r#"class="device-lane" data-device="gpu0""#));
}

/// Device memory comes only from the arena (issue 43, "The data path"): a partition's buffers
/// (a, b, c, h, every MSM's and batch addition's scratch) are sub-allocated from the reservation
/// its policy granted, and the NTT's tables are resident regions of the arena, so proving makes
/// no allocation call at all, from the first partition on a fresh backend, bases streamed or
/// resident; the reservation returns when the partition ends, and the proofs are still the
/// CPU's.
#[test]
fn steady_state_proving_allocates_nothing() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let prover = Prover::new(
        GpuBackend::on_device(&device, 0, config()).unwrap(),
        ProverConfig::default(),
    );
    let c = PorepShaped::new(9, 3);
    let mut rng = rng(31);
    let params = Arc::new(generate_random_parameters(c.clone(), &mut rng).unwrap());
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let mut prove_counted = |what: &str| {
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let before = cuzk_gpu::counted_driver_calls_here();
        let got = one_proof(&prover, &params, c.clone(), r, s);
        let after = cuzk_gpu::counted_driver_calls_here();
        assert_eq!(got, one_proof(&cpu, &params, c.clone(), r, s), "{what}");
        before.zip(after).map(|(b, a)| a.alloc - b.alloc)
    };
    assert_eq!(prover.backend().arena().stats().resident, 0);
    for what in ["first partition: the NTT's tables made", "bases streamed"] {
        if let Some(allocs) = prove_counted(what) {
            assert_eq!(allocs, 0, "{what}: allocation calls");
        }
    }
    let tables = prover.backend().arena().stats().resident;
    assert!(
        tables >= prover.backend().ntt_table_bytes(&params),
        "the NTT's tables are resident regions: {tables}"
    );
    assert!(prover.backend().preload(&params).unwrap() > 0);
    if let Some(allocs) = prove_counted("bases resident") {
        assert_eq!(allocs, 0, "bases resident: allocation calls");
    }
    let stats = prover.backend().arena().stats();
    assert_eq!(stats.reserved, 0, "every reservation returned: {stats:?}");
    assert_eq!(
        stats.in_use, stats.resident,
        "only the bases and the tables stay: {stats:?}"
    );
    assert!(stats.reservations >= 3 && stats.peak_committed > stats.resident);
    assert!(prover.backend().evict(&params));
    assert_eq!(prover.backend().arena().stats().in_use, tables);
}

/// The workers of one device share one NTT, whose tables are the device's: once one worker has
/// proven a partition, the other proves one of the same size without making them again (the
/// arena's resident bytes do not grow) and without an allocation call.
#[test]
fn workers_share_the_ntt_tables() {
    if cuzk_gpu::device_for_tests().is_none() {
        return;
    }
    let c = PorepShaped::new(9, 3);
    let mut rng = rng(43);
    let params = Arc::new(generate_random_parameters(c.clone(), &mut rng).unwrap());
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let workers = GpuBackend::workers(0, config(), 2, PolicyKind::VramBudget).unwrap();
    let arena = workers[0].arena().clone();
    let provers: Vec<_> = workers
        .into_iter()
        .map(|b| Prover::new(b, ProverConfig::default()))
        .collect();
    let mut resident = Vec::new();
    for (w, prover) in provers.iter().enumerate() {
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let before = cuzk_gpu::counted_driver_calls_here();
        let got = one_proof(prover, &params, c.clone(), r, s);
        let after = cuzk_gpu::counted_driver_calls_here();
        assert_eq!(got, one_proof(&cpu, &params, c.clone(), r, s), "worker {w}");
        if let Some((b, a)) = before.zip(after) {
            assert_eq!(a.alloc - b.alloc, 0, "worker {w}: allocation calls");
        }
        resident.push(arena.stats().resident);
    }
    assert!(resident[0] > 0, "the tables are resident regions");
    assert_eq!(
        resident[1], resident[0],
        "one set of tables for both workers"
    );
    assert!(arena
        .residents()
        .iter()
        .all(|r| r.name.starts_with("ntt/table/")));
}

/// A partition whose demand can never fit the device's arena is refused with a typed error
/// before anything runs, holding nothing.
#[test]
fn a_partition_that_can_never_fit_is_a_typed_error() {
    use cuzk::pipeline::gpu::GpuBackendError;
    use cuzk::pipeline::PipelineError;
    use cuzk_interlock::InterlockError;
    use cuzk_vram::VramError;

    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let small = GpuConfig {
        arena_bytes: Some(64 << 10),
        ..config()
    };
    let prover = Prover::new(
        GpuBackend::on_device(&device, 0, small).unwrap(),
        ProverConfig::default(),
    );
    let c = PorepShaped::new(9, 3);
    let mut rng = rng(37);
    let params = generate_random_parameters(c.clone(), &mut rng).unwrap();
    let assignment = cuzk_groth16::synthesize(c.clone()).unwrap();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let err = prover
        .prove_batch(&params, vec![assignment], &[r], &[s], 0)
        .unwrap_err();
    let PipelineError::Device { device, source } = &err else {
        panic!("not a device error: {err}");
    };
    assert_eq!(device, "gpu0");
    let refused = source.downcast_ref::<GpuBackendError>();
    assert!(
        matches!(
            refused,
            Some(GpuBackendError::Policy(InterlockError::Vram(
                VramError::Unsatisfiable { .. }
            )))
        ),
        "{err}"
    );
    let stats = prover.backend().arena().stats();
    assert_eq!(
        (stats.reserved, stats.in_use, stats.refused),
        (0, 0, 1),
        "{stats:?}"
    );
}

/// Residency leaves room for a partition: in an arena too small for every base and a partition
/// together, preloading makes resident only what fits beside one partition's bound, the other
/// queries stream, and the partition proves (the CPU's bytes) instead of being refused.
#[test]
fn residency_leaves_room_for_a_partition() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let c = PorepShaped::new(9, 3);
    let mut rng = rng(41);
    let params = Arc::new(generate_random_parameters(c.clone(), &mut rng).unwrap());
    let roomy = GpuBackend::on_device(&device, 0, config()).unwrap();
    let bound = roomy.partition_bound(&params);
    let tables = roomy.ntt_table_bytes(&params);
    let every_base = roomy.preload(&params).unwrap();
    drop(roomy);

    let tight = GpuConfig {
        arena_bytes: Some(bound + tables + every_base / 2),
        resident_budget: Some(every_base),
    };
    let prover = Prover::new(
        GpuBackend::on_device(&device, 0, tight).unwrap(),
        ProverConfig::default(),
    );
    let resident = prover.backend().preload(&params).unwrap();
    let capacity = prover.backend().arena().capacity();
    assert!(
        resident > 0 && resident < every_base,
        "{resident} of {every_base}"
    );
    assert!(
        resident + tables + bound <= capacity,
        "{resident} + {tables} + {bound} > {capacity}"
    );
    assert!(prover.backend().mapped_bytes() > 0, "the others are mapped");
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let (gpu_proof, timing) = timed_proof(&prover, &params, c.clone(), r, s);
    assert_eq!(gpu_proof, one_proof(&cpu, &params, c, r, s));
    assert_eq!(
        timing.get(Stage::PrepMsm),
        Duration::ZERO,
        "no query gathered on the host"
    );
}

/// Queries that do not fit on the device are read in place from host memory: with no room for
/// resident bases at all, preloading maps L, A, B₁ and B₂, every query is still split,
/// batch-added and summed on the device (no host gathering), and the proofs are the CPU's (the
/// PoRep-shaped circuit) and bellperson's (the golden cases) bytes.
#[test]
fn queries_that_do_not_fit_are_read_in_place() {
    let Some(device) = cuzk_gpu::device_for_tests() else {
        return;
    };
    let none_resident = GpuConfig {
        resident_budget: Some(0),
        ..config()
    };
    let prover = Prover::new(
        GpuBackend::on_device(&device, 0, none_resident).unwrap(),
        ProverConfig::default(),
    );
    let c = PorepShaped::new(if cuzk_gpu::EMULATED { 9 } else { 16 }, 5);
    let mut rng = rng(43);
    let params = Arc::new(generate_random_parameters(c.clone(), &mut rng).unwrap());
    assert_eq!(
        prover.backend().preload(&params).unwrap(),
        0,
        "nothing fits"
    );
    let tail_bytes = params.host_bytes() - params.h.host_bytes();
    assert_eq!(prover.backend().mapped_bytes(), tail_bytes);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let (gpu_proof, timing) = timed_proof(&prover, &params, c.clone(), r, s);
    assert_eq!(gpu_proof, one_proof(&cpu, &params, c, r, s));
    assert_eq!(timing.get(Stage::PrepMsm), Duration::ZERO);
    assert!(prover.backend().evict(&params));
    assert_eq!(prover.backend().mapped_bytes(), 0);

    let dir = cuzk::golden::default_dir();
    for case in &cuzk::golden::load(&dir).unwrap().cases {
        let (circuit, params, r, s) = cuzk::golden::case_inputs(&dir, case).unwrap();
        let params = Arc::new(params);
        prover.backend().preload(&params).unwrap();
        let (proof, timing) = timed_proof(&prover, &params, circuit, r, s);
        assert!(prover.backend().evict(&params));
        assert_eq!(hex::encode(proof), case.proof, "{}: mapped", case.name);
        assert_eq!(timing.get(Stage::PrepMsm), Duration::ZERO, "{}", case.name);
    }
}
