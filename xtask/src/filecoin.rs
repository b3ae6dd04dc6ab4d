//! `cargo xtask gen-vanilla` and `cargo xtask params`: the Filecoin test inputs and parameters.
//!
//! - `gen-vanilla [--sizes 2KiB] [--out testdata/filecoin]` seals a sector of each size with
//!   filecoin-proofs from fixed seeds (`crates/filecoin/examples/gen_vanilla.rs`, release) and
//!   writes its C1 output, PoSt vanilla proofs and a SnapDeals update; the same files on every
//!   run. No Groth16 parameters are needed.
//! - `params [--sector-size 2KiB] [--kind all] [--dir DIR]` runs `cuzk params` (release):
//!   cuzk's setup for the test sizes, under filecoin-proofs' file names, kept when they exist.

use std::path::PathBuf;

use anyhow::Context;
use xshell::{cmd, Shell};

/// The Filecoin parameters' folder that `cuzk prove` and `cuzk params` choose by default, where
/// the benchmarks find the test parameters: filecoin-proofs' `$FIL_PROOFS_PARAMETER_CACHE` if
/// set, else `filecoin-params/seed-0` in cuzk's cache folder ([`cuzk_gpu_build::cache_root`]).
pub fn param_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let root = cuzk_gpu_build::cache_root()
        .context("no cache folder: set CUZK_CACHE_DIR (or XDG_CACHE_HOME or HOME)")?;
    Ok(root.join("filecoin-params/seed-0"))
}

/// `cargo xtask gen-vanilla`'s arguments.
#[derive(clap::Args, Debug)]
pub struct GenVanillaArgs {
    /// Sector sizes, comma-separated (2KiB, 8MiB).
    #[arg(long, value_delimiter = ',', default_value = "2KiB",
          value_parser = ["2KiB", "8MiB"])]
    sizes: Vec<String>,
    /// The folder to write into.
    #[arg(long, default_value = "testdata/filecoin")]
    out: String,
}

/// `cargo xtask params`' arguments, passed on to `cuzk params`.
#[derive(clap::Args, Debug)]
pub struct ParamsArgs {
    /// Sector size of the circuits (2KiB, 8MiB, ...).
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// porep, winning, window, snap, or all.
    #[arg(long, default_value = "all")]
    kind: String,
    /// Parameter folder; default: $FIL_PROOFS_PARAMETER_CACHE, else cuzk's cache
    /// (filecoin-params/seed-0 under $CUZK_CACHE_DIR, $XDG_CACHE_HOME/cuzk or ~/.cache/cuzk).
    #[arg(long)]
    dir: Option<String>,
}

pub fn gen_vanilla(sh: &Shell, args: &GenVanillaArgs) -> anyhow::Result<()> {
    let out = &args.out;
    for size in &args.sizes {
        cmd!(
            sh,
            "cargo run --release --locked -p cuzk-filecoin --example gen_vanilla -- {out} {size}"
        )
        .run()?;
    }
    Ok(())
}

pub fn params(sh: &Shell, args: &ParamsArgs) -> anyhow::Result<()> {
    let (size, kind) = (&args.sector_size, &args.kind);
    let dir: Vec<&str> = match &args.dir {
        Some(dir) => vec!["--dir", dir],
        None => Vec::new(),
    };
    cmd!(
        sh,
        "cargo run --release --locked -p cuzk -- params --sector-size {size} --kind {kind} {dir...}"
    )
    .run()?;
    Ok(())
}
