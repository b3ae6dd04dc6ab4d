//! cuzk's automation: `cargo xtask <command>`. `cargo xtask --help` lists the commands and
//! `cargo xtask <command> --help` prints one's arguments; an unknown argument is refused.
//!
//! - `golden [--bless]`: check (or regenerate with bellperson) the golden proofs in
//!   `testdata/golden`;
//! - `bench`: the CPU sweep, every benchmark that needs no GPU with its defaults (`bench cpu`,
//!   `bench synth`, then `bench interlock`);
//! - `bench cpu [--sizes 12..18] [--runs 3]`: cuzk against bellperson on the CPU, into
//!   `docs/benchmarks.md`;
//! - `bench synth [--sizes 16,18,20] [--runs 5]`: synthesis by bellperson, by cuzk and through a
//!   pre-compiled circuit, into `docs/benchmarks.md`;
//! - `bench interlock`: the interlock simulator's sweep, into `docs/interlock.md` and its plots;
//! - `bench daemon [--runs 20] [--log-size 10]`: the proving daemon's overhead over a library
//!   call, parameter load cold and hot, and batch throughput, into `docs/benchmarks.md`;
//!   `--soak [--jobs 1000] [--clients 32] [--restarts 6] [--seed 1]`: the soak test, restarts at
//!   random points, jobs lost, duplicated and wrong (the command fails unless all are 0);
//! - `bench filecoin [--sizes 2KiB] [--runs 3]`: PoRep C2 by filecoin-proofs' own
//!   `seal_commit_phase2` and by `cuzk prove porep`, each in its own process, into
//!   `docs/benchmarks.md`;
//! - `bench ntt [BENCH_NTT_ARGS]...`: the GPU NTT against its memory and integer floors (GPU; the
//!   arguments, such as `--min 20 --max 27`, go to the `bench_ntt` example);
//! - `bench msm [BENCH_MSM_ARGS]... | --from FILE.json...`: the GPU MSM (G1, G2) against its
//!   floors, into `docs/benchmarks.md` (GPU; the arguments go to the `bench_msm` example), or that
//!   section written from the JSON of runs made on the GPU machine;
//! - `gen-vanilla [--sizes 2KiB,8MiB] [--out testdata/filecoin]`: seal test sectors with
//!   filecoin-proofs and write their C1 outputs and vanilla proofs;
//! - `params [--sector-size 2KiB] [--kind all] [--dir DIR]`: `cuzk params`, the test-size
//!   parameters under filecoin-proofs' names;
//! - `kernels [--install-nvcc] [--check]`: compile every CUDA kernel (no GPU needed);
//! - `device-pack`: GPU test binaries, benchmark and `run.sh` into `target/device/` (docs/gpu.md);
//! - `ci`: everything CI runs: format, clippy (warnings denied), tests (the golden check among
//!   them), the daemon's Python client, every kernel compiled, clippy over the `cuda` builds.
//!
//! xtask links no product crate that pulls the provers or filecoin-proofs: commands that need
//! one build and run it with cargo (`cuzk`'s `golden_bless` and `cpu_prove` examples, the
//! `cuzk` binary), so `cargo xtask --help` builds in seconds on a fresh clone.
//!
//! One module per command, holding its arguments as a clap `Args` type; `main` parses and
//! dispatches. A benchmark that needs no GPU is one more [`Bench`] variant and one more entry of
//! [`Bench::cpu_sweep`].

mod bench_cpu;
mod bench_daemon;
mod bench_filecoin;
mod bench_interlock;
mod bench_msm;
mod bench_ntt;
mod bench_synth;
mod ci;
mod device_pack;
mod filecoin;
mod golden;
mod kernels;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use xshell::Shell;

/// cuzk's automation: kernels, golden proofs, benchmarks, CI.
#[derive(Parser, Debug)]
#[command(name = "xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prove the golden cases in testdata/golden with cuzk and compare with bellperson's bytes.
    Golden(golden::GoldenArgs),
    /// Benchmarks, written into docs/. Without a subcommand: the CPU sweep, every benchmark that
    /// needs no GPU (cpu, synth, then interlock) with its defaults.
    Bench {
        #[command(subcommand)]
        bench: Option<Bench>,
    },
    /// Seal test sectors with filecoin-proofs (fixed seeds) and write their C1 outputs, PoSt
    /// vanilla proofs and a SnapDeals update into testdata/filecoin/.
    GenVanilla(filecoin::GenVanillaArgs),
    /// Make the Filecoin circuits' test-size parameters with cuzk's setup (`cuzk params`),
    /// under filecoin-proofs' file names.
    Params(filecoin::ParamsArgs),
    /// Compile every CUDA kernel into target/kernels/, as the crates' build scripts do (no GPU
    /// needed).
    Kernels(kernels::KernelsArgs),
    /// Build the GPU test binaries, the NTT and MSM benchmarks and run.sh into target/device/,
    /// for the GPU machine (docs/gpu.md).
    DevicePack,
    /// Everything CI runs: format, clippy (warnings denied), tests (golden check included), every
    /// kernel compiled, clippy over the `cuda` builds.
    Ci,
}

