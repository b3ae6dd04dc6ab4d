//! A pre-compiled circuit's products on the device (`pce_products`): proofs from a witness on the
//! GPU backend, its matrices resident, are the bytes of full synthesis on the CPU backend (the
//! PoRep-shaped circuit, every golden case: bellperson's bytes), with the parameters resident
//! (the products read the values the query splits uploaded) or not (the products upload them),
//! and with the matrices left on the host (the host's products); a witness that breaks a
//! constraint fails with that constraint's index, as the host's check names it. Needs the `cuda`
//! feature; skips (and passes) without a GPU. On the kernel emulator (as CI runs it) the
//! PoRep-shaped circuit stops at 2^10.
#![cfg(feature = "cuda")]

use std::sync::{Arc, OnceLock};

use cuzk::circuits::{BuiltIn, PorepShaped};
use cuzk::field::Scalar;
use cuzk::groth16::{generate_random_parameters, Parameters};
use cuzk::pipeline::gpu::{GpuBackend, GpuConfig};
use cuzk::pipeline::{CpuBackend, PartitionInput, PipelineError, Prover, ProverConfig, Stage};
use cuzk::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_groth16::Groth16Error;
use cuzk_pce::{record, PreCompiled};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// An arena of 8 GiB on a GPU, 1 GiB on the emulator.
fn config() -> GpuConfig {
    let gib = if cuzk_gpu::EMULATED { 1 } else { 8 };
    GpuConfig {
        arena_bytes: Some(gib << 30),
        ..GpuConfig::default()
    }
}

/// Two backends on device 0 for every test of this file, each with its own arena: the first
/// gets every circuit's matrices resident, the second never does (its products are the host's).
fn gpus() -> Option<&'static [Prover<GpuBackend>; 2]> {
    static GPU: OnceLock<Option<[Prover<GpuBackend>; 2]>> = OnceLock::new();
    GPU.get_or_init(|| {
        let device = cuzk_gpu::device_for_tests()?;
        let open = || {
            let backend = GpuBackend::on_device(&device, 0, config())
                .expect("the kernels load on a device that opened");
            Prover::new(backend, ProverConfig::default())
        };
        Some([open(), open()])
    })
    .as_ref()
}

fn largest_porep_log() -> u32 {
    if cuzk_gpu::EMULATED {
        10
    } else {
        16
    }
}

/// The proof's bytes from a witness of `pc` on `prover`.
fn prove_witness<C: Circuit<Scalar>>(
    prover: &Prover<GpuBackend>,
    params: &Parameters,
    pc: &Arc<PreCompiled>,
    circuit: C,
    r: Scalar,
    s: Scalar,
) -> Result<Vec<u8>, PipelineError> {
    let input = PartitionInput::precompiled(pc.clone(), pc.witness(circuit).unwrap())?;
    let (proof, timing) = prover.prove(params, input, r, s, Default::default(), 0)?;
    assert!(timing.get(Stage::Products) > std::time::Duration::ZERO);
    Ok(proof.to_bytes().to_vec())
}

/// Full synthesis on the CPU backend: the reference bytes.
fn prove_full<C: Circuit<Scalar>>(
    params: &Parameters,
    circuit: C,
    r: Scalar,
    s: Scalar,
) -> Vec<u8> {
    let asg = cuzk_groth16::synthesize(circuit).unwrap();
    let cpu = Prover::new(CpuBackend, ProverConfig::default());
    let (proof, _) = cpu.prove(params, asg, r, s, Default::default(), 0).unwrap();
    proof.to_bytes().to_vec()
}

