//! SnapDeals at 2 KiB, end to end: a real update's partition proofs (filecoin-proofs'
//! `encode_into` and `generate_partition_proofs`, in `testdata/filecoin/`), proven by cuzk,
//! accepted by filecoin-proofs' `verify_empty_sector_update_proof`, and byte-identical to
//! bellperson's `create_proof`.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use blstrs::Scalar;
use cuzk_filecoin::filecoin_proofs::{self, SectorShape2KiB};
use cuzk_filecoin::snap::{generate_snap_params, snap_circuits, snap_param_files, SnapJob};
use cuzk_filecoin::{FilecoinError, PartitionProver, RegisteredSealProof};
use cuzk_groth16::{Parameters, Proof, ProvingAssignment};
use cuzk_pipeline::{CpuBackend, Prover, ProverConfig};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/filecoin");

struct Case {
    comm_r_old: [u8; 32],
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
    vanilla_proofs: Vec<Vec<u8>>,
}

fn hex32(v: &serde_json::Value) -> [u8; 32] {
    let s = v.as_str().expect("hex string");
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    out
}

fn case() -> Case {
    let text = std::fs::read_to_string(Path::new(TESTDATA).join("snap-2KiB.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    Case {
        comm_r_old: hex32(&v["comm_r_old"]),
        comm_r_new: hex32(&v["comm_r_new"]),
        comm_d_new: hex32(&v["comm_d_new"]),
        vanilla_proofs: v["vanilla_proofs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                base64::engine::general_purpose::STANDARD
                    .decode(p.as_str().unwrap())
                    .unwrap()
            })
            .collect(),
    }
}

fn param_dir() -> PathBuf {
    let root = std::env::var_os("CUZK_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cuzk")))
        .expect("CUZK_CACHE_DIR or HOME");
    let dir = root.join("filecoin-params/seed-0");
    generate_snap_params(&dir, 2048, 0).unwrap();
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    dir
}

fn fixed_rs(k: usize) -> (Scalar, Scalar) {
    let mut rng = ChaCha20Rng::seed_from_u64(3000 + k as u64);
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

fn cuzk_prover() -> impl PartitionProver {
    let prover = Prover::new(CpuBackend, ProverConfig::default());
    move |params: &Parameters, a: ProvingAssignment, k: usize| {
        let (r, s) = fixed_rs(k);
        Ok(prover
            .prove_batch(params, vec![a], &[r], &[s], 0)?
            .remove(0)
            .0)
    }
}

#[test]
fn snap_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    let dir = param_dir();
    let case = case();
    let job = SnapJob {
        sector_size: 2048,
        comm_r_old: case.comm_r_old,
        comm_r_new: case.comm_r_new,
        comm_d_new: case.comm_d_new,
        vanilla_proofs: &case.vanilla_proofs,
    };
    let proof = job.prove(&dir, &mut cuzk_prover()).unwrap();
    assert_eq!(proof.bytes.len(), 192 * case.vanilla_proofs.len());

    let config = RegisteredSealProof::STACKED_DRG_2KIB_V1_1.porep_config();
    let ok = filecoin_proofs::verify_empty_sector_update_proof::<SectorShape2KiB>(
        &config,
        &proof.bytes,
        case.comm_r_old,
        case.comm_r_new,
        case.comm_d_new,
    )
    .unwrap();
    assert!(ok, "verify_empty_sector_update_proof rejects cuzk's proof");

    let files = snap_param_files(&dir, 2048).unwrap();
    let bp_params = bellperson::groth16::Parameters::<blstrs::Bls12>::read(
        std::io::BufReader::new(std::fs::File::open(&files.params).unwrap()),
        false,
    )
    .unwrap();
    for (k, (circuit, _)) in snap_circuits::<SectorShape2KiB>(&job)
        .unwrap()
        .into_iter()
        .enumerate()
    {
        let (r, s) = fixed_rs(k);
        let bp = bellperson::groth16::create_proof(circuit, &bp_params, r, s).unwrap();
        let mut bytes = Vec::new();
        bp.write(&mut bytes).unwrap();
        assert_eq!(
            bytes[..],
            proof.bytes[192 * k..192 * (k + 1)],
            "partition {k}"
        );
    }
}

#[test]
fn snap_bad_input() {
    let case = case();
    let dir = tempfile::tempdir().unwrap();
    let mut never = |_: &Parameters,
                     _: ProvingAssignment,
                     _: usize|
     -> Result<Proof, Box<dyn std::error::Error + Send + Sync>> {
        panic!("bad input reached the prover")
    };
    let truncated = vec![case.vanilla_proofs[0][..64].to_vec()];
    let job = SnapJob {
        sector_size: 2048,
        comm_r_old: case.comm_r_old,
        comm_r_new: case.comm_r_new,
        comm_d_new: case.comm_d_new,
        vanilla_proofs: &truncated,
    };
    assert!(matches!(
        job.prove(dir.path(), &mut never),
        Err(FilecoinError::InvalidInput(_))
    ));
    let none: Vec<Vec<u8>> = Vec::new();
    let job = SnapJob {
        vanilla_proofs: &none,
        ..job
    };
    assert!(matches!(
        job.prove(dir.path(), &mut never),
        Err(FilecoinError::Mismatch { .. })
    ));
}
