//! cuzk's automation. `cargo xtask <command>`:
//!
//! - `golden [--bless]`: check (or regenerate with bellperson) the golden proofs in `testdata/golden`;
//! - `bench cpu [--sizes 12..18] [--runs 3]`: cuzk against bellperson on the CPU, into `docs/benchmarks.md`;
//! - `bench msm`: the GPU MSM (G1, G2) against its floors, into `docs/benchmarks.md` (GPU);
//! - `bench interlock`: the interlock simulator's sweep, into `docs/interlock.md` and its plots;
//! - `bench ntt [--min 20 --max 27 ...]`: the GPU NTT against its memory and integer floors (GPU);
//! - `kernels [--install-nvcc] [--check]`: compile every CUDA kernel (no GPU needed);
//! - `device-pack`: GPU test binaries, benchmark and `run.sh` into `target/device/` (docs/gpu.md);
//! - `ci`: everything CI runs: format, clippy (warnings denied), tests, golden check, every kernel
//!   compiled, clippy over the `cuda` builds.
//!
//! One module per command; `main` only dispatches.

mod bench_cpu;
mod bench_interlock;
mod bench_msm;
mod bench_ntt;
mod ci;
mod device_pack;
mod golden;
mod kernels;

use std::path::{Path, PathBuf};

use anyhow::bail;
use xshell::Shell;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sh = Shell::new()?;
    sh.change_dir(project_root());
    let rest = &args[args.len().min(1)..];
    match args.first().map(String::as_str) {
        Some("golden") => golden::run(&sh, rest),
        Some("bench") => match rest.first().map(String::as_str) {
            Some("cpu") => bench_cpu::run(&sh, &rest[1..]),
            Some("ntt") => bench_ntt::run(&sh, &rest[1..]),
            Some("interlock") => bench_interlock::run(),
            Some("msm") => bench_msm::run(&sh, &rest[1..]),
            _ => bail!("usage: cargo xtask bench <cpu [--sizes LO..HI] [--runs N] | ntt [--min A --max B] | msm | interlock>"),
        },
        Some("kernels") => kernels::run(&sh, rest),
        Some("device-pack") => device_pack::run(&sh, rest),
        Some("ci") => ci::run(&sh),
        _ => bail!(
            "usage: cargo xtask <golden [--bless] | bench cpu | bench ntt | bench msm | bench interlock | kernels [--install-nvcc] | device-pack | ci>"
        ),
    }
}

/// The workspace root.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// The value after `--name` in `args`, if any.
pub fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}
