//! `cargo xtask ci`: everything CI runs, on a machine with no GPU.
//!
//! Formatting, clippy (warnings denied), every test (the golden proofs among them), the daemon
//! driven by a Python client generated with grpcio-tools, then the GPU side without a GPU: the MSM
//! kernels run on the host emulator, every kernel compiled with the pinned nvcc (installed from
//! PyPI when none is found; for sm_80 and sm_90, [`CI_ARCHS`]), the field arithmetic checked on
//! the host, clippy over the crates built with their `cuda` feature (GPU code that does not
//! compile fails CI too), and the GPU NTT, the GPU prover and the engine's GPU workers run on the
//! kernel emulator.

use anyhow::Context;
use xshell::{cmd, Shell};

use crate::kernels;

/// Packages and features that make up the GPU build.
/// The facade `cuzk` is built without its default `filecoin` feature (filecoin-proofs' tree is
/// not GPU code), hence `--no-default-features` beside them.
pub const CUDA_PACKAGES: [&str; 7] = [
    "cuzk-gpu",
    "cuzk-ntt",
    "cuzk-vram",
    "cuzk-msm",
    "cuzk-pce",
    "cuzk-pipeline",
    "cuzk",
];
pub const CUDA_FEATURES: &str =
    "cuzk-gpu/cuda,cuzk-ntt/cuda,cuzk-vram/cuda,cuzk-msm/cuda,cuzk-pce/cuda,cuzk-pipeline/cuda,cuzk/cuda";

/// Target folder of the release builds with the `cuda` feature (the device pack, the GPU
/// benchmarks), so that they do not replace the default folder's binaries.
pub const CUDA_TARGET_DIR: &str = "target/cuda";

/// A Python client generated from the daemon's proto with grpcio-tools (pinned, installed
/// into a virtual environment in cuzk's cache folder) drives `cuzk daemon`.
pub fn daemon_python_client(sh: &Shell) -> anyhow::Result<()> {
    cmd!(sh, "cargo build --locked -p cuzk").run()?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::project_root().join("target"));
    let cuzk = target.join("debug/cuzk");
    cmd!(
        sh,
        "python3 crates/daemon/tests/python/client_check.py --cuzk {cuzk}"
    )
    .run()
    .context("the Python client of the daemon (crates/daemon/tests/python/client_check.py)")
}

/// The SASS architectures CI compiles the kernels for: one of each major, so that both virtual
/// architectures' front ends (compute_80 for sm_80/86/89, compute_90 for sm_90 and the PTX) run
/// on every kernel. sm_86 and sm_89 take compute_80's PTX through the same ptxas as sm_80; leaving
/// them out saves two of six compilations. A build for users compiles all four.
const CI_ARCHS: &str = "80,90";

pub fn run(sh: &Shell) -> anyhow::Result<()> {
    // For the in-process kernel compilation as well as every cargo build below (the kernel
    // cache is keyed by the flags, so both compile each set once).
    if std::env::var_os(cuzk_gpu_build::ARCHS_ENV).is_none() {
        std::env::set_var(cuzk_gpu_build::ARCHS_ENV, CI_ARCHS);
    }
    let mut steps = Steps::default();
    let result = run_steps(sh, &mut steps);
    steps.report();
    result
}

/// How long each step of a run took, printed as each ends and again at the end (also after a
/// failure): where a CI run's minutes go.
#[derive(Default)]
struct Steps {
    done: Vec<(&'static str, std::time::Duration)>,
}

impl Steps {
    fn run<T>(
        &mut self,
        name: &'static str,
        step: impl FnOnce() -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let start = std::time::Instant::now();
        let result = step();
        let took = start.elapsed();
        eprintln!("ci: {name}: {:.0} s", took.as_secs_f64());
        self.done.push((name, took));
        result
    }

