//! `cargo xtask bench msm [BENCH_MSM_ARGS]... | --from FILE.json...`: the GPU MSM benchmark, into
//! docs/benchmarks.md.
//!
//! On a machine with a GPU, builds and runs `crates/msm/examples/bench_msm.rs` (release, `cuda`
//! feature; every argument goes to it, such as `--min 20 --max 26 --g2-max 24 --reps 5
//! --check-max 22 --no-streamed`), which writes `target/bench-msm.json`, and renders that into
//! the `bench-msm` section of docs/benchmarks.md. The GPU machine has no Rust toolchain: there,
//! run the example binary built here (`target/cuda/release/examples/bench_msm --out
//! $OUT/bench-msm.json`, carried over), then `cargo xtask bench msm --from bench-msm.json` here
//! writes the section from its output. Several `--from FILE` (runs of different sizes or groups)
//! make one table: the rows of all, a later file's row replacing an earlier one of the same group
//! and size, and the first file's device line and rates.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::Value;
use xshell::{cmd, Shell};

use crate::bench_cpu::write_section;
use crate::ci::CUDA_TARGET_DIR;
use crate::{kernels, project_root};

/// sppark on the same H200, bases and scalars on the device (docs/targets.md): (group, log n, ms).
const SPPARK_H200: &[(&str, u64, f64)] = &[
    ("G1", 20, 21.0),
    ("G1", 22, 53.0),
    ("G1", 24, 155.0),
    ("G1", 26, 557.0),
    ("G2", 20, 48.0),
    ("G2", 22, 138.0),
];

/// `cargo xtask bench msm`'s arguments: the example's, or the `--from` files of runs made
/// elsewhere.
#[derive(clap::Args, Debug)]
pub struct MsmArgs {
    /// Write the bench-msm section from this JSON output of the `bench_msm` example (run on the
    /// GPU machine) instead of running it. Repeat `--from FILE.json` for each file: one table of
    /// all their rows, a later file's row replacing an earlier one of the same group and size,
    /// with the first file's device line and rates.
    #[arg(long, value_name = "FILE.json", conflicts_with = "args")]
    from: Vec<PathBuf>,
    /// Arguments of the `bench_msm` example, passed on as they are: --min 20 --max 26 --g2-max 24
    /// --reps 5 --check-max 22 --no-streamed and the plan overrides it reads
    /// (crates/msm/examples/bench_msm.rs); xtask adds `--out target/bench-msm.json`.
    #[arg(
        value_name = "BENCH_MSM_ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    args: Vec<String>,
}

/// The files of the `--from` arguments. Each file needs its own `--from`: a file without one, or
/// a `--from` after the example's arguments, is refused rather than read as nothing at all.
fn from_files(args: &MsmArgs) -> anyhow::Result<&[PathBuf]> {
    if !args.from.is_empty() && !args.args.is_empty() || args.args.iter().any(|a| a == "--from") {
        bail!(
            "with --from, every argument is `--from FILE` (each file its own); got `{}`",
            args.args.join(" ")
        );
    }
    Ok(&args.from)
}

