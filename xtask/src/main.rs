//! cuzk's automation. `cargo xtask <command>`:
//!
//! - `golden [--bless]`: check (or regenerate with bellperson) the golden proofs in `testdata/golden`;
//! - `bench cpu [--sizes 12..18] [--runs 3]`: cuzk against bellperson on the CPU, into `docs/benchmarks.md`;
//! - `ci`: everything CI runs: format, clippy (warnings denied), tests, golden check.

mod bench_cpu;
mod golden;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use xshell::{cmd, Shell};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sh = Shell::new()?;
    sh.change_dir(project_root());
    let rest = &args[args.len().min(1)..];
    match args.first().map(String::as_str) {
        Some("golden") => golden::run(&sh, rest),
        Some("bench") => match rest.first().map(String::as_str) {
            Some("cpu") => bench_cpu::run(&sh, &rest[1..]),
            _ => bail!("usage: cargo xtask bench cpu [--sizes LO..HI] [--runs N]"),
        },
        Some("ci") => ci(&sh),
        _ => bail!("usage: cargo xtask <golden [--bless] | bench cpu | ci>"),
    }
}

/// The workspace root.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// The value after `--name` in `args`, if any.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn ci(sh: &Shell) -> anyhow::Result<()> {
    cmd!(sh, "cargo fmt --all -- --check")
        .run()
        .context("formatting differs: run `cargo fmt --all`")?;
    cmd!(sh, "cargo clippy --workspace --all-targets --locked -- -D warnings").run().context("clippy")?;
    cmd!(sh, "cargo test --workspace --locked").run().context("tests")?;
    golden::check(sh)?;
    Ok(())
}