    fn report(&self) {
        eprintln!("ci: time by step");
        for (name, took) in &self.done {
            eprintln!("ci: {:>7.0} s  {name}", took.as_secs_f64());
        }
        let total: std::time::Duration = self.done.iter().map(|(_, t)| *t).sum();
        eprintln!("ci: {:>7.0} s  in all", total.as_secs_f64());
    }
}

fn run_steps(sh: &Shell, steps: &mut Steps) -> anyhow::Result<()> {
    steps.run("fmt", || {
        cmd!(sh, "cargo fmt --all -- --check")
            .run()
            .context("formatting differs: run `cargo fmt --all`")
    })?;
    steps.run("clippy", || {
        cmd!(
            sh,
            "cargo clippy --workspace --all-targets --locked -- -D warnings"
        )
        .run()
        .context("clippy")
    })?;
    // Every test and the doctests; the examples are not linked (clippy above checked that they
    // compile, and each links the filecoin-proofs tree: minutes on a 2-core machine).
    steps.run("tests", || {
        cmd!(sh, "cargo test --workspace --locked --lib --bins --tests")
            .run()
            .context("tests")
    })?;
    steps.run("doctests", || {
        cmd!(sh, "cargo test --workspace --locked --doc")
            .run()
            .context("doctests")
    })?;
    steps.run("python client", || daemon_python_client(sh))?;
    // The MSM kernels' logic (both bucket-sum strategies, every special case) on the host
    // emulator: the same kernel sources, compiled by the C++ compiler.
    steps.run("msm on the emulator", || {
        cmd!(
            sh,
            "cargo test --locked -p cuzk-msm --features emu --lib gpu::"
        )
        .run()
        .context("MSM kernel tests on the host emulator")
    })?;

    let nvcc = steps.run("nvcc and kernels", || {
        let nvcc = kernels::ensure_nvcc(sh, true)?;
        kernels::compile_all(&nvcc).context("compiling the CUDA kernels")?;
        kernels::host_check(sh)?;
        Ok(nvcc)
    })?;
    let packages: Vec<String> = CUDA_PACKAGES
        .iter()
        .flat_map(|p| ["-p".into(), p.to_string()])
        .collect();
    let _nvcc = sh.push_env("NVCC", &nvcc);
    // The engine, the daemon and the `cuzk` command line with their GPU workers: clippy over
    // the `cuda` build, then the engine's GPU workers on two emulated devices, with an injected
    // device failure and a Filecoin job spread to another device, and Filecoin's PoSt circuits
    // on the GPU backend against the CPU's bytes (both need the 2 KiB parameters: made in cuzk's
    // cache). They depend on cuzk-filecoin, so they build in the default target folder, where
    // the filecoin-proofs tree is already built (the cuda folder would build it a second time).
    steps.run("engine and daemon clippy, cuda", || {
        cmd!(sh, "cargo clippy -p cuzk-engine -p cuzk-daemon -p cuzk --features cuzk-engine/emu,cuzk-daemon/cuda,cuzk/cuda --all-targets --locked -- -D warnings")
            .run()
            .context("clippy over the engine and daemon with the `cuda` feature")
    })?;
    steps.run("engine's GPU workers on the emulator", || {
        cmd!(
            sh,
            "cargo test --locked -p cuzk-engine --features emu --test gpu_engine --test gpu_filecoin"
        )
        .run()
        .context("the engine's GPU workers on the kernel emulator")
    })?;
    // In the default target folder too: the dependencies built above (same features) are reused
    // rather than built again in `target/cuda`, minutes on a 2-core machine. These builds replace
    // `target/debug/cuzk` with a build without the daemon (`--no-default-features`), which the
    // next `cargo build` or `cargo test` puts back.
    steps.run("clippy, cuda", || {
        cmd!(sh, "cargo clippy {packages...} --no-default-features --features {CUDA_FEATURES} --all-targets --locked -- -D warnings")
            .run()
            .context("clippy with the `cuda` feature")
    })?;
    steps.run("emulator clippy", || {
        cmd!(
            sh,
            "cargo clippy -p cuzk-gpu --features emu --all-targets --locked -- -D warnings"
        )
        .run()
        .context("clippy over the kernel emulator's driver")
    })?;
    // The emulated driver itself: copies, poisoned fresh memory, ranges lent by a region.
    steps.run("emulator driver", || {
        cmd!(
            sh,
            "cargo test --locked -p cuzk-gpu --features emu --lib emu::"
        )
        .run()
        .context("the kernel emulator's driver")
    })?;
    // The GPU NTT and the GPU prover on the kernel emulator (cuzk-gpu's `emu`: the driver API on
    // host memory, the kernels compiled for the host): the NTT against its reference, the arena
    // lending device buffers, proofs against the CPU backend's bytes, a pre-compiled circuit's
    // products on the device.
    steps.run("GPU NTT and prover on the emulator", || {
        cmd!(sh, "cargo test --locked -p cuzk-gpu -p cuzk-ntt -p cuzk-vram -p cuzk --no-default-features --features cuzk-ntt/cuda,cuzk-vram/cuda,cuzk/cuda,cuzk-gpu/emu --test gpu --test device --test gpu_backend --test gpu_products --test pinned_count")
            .run()
            .context("the GPU NTT and prover on the kernel emulator")
    })
}
