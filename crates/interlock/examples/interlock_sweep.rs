//! Runs the default policy sweep and writes `interlock.md`, `interlock.svg` and two waterfalls.
//!
//! `cargo run -p cuzk-interlock --example interlock_sweep [-- OUT_DIR]`; `OUT_DIR` defaults to
//! the workspace's `docs/`. `cargo xtask bench interlock` makes the same call.

use std::path::PathBuf;

use cuzk_interlock::sweep::{write_docs, SweepConfig};

fn main() -> std::io::Result<()> {
    let out = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs"),
        PathBuf::from,
    );
    let report = write_docs(&out, &SweepConfig::default())?;
    println!("{} points written to {}", report.rows.len(), out.display());
    Ok(())
}
