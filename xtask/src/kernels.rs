//! `cargo xtask kernels [--install-nvcc] [--check]`: compile every CUDA kernel.
//!
//! Each top-level folder of `kernels/` holding `.cu` files is one kernel set, compiled to one
//! fatbin (`target/kernels/<folder>.fatbin`) exactly as the owning crate's build script does with
//! its `cuda` feature (same flags, same cache). nvcc comes from `$NVCC`, `PATH` or the pinned
//! PyPI toolchain; `--install-nvcc` installs that toolchain when nvcc is missing, `--check` only
//! reports which nvcc would be used.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use cuzk_gpu_build::{
    compile, find_nvcc, kernel_cache_dir, nvcc_in_install, pinned_dir, KernelSet, Outcome,
    INSTALL_MARKER, NVCC_PIP_PINS, NVCC_VERSION,
};
use xshell::{cmd, Shell};

use crate::project_root;

/// `cargo xtask kernels`' arguments.
#[derive(clap::Args, Debug)]
pub struct KernelsArgs {
    /// Install the pinned nvcc from PyPI into the cache folder when none is found.
    #[arg(long)]
    install_nvcc: bool,
    /// Only report which nvcc would be used; compile nothing.
    #[arg(long)]
    check: bool,
}

pub fn run(sh: &Shell, args: &KernelsArgs) -> anyhow::Result<()> {
    let nvcc = ensure_nvcc(sh, args.install_nvcc)?;
    println!("nvcc: {}", nvcc.display());
    if args.check {
        return Ok(());
    }
    compile_all(&nvcc)?;
    Ok(())
}

/// The nvcc to use; with `install`, installs the pinned toolchain when none is found.
pub fn ensure_nvcc(sh: &Shell, install: bool) -> anyhow::Result<PathBuf> {
    match find_nvcc() {
        Ok(nvcc) => Ok(nvcc),
        Err(e) if !install => bail!("{e}"),
        Err(_) => install_nvcc(sh),
    }
}

/// Installs nvcc and the wheels it needs, pinned, from PyPI into the cache folder: a virtual
/// environment when `python3 -m venv` works, else a `pip install --target` folder. The marker
/// file is written last, so an interrupted installation is redone.
pub fn install_nvcc(sh: &Shell) -> anyhow::Result<PathBuf> {
    let dir = pinned_dir().context("no cache folder: set $CUZK_CACHE_DIR or $HOME")?;
    if dir.join(INSTALL_MARKER).is_file() {
        if let Some(nvcc) = nvcc_in_install(&dir) {
            return Ok(nvcc);
        }
    }
    println!(
        "installing nvcc {NVCC_VERSION} from PyPI into {}",
        dir.display()
    );
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let pins = NVCC_PIP_PINS;
    let quiet = ["--disable-pip-version-check", "--no-input", "-q"];
    let venv_ok = cmd!(sh, "python3 -m venv {dir}").run().is_ok();
    if venv_ok {
        let pip = dir.join("bin").join("pip");
        cmd!(sh, "{pip} install {quiet...} {pins...}")
            .run()
            .context("pip install (venv)")?;
    } else {
        println!("python3 -m venv failed; installing with pip --target instead");
        let _ = std::fs::remove_dir_all(&dir);
        let site = dir.join("site");
        cmd!(
            sh,
            "python3 -m pip install {quiet...} --target {site} {pins...}"
        )
        .run()
        .context("pip install --target")?;
    }
    let nvcc = nvcc_in_install(&dir)
        .with_context(|| format!("nvcc not found in {} after installing", dir.display()))?;
    std::fs::write(dir.join(INSTALL_MARKER), NVCC_PIP_PINS.join("\n"))?;
    Ok(nvcc)
}

/// The kernel sets: every top-level folder of `kernels/` with `.cu` files in it.
pub fn kernel_sets(root: &Path) -> anyhow::Result<Vec<KernelSet>> {
    let mut sets = Vec::new();
    for entry in std::fs::read_dir(root).with_context(|| format!("reading {}", root.display()))? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        let has_cu = std::fs::read_dir(&path)?
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "cu"));
        if has_cu {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            sets.push(KernelSet::new(&name, root, &[&name]));
        }
    }
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(sets)
}

/// Compiles every kernel set into `target/kernels/`.
pub fn compile_all(nvcc: &Path) -> anyhow::Result<()> {
    let root = project_root().join("kernels");
    let out_dir = project_root().join("target").join("kernels");
    std::fs::create_dir_all(&out_dir)?;
    let cache = kernel_cache_dir();
    let sets = kernel_sets(&root)?;
    if sets.is_empty() {
        bail!("no kernels found under {}", root.display());
    }
    for set in &sets {
        let start = Instant::now();
        let out = out_dir.join(format!("{}.fatbin", set.name));
        let outcome = compile(nvcc, set, &out_dir, &out, cache.as_deref())?;
        let size = std::fs::metadata(&out)?.len();
        let how = match outcome {
            Outcome::Compiled => "compiled",
            Outcome::Cached => "cached",
        };
        println!(
            "kernels/{}: {} ({} KiB, {how} in {:.1} s)",
            set.name,
            out.display(),
            size / 1024,
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Runs the host check of the field arithmetic (`kernels/tests/fr_host_check.*`): the same
/// `fr.cuh` compiled by the host C++ compiler with emulated carry instructions, checked against
/// Python's big integers. Needs `python3` and a C++ compiler (skipped without one), no GPU.
pub fn host_check(sh: &Shell) -> anyhow::Result<()> {
    let root = project_root();
    let kernels = root.join("kernels");
    let src = kernels.join("tests").join("fr_host_check.cpp");
    let script = kernels.join("tests").join("fr_host_check.py");
    let exe = root.join("target").join("fr_host_check");
    std::fs::create_dir_all(root.join("target"))?;
    if cmd!(sh, "c++ --version")
        .quiet()
        .ignore_stdout()
        .ignore_stderr()
        .run()
        .is_err()
    {
        println!("skipped the Fr host check: no C++ compiler (`c++`) on this machine");
        return Ok(());
    }
    cmd!(sh, "c++ -O2 -std=c++17 -I {kernels} {src} -o {exe}")
        .run()
        .context("compiling the Fr host check")?;
    cmd!(sh, "python3 {script} {exe}")
        .run()
        .context("the Fr host check")?;
    Ok(())
}
