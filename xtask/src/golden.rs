//! `cargo xtask golden [--bless]`: the golden proofs in `testdata/golden/`, through cargo (xtask
//! links no prover): the check is cuzk's `golden` test, the bless its `golden_bless` example.

use anyhow::Context;
use xshell::{cmd, Shell};

/// `cargo xtask golden`'s arguments.
#[derive(clap::Args, Debug)]
pub struct GoldenArgs {
    /// Regenerate the parameters and proofs with bellperson instead of checking them.
    #[arg(long)]
    bless: bool,
}

pub fn run(sh: &Shell, args: &GoldenArgs) -> anyhow::Result<()> {
    if args.bless {
        cmd!(
            sh,
            "cargo run --release --locked -p cuzk --no-default-features --example golden_bless"
        )
        .run()
        .context("regenerating the golden cases with bellperson")
    } else {
        cmd!(sh, "cargo test --locked -p cuzk --test golden")
            .run()
            .context(
                "golden check failed; if the change is intended, run `cargo xtask golden --bless`",
            )
    }
}
