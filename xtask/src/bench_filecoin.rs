//! `cargo xtask bench filecoin`: the same C1 output proven by filecoin-proofs' own
//! `seal_commit_phase2` (bellperson on the CPU; `crates/filecoin/examples/fp_c2.rs`) and by
//! `cuzk prove porep`, each run in its own process, the two interleaved, several runs each;
//! medians of the wall time, each prover's own time, and the highest peak memory (the child's
//! `ru_maxrss` from `wait4`) go into `docs/benchmarks.md`. Both proofs of every run are
//! checked with filecoin-proofs' `verify_seal` (`fp_c2 verify`), and must have the same length.
//!
//! Inputs are gen_vanilla's (`testdata/filecoin/porep-<size>.c1.json` and `.meta.json`;
//! `cargo xtask gen-vanilla --sizes 8MiB` makes more); the parameters are cuzk's test
//! parameters, made by `cuzk params --kind porep` on first use, in the folder both provers are
//! pointed at.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};
use xshell::{cmd, Shell};

use crate::bench_cpu::{median, threads_and_load, write_section};
use crate::{project_root, target_dir};

/// `cargo xtask bench filecoin`'s arguments.
#[derive(clap::Args, Debug)]
pub struct FilecoinArgs {
    /// Sector sizes, comma-separated (2KiB, 8MiB, ...): each needs gen_vanilla's
    /// testdata/filecoin/porep-<size>.c1.json and .meta.json.
    #[arg(long, value_delimiter = ',', default_value = "2KiB")]
    sizes: Vec<String>,
    /// Runs of each prover at each size; the table shows medians.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
}

/// One process: wall time, the prover's own time, peak memory.
#[derive(Debug)]
struct Sample {
    wall_s: f64,
    own_s: f64,
    peak_kib: u64,
}

/// The sector sizes gen_vanilla and filecoin-proofs name.
const SIZES: [&str; 5] = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"];

pub fn run(sh: &Shell, args: &FilecoinArgs) -> anyhow::Result<()> {
    let root = project_root();
    let testdata = root.join("testdata/filecoin");
    let mut inputs = Vec::new();
    for size in &args.sizes {
        if !SIZES.contains(&size.as_str()) {
            bail!("unknown sector size {size:?} (one of {})", SIZES.join(", "));
        }
        let c1 = testdata.join(format!("porep-{size}.c1.json"));
        let meta = testdata.join(format!("porep-{size}.meta.json"));
        if !c1.is_file() || !meta.is_file() {
            bail!(
                "no {size} inputs ({} and its .meta.json): make them with `cargo xtask gen-vanilla --sizes {size}`",
                c1.display()
            );
        }
        let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&meta)?)?;
        let id = |key: &str| {
            meta[key]
                .as_u64()
                .map(|n| n.to_string())
                .with_context(|| format!("{key} in porep-{size}.meta.json"))
        };
        inputs.push((size.clone(), c1, id("miner_id")?, id("sector_number")?));
    }

    cmd!(sh, "cargo build --release --locked -p cuzk --bin cuzk").run()?;
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk-filecoin --example fp_c2"
    )
    .run()?;
    let release = target_dir().join("release");
    let cuzk = release.join("cuzk");
    let fp_c2 = release.join("examples/fp_c2");
    // Where both provers find the parameters, as `cuzk prove` chooses.
    let params = crate::filecoin::param_dir()?;
    let work = target_dir().join("bench-filecoin");
    std::fs::create_dir_all(&work)?;

    let (threads, load) = threads_and_load();
    let runs = args.runs as usize;
    let mut rows = Vec::new();
    for (size, c1, miner, sector) in &inputs {
        cmd!(
            sh,
            "{cuzk} params --kind porep --sector-size {size} --dir {params}"
        )
        .run()?;
        let (fp_proof, cz_proof) = (work.join("fp.proof"), work.join("cuzk.proof"));
        let fp_cmd = || {
            let mut c = Command::new(&fp_c2);
            c.arg(c1)
                .arg(miner)
                .arg(sector)
                .arg("--out")
                .arg(&fp_proof)
                .env("FIL_PROOFS_PARAMETER_CACHE", &params);
            c
        };
        let cuzk_cmd = || {
            let mut c = Command::new(&cuzk);
            c.args(["prove", "porep", "--c1"])
                .arg(c1)
                .args(["--miner-id", miner, "--sector", sector, "--params"])
                .arg(&params)
                .arg("--out")
                .arg(&cz_proof);
            c
        };
        let (mut fp, mut cz) = (Vec::new(), Vec::new());
        let mut shape = String::new();
        for run in 1..=runs {
            let (sample, _) = measure(fp_cmd())?;
            println!("{size} filecoin-proofs run {run}/{runs}: {sample:?}");
            fp.push(sample);
            let (sample, out) = measure(cuzk_cmd())?;
            println!("{size} cuzk run {run}/{runs}: {sample:?}");
            cz.push(sample);
            shape = circuit_shape(&out);
            let (fp_bytes, cz_bytes) = (std::fs::read(&fp_proof)?, std::fs::read(&cz_proof)?);
            if fp_bytes.len() != cz_bytes.len() {
                bail!(
                    "{size}: cuzk's proof has {} bytes, filecoin-proofs' {}",
                    cz_bytes.len(),
                    fp_bytes.len()
                );
            }
            for proof in [&fp_proof, &cz_proof] {
                cmd!(sh, "{fp_c2} verify {c1} {miner} {sector} {proof}")
                    .env("FIL_PROOFS_PARAMETER_CACHE", &params)
                    .run()
                    .with_context(|| format!("verify_seal of {}", proof.display()))?;
            }
        }
        rows.extend(table_rows(size, &shape, &fp, &cz));
    }

    let commit = cmd!(sh, "git rev-parse --short HEAD").read()?;
    let dirty = if cmd!(sh, "git status --porcelain --untracked-files=no")
        .read()?
        .is_empty()
    {
        ""
    } else {
        " (with uncommitted changes)"
    };
    let date = cmd!(sh, "date -u +%Y-%m-%d").read()?;
    let sizes = args.sizes.join(",");
    let body = format!(
        "Command: `cargo xtask bench filecoin --sizes {sizes} --runs {runs}` on this machine \
         ({threads} threads, load average {load} at the start), commit {commit}{dirty}, {date}, \
         release builds, CPU. The same C1 output (gen_vanilla's, `testdata/filecoin/`) and the same \
         parameters (cuzk's test setup, seed 0) for both: filecoin-proofs 19.1's \
         `seal_commit_phase2` (bellperson 0.27; the `fp_c2` example) and `cuzk prove porep`, each \
         run in its own process, the two interleaved. `wall` is the process's, from start to exit \
         (parameter loading, synthesis, proving and verification all included); `own` is the \
         time each reports for its call (`seal_commit_phase2`; cuzk's load, synthesis, prove and \
         verify); both are medians of {runs} runs. Peak memory is the highest `ru_maxrss` of the \
         runs. Every proof of every run is accepted by filecoin-proofs' `verify_seal`.\n\n\
         | sector | prover | wall (s) | own (s) | peak memory (MiB) | wall of each run (s) |\n\
         |---|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    println!("\n{body}");
    write_section("bench-filecoin", &body)
}

