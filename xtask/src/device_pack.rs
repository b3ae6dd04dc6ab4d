//! `cargo xtask device-pack`: one folder, `target/device/`, with everything a GPU run needs.
//!
//! Builds (release, `cuda` feature, in `target/cuda`; kernels for sm_90 only: the lent GPUs are
//! Hopper, and one architecture keeps the folder under the device tool's 64 MiB) the test binaries
//! of the GPU crates and the NTT and MSM benchmarks, copies them stripped into `target/device/`,
//! and writes `run.sh`, which runs the tests, then the benchmarks, writing logs and results to
//! `$OUT`. The GPU machine has no Rust toolchain; binaries built on this Debian 12 machine run
//! there as they are. See `docs/gpu.md`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use xshell::{cmd, Shell};

use crate::ci::{CUDA_FEATURES, CUDA_PACKAGES, CUDA_TARGET_DIR};
use crate::{kernels, project_root};

const RUN_SH: &str = r#"#!/usr/bin/env bash
# Written by `cargo xtask device-pack`. Runs the GPU tests (those whose name matches the regex
# $TESTS_ONLY when set), then the NTT benchmark (its arguments are this script's; NTT_SKIP=1
# skips it), then the MSM benchmark (its arguments in $MSM_ARGS; MSM_ARGS=skip skips it), then
# `cuzk bench` for the sizes in $PROVE_SIZES, then the interlock policies at $POLICY_SIZE. Logs
# and results go to $OUT (default: ./out beside this script).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
status=0
# The binaries travel gzip-compressed (the device tool carries at most 64 MiB).
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$here" && find . -name '*.gz') | while read -r f; do
    mkdir -p "$bin/$(dirname "$f")"
    gunzip -c "$here/$f" > "$bin/${f%.gz}"
    chmod +x "$bin/${f%.gz}"
done
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,driver_version --format=csv \
    > "$out/gpu.txt" 2>&1 || true