#[test]
fn porep_shaped_products_on_the_device_give_the_same_bytes() {
    let Some([resident, host]) = gpus() else {
        return;
    };
    for log in [8, largest_porep_log()] {
        let mut rng = ChaCha20Rng::seed_from_u64(u64::from(log));
        let params =
            Arc::new(generate_random_parameters(PorepShaped::new(log, 0), &mut rng).unwrap());
        let pc = Arc::new(
            PreCompiled::from_recording(&record(PorepShaped::new(log, 0)).unwrap()).unwrap(),
        );
        assert!(
            resident.backend().preload_circuit(&pc).unwrap(),
            "2^{log} fits"
        );
        assert!(resident.backend().circuit_bytes() >= pc.image_layout().bytes());
        for (seed, preload) in [(1, false), (2, true)] {
            if preload {
                resident.backend().preload(&params).unwrap();
            }
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let circuit = PorepShaped::new(log, seed);
            let want = prove_full(&params, circuit.clone(), r, s);
            for (prover, what) in [(resident, "matrices resident"), (host, "host products")] {
                let got = prove_witness(prover, &params, &pc, circuit.clone(), r, s).unwrap();
                assert_eq!(
                    hex::encode(got),
                    hex::encode(&want),
                    "2^{log}, seed {seed}, parameters preloaded: {preload}, {what}"
                );
            }
        }
        resident.backend().evict(&params);
    }
}

#[test]
fn golden_proofs_from_the_device_products() {
    let Some([resident, _]) = gpus() else { return };
    let dir = cuzk::golden::default_dir();
    for case in &cuzk::golden::load(&dir).unwrap().cases {
        let circuit: BuiltIn = case.circuit.parse().unwrap();
        let params = Arc::new(Parameters::read_file(dir.join(&case.params), true).unwrap());
        let r = cuzk::golden::parse_scalar(&case.name, &case.r).unwrap();
        let s = cuzk::golden::parse_scalar(&case.name, &case.s).unwrap();
        let pc = Arc::new(PreCompiled::from_recording(&record(circuit.clone()).unwrap()).unwrap());
        assert!(resident.backend().preload_circuit(&pc).unwrap());
        resident.backend().preload(&params).unwrap();
        let proof = prove_witness(resident, &params, &pc, circuit, r, s).unwrap();
        assert_eq!(hex::encode(proof), case.proof, "case {}", case.name);
        resident.backend().evict(&params);
    }
}

/// `x_{k+1} = x_k²` for `steps` steps, the value at step `wrong` (if any) off by one: the same
/// topology either way, so a recording of the right chain takes the wrong one's witness.
#[derive(Clone)]
struct Chain {
    steps: usize,
    wrong: Option<usize>,
}

impl Circuit<Scalar> for Chain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut value = Scalar::from(3u64);
        let mut x = cs.alloc(|| "x0", || Ok(value))?;
        for k in 0..self.steps {
            let mut next_value = value.square();
            if self.wrong == Some(k) {
                next_value += Scalar::ONE;
            }
            let next = cs.alloc(|| "x", || Ok(next_value))?;
            cs.enforce(|| "square", |lc| lc + x, |lc| lc + x, |lc| lc + next);
            x = next;
            value = next_value;
        }
        let out = cs.alloc_input(|| "out", || Ok(value))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

#[test]
fn a_broken_constraint_is_named_by_the_device_as_by_the_host() {
    let Some([resident, host]) = gpus() else {
        return;
    };
    let right = Chain {
        steps: 40,
        wrong: None,
    };
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let params = generate_random_parameters(right.clone(), &mut rng).unwrap();
    let pc = Arc::new(PreCompiled::from_recording(&record(right).unwrap()).unwrap());
    assert!(resident.backend().preload_circuit(&pc).unwrap());
    for wrong in [0, 17, 39] {
        let bad = Chain {
            steps: 40,
            wrong: Some(wrong),
        };
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        for prover in [resident, host] {
            match prove_witness(prover, &params, &pc, bad.clone(), r, s) {
                Err(PipelineError::Groth16(Groth16Error::Unsatisfied { index })) => {
                    assert_eq!(index, wrong, "{prover:?}")
                }
                other => panic!("step {wrong}: {other:?}"),
            }
        }
    }
}
