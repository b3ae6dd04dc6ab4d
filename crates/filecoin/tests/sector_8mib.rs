//! Every kind at 8 MiB, end to end: the real inputs of an 8 MiB sector (sealed by filecoin-proofs
//! from fixed seeds, `cargo xtask gen-vanilla --sizes 8MiB`, in `testdata/filecoin/`), proven by
//! cuzk, accepted by filecoin-proofs' verifiers, and byte-identical to bellperson's
//! `create_proof` for the same r and s.
//!
//! The 2 KiB tests (porep.rs, post.rs, snap.rs) run in CI; these are ignored there: making the
//! 8 MiB parameters and proving each circuit twice (cuzk and bellperson) takes about ten minutes
//! on two cores. Run them with
//! `cargo test --release -p cuzk-filecoin --test sector_8mib -- --ignored`; the parameters are
//! made once per machine into the same cache folder as the 2 KiB ones (`cuzk params
//! --sector-size 8MiB` makes them ahead).

use std::path::{Path, PathBuf};

use cuzk_filecoin::filecoin_proofs::{self, PublicReplicaInfo, SectorShape8MiB};
use cuzk_filecoin::porep::{generate_params, partition_circuits};
use cuzk_filecoin::post::{generate_post_params, post_circuits, post_config, PostJob, PostKind};
use cuzk_filecoin::snap::{generate_snap_params, snap_circuits, snap_param_files, SnapJob};
use cuzk_filecoin::{C1Output, PorepJob, PostJobFile, RegisteredSealProof, SectorId, SnapJobFile};

mod common;

use common::{hex32, TESTDATA};

const SIZE: u64 = 8 << 20;

/// The seed of this file's r and s.
const SEED: u64 = 8000;

fn testdata(name: &str) -> String {
    std::fs::read_to_string(Path::new(TESTDATA).join(name)).unwrap_or_else(|e| {
        panic!("testdata/filecoin/{name}: {e} (cargo xtask gen-vanilla --sizes 8MiB)")
    })
}

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn porep_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    let dir = common::params_dir();
    generate_params(&dir, RegisteredSealProof::v1_1(SIZE).unwrap(), 0).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&testdata("porep-8MiB.meta.json")).unwrap();
    let sector = SectorId {
        miner_id: meta["miner_id"].as_u64().unwrap(),
        sector_number: meta["sector_number"].as_u64().unwrap(),
    };
    let c1 = C1Output::parse(testdata("porep-8MiB.c1.json").as_bytes(), None).unwrap();
    let job = PorepJob::new(&c1, sector).unwrap();
    let proof = job.prove(&dir, &mut common::cuzk_prover(SEED)).unwrap();

    let ok = filecoin_proofs::verify_seal::<SectorShape8MiB>(
        &c1.registered_proof.porep_config(),
        hex32(&meta["comm_r"]),
        hex32(&meta["comm_d"]),
        cuzk_filecoin::prover_id(sector.miner_id),
        sector.sector_number.into(),
        hex32(&meta["ticket"]),
        hex32(&meta["seed"]),
        &proof.bytes,
    )
    .unwrap();
    assert!(ok, "verify_seal rejects cuzk's 8 MiB proof");

    let circuits = partition_circuits::<SectorShape8MiB>(&job).unwrap();
    common::assert_bellperson_bytes(
        &job.param_files(&dir).unwrap().params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        SEED,
        &proof.bytes,
    );
}

fn post(kind: PostKind, file: &str) {
    let dir: PathBuf = common::params_dir();
    generate_post_params(&dir, kind, SIZE, 0).unwrap();
    let f = PostJobFile::parse(&testdata(file)).unwrap();
    let job = PostJob {
        kind,
        partition_index: 0,
        sector_size: SIZE,
        randomness: f.randomness,
        miner_id: f.miner_id,
        vanilla_proofs: &f.vanilla_proofs,
    };
    let proof = job.prove(&dir, &mut common::cuzk_prover(SEED)).unwrap();

    let config = post_config(kind, SIZE).unwrap();
    let prover_id = cuzk_filecoin::prover_id(f.miner_id);
    let replica = PublicReplicaInfo::new(f.comm_r.expect("comm_r")).unwrap();
    let sector = f.sector_number.expect("sector_number").into();
    let ok = match kind {
        PostKind::Winning => filecoin_proofs::verify_winning_post::<SectorShape8MiB>(
            &config,
            &f.randomness,
            &[(sector, replica)],
            prover_id,
            &proof.bytes,
        ),
        PostKind::Window => filecoin_proofs::verify_window_post::<SectorShape8MiB>(
            &config,
            &f.randomness,
            &[(sector, replica)].into_iter().collect(),
            prover_id,
            &proof.bytes,
        ),
    }
    .unwrap();
    assert!(ok, "filecoin-proofs rejects cuzk's 8 MiB {kind:?} proof");

    let files = cuzk_filecoin::post::post_param_files(&dir, kind, SIZE).unwrap();
    let circuits = post_circuits::<SectorShape8MiB>(&job).unwrap();
    common::assert_bellperson_bytes(
        &files.params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        SEED,
        &proof.bytes,
    );
}

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn winning_post_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    post(PostKind::Winning, "winning-8MiB.json");
}

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn window_post_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    post(PostKind::Window, "window-8MiB.json");
}

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn snap_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    let dir = common::params_dir();
    generate_snap_params(&dir, SIZE, 0).unwrap();
    let f = SnapJobFile::parse(&testdata("snap-8MiB.json")).unwrap();
    let job = SnapJob {
        sector_size: SIZE,
        comm_r_old: f.comm_r_old,
        comm_r_new: f.comm_r_new,
        comm_d_new: f.comm_d_new,
        vanilla_proofs: &f.vanilla_proofs,
    };
    let proof = job.prove(&dir, &mut common::cuzk_prover(SEED)).unwrap();

    let config = RegisteredSealProof::v1_1(SIZE).unwrap().porep_config();
    let ok = filecoin_proofs::verify_empty_sector_update_proof::<SectorShape8MiB>(
        &config,
        &proof.bytes,
        f.comm_r_old,
        f.comm_r_new,
        f.comm_d_new,
    )
    .unwrap();
    assert!(
        ok,
        "verify_empty_sector_update_proof rejects cuzk's 8 MiB proof"
    );

    let circuits = snap_circuits::<SectorShape8MiB>(&job).unwrap();
    common::assert_bellperson_bytes(
        &snap_param_files(&dir, SIZE).unwrap().params,
        circuits.into_iter().map(|(circuit, _)| circuit),
        SEED,
        &proof.bytes,
    );
}
