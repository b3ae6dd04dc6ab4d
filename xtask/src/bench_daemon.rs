//! `cargo xtask bench daemon`: the proving daemon's overhead over a direct library call for a
//! small proof, parameter load cold against hot, and the throughput of `cuzk client batch
//! --count 20 --concurrency 4`, into `docs/benchmarks.md`. The measurement is
//! `crates/daemon/examples/bench_daemon.rs`, run against the release `cuzk` binary.

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
}

pub fn run(sh: &Shell, args: &DaemonArgs) -> anyhow::Result<()> {
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk -p cuzk-daemon --example bench_daemon"
    )
    .run()?;
    let root = project_root();
    let exe = root.join("target/release/examples/bench_daemon");
    let cuzk = root.join("target/release/cuzk");
    let home = std::env::var("HOME").context("HOME")?;
    let cache = std::env::var("CUZK_CACHE_DIR").unwrap_or_else(|_| format!("{home}/.cache/cuzk"));
    let params = format!("{cache}/filecoin-params/seed-0");
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
        "Command: `cargo xtask bench daemon --runs {runs} --log-size {log}` on this machine \
         ({threads} threads, load average {load} at the start), commit {commit}, {date}, release \
         build, CPU backend, one worker. The \
         library call is `cuzk_engine::run::run_job` (synthesis, proof, verification) with the \
         parameters hot; the daemon figure is a client's wall time for `Prove` of the same job over \
         the unix socket, which adds the request's journal row (synced; inputs this small are kept \
         in it rather than in a spool file), the queue, the worker hand-off, the job's running \
         and finished states in the journal, and the answer. Cold load is `EvictSRS` then `PreloadSRS` (file \
         in the page cache, decoded into the hot tier).\n\n{table}\n"
    );
    println!("\n{body}");
    write_section("bench-daemon", &body)
}
