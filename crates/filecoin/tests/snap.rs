//! SnapDeals at 2 KiB, end to end: a real update's partition proofs (filecoin-proofs'
//! `encode_into` and `generate_partition_proofs`, in `testdata/filecoin/`), proven by cuzk,
//! accepted by filecoin-proofs' `verify_empty_sector_update_proof`, and byte-identical to
//! bellperson's `create_proof`.

use std::path::{Path, PathBuf};

use cuzk_filecoin::filecoin_proofs::{self, SectorShape2KiB};
use cuzk_filecoin::snap::{generate_snap_params, snap_circuits, snap_param_files, SnapJob};
use cuzk_filecoin::{FilecoinError, RegisteredSealProof, SnapJobFile};
use cuzk_groth16::{Parameters, Proof, ProvingAssignment};

mod common;

use common::TESTDATA;

/// The seed of this file's r and s.
const SEED: u64 = 3000;

struct Case {
    comm_r_old: [u8; 32],
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
    vanilla_proofs: Vec<Vec<u8>>,
}

fn case() -> Case {
    let text = std::fs::read_to_string(Path::new(TESTDATA).join("snap-2KiB.json")).unwrap();
    let f = SnapJobFile::parse(&text).unwrap();
    Case {
        comm_r_old: f.comm_r_old,
        comm_r_new: f.comm_r_new,
        comm_d_new: f.comm_d_new,
        vanilla_proofs: f.vanilla_proofs,
    }
}

fn param_dir() -> PathBuf {
    let dir = common::params_dir();
    generate_snap_params(&dir, 2048, 0).unwrap();
    dir
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
    let proof = job.prove(&dir, &mut common::cuzk_prover(SEED)).unwrap();
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
    let circuits = snap_circuits::<SectorShape2KiB>(&job).unwrap();
    common::assert_bellperson_bytes(
        &files.params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        SEED,
        &proof.bytes,
    );
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
