//! SnapDeals at 2 KiB, end to end: a real update's partition proofs (filecoin-proofs'
//! `encode_into` and `generate_partition_proofs`, in `testdata/filecoin/`), proven by cuzk,
//! accepted by filecoin-proofs' `verify_empty_sector_update_proof`, and byte-identical to
//! bellperson's `create_proof`.

use cuzk_filecoin::filecoin_proofs::SectorShape2KiB;
use cuzk_filecoin::snap::SnapJob;
use cuzk_filecoin::{FilecoinError, SnapJobFile};
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::PartitionInput;

mod common;

/// The seed of this file's r and s.
const SEED: u64 = 3000;

/// gen_vanilla's 2 KiB update.
fn case() -> SnapJobFile {
    SnapJobFile::parse(&common::testdata("snap-2KiB.json")).unwrap()
}

#[test]
fn snap_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    common::check_snap::<SectorShape2KiB>(2048, "snap-2KiB.json", SEED);
}

#[test]
fn snap_bad_input() {
    let case = case();
    let dir = tempfile::tempdir().unwrap();
    let mut never = |_: &Parameters,
                     _: PartitionInput,
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