for t in "$bin"/tests/*; do
    if [ -n "${TESTS_ONLY:-}" ] && ! echo "$(basename "$t")" | grep -qE "$TESTS_ONLY"; then continue; fi
    echo "== $(basename "$t")" | tee -a "$out/tests.log"
    case "$(basename "$t")" in
        *-lib) filter=gpu:: ;;
        *) filter= ;;
    esac
    # shellcheck disable=SC2086
    "$t" $filter 2>&1 | tee -a "$out/tests.log" || status=1
done
if [ "${NTT_SKIP:-}" != 1 ]; then
    echo "== bench_ntt $*" | tee "$out/bench-ntt.log"
    "$bin/bench_ntt" --out "$out/bench-ntt.md" "$@" 2>&1 | tee -a "$out/bench-ntt.log" || status=1
fi
if [ "${MSM_ARGS:-}" != skip ]; then
    echo "== bench_msm ${MSM_ARGS:-}" | tee "$out/bench-msm.log"
    # shellcheck disable=SC2086
    "$bin/bench_msm" --out "$out/bench-msm.json" ${MSM_ARGS:-} 2>&1 | tee -a "$out/bench-msm.log" || status=1
fi
# The prover end to end: `cuzk bench` on the GPU for each log2 size in $PROVE_SIZES, and on the
# CPU beside it up to $PROVE_CPU_MAX (default 20), with $PROVE_ARGS added (e.g. --timing-params).
for n in ${PROVE_SIZES:-}; do
    for backend in gpu cpu; do
        if [ "$backend" = cpu ] && [ "$n" -gt "${PROVE_CPU_MAX:-20}" ]; then continue; fi
        echo "== cuzk bench --backend $backend --log-size $n" | tee -a "$out/prove.log"
        # shellcheck disable=SC2086
        "$bin/cuzk" bench --backend "$backend" --log-size "$n" --partitions "${PROVE_PARTITIONS:-2}" \
            ${PROVE_ARGS:-} 2>&1 | tee -a "$out/prove.log" || status=1
    done
done
# The interlock policies on the device: at log2 size $POLICY_SIZE, each policy with 1 to 3
# workers over $POLICY_PARTITIONS (default 6) partitions, with $PROVE_ARGS; each run's timeline
# is kept for `cargo xtask bench interlock --replay` (busy fraction and throughput in the log).
if [ -n "${POLICY_SIZE:-}" ]; then
    for policy in single two budget; do
        for w in 1 2 3; do
            echo "== cuzk bench --policy $policy --workers $w --log-size $POLICY_SIZE" | tee -a "$out/policy.log"
            # shellcheck disable=SC2086
            "$bin/cuzk" bench --backend gpu --log-size "$POLICY_SIZE" \
                --partitions "${POLICY_PARTITIONS:-6}" --workers "$w" --policy "$policy" \
                --timeline "$out/timeline-$policy-w$w.json" ${PROVE_ARGS:-} 2>&1 \
                | tee -a "$out/policy.log" || status=1
        done
    done
fi
grep -E "^test result|FAILED|panicked" "$out/tests.log" || true
echo "run.sh: exit status $status"
exit $status
"#;

pub fn run(sh: &Shell) -> anyhow::Result<()> {
    let nvcc = kernels::ensure_nvcc(sh, true)?;
    let _nvcc = sh.push_env("NVCC", &nvcc);
    let _target = sh.push_env("CARGO_TARGET_DIR", CUDA_TARGET_DIR);
    // Hopper only (the lent H100s and H200s): each packed binary embeds its kernels once.
    let _archs = sh.push_env(cuzk_gpu_build::ARCHS_ENV, "90");
    let packages: Vec<String> = CUDA_PACKAGES
        .iter()
        .flat_map(|p| ["-p".into(), p.to_string()])
        .collect();

    let messages = cmd!(
        sh,
        "cargo test --release --locked {packages...} --no-default-features --features {CUDA_FEATURES} --no-run --message-format=json"
    )
    .read()
    .context("building the GPU test binaries")?;
    let tests = test_executables(&messages)?;
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk-ntt --features cuda --example bench_ntt"
    )
    .run()
    .context("building the NTT benchmark")?;
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk-msm --features cuda --example bench_msm"
    )
    .run()
    .context("building the MSM benchmark")?;
    cmd!(
        sh,
        "cargo build --release --locked -p cuzk --no-default-features --features cuda,filecoin --bin cuzk"
    )
    .run()
    .context("building cuzk (the prover's benchmark, on the engine's workers)")?;

    let root = project_root();
    let bench = root
        .join(CUDA_TARGET_DIR)
        .join("release")
        .join("examples")
        .join("bench_ntt");
    let out = root.join("target").join("device");
    if out.exists() {
        std::fs::remove_dir_all(&out)?;
    }
    std::fs::create_dir_all(out.join("tests"))?;
    for (name, exe) in &tests {
        copy_stripped(sh, exe, &out.join("tests").join(name))?;
    }
    copy_stripped(sh, &bench, &out.join("bench_ntt"))?;
    let bench_msm = bench.with_file_name("bench_msm");
    copy_stripped(sh, &bench_msm, &out.join("bench_msm"))?;
    let cuzk = root.join(CUDA_TARGET_DIR).join("release").join("cuzk");
    copy_stripped(sh, &cuzk, &out.join("cuzk"))?;
    let script = out.join("run.sh");
    std::fs::write(&script, RUN_SH)?;
    cmd!(sh, "chmod +x {script}").run()?;

    let bytes = folder_size(&out)?;
    println!(
        "\n{} ({:.1} MiB):",
        out.display(),
        bytes as f64 / (1 << 20) as f64
    );
    for (name, _) in &tests {
        println!("  tests/{name}.gz");
    }
    println!("  bench_ntt.gz\n  bench_msm.gz\n  cuzk.gz\n  run.sh\n");
    println!(
        "On the GPU machine (device tool): command `bash target/device/run.sh`, carry [\"target/device\"]."
    );
    if bytes > 60 << 20 {
        bail!("target/device is {bytes} bytes: over the 64 MiB the device tool carries");
    }
    Ok(())
}

/// `(name, path)` of every GPU test executable (an integration test whose file starts with
/// `#![cfg(feature = "cuda")]`; the CPU tests run in CI) in cargo's JSON messages, named
/// `<package>-<target>` so that binaries of different crates cannot collide.
fn test_executables(messages: &str) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for line in messages.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-artifact" || v["profile"]["test"] != true {
            continue;
        }
        let Some(exe) = v["executable"].as_str() else {
            continue;
        };
        let gpu_only = v["target"]["src_path"]
            .as_str()
            .and_then(|src| std::fs::read_to_string(src).ok())
            .is_some_and(|text| text.contains("#![cfg(feature = \"cuda\")]"));
        let package = v["package_id"].as_str().map_or("unknown", package_name);
        // cuzk-msm keeps its GPU tests in the library (`gpu::tests`, next to the launch code);
        // run.sh runs `*-lib` binaries with the `gpu::` filter.
        let gpu_lib = package == "cuzk-msm" && v["target"]["kind"][0] == "lib";
        if !gpu_only && !gpu_lib {
            continue;
        }
        let target = if gpu_lib {
            "lib"
        } else {
            v["target"]["name"].as_str().unwrap_or("test")
        };
        out.push((format!("{package}-{target}"), PathBuf::from(exe)));
    }
    if out.is_empty() {
        bail!("cargo reported no GPU test executables");
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The package's name in a cargo package id: `path+file:///…/crates/msm#cuzk-msm@0.1.0`, or
/// `path+file:///…/crates/cuzk#0.1.0` when the name is the folder's.
fn package_name(id: &str) -> &str {
    let (path, fragment) = id.rsplit_once('#').unwrap_or((id, ""));
    match fragment.split_once('@') {
        Some((name, _)) => name,
        None => path.rsplit('/').next().unwrap_or("unknown"),
    }
}

/// Copies `from` to `to`, stripped and gzip-compressed (as `to.gz`; run.sh unpacks it).
fn copy_stripped(sh: &Shell, from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    cmd!(sh, "strip {to}")
        .run()
        .with_context(|| format!("stripping {}", to.display()))?;
    cmd!(sh, "gzip -9 -n -f {to}")
        .run()
        .with_context(|| format!("compressing {}", to.display()))?;
    Ok(())
}

fn folder_size(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            folder_size(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::package_name;

    #[test]
    fn package_names_come_from_either_form_of_id() {
        assert_eq!(
            package_name("path+file:///w/crates/msm#cuzk-msm@0.1.0"),
            "cuzk-msm"
        );
        assert_eq!(package_name("path+file:///w/crates/cuzk#0.1.0"), "cuzk");
    }
}
