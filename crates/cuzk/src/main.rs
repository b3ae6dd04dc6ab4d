//! The `cuzk` command line (built with the `filecoin` feature: every command proves on the
//! engine, which runs the Filecoin kinds).

use anyhow::Context;
use clap::{Parser, Subcommand};
use cuzk::pipeline::{PartitionTiming, Stage};

mod backend;
mod bench;
#[cfg(feature = "daemon")]
mod daemon_cmd;
mod filecoin_cmd;

#[derive(Parser, Debug)]
#[command(name = "cuzk", version, about = "cuzk: a Groth16 prover for BLS12-381")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Synthesise a built-in PoRep-shaped circuit, prove it, verify it and print stage timings.
    Bench(bench::BenchArgs),
    /// Generate a PoRep circuit's Groth16 parameters with cuzk's setup (test sector sizes),
    /// under filecoin-proofs' file names so its verifiers load them.
    Params(filecoin_cmd::ParamsArgs),
    /// Prove a Filecoin proof with cuzk, verify it, and print the stage timing.
    #[command(subcommand)]
    Prove(ProveKind),
    /// Run the proving daemon: the cuzk.v1 gRPC service (docs/config.md).
    #[cfg(feature = "daemon")]
    Daemon(daemon_cmd::DaemonArgs),
    /// Talk to a running daemon.
    #[cfg(feature = "daemon")]
    Client(Box<daemon_cmd::ClientArgs>),
}

#[derive(Subcommand, Debug)]
enum ProveKind {
    /// PoRep C2: a C1 output in, `seal_commit_phase2`'s bytes out (default: a built-in 2 KiB
    /// sector, its parameters generated on first use).
    Porep(filecoin_cmd::PorepArgs),
    /// WinningPoSt: vanilla proofs in, `generate_winning_post_with_vanilla`'s bytes out
    /// (default: the built-in 2 KiB sector).
    Winning(filecoin_cmd::PostArgs),
    /// WindowPoSt, one partition: vanilla proofs in, `generate_single_window_post_with_vanilla`'s
    /// bytes out (default: the built-in 2 KiB sector).
    Window(filecoin_cmd::PostArgs),
    /// SnapDeals: partition proofs and commitments in,
    /// `generate_empty_sector_update_proof_with_vanilla`'s bytes out (default: the built-in
    /// 2 KiB update).
    Snap(filecoin_cmd::PostArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(args) => bench::bench(&args),
        Command::Params(args) => filecoin_cmd::params(&args),
        #[cfg(feature = "daemon")]
        Command::Daemon(args) => daemon_cmd::daemon(&args),
        #[cfg(feature = "daemon")]
        Command::Client(args) => daemon_cmd::client(&args),
        Command::Prove(kind) => match kind {
            ProveKind::Porep(args) => filecoin_cmd::porep(&args),
            ProveKind::Winning(args) => {
                filecoin_cmd::post(&args, cuzk_filecoin::post::PostKind::Winning)
            }
            ProveKind::Snap(args) => filecoin_cmd::snap(&args),
            ProveKind::Window(args) => {
                filecoin_cmd::post(&args, cuzk_filecoin::post::PostKind::Window)
            }
        },
    }
}

/// The pre-compiled circuits' folder: `--pce-dir`, else cuzk's cache's `pce`.
fn pce_dir(flag: &Option<std::path::PathBuf>) -> anyhow::Result<std::path::PathBuf> {
    match flag {
        Some(dir) => Ok(dir.clone()),
        None => cuzk_pce::default_dir().context(
            "no cache folder for pre-compiled circuits: pass --pce-dir or set CUZK_CACHE_DIR",
        ),
    }
}

fn print_table(timings: &[PartitionTiming]) {
    println!("{:<14} {:>12} {:>8}", "stage", "ms/partition", "share");
    let total: f64 =
        timings.iter().map(|t| t.total().as_secs_f64()).sum::<f64>() / timings.len() as f64;
    for stage in Stage::ALL {
        let ms = timings
            .iter()
            .map(|t| t.get(stage).as_secs_f64())
            .sum::<f64>()
            / timings.len() as f64;
        println!(
            "{:<14} {:>12.2} {:>7.1}%",
            stage.name(),
            ms * 1e3,
            100.0 * ms / total
        );
    }
    println!("{:<14} {:>12.2} {:>7.1}%", "total", total * 1e3, 100.0);
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The command line's shape: every flag's relations (`requires`, `conflicts_with`), default
    /// values within their parsers' ranges, no clashing names.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
