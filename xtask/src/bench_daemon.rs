//! `cargo xtask bench daemon`: the proving daemon's overhead over a direct library call for a
//! small proof, parameter load cold against hot, and the throughput of `cuzk client batch
//! --count 20 --concurrency 4`, into `docs/benchmarks.md`. The measurement is
//! `crates/daemon/examples/bench_daemon.rs`, run against the release `cuzk` binary.
//!
//! `--soak`: the soak test instead (`crates/cuzk/examples/daemon_soak.rs`): `--jobs` small jobs
//! of every kind from `--clients` clients while the daemon is killed and stopped `--restarts`
//! times at points drawn from `--seed`; fails when a job is lost, duplicated or wrong.

use anyhow::Context;
use xshell::{cmd, Shell};

use crate::bench_cpu::{threads_and_load, write_section};
use crate::project_root;

/// `cargo xtask bench daemon`'s arguments.
#[derive(clap::Args, Debug)]
pub struct DaemonArgs {
    /// Proofs timed each way; the table shows their median.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(3..))]
    runs: u32,
    /// log2 of the synthetic circuit's size.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(4..=20))]
    log_size: u32,
    /// The soak test: many clients, restarts at random points, every job checked.
    #[arg(long)]
    soak: bool,
    /// Soak: jobs in all.
    #[arg(long, default_value_t = 1000, requires = "soak")]
    jobs: u32,
    /// Soak: concurrent clients, each with its own connection.
    #[arg(long, default_value_t = 32, requires = "soak")]
    clients: u32,
    /// Soak: restarts during the run, alternately SIGKILL and SIGTERM.
    #[arg(long, default_value_t = 6, requires = "soak")]
    restarts: u32,
    /// Soak: the seed of the schedule (restart points, partitions).
    #[arg(long, default_value_t = 1, requires = "soak")]
    seed: u64,
    /// Soak: every K-th job is a Filecoin 2 KiB one (WinningPoSt, WindowPoSt, SnapDeals, PoRep
    /// C2 in turn), the rest synthetic; 0: synthetic only.
    #[arg(long, default_value_t = 100, requires = "soak")]
    filecoin_every: u32,
}

pub fn run(sh: &Shell, args: &DaemonArgs) -> anyhow::Result<()> {
    if args.soak {
        return soak(sh, args);
    }
    cmd!(sh, "cargo build --release --locked -p cuzk --bin cuzk").run()?;
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk-daemon --example bench_daemon"
    )
    .run()?;
    let root = project_root();
    let exe = root.join("target/release/examples/bench_daemon");
    let cuzk = root.join("target/release/cuzk");
    let params = params_dir()?;
    let (runs, log) = (args.runs.to_string(), args.log_size.to_string());
    let table = cmd!(
        sh,
        "{exe} --cuzk {cuzk} --runs {runs} --log-size {log} --params {params}"
    )
    .read()
    .context("bench_daemon")?;
    let commit = cmd!(sh, "git rev-parse --short HEAD").read()?;
    let date = cmd!(sh, "date -u +%Y-%m-%d").read()?;
    let (threads, load) = threads_and_load();
    let body = format!(
        "`cargo xtask bench daemon --runs {runs} --log-size {log}`: {threads} threads (load \
         {load}), {commit}, {date}, release, CPU, one worker. Library call: \
         `cuzk_engine::run::run_job`, parameters hot; daemon: `Prove` over the unix socket.\n\n\
         {table}\n"
    );
    println!("\n{body}");
    write_section("bench-daemon", &body)
}

/// The 2 KiB parameters' folder (cuzk's test setup, seed 0), shared with the tests.
fn params_dir() -> anyhow::Result<String> {
    Ok(crate::filecoin::param_dir()?.display().to_string())
}

fn soak(sh: &Shell, args: &DaemonArgs) -> anyhow::Result<()> {
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk --bin cuzk --example daemon_soak"
    )
    .run()?;
    let root = project_root();
    let exe = root.join("target/release/examples/daemon_soak");
    let cuzk = root.join("target/release/cuzk");
    let params = params_dir()?;
    let (jobs, clients, restarts) = (
        args.jobs.to_string(),
        args.clients.to_string(),
        args.restarts.to_string(),
    );
    let (seed, every, log) = (
        args.seed.to_string(),
        args.filecoin_every.to_string(),
        args.log_size.to_string(),
    );
    let (threads, load) = threads_and_load();
    // Its progress and failures go to stderr; the table, printed before a failure is reported,
    // to stdout.
    let out = std::process::Command::new(&exe)
        .arg("--cuzk")
        .arg(&cuzk)
        .args(["--params", &params, "--jobs", &jobs, "--clients", &clients])
        .args(["--restarts", &restarts, "--seed", &seed])
        .args(["--filecoin-every", &every, "--log-size", &log])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("daemon_soak")?;
    let table = String::from_utf8(out.stdout)?;
    println!("{table}");
    anyhow::ensure!(
        out.status.success(),
        "the soak test failed ({}): jobs lost, duplicated or wrong, or the daemon misbehaved \
         (its stderr above)",
        out.status
    );
    let commit = cmd!(sh, "git rev-parse --short HEAD").read()?;
    let date = cmd!(sh, "date -u +%Y-%m-%d").read()?;
    let size = if args.jobs == 1000 {
        String::new()
    } else {
        format!("; {jobs} jobs, not 1,000, for time")
    };
    let body = format!(
        "`cargo xtask bench daemon --soak --jobs {jobs} --clients {clients} --restarts \
         {restarts} --seed {seed} --filecoin-every {every} --log-size {log}`: {threads} threads \
         (load {load}), {commit}, {date}, release, CPU, two workers{size}. Definitions: \
         `crates/cuzk/examples/daemon_soak.rs`.\n\n{table}"
    );
    write_section("bench-daemon-soak", &body)
}
