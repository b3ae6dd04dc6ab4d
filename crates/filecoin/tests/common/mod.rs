//! What the Filecoin end-to-end tests share: the test data, the parameter cache, cuzk's prover
//! with fixed r and s, and the comparison with bellperson's bytes.
#![allow(dead_code)] // Each test file uses its own subset.

use std::path::{Path, PathBuf};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use cuzk_filecoin::PartitionProver;
use cuzk_groth16::{Parameters, ProvingAssignment};
use cuzk_pipeline::{CpuBackend, Prover, ProverConfig};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

pub const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");

/// A 32-byte value written as 64 hex digits.
pub fn hex32(v: &serde_json::Value) -> [u8; 32] {
    cuzk_filecoin::jobs::decode_hex32("a 32-byte value", v.as_str().expect("a string")).unwrap()
}

/// The per-machine parameter folder the CLI uses (`$CUZK_CACHE_DIR`, else `~/.cache/cuzk`, then
/// `filecoin-params/seed-0`), also named as filecoin-proofs' parameter cache so that its
/// verifiers find the verifying keys there.
pub fn params_dir() -> PathBuf {
    let root = std::env::var_os("CUZK_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cuzk")))
        .expect("CUZK_CACHE_DIR or HOME");
    let dir = root.join("filecoin-params/seed-0");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    dir
}

/// r and s for partition `k`, from a seed per test file.
pub fn fixed_rs(seed: u64, k: usize) -> (Scalar, Scalar) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed + k as u64);
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

/// cuzk's pipeline with r, s fixed by the partition index.
pub fn cuzk_prover(seed: u64) -> impl PartitionProver {
    let prover = Prover::new(CpuBackend, ProverConfig::default());
    move |params: &Parameters, a: ProvingAssignment, k: usize| {
        let (r, s) = fixed_rs(seed, k);
        Ok(prover
            .prove_batch(params, vec![a], &[r], &[s], 0)?
            .remove(0)
            .0)
    }
}

/// Asserts that bellperson's `create_proof` gives, partition by partition, the bytes of `proof`
/// (192 per partition) for the same circuits, the parameters in `params` and the same r, s.
pub fn assert_bellperson_bytes<C: Circuit<Scalar> + Send>(
    params: &Path,
    circuits: impl IntoIterator<Item = C>,
    seed: u64,
    proof: &[u8],
) {
    let bp_params = bellperson::groth16::Parameters::<blstrs::Bls12>::read(
        std::io::BufReader::new(std::fs::File::open(params).unwrap()),
        false,
    )
    .unwrap();
    for (k, circuit) in circuits.into_iter().enumerate() {
        let (r, s) = fixed_rs(seed, k);
        let bp = bellperson::groth16::create_proof(circuit, &bp_params, r, s).unwrap();
        let mut bytes = Vec::new();
        bp.write(&mut bytes).unwrap();
        assert_eq!(bytes[..], proof[192 * k..192 * (k + 1)], "partition {k}");
    }
}
