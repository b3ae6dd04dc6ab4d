//! `cargo xtask bench ntt [bench_ntt arguments]`: the GPU NTT benchmark on this machine.
//!
//! Builds and runs `crates/ntt/examples/bench_ntt.rs` (release, `cuda` feature), which needs a
//! GPU. On the GPU machine, which has no Rust toolchain, the same benchmark runs from the folder
//! of `cargo xtask device-pack` (`target/device/run.sh` calls `bench_ntt`). Every argument goes
//! to the example, which refuses one it does not know.

use anyhow::Context;
use xshell::{cmd, Shell};

use crate::ci::CUDA_TARGET_DIR;
use crate::kernels;

/// `cargo xtask bench ntt`'s arguments.
#[derive(clap::Args, Debug)]
pub struct NttArgs {
    /// Arguments of the `bench_ntt` example, passed on as they are: --min 20 --max 27 --reps 9
    /// --warmup 3 --out FILE --no-sweep --no-check --auto --config
    /// RADIX_LOG,TILE_LOG,MAX_PASS_LOG,HIGH_OCCUPANCY[,FULL_TWIDDLE_MAX_LOG].
    #[arg(
        value_name = "BENCH_NTT_ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    args: Vec<String>,
}

pub fn run(sh: &Shell, args: &NttArgs) -> anyhow::Result<()> {
    let args = &args.args;
    let nvcc = kernels::ensure_nvcc(sh, true)?;
    let _nvcc = sh.push_env("NVCC", &nvcc);
    let _target = sh.push_env("CARGO_TARGET_DIR", CUDA_TARGET_DIR);
    cmd!(
        sh,
        "cargo run --release --locked -p cuzk-ntt --features cuda --example bench_ntt -- {args...}"
    )
    .run()
    .context("bench_ntt (it needs a GPU; without one, use `cargo xtask device-pack`)")?;
    Ok(())
}
