//! PoRep C2 at 2 KiB, end to end: a real C1 output (sealed by filecoin-proofs, in
//! `testdata/filecoin/`), proven by cuzk, accepted by filecoin-proofs' `verify_seal`, and
//! byte-identical to bellperson's `create_proof` for the same r and s; bad input gets a typed
//! error.
//!
//! The 2 KiB parameters are made once per machine by cuzk's setup (seed 0) into
//! `$CUZK_CACHE_DIR/filecoin-params/seed-0` (default `~/.cache/cuzk/...`), the folder
//! filecoin-proofs' verifier is pointed at.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cuzk_filecoin::filecoin_proofs::SectorShape2KiB;
use cuzk_filecoin::porep::generate_params;
use cuzk_filecoin::{C1Output, FilecoinError, PorepJob, RegisteredSealProof, SectorId};
use cuzk_groth16::{Parameters, Proof};
use cuzk_pipeline::PartitionInput;

mod common;

use common::TESTDATA;

/// The seed of this file's r and s.
const SEED: u64 = 1000;
const SECTOR: SectorId = SectorId {
    miner_id: 1000,
    sector_number: 1,
};

fn c1_bytes() -> Vec<u8> {
    std::fs::read(Path::new(TESTDATA).join("porep-2KiB.c1.json")).expect("testdata")
}

/// The parameter folder, generated once per machine (and once per test process).
fn param_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::params_dir();
        let (files, report) =
            generate_params(&dir, RegisteredSealProof::STACKED_DRG_2KIB_V1_1, 0).expect("params");
        eprintln!("parameters {} ({report:?})", files.params.display());
        dir
    })
}

#[test]
fn porep_2kib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    // Made once for both tests of this process (the other proves nothing, but needs them).
    param_dir();
    common::check_porep::<SectorShape2KiB>("2KiB", SEED);
}

#[test]
fn tampered_vanilla_proofs_are_unsatisfied() {
    let dir = param_dir();
    let c1 = C1Output::parse(&c1_bytes(), None).unwrap();
    // Change one byte of the first data leaf (comm_d's inclusion proof): the circuit no longer
    // holds. (Roots are not witnessed: the circuit uses the public commitments instead.)
    let raw = c1.vanilla_proofs.get();
    let at = raw.find("\"leaf\":[").unwrap();
    let digits = raw[at..].find(|c: char| c.is_ascii_digit()).unwrap() + at;
    let end = raw[digits..].find(|c: char| !c.is_ascii_digit()).unwrap() + digits;
    let old: u32 = raw[digits..end].parse().unwrap();
    let new = format!("{}{}{}", &raw[..digits], (old + 1) % 100, &raw[end..]);
    let tampered = C1Output {
        vanilla_proofs: serde_json::value::RawValue::from_string(new).unwrap(),
        ..c1
    };
    let job = PorepJob::new(&tampered, SECTOR).unwrap();
    let never = |_: &Parameters,
                 _: PartitionInput,
                 _: usize|
     -> Result<Proof, Box<dyn std::error::Error + Send + Sync>> {
        panic!("an unsatisfied circuit reached the prover")
    };
    let mut never = never;
    match job.prove(dir, &mut never) {
        Err(FilecoinError::Unsatisfied { partition: 0, .. }) => {}
        other => panic!("expected Unsatisfied, got {other:?}"),
    }
}
