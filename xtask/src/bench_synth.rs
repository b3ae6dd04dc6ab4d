//! `cargo xtask bench synth`: circuit synthesis three ways on the same PoRep-shaped circuits,
//! each in its own process: bellperson's, cuzk's full synthesis and the pre-compiled path
//! (cuzk-pce: the witness alone, then the sparse products). Medians, CPU time, peak memory and
//! the pre-compiled file's size, load and recording time go into `docs/benchmarks.md`; the
//! measurement itself is `crates/pce/examples/bench_synth.rs`.

use anyhow::Context;
use xshell::{cmd, Shell};

use crate::bench_cpu::write_section;
use crate::project_root;

/// `cargo xtask bench synth`'s arguments.
#[derive(clap::Args, Debug)]
pub struct SynthArgs {
    /// The log2 domain sizes, comma-separated, each within 8..22.
    #[arg(long, value_delimiter = ',', default_value = "16,18,20",
          value_parser = clap::value_parser!(u32).range(8..=22))]
    sizes: Vec<u32>,
    /// Runs of each variant at each size; the table shows their median.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
}

pub fn run(sh: &Shell, args: &SynthArgs) -> anyhow::Result<()> {
    let sizes = args
        .sizes
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let runs = args.runs.to_string();
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk-pce --example bench_synth"
    )
    .run()?;
    let exe = project_root().join("target/release/examples/bench_synth");
    let table = cmd!(sh, "{exe} --sizes {sizes} --runs {runs}")
        .read()
        .context("bench_synth")?;
    let commit = cmd!(sh, "git rev-parse --short HEAD").read()?;
    let date = cmd!(sh, "date -u +%Y-%m-%d").read()?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let body = format!(
        "Command: `cargo xtask bench synth --sizes {sizes} --runs {runs}` on this machine ({threads} \
         threads), commit {commit}, {date}. PoRep-shaped circuit (`cuzk::circuits::PorepShaped`), a new \
         witness each run of the same topology, each variant in its own process; times are medians of \
         {runs} runs, CPU time covers all threads, peak memory is the process's high-water mark. \
         `bellperson` is bellperson 0.27's prover-side synthesis for one circuit, `cuzk full` is \
         `cuzk_groth16::synthesize_with_capacity`, `pce` is `PreCompiled::synthesize` on a file recorded \
         before the runs (the witness pass, then the sparse products with every row's `a·b = c` check); \
         `load` is opening and checking that file, `record` is recording it once.\n\n{table}\n"
    );
    println!("\n{body}");
    write_section("bench-synth", &body)
}