pub fn run(sh: &Shell, args: &MsmArgs) -> anyhow::Result<()> {
    let from = from_files(args)?;
    let args = &args.args;
    if !from.is_empty() {
        let runs = from
            .iter()
            .map(|path| read_json(path))
            .collect::<anyhow::Result<Vec<_>>>()?;
        return write_docs(&merge_runs(runs)?);
    }
    let nvcc = kernels::ensure_nvcc(sh, true)?;
    let _nvcc = sh.push_env("NVCC", &nvcc);
    let _target = sh.push_env("CARGO_TARGET_DIR", CUDA_TARGET_DIR);
    let out = project_root().join("target").join("bench-msm.json");
    cmd!(
        sh,
        "cargo run --release --locked -p cuzk-msm --features cuda --example bench_msm -- {args...} --out {out}"
    )
    .run()
    .context("bench_msm (it needs a GPU; without one, run the example on the GPU machine and use --from)")?;
    write_docs(&read_json(&out)?)
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// One run out of several: the first's device line and rates, the rows of all (sorted by group
/// and size), a later run's row replacing an earlier one of the same group and size. Each row
/// keeps the Fp multiplication rate of its run (`fp_mul_per_s`, which its floors used), and a
/// later run's mixed-addition rate of a group replaces an earlier one, with its run's Fp rate
/// (`madd_fp_mul_per_s`).
fn merge_runs(runs: Vec<Value>) -> anyhow::Result<Value> {
    let mut merged = runs.first().context("no benchmark run to render")?.clone();
    let key = |row: &Value| {
        (
            row["group"].as_str().map(str::to_owned),
            row["log_n"].as_u64(),
        )
    };
    let tag = |run: &Value, row: &mut Value| {
        if row.get("fp_mul_per_s").is_none() {
            row["fp_mul_per_s"] = run["fp_mul_per_s"].clone();
        }
    };
    let tag_madd = |run: &Value, merged: &mut Value| {
        if let Some(rates) = run["madd_per_s"].as_object() {
            for (group, rate) in rates {
                merged["madd_per_s"][group] = rate.clone();
                merged["madd_muls"][group] = run["madd_muls"][group].clone();
                merged["madd_fp_mul_per_s"][group] = run["fp_mul_per_s"].clone();
            }
        }
    };
    let mut rows: Vec<Value> = Vec::new();
    for run in &runs {
        for mut row in run["rows"].as_array().cloned().unwrap_or_default() {
            tag(run, &mut row);
            rows.retain(|r| key(r) != key(&row));
            rows.push(row);
        }
        tag_madd(run, &mut merged);
    }
    rows.sort_by_key(|r| key(r));
    merged["rows"] = Value::Array(rows);
    Ok(merged)
}

fn num(v: &Value, key: &str) -> anyhow::Result<f64> {
    v[key]
        .as_f64()
        .with_context(|| format!("`{key}` missing in the benchmark's JSON"))
}

/// A row's stage timings (`[{"stage": .., "ms": ..}, ..]`) as "name ms" items.
fn stage_list(stages: &Value) -> Vec<String> {
    stages
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    format!(
                        "{} {:.2}",
                        s["stage"].as_str().unwrap_or("?"),
                        s["ms"].as_f64().unwrap_or(0.0)
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Renders the benchmark's JSON into the `bench-msm` section.
fn write_docs(v: &Value) -> anyhow::Result<()> {
    let device = v["device"].as_str().unwrap_or("unknown device");
    let rate = num(v, "fp_mul_per_s")?;
    let copy_rates = match (
        v["h2d_pinned_bytes_per_s"].as_f64(),
        v["h2d_pageable_bytes_per_s"].as_f64(),
    ) {
        (Some(pinned), Some(pageable)) => format!(
            " Host-to-device copies of 1 GiB in the same run: **{:.1} GB/s** from pinned memory, \
             **{:.1} GB/s** from pageable memory.",
            pinned / 1e9,
            pageable / 1e9
        ),
        _ => String::new(),
    };
    let Some(rows) = v["rows"].as_array() else {
        bail!("no rows in the benchmark's JSON")
    };
    // Rows merged from other runs carry their run's rate, which their floors used: name the
    // groups whose rows' rates read differently at one decimal.
    let shown = |r: f64| format!("{:.1}", r / 1e9);
    let mut other_rates = Vec::new();
    for group in ["G1", "G2"] {
        let mut rates: Vec<String> = rows
            .iter()
            .filter(|r| r["group"] == group)
            .filter_map(|r| r["fp_mul_per_s"].as_f64())
            .map(shown)
            .filter(|r| *r != shown(rate))
            .collect();
        rates.sort();
        rates.dedup();
        if !rates.is_empty() {
            other_rates.push(format!("{group} rows {} G/s", rates.join(" and ")));
        }
    }
    let other_rates = if other_rates.is_empty() {
        String::new()
    } else {
        format!(" ({}: their runs')", other_rates.join(", "))
    };
    let madd_text = {
        let items: Vec<String> = ["G1", "G2"]
            .iter()
            .filter_map(|g| {
                let madd = v["madd_per_s"][g].as_f64()?;
                let fp = v["madd_fp_mul_per_s"][g].as_f64().unwrap_or(rate);
                let muls = v["madd_muls"][g].as_f64()?;
                Some(format!(
                    "{g} **{:.3} G/s** ({:.0}% of the Fp rate in Fp multiplications)",
                    madd / 1e9,
                    100.0 * madd * muls / fp
                ))
            })
            .collect();
        if items.is_empty() {
            String::new()
        } else {
            format!(
                " *Mixed-addition probe*: the point formula alone as `accumulate` runs it \
                 (`msm_bench_madd_<g>`: one accumulator per thread, same launch bounds, 2^16 \
                 bases in the L2 cache): {}.",
                items.join(", ")
            )
        }
    };
    let mut table = String::new();
    let mut stages = String::new();
    let mut sweeps = String::new();
    for r in rows {
        let group = r["group"].as_str().unwrap_or("?");
        let log_n = r["log_n"].as_u64().unwrap_or(0);
        let resident = num(r, "resident_ms")?;
        // A run that records no `accumulation` had XYZZ bucket sums (the default then).
        let batch_affine = r["accumulation"].as_str() == Some("batch-affine");
        let xyzz_ms = r["xyzz_ms"]
            .as_f64()
            .or((!batch_affine).then_some(resident));
        let xyzz = xyzz_ms.map_or("-".to_string(), |x| format!("{x:.1}"));
        let affine = r["affine_ms"]
            .as_f64()
            .map_or("-".to_string(), |a| format!("{a:.1}"));
        let affine_floor = num(r, "affine_floor_ms")?;
        let wide = r["wide_ms"]
            .as_f64()
            .map_or("-".to_string(), |s| format!("{s:.1}"));
        let floor = num(r, "floor_ms")?;
        // A run that records no `streamed_accumulation` streamed with XYZZ bucket sums.
        let streamed_sums = match r["streamed_accumulation"].as_str() {
            Some("batch-affine") => "BA",
            _ => "XYZZ",
        };
        let streamed = r["streamed_ms"]
            .as_f64()
            .map_or("-".to_string(), |s| format!("{s:.1} ({streamed_sums})"));
        let pinned = r["pinned_ms"]
            .as_f64()
            .map_or("-".to_string(), |s| format!("{s:.1} ({streamed_sums})"));
        let sppark = SPPARK_H200
            .iter()
            .find(|(g, l, _)| *g == group && *l == log_n)
            .map_or("-".to_string(), |(_, _, ms)| {
                format!("{ms:.0} ({:.2}×)", ms / resident)
            });
        let (sums, own_floor) = if batch_affine {
            ("batch-affine", affine_floor)
        } else {
            ("XYZZ", floor)
        };
        table.push_str(&format!(
            "| {group} | 2^{log_n} | {} | {sums} | **{resident:.1}** | {:.2} | {pinned} | {streamed} | {xyzz} | {floor:.1} | {affine} | {} | {wide} | {affine_floor:.1} | {sppark} | {} | {:.0} |\n",
            r["window_bits"],
            resident / own_floor,
            r["affine_groups"],
            if r["checked"].as_bool() == Some(true) { "yes" } else { "-" },
            num(r, "device_mib")?,
        ));
        if let Some(sweep) = r["window_sweep"].as_array().filter(|a| !a.is_empty()) {
            let items: Vec<String> = sweep
                .iter()
                .map(|w| {
                    format!(
                        "{}: {:.1}",
                        w["window_bits"],
                        w["ms"].as_f64().unwrap_or(f64::NAN)
                    )
                })
                .collect();
            sweeps.push_str(&format!(
                "| {group} | 2^{log_n} | {} | {} |\n",
                r["window_bits"],
                items.join(", ")
            ));
        }
        let xyzz_stages = if r["xyzz_stages"].is_array() {
            &r["xyzz_stages"]
        } else if batch_affine {
            &Value::Null
        } else {
            &r["stages"]
        };
        let parts = stage_list(xyzz_stages);
        let affine_parts = stage_list(&r["affine_stages"]);
        stages.push_str(&format!(
            "| {group} | 2^{log_n} | {} | {} |\n",
            parts.join(", "),
            affine_parts.join(", ")
        ));
    }
    let sweep_text = if sweeps.is_empty() {
        String::new()
    } else {
        format!(
            "Window sweep (`--window-sweep`): the resident MSM (the default plan's bucket sums) \
             with other window widths, same run (bits: median ms).\n\n| group | n | plan's window | bits: ms |\n|---|---|---|---|\n\
             {sweeps}\n"
        )
    };
    let body = format!(
        "Command: `cargo xtask bench msm` (on the GPU machine: the `bench_msm` example built here, \
         then `cargo xtask bench msm --from bench-msm.json`). Device: {device}. Random bases and \
         scalars (Montgomery form); each size checked against blst's CPU MSM where marked. Times \
         are CUDA-event medians after a warm-up, from the first kernel to the result on the host \
         (the host's share of the reduction included). *Resident*: bases and scalars in device \
         memory, the default plan (*bucket sums*: the kind `Accumulation::resident_default` \
         chose in that run; chunks of 2^25 points, or of 2^26 where the plan then needs at most \
         a quarter of the device's memory, `MsmPlan::for_device`), over the \
         *floor* of those sums. *Streamed*: both in host memory, \
         with the streamed plan's bucket sums (named after each time: XYZZ, or BA for \
         batch-affine, `Accumulation::streamed_default`), copied on a second stream in chunks of a quarter of the points (at least 2^22, at \
         most 2^25: `streamed_chunk_len`; the window chosen for that many chunks) while the \
         previous chunk computes: \
         from *pinned* memory directly, or from *pageable* memory through two pinned staging \
         buffers the host fills (in parallel) while the device copies and computes.{copy_rates} *XYZZ* and *batch-affine*: the \
         same resident MSM, same run, with each kind of bucket sums (`Accumulation::Xyzz`, \
         `Accumulation::BatchAffine`; the default's is the resident time). *XYZZ floor*: the plan's bucket additions (one mixed addition per point and \
         window, two full additions per bucket) times their Fp multiplications (G1: 10 and 14, \
         G2: 25 and 35, an Fp2 multiplication or squaring counted as 2.5 Fp multiplications), at the Fp multiplication rate of the throughput probe `msm_bench_fp_mul` \
         in the same run, **{:.1} G/s**{other_rates}.{madd_text} Batch-affine: its number of \
         window *groups* (their scratch within the plan's budget: `GpuMsm::plan` gives a tenth \
         of the device's memory, at least 6 GiB, `affine_scratch_for_device`; several groups run \
         alternately on two lanes), the time with one group (all windows at \
         once, one lane, where that differs and fits the device's free memory), and its floor (G1: 6, G2: 15 multiplications per \
         addition).\n\n\
         | group | n | window (bits) | bucket sums | resident (ms) | resident / floor | streamed, pinned (ms) | streamed, pageable (ms) | XYZZ (ms) | XYZZ floor (ms) | batch-affine (ms) | groups | one group (ms) | batch-affine floor (ms) | sppark, same H200 (ms, our speed-up) | checked | device memory (MiB) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n{table}\n{sweep_text}\
         Stages (CUDA events between stages of one profiled run, which issues every lane's \
         work on one stream, summed over chunks and groups, ms): `digits` \
         signed digits and bucket counts, `scan` prefix sum, `scatter` counting sort; XYZZ: \
         `accumulate` the bucket sums' first level (the mixed additions), `merge` the later \
         levels; batch-affine: `pairs` denominators and running products (with the group's \
         statistics, downloaded), `invert` the batch inversion (blockwise or a tree), `sums` the affine \
         additions, `buckets` each bucket's last value into its XYZZ bucket; `reduce` the bucket \
         reduction on the device, `host` the rest on the host.\n\n\
         | group | n | stages, XYZZ | stages, batch-affine |\n|---|---|---|---|\n{stages}",
        rate / 1e9
    );
    println!("{body}");
    write_section("bench-msm", &body)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser;
    use serde_json::json;

    use super::{from_files, merge_runs, MsmArgs};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: MsmArgs,
    }

    /// The files of `--from` in `argv`, or the error of parsing or checking them.
    fn files(argv: &[&str]) -> Result<Vec<PathBuf>, String> {
        let cli = Cli::try_parse_from(std::iter::once("msm").chain(argv.iter().copied()))
            .map_err(|e| e.to_string())?;
        from_files(&cli.args)
            .map(<[PathBuf]>::to_vec)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn from_takes_one_file_per_flag_and_nothing_else() {
        assert!(files(&["--min", "20"]).unwrap().is_empty());
        let cli = Cli::try_parse_from(["msm", "--min", "20", "--no-streamed"]).unwrap();
        assert_eq!(cli.args.args, ["--min", "20", "--no-streamed"]);
        assert_eq!(
            files(&["--from", "a.json", "--from", "b.json"]).unwrap(),
            [PathBuf::from("a.json"), PathBuf::from("b.json")]
        );
        assert!(files(&["--from", "a.json", "b.json"]).is_err());
        assert!(files(&["--from"]).is_err());
        assert!(files(&["--reps", "3", "--from", "a.json"]).is_err());
        assert!(files(&["--from", "a.json", "--reps", "3"]).is_err());
    }

    #[test]
    fn runs_merge_by_group_and_size() {
        let a = json!({"device": "A", "fp_mul_per_s": 1.0,
            "madd_per_s": {"G1": 2.0}, "madd_muls": {"G1": 10.0}, "rows": [
            {"group": "G2", "log_n": 20, "resident_ms": 1.0},
            {"group": "G1", "log_n": 26, "resident_ms": 2.0},
            {"group": "G1", "log_n": 20, "resident_ms": 3.0},
        ]});
        let b = json!({"device": "B", "fp_mul_per_s": 9.0,
            "madd_per_s": {"G2": 3.0}, "madd_muls": {"G2": 25.0}, "rows": [
            {"group": "G1", "log_n": 26, "resident_ms": 4.0},
            {"group": "G1", "log_n": 22, "resident_ms": 5.0},
        ]});
        let m = merge_runs(vec![a, b]).unwrap();
        assert_eq!(m["device"], "A");
        assert_eq!(m["fp_mul_per_s"], 1.0);
        // Each row keeps its run's Fp rate; each group's addition rate comes with its run's.
        assert_eq!(m["madd_per_s"], json!({"G1": 2.0, "G2": 3.0}));
        assert_eq!(m["madd_muls"], json!({"G1": 10.0, "G2": 25.0}));
        assert_eq!(m["madd_fp_mul_per_s"], json!({"G1": 1.0, "G2": 9.0}));
        let rates: Vec<f64> = m["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["fp_mul_per_s"].as_f64().unwrap())
            .collect();
        assert_eq!(rates, [1.0, 9.0, 9.0, 1.0]);
        let rows: Vec<(String, u64, f64)> = m["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["group"].as_str().unwrap().to_owned(),
                    r["log_n"].as_u64().unwrap(),
                    r["resident_ms"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("G1".to_owned(), 20, 3.0),
                ("G1".to_owned(), 22, 5.0),
                ("G1".to_owned(), 26, 4.0),
                ("G2".to_owned(), 20, 1.0),
            ]
        );
        assert!(merge_runs(Vec::new()).is_err());
    }
}
