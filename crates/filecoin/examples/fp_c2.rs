//! filecoin-proofs' own `seal_commit_phase2` (bellperson on the CPU) on a C1 output, timed: the
//! incumbent cuzk's `prove porep` is compared with (`cargo xtask bench filecoin`).
//! `FIL_PROOFS_PARAMETER_CACHE` must name the parameter folder.
//!
//! - `fp_c2 [C1.json] [MINER] [SECTOR] [--out PROOF]`: prove (default: the built-in 2 KiB
//!   sector, miner 1000, sector 1); `seal_commit_phase2` verifies its proof before returning
//!   it, and the last line says so with the time: `..., verified, T s`.
//! - `fp_c2 verify C1.json MINER SECTOR PROOF`: filecoin-proofs' `verify_seal` on another
//!   prover's bytes (cuzk's), exit status 1 if it rejects them.
//!
//! `cargo build --release -p cuzk-filecoin --example fp_c2`.

use std::time::Instant;

use anyhow::{bail, Context};
use cuzk_filecoin::filecoin_proofs::{self, with_shape, MerkleTreeTrait, SealCommitPhase1Output};
use cuzk_filecoin::{prover_id, C1Output};

/// What to do with the C1 output.
enum Mode {
    Prove { out: Option<String> },
    Verify { proof: Vec<u8> },
}

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let verify = args.first().is_some_and(|a| a == "verify");
    let mode = if verify {
        args.remove(0);
        let path = args
            .get(3)
            .context("usage: fp_c2 verify C1.json MINER SECTOR PROOF")?;
        Mode::Verify {
            proof: std::fs::read(path).with_context(|| format!("reading {path}"))?,
        }
    } else {
        let out = match args.iter().position(|a| a == "--out") {
            Some(i) => {
                let path = args.get(i + 1).context("--out needs a file")?.clone();
                args.drain(i..i + 2);
                Some(path)
            }
            None => None,
        };
        Mode::Prove { out }
    };
    let path = args
        .first()
        .cloned()
        .unwrap_or_else(|| "testdata/filecoin/porep-2KiB.c1.json".into());
    let miner: u64 = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let sector: u64 = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(1);
    let c1 = C1Output::parse(
        &std::fs::read(&path).with_context(|| format!("reading {path}"))?,
        None,
    )?;
    let size = c1.registered_proof.sector_size;
    with_shape!(size, run, &c1, miner, sector, &mode,)
}

fn run<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Output,
    miner: u64,
    sector: u64,
    mode: &Mode,
) -> anyhow::Result<()> {
    let config = c1.registered_proof.porep_config();
    match mode {
        Mode::Verify { proof } => {
            let ok = filecoin_proofs::verify_seal::<Tree>(
                &config,
                c1.comm_r,
                c1.comm_d,
                prover_id(miner),
                sector.into(),
                c1.ticket,
                c1.seed,
                proof,
            )?;
            if !ok {
                bail!("filecoin-proofs verify_seal rejects the proof");
            }
            println!("filecoin-proofs verify_seal: ok ({} bytes)", proof.len());
            Ok(())
        }
        Mode::Prove { out } => {
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
            let phase1: SealCommitPhase1Output<Tree> = serde_json::from_str(&json)?;
            let start = Instant::now();
            let proof = filecoin_proofs::seal_commit_phase2(
                &config,
                phase1,
                prover_id(miner),
                sector.into(),
            )?;
            let elapsed = start.elapsed();
            if let Some(out) = out {
                std::fs::write(out, &proof.proof).with_context(|| format!("writing {out}"))?;
            }
            println!(
                "filecoin-proofs seal_commit_phase2: {} bytes, verified, {:.3} s",
                proof.proof.len(),
                elapsed.as_secs_f64()
            );
            Ok(())
        }
    }
}
