//! WinningPoSt and WindowPoSt at 2 KiB, end to end: the vanilla proofs of a real sector
//! (filecoin-proofs' `generate_single_vanilla_proof`, in `testdata/filecoin/`), proven by cuzk,
//! accepted by filecoin-proofs' `verify_winning_post` / `verify_window_post`, and
//! byte-identical to bellperson's `create_proof`; and their circuits through a pre-compiled
//! circuit (cuzk-pce), which must give full synthesis's assignment.

use std::path::{Path, PathBuf};

use cuzk_filecoin::filecoin_proofs::{self, PublicReplicaInfo, SectorShape2KiB};
use cuzk_filecoin::post::{generate_post_params, post_circuits, post_config, PostJob, PostKind};
use cuzk_filecoin::{FilecoinError, PostJobFile};
use cuzk_groth16::{Parameters, ProvingAssignment};

mod common;

use common::TESTDATA;

/// The seed of this file's r and s.
const SEED: u64 = 2000;

struct Case {
    randomness: [u8; 32],
    comm_r: [u8; 32],
    miner_id: u64,
    sector_number: u64,
    vanilla_proofs: Vec<Vec<u8>>,
}

fn case(kind: PostKind) -> Case {
    let file = match kind {
        PostKind::Winning => "winning-2KiB.json",
        PostKind::Window => "window-2KiB.json",
    };
    let text = std::fs::read_to_string(Path::new(TESTDATA).join(file)).unwrap();
    let f = PostJobFile::parse(&text).unwrap();
    Case {
        randomness: f.randomness,
        comm_r: f.comm_r.expect("comm_r"),
        miner_id: f.miner_id,
        sector_number: f.sector_number.expect("sector_number"),
        vanilla_proofs: f.vanilla_proofs,
    }
}

fn param_dir(kind: PostKind) -> PathBuf {
    let dir = common::params_dir();
    generate_post_params(&dir, kind, 2048, 0).unwrap();
    dir
}

fn check(kind: PostKind) {
    let dir = param_dir(kind);
    let case = case(kind);
    let job = PostJob {
        kind,
        partition_index: 0,
        sector_size: 2048,
        randomness: case.randomness,
        miner_id: case.miner_id,
        vanilla_proofs: &case.vanilla_proofs,
    };
    let proof = job.prove(&dir, &mut common::cuzk_prover(SEED)).unwrap();
    assert_eq!(proof.bytes.len(), 192);

    let config = post_config(kind, 2048).unwrap();
    let prover_id = cuzk_filecoin::prover_id(case.miner_id);
    let replica = PublicReplicaInfo::new(case.comm_r).unwrap();
    let sector = case.sector_number.into();
    let ok = match kind {
        PostKind::Winning => filecoin_proofs::verify_winning_post::<SectorShape2KiB>(
            &config,
            &case.randomness,
            &[(sector, replica)],
            prover_id,
            &proof.bytes,
        ),
        PostKind::Window => filecoin_proofs::verify_window_post::<SectorShape2KiB>(
            &config,
            &case.randomness,
            &[(sector, replica)].into_iter().collect(),
            prover_id,
            &proof.bytes,
        ),
    }
    .unwrap();
    assert!(ok, "filecoin-proofs rejects cuzk's {kind:?} proof");

    // bellperson, same circuit, parameters, r and s.
    let files = cuzk_filecoin::post::post_param_files(&dir, kind, 2048).unwrap();
    let circuits = post_circuits::<SectorShape2KiB>(&job).unwrap();
    common::assert_bellperson_bytes(
        &files.params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        SEED,
        &proof.bytes,
    );
}

#[test]
fn winning_post_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    check(PostKind::Winning);
}

#[test]
fn window_post_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    check(PostKind::Window);
}

#[test]
fn winning_post_bad_input() {
    let case = case(PostKind::Winning);
    let dir = tempfile::tempdir().unwrap();
    let never = |_: &Parameters,
                 _: ProvingAssignment,
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
