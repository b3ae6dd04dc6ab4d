//! Proofs through pre-compiled circuits are byte-identical to proofs through full synthesis:
//! the PoRep-shaped circuit at small sizes and every golden case (bellperson's bytes).

use cuzk::circuits::{BuiltIn, PorepShaped};
use cuzk::field::Scalar;
use cuzk::groth16::{generate_random_parameters, Parameters};
use cuzk::pipeline::{CpuBackend, Prover, ProverConfig};
use cuzk_groth16::ProvingAssignment;
use cuzk_pce::{record, PreCompiled};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn prove(params: &Parameters, assignment: ProvingAssignment, r: Scalar, s: Scalar) -> Vec<u8> {
    let prover = Prover::new(CpuBackend, ProverConfig::default());
    let mut proofs = prover
        .prove_batch(params, vec![assignment], &[r], &[s], 0)
        .unwrap();
    proofs.remove(0).0.to_bytes().to_vec()
}

#[test]
fn porep_shaped_proofs_are_byte_identical() {
    for log in [8u32, 10] {
        let mut rng = ChaCha20Rng::seed_from_u64(u64::from(log));
        let params = generate_random_parameters(PorepShaped::new(log, 0), &mut rng).unwrap();
        // Recorded from one witness, proved with others.
        let pc = PreCompiled::from_recording(&record(PorepShaped::new(log, 0)).unwrap()).unwrap();
        for seed in [1, 2] {
            let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let circuit = PorepShaped::new(log, seed);
            let full = cuzk::create_proof(circuit.clone(), &params, r, s).unwrap();
            let ours = prove(&params, pc.synthesize(circuit).unwrap(), r, s);
            assert_eq!(
                hex::encode(ours),
                hex::encode(full.to_bytes()),
                "2^{log}, seed {seed}"
            );
        }
    }
}

#[test]
fn golden_proofs_are_reproduced_through_pre_compiled_circuits() {
    let dir = cuzk::golden::default_dir();
    let manifest = cuzk::golden::load(&dir).unwrap();
    assert_eq!(manifest.cases.len(), cuzk::golden::CASES.len());
    for case in &manifest.cases {
        let circuit: BuiltIn = case.circuit.parse().unwrap();
        let params = Parameters::read_file(dir.join(&case.params), true).unwrap();
        let r = cuzk::golden::parse_scalar(&case.name, &case.r).unwrap();
        let s = cuzk::golden::parse_scalar(&case.name, &case.s).unwrap();
        let pc = PreCompiled::from_recording(&record(circuit.clone()).unwrap()).unwrap();
        let proof = prove(&params, pc.synthesize(circuit).unwrap(), r, s);
        assert_eq!(hex::encode(proof), case.proof, "case {}", case.name);
    }
}
