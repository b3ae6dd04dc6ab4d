//! WinningPoSt and WindowPoSt at 2 KiB, end to end: the vanilla proofs of a real sector
//! (filecoin-proofs' `generate_single_vanilla_proof`, in `testdata/filecoin/`), proven by cuzk,
//! accepted by filecoin-proofs' `verify_winning_post` / `verify_window_post`, and
//! byte-identical to bellperson's `create_proof`; and their circuits through a pre-compiled
//! circuit (cuzk-pce), which must give full synthesis's assignment.

use cuzk_filecoin::filecoin_proofs::SectorShape2KiB;
use cuzk_filecoin::post::{post_circuits, PostJob, PostKind};
use cuzk_filecoin::{FilecoinError, PostJobFile};
use cuzk_groth16::Parameters;
use cuzk_pipeline::PartitionInput;

mod common;

/// The seed of this file's r and s.
const SEED: u64 = 2000;

/// gen_vanilla's 2 KiB job file of `kind`.
fn case(kind: PostKind) -> PostJobFile {
    let file = match kind {
        PostKind::Winning => "winning-2KiB.json",
        PostKind::Window => "window-2KiB.json",
    };
    PostJobFile::parse(&common::testdata(file)).unwrap()
}

#[test]
fn winning_post_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    common::check_post::<SectorShape2KiB>(PostKind::Winning, 2048, "winning-2KiB.json", SEED);
}

#[test]
fn window_post_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    common::check_post::<SectorShape2KiB>(PostKind::Window, 2048, "window-2KiB.json", SEED);
}

#[test]
fn winning_post_bad_input() {
    let case = case(PostKind::Winning);
    let dir = tempfile::tempdir().unwrap();
    let never = |_: &Parameters,
                 _: PartitionInput,
                 _: usize|
     -> Result<cuzk_groth16::Proof, Box<dyn std::error::Error + Send + Sync>> {
        panic!("bad input reached the prover")
    };
    let mut never = never;
    let truncated = vec![case.vanilla_proofs[0][..100].to_vec()];
    let job = PostJob {
        kind: PostKind::Winning,
        partition_index: 0,
        sector_size: 2048,
        randomness: case.randomness,
        miner_id: case.miner_id,
        vanilla_proofs: &truncated,
    };
    assert!(matches!(
        job.prove(dir.path(), &mut never),
        Err(FilecoinError::InvalidInput(_))
    ));
    let job = PostJob {
        sector_size: 4096,
        ..job
    };
    assert!(matches!(
        job.prove(dir.path(), &mut never),
        Err(FilecoinError::UnknownSectorSize(4096))
    ));
}

/// cuzk-pce on Filecoin's own circuits: recorded from a PoSt partition's circuit and read back
/// from its file bytes, the pre-compiled circuit gives the assignment full synthesis gives
/// (values, evaluations and densities), so a proof through it has the same bytes.
#[test]
fn pre_compiled_post_circuits_give_full_synthesis_assignment() {
    for kind in [PostKind::Winning, PostKind::Window] {
        let case = case(kind);
        let job = PostJob {
            kind,
            partition_index: 0,
            sector_size: 2048,
            randomness: case.randomness,
            miner_id: case.miner_id,
            vanilla_proofs: &case.vanilla_proofs,
        };
        for (circuit, _) in post_circuits::<SectorShape2KiB>(&job).unwrap() {
            let full = cuzk_groth16::synthesize(circuit.clone()).unwrap();
            let recording = cuzk_pce::record(circuit.clone()).unwrap();
            let bytes = cuzk_pce::to_bytes(&recording).unwrap();
            let compiled = cuzk_pce::PreCompiled::from_bytes(&bytes).unwrap();
            assert_eq!(compiled.synthesize(circuit).unwrap(), full, "{kind:?}");
        }
    }
}
