//! `cargo xtask bench cpu`: cuzk and bellperson prove the same PoRep-shaped circuits with the same
//! parameters, each run in its own process (so its peak memory is its own), several runs per
//! size; medians, ratios and peak memory go into `docs/benchmarks.md`.

use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{bail, Context};
use serde::Deserialize;
use xshell::{cmd, Shell};

use crate::project_root;

/// `cargo xtask bench cpu`'s arguments.
#[derive(clap::Args, Debug)]
pub struct CpuArgs {
    /// The log2 domain sizes to prove: LO..HI, both ends included, within 8..24.
    #[arg(long, value_name = "LO..HI", default_value = "12..18")]
    sizes: Sizes,
    /// Runs of each prover at each size; the table shows their median.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
}

/// log2 domain sizes `LO..HI`, both ends included, within 8..24.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    lo: u32,
    hi: u32,
}

impl FromStr for Sizes {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (lo, hi) = s
            .split_once("..")
            .ok_or("expected LO..HI, such as 12..18")?;
        let parse = |v: &str| v.parse::<u32>().map_err(|e| format!("{v:?}: {e}"));
        let (lo, hi) = (parse(lo)?, parse(hi)?);
        if lo < 8 || hi > 24 || lo > hi {
            return Err(format!("{lo}..{hi} is not within 8..24"));
        }
        Ok(Sizes { lo, hi })
    }
}

#[derive(Deserialize)]
struct Run {
    log_size: u32,
    constraints: usize,
    times_s: Vec<f64>,
    proof: String,
    peak_rss_kib: u64,
}

/// The median of `v` (the mean of the middle two for an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn run(sh: &Shell, args: &CpuArgs) -> anyhow::Result<()> {
    let Sizes { lo, hi } = args.sizes;
    let runs = args.runs.to_string();

    cmd!(
        sh,
        "cargo build --release --locked -p cuzk --no-default-features --example cpu_prove"
    )
    .run()?;
    let exe = project_root().join("target/release/examples/cpu_prove");
    let cache = project_root().join("target/bench-params");
    std::fs::create_dir_all(&cache)?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);

    let mut rows = Vec::new();
    for log_size in lo..=hi {
        let log = log_size.to_string();
        let params: PathBuf = cache.join(format!("porep-{log_size}.params"));
        if !params.exists() {
            println!("setup 2^{log} …");
            cmd!(sh, "{exe} setup {log} {params}").run()?;
        }
        let mut results = Vec::new();
        for prover in ["bellperson", "cuzk"] {
            let out = cmd!(sh, "{exe} prove {prover} {log} {params} {runs}").read()?;
            let run: Run = serde_json::from_str(&out)
                .with_context(|| format!("output of cpu_prove: {out}"))?;
            println!(
                "2^{log} {prover:<10} median {:.3} s  peak {} MiB  runs {:?}",
                median(&run.times_s),
                run.peak_rss_kib / 1024,
                run.times_s
            );
            results.push(run);
        }
        let (bp, cz) = (&results[0], &results[1]);
        if bp.proof != cz.proof {
            bail!("2^{log}: cuzk's proof differs from bellperson's for the same r and s");
        }
        rows.push(format!(
            "| 2^{} | {} | {:.3} | {:.3} | {:.2}× | {} | {} |",
            bp.log_size,
            bp.constraints,
            median(&bp.times_s),
            median(&cz.times_s),
            median(&bp.times_s) / median(&cz.times_s),
            bp.peak_rss_kib / 1024,
            cz.peak_rss_kib / 1024,
        ));
    }

    let table = format!(
        "Command: `cargo xtask bench cpu --sizes {lo}..{hi} --runs {runs}` on this machine ({threads} threads). \
         PoRep-shaped circuit (`cuzk::circuits::PorepShaped`), the same parameters and the same r, s for both \
         provers; each time is one `create_proof` (synthesis included, parameter loading excluded), the median \
         of {runs} runs, each prover in its own process; the proofs are checked to be identical.\n\n\
         | domain | constraints | bellperson 0.27 (s) | cuzk (s) | speed-up | bellperson peak (MiB) | cuzk peak (MiB) |\n\
         |---|---|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    println!("\n{table}");
    write_section("bench-cpu", &table)
}

/// This machine's hardware threads and its one-minute load average (`/proc/loadavg`), for a
/// benchmark's header line.
pub fn threads_and_load() -> (usize, String) {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    (threads, load)
}

/// Replaces the text between `<!-- NAME:start -->` and `<!-- NAME:end -->` in docs/benchmarks.md.
pub fn write_section(name: &str, body: &str) -> anyhow::Result<()> {
    let path = project_root().join("docs/benchmarks.md");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let (start, end) = (
        format!("<!-- {name}:start -->"),
        format!("<!-- {name}:end -->"),
    );
    let block = format!("{start}\n{body}{end}");
    let new = match (text.find(&start), text.find(&end)) {
        (Some(a), Some(b)) if a < b => format!("{}{}{}", &text[..a], block, &text[b + end.len()..]),
        _ => bail!("docs/benchmarks.md has no {start} … {end} section"),
    };
    std::fs::write(&path, new)?;
    Ok(())
}
