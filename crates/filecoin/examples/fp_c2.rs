//! filecoin-proofs' own `seal_commit_phase2` (bellperson on the CPU) on a C1 output, timed: the
//! incumbent cuzk's `prove porep` is compared with. `FIL_PROOFS_PARAMETER_CACHE` must name the
//! parameter folder; `cargo run --release -p cuzk-filecoin --example fp_c2 -- [C1.json]
//! [MINER] [SECTOR]` (default: the built-in 2 KiB sector, miner 1000, sector 1).

use std::time::Instant;

use anyhow::Context;
use cuzk_filecoin::filecoin_proofs::{self, with_shape, MerkleTreeTrait, SealCommitPhase1Output};
use cuzk_filecoin::{prover_id, C1Output};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "testdata/filecoin/porep-2KiB.c1.json".into());
    let miner: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let sector: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1);
    let c1 = C1Output::parse(
        &std::fs::read(&path).context("reading the C1 output")?,
        None,
    )?;
    let size = c1.registered_proof.sector_size;
    with_shape!(size, run, &c1, miner, sector,)
}

fn run<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Output,
    miner: u64,
    sector: u64,
) -> anyhow::Result<()> {
    // filecoin-proofs' own JSON form of the output.
    let json = format!(
        "{{\"vanilla_proofs\":{},\"comm_r\":{:?},\"comm_d\":{:?},\"replica_id\":{:?},\"seed\":{:?},\"ticket\":{:?}}}",
        c1.vanilla_proofs.get(),
        c1.comm_r,
        c1.comm_d,
        c1.replica_id,
        c1.seed,
        c1.ticket
    );
    let out: SealCommitPhase1Output<Tree> = serde_json::from_str(&json)?;
    let config = c1.registered_proof.porep_config();
    let start = Instant::now();
    let proof = filecoin_proofs::seal_commit_phase2(&config, out, prover_id(miner), sector.into())?;
    println!(
        "filecoin-proofs seal_commit_phase2: {} bytes, verified, {:.3} s",
        proof.proof.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
