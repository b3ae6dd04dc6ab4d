//! cuzk against bellperson 0.27 (CPU): same parameters, same proof bytes for the same r and s,
//! each verifier accepting the other's proofs, parameter files round-tripping byte for byte.

use bellperson::groth16 as bp;
use blstrs::Bls12;
use cuzk::circuits::{PorepShaped, SquaringChain, UnusedVariables, WithInputs};
use cuzk::field::Scalar;
use cuzk::groth16 as cz;
use cuzk::Circuit;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// Everything the compatibility of one circuit means, checked in one place.
fn check<C: Circuit<Scalar> + Clone + Send>(circuit: C, public_inputs: &[Scalar], seed: u64) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let bp_params =
        bp::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).unwrap();
    let mut bp_bytes = Vec::new();
    bp_params.write(&mut bp_bytes).unwrap();

    // Our setup from the same seed gives the same file.
    let ours =
        cz::generate_random_parameters(circuit.clone(), &mut ChaCha20Rng::seed_from_u64(seed))
            .unwrap();
    let mut our_bytes = Vec::new();
    ours.write(&mut our_bytes).unwrap();
    assert!(bp_bytes == our_bytes, "setup differs from bellperson's");

    // bellperson's file reads (checked and unchecked) and writes back byte for byte.
    for checked in [true, false] {
        let params = cz::Parameters::read(&bp_bytes[..], checked).unwrap();
        let mut again = Vec::new();
        params.write(&mut again).unwrap();
        assert!(again == bp_bytes, "round trip (checked = {checked})");
    }
    let params = cz::Parameters::read(&bp_bytes[..], true).unwrap();

    let r = Scalar::random(&mut rng);
    let s = Scalar::random(&mut rng);
    let bp_proof = bp::create_proof::<Bls12, _, _>(circuit.clone(), &bp_params, r, s).unwrap();
    let our_proof = cz::create_proof(circuit.clone(), &params, r, s).unwrap();

    // The same proof from the memory-mapped file (bellperson's MappedParameters path).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("circuit.params");
    std::fs::write(&path, &bp_bytes).unwrap();
    let mapped = cz::Parameters::build_mapped_parameters(path, false).unwrap();
    assert_eq!(cz::create_proof(circuit, &mapped, r, s).unwrap(), our_proof);
    let mut bp_proof_bytes = Vec::new();
    bp_proof.write(&mut bp_proof_bytes).unwrap();
    let our_proof_bytes = our_proof.to_bytes();
    assert_eq!(
        hex::encode(bp_proof_bytes.as_slice()),
        hex::encode(our_proof_bytes),
        "proof bytes differ"
    );

    // Each verifier accepts the other's proof.
    let bp_pvk = bp::prepare_verifying_key(&bp_params.vk);
    let ours_in_bp = bp::Proof::<Bls12>::read(&our_proof_bytes[..]).unwrap();
    assert!(bp::verify_proof(&bp_pvk, &ours_in_bp, public_inputs).unwrap());
    let pvk = cz::prepare_verifying_key(&params.vk);
    let bp_in_ours = cz::Proof::<Bls12>::read(&bp_proof_bytes[..]).unwrap();
    assert!(cz::verify_proof(&pvk, &bp_in_ours, public_inputs).unwrap());

    // The verifying key alone round-trips too.
    let mut vk_bytes = Vec::new();
    bp_params.vk.write(&mut vk_bytes).unwrap();
    let vk = cz::VerifyingKey::<Bls12>::read(&vk_bytes[..]).unwrap();
    let mut vk_again = Vec::new();
    vk.write(&mut vk_again).unwrap();
    assert!(vk_again == vk_bytes);
}

#[test]
fn squaring_chain() {
    let c = SquaringChain::new(Scalar::from(3u64), 40);
    check(c.clone(), &c.public_inputs(), 1);
}

#[test]
fn public_inputs() {
    let c = WithInputs::new((1..=9u64).map(|i| Scalar::from(i * 1000 + 7)).collect());
    check(c.clone(), &c.public_inputs(), 2);
}

#[test]
fn porep_shaped() {
    let c = PorepShaped::new(10, 3);
    check(c.clone(), &c.public_inputs(), 3);
}

#[test]
fn unused_variables() {
    let c = UnusedVariables::new(Scalar::from(5u64), Scalar::from(11u64), Scalar::from(99u64));
    check(c.clone(), &c.public_inputs(), 4);
}

#[test]
fn random_proofs_match_for_the_same_rng() {
    let c = SquaringChain::new(Scalar::from(7u64), 10);
    let params =
        cz::generate_random_parameters(c.clone(), &mut ChaCha20Rng::seed_from_u64(5)).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let bp_params = bp::Parameters::<Bls12>::read(&bytes[..], true).unwrap();
    let ours =
        cz::create_random_proof(c.clone(), &params, &mut ChaCha20Rng::seed_from_u64(6)).unwrap();
    let theirs = bp::create_random_proof::<Bls12, _, _, _>(
        c.clone(),
        &bp_params,
        &mut ChaCha20Rng::seed_from_u64(6),
    )
    .unwrap();
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();
    assert_eq!(ours.to_bytes().to_vec(), theirs_bytes);

    let batch = cz::create_random_proof_batch(
        vec![c.clone(), c.clone()],
        &params,
        &mut ChaCha20Rng::seed_from_u64(8),
    )
    .unwrap();
    let bp_batch = bp::create_random_proof_batch::<Bls12, _, _, _>(
        vec![c.clone(), c.clone()],
        &bp_params,
        &mut ChaCha20Rng::seed_from_u64(8),
    )
    .unwrap();
    for (ours, theirs) in batch.iter().zip(&bp_batch) {
        let mut theirs_bytes = Vec::new();
        theirs.write(&mut theirs_bytes).unwrap();
        assert_eq!(ours.to_bytes().to_vec(), theirs_bytes);
    }
    let pvk = cz::prepare_verifying_key(&params.vk);
    let inputs = vec![c.public_inputs(), c.public_inputs()];
    let refs: Vec<_> = batch.iter().collect();
    assert!(
        cz::verify_proofs_batch(&pvk, &mut ChaCha20Rng::seed_from_u64(9), &refs, &inputs).unwrap()
    );
}