/// One benchmark: `cargo xtask bench <name>`.
#[derive(Subcommand, Debug)]
enum Bench {
    /// cuzk against bellperson on the CPU, each prover in its own process, into docs/benchmarks.md.
    Cpu(bench_cpu::CpuArgs),
    /// Synthesis by bellperson, by cuzk and through a pre-compiled circuit (cuzk-pce), each in its
    /// own process, into docs/benchmarks.md.
    Synth(bench_synth::SynthArgs),
    /// The interlock simulator's sweep, into docs/interlock.md and its plots; or, with
    /// `--replay FILE.json`, a recorded GPU run beside the simulator's prediction for it.
    Interlock(bench_interlock::InterlockArgs),
    /// The proving daemon: overhead over a library call, parameter load cold and hot, batch
    /// throughput; with `--soak`, jobs lost, duplicated and wrong under restarts; into
    /// docs/benchmarks.md.
    Daemon(bench_daemon::DaemonArgs),
    /// PoRep C2 by filecoin-proofs' own seal_commit_phase2 and by `cuzk prove porep`, each in
    /// its own process, with peak memory, into docs/benchmarks.md.
    Filecoin(bench_filecoin::FilecoinArgs),
    /// The GPU NTT against its memory and integer floors (needs a GPU).
    Ntt(bench_ntt::NttArgs),
    /// The GPU MSM (G1, G2) against its floors, into docs/benchmarks.md (needs a GPU, or --from
    /// the JSON of a run on the GPU machine).
    Msm(bench_msm::MsmArgs),
}

impl Bench {
    /// `cargo xtask bench` alone: every benchmark that needs no GPU, with its defaults, in order.
    fn cpu_sweep() -> Vec<Bench> {
        vec![
            Bench::Cpu(defaults()),
            Bench::Synth(defaults()),
            Bench::Interlock(defaults()),
        ]
    }

    fn run(self, sh: &Shell) -> anyhow::Result<()> {
        match self {
            Bench::Cpu(args) => bench_cpu::run(sh, &args),
            Bench::Synth(args) => bench_synth::run(sh, &args),
            Bench::Interlock(args) => bench_interlock::run(&args),
            Bench::Daemon(args) => bench_daemon::run(sh, &args),
            Bench::Filecoin(args) => bench_filecoin::run(sh, &args),
            Bench::Ntt(args) => bench_ntt::run(sh, &args),
            Bench::Msm(args) => bench_msm::run(sh, &args),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let sh = Shell::new()?;
    sh.change_dir(project_root());
    match cli.command {
        Command::Golden(args) => golden::run(&sh, &args),
        Command::Bench { bench: Some(bench) } => bench.run(&sh),
        Command::Bench { bench: None } => Bench::cpu_sweep()
            .into_iter()
            .try_for_each(|bench| bench.run(&sh)),
        Command::GenVanilla(args) => filecoin::gen_vanilla(&sh, &args),
        Command::Params(args) => filecoin::params(&sh, &args),
        Command::Kernels(args) => kernels::run(&sh, &args),
        Command::DevicePack => device_pack::run(&sh),
        Command::Ci => ci::run(&sh),
    }
}

/// A command's arguments with every default, as its name alone on the command line gives them.
fn defaults<A: clap::Args + clap::FromArgMatches>() -> A {
    let command = A::augment_args(clap::Command::new("defaults"));
    A::from_arg_matches(&command.get_matches_from(["defaults"]))
        .expect("every argument of a swept benchmark has a default")
}

/// The workspace root.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Cargo's target folder: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("target"))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Bench, Cli, Command};

    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("xtask").chain(argv.iter().copied()))
    }

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn unknown_arguments_are_refused() {
        for argv in [
            &["bench", "cpu", "--bogus"][..],
            &["bench", "--runs", "3"],
            &["golden", "--blesss"],
            &["kernels", "--install"],
            &["device-pack", "x"],
            &["ci", "--fast"],
            &["bench", "gpu"],
        ] {
            let err = parse(argv).expect_err(&argv.join(" "));
            assert!(
                matches!(
                    err.kind(),
                    clap::error::ErrorKind::UnknownArgument
                        | clap::error::ErrorKind::InvalidSubcommand
                ),
                "{argv:?}: {err}"
            );
        }
        assert!(parse(&["bench", "cpu", "--sizes", "6..30"]).is_err());
        assert!(parse(&["bench", "cpu", "--runs", "0"]).is_err());
        assert!(parse(&["bench", "synth", "--sizes", "16,30"]).is_err());
        assert!(parse(&["bench", "synth", "--runs", "0"]).is_err());
        assert!(parse(&["bench", "filecoin", "--runs", "0"]).is_err());
        assert!(parse(&["gen-vanilla", "--sizes", "32GiB"]).is_err());
        assert!(parse(&["params", "--bogus"]).is_err());
    }

    #[test]
    fn bench_alone_is_the_cpu_sweep_with_defaults() {
        assert!(matches!(
            parse(&["bench"]).unwrap().command,
            Command::Bench { bench: None }
        ));
        let sweep = format!("{:?}", Bench::cpu_sweep());
        let explicit = format!(
            "{:?}",
            ["cpu", "synth", "interlock"].map(|name| {
                match parse(&["bench", name]).unwrap().command {
                    Command::Bench { bench: Some(bench) } => bench,
                    other => panic!("{other:?}"),
                }
            })
        );
        assert_eq!(sweep, explicit);
    }

    #[test]
    fn gpu_benchmarks_pass_their_arguments_on() {
        let Command::Bench {
            bench: Some(Bench::Ntt(args)),
        } = parse(&["bench", "ntt", "--max", "28", "--no-check"])
            .unwrap()
            .command
        else {
            panic!("not bench ntt");
        };
        assert_eq!(
            format!("{args:?}"),
            r#"NttArgs { args: ["--max", "28", "--no-check"] }"#
        );
    }
}
