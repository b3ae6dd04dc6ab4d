//! `cargo xtask bench cpu`: cuzk and bellperson prove the same PoRep-shaped circuits with the same
//! parameters, each run in its own process (so its peak memory is its own), several runs per
//! size; medians, ratios and peak memory go into `docs/benchmarks.md`.

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Deserialize;
use xshell::{cmd, Shell};

use crate::{flag, project_root};

#[derive(Deserialize)]
struct Run {
    log_size: u32,
    constraints: usize,
    times_s: Vec<f64>,
    proof: String,
    peak_rss_kib: u64,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn run(sh: &Shell, args: &[String]) -> anyhow::Result<()> {
    let sizes = flag(args, "--sizes").unwrap_or("12..18");
    let (lo, hi) = sizes.split_once("..").context("--sizes LO..HI")?;
    let (lo, hi): (u32, u32) = (lo.parse()?, hi.parse()?);
    let runs = flag(args, "--runs").unwrap_or("3").to_string();
    if lo < 8 || hi > 24 || lo > hi {
        bail!("--sizes must be within 8..24");
    }

    cmd!(
        sh,
        "cargo build --release --locked -p xtask --bin cpu-prove"
    )
    .run()?;
    let exe = project_root().join("target/release/cpu-prove");
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
                .with_context(|| format!("output of cpu-prove: {out}"))?;
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