/// "1 partition, 2,687,961 constraints" from `cuzk prove`'s partition lines.
fn circuit_shape(cuzk_out: &str) -> String {
    let constraints: Vec<&str> = cuzk_out
        .lines()
        .filter_map(|l| {
            l.strip_prefix("partition ")?
                .split(": ")
                .nth(1)?
                .split(' ')
                .next()
        })
        .collect();
    let per = constraints.first().copied().unwrap_or("?");
    format!(
        "{} partition{}, {} constraints each",
        constraints.len(),
        if constraints.len() == 1 { "" } else { "s" },
        thousands(per)
    )
}

fn thousands(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn table_rows(size: &str, shape: &str, fp: &[Sample], cz: &[Sample]) -> Vec<String> {
    let med = |s: &[Sample], f: fn(&Sample) -> f64| median(&s.iter().map(f).collect::<Vec<_>>());
    let peak = |s: &[Sample]| s.iter().map(|s| s.peak_kib).max().unwrap_or(0) as f64 / 1024.0;
    let each = |s: &[Sample]| {
        s.iter()
            .map(|s| format!("{:.1}", s.wall_s))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let row = |name: &str, s: &[Sample]| {
        format!(
            "| {size} ({shape}) | {name} | {:.2} | {:.2} | {:.0} | {} |",
            med(s, |x| x.wall_s),
            med(s, |x| x.own_s),
            peak(s),
            each(s)
        )
    };
    vec![
        row("filecoin-proofs `seal_commit_phase2`", fp),
        row("cuzk `prove porep`", cz),
        format!(
            "| {size} | cuzk's speed-up, memory | {:.2}× | {:.2}× | {:.2}× of filecoin-proofs' | |",
            med(fp, |x| x.wall_s) / med(cz, |x| x.wall_s),
            med(fp, |x| x.own_s) / med(cz, |x| x.own_s),
            peak(cz) / peak(fp)
        ),
    ]
}

/// Runs `command` to its end, its stdout captured (and echoed), and returns its times and peak
/// memory. The prover's own time is the `verified, T s` both print last.
fn measure(mut command: Command) -> anyhow::Result<(Sample, String)> {
    let start = Instant::now();
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_string(&mut out)?;
    }
    let (success, peak_kib) = wait_rusage(child.id())?;
    let wall_s = start.elapsed().as_secs_f64();
    print!("{out}");
    if !success {
        bail!("{command:?} failed");
    }
    let own_s = out
        .rsplit_once("verified, ")
        .and_then(|(_, t)| t.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no `verified, T s` in the output of {command:?}"))?;
    Ok((
        Sample {
            wall_s,
            own_s,
            peak_kib,
        },
        out,
    ))
}

/// Reaps the child `pid` and returns whether it exited with status 0, and its peak resident
/// memory in KiB (`ru_maxrss` of `wait4`: this child alone, unlike `getrusage`'s children
/// total, which keeps the highest of all).
#[allow(unsafe_code)]
fn wait_rusage(pid: u32) -> anyhow::Result<(bool, u64)> {
    let pid = libc::pid_t::try_from(pid)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers; all zeros is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child, not yet reaped (std's `Child` only reaps in `wait`, which
        // is never called); `status` and `usage` are live locals wait4 writes into.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context("wait4");
        }
    }
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    // Linux reports ru_maxrss in KiB.
    Ok((success, u64::try_from(usage.ru_maxrss).unwrap_or(0)))
}
