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

use cuzk_filecoin::filecoin_proofs::SectorShape8MiB;
use cuzk_filecoin::post::PostKind;

mod common;

const SIZE: u64 = 8 << 20;

/// The seed of this file's r and s.
const SEED: u64 = 8000;

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn porep_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    common::check_porep::<SectorShape8MiB>("8MiB", SEED);
}

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn winning_post_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    common::check_post::<SectorShape8MiB>(PostKind::Winning, SIZE, "winning-8MiB.json", SEED);
}

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn window_post_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    common::check_post::<SectorShape8MiB>(PostKind::Window, SIZE, "window-8MiB.json", SEED);
}

#[test]
#[ignore = "8 MiB: minutes on two cores; run with --ignored"]
fn snap_8mib_verifies_with_filecoin_proofs_and_matches_bellperson() {
    common::check_snap::<SectorShape8MiB>(SIZE, "snap-8MiB.json", SEED);
}
