//! Build-time helper shared by every crate that owns CUDA kernels, and by `cargo xtask kernels`.
//!
//! - [`find_nvcc`] looks for nvcc in `$NVCC`, then `PATH`, then the pinned PyPI toolchain that
//!   `cargo xtask kernels --install-nvcc` installs into [`pinned_dir`].
//! - [`compile`] compiles one [`KernelSet`] (the `.cu` files of some folders under `kernels/`)
//!   into one fatbin: SASS for [`SASS_ARCHS`] plus PTX for [`PTX_ARCH`]. The `.cu` files are
//!   compiled as one translation unit (a generated file that includes them all), so one crate
//!   embeds one module. Results are cached by a hash of the compiler, the flags and every kernel
//!   source (in [`kernel_cache_dir`]), so debug, release, clippy and `cargo xtask kernels` builds
//!   compile each kernel set once, in any checkout of the same sources (paths are hashed relative
//!   to `kernels/`).
//! - [`build_script`] is the whole `build.rs` of a kernel-owning crate.
//!
//! This crate has no dependencies so that it builds in seconds as a build-dependency.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The nvcc release the GPU machine's driver (CUDA 13.0) accepts; see `docs/gpu.md`.
pub const NVCC_VERSION: &str = "13.0.88";

/// The PyPI wheels that make up the pinned toolchain. Every wheel is pinned: an unpinned one pulls
/// a newer release whose PTX the 13.0 driver cannot load.
pub const NVCC_PIP_PINS: [&str; 5] = [
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
];

/// Architectures compiled to machine code (SASS).
pub const SASS_ARCHS: [u32; 4] = [80, 86, 89, 90];

/// The virtual architecture embedded as PTX, which newer GPUs compile at load time.
pub const PTX_ARCH: u32 = 90;

/// The command that installs the pinned toolchain.
pub const INSTALL_HINT: &str = "cargo xtask kernels --install-nvcc";

/// The file written last by an installation of the pinned toolchain; its presence marks the
/// installation as complete.
pub const INSTALL_MARKER: &str = ".cuzk-install-complete";

/// The cache folder of cuzk's tools: `$CUZK_CACHE_DIR`, else `$XDG_CACHE_HOME/cuzk`, else
/// `$HOME/.cache/cuzk`.
pub fn cache_root() -> Option<PathBuf> {
    if let Some(dir) = non_empty_env("CUZK_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = non_empty_env("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("cuzk"));
    }
    non_empty_env("HOME").map(|home| PathBuf::from(home).join(".cache").join("cuzk"))
}

/// Where the pinned toolchain lives (or will live once installed).
pub fn pinned_dir() -> Option<PathBuf> {
    cache_root().map(|root| root.join(format!("nvcc-{NVCC_VERSION}")))
}

/// The nvcc of a completely installed pinned toolchain, if there is one.
pub fn pinned_nvcc() -> Option<PathBuf> {
    let dir = pinned_dir()?;
    if !dir.join(INSTALL_MARKER).is_file() {
        return None;
    }
    nvcc_in_install(&dir)
}

/// Finds `nvidia/cu13/bin/nvcc` inside a pip installation (a venv's `lib/python3.*/site-packages`
/// or a `--target` folder).
pub fn nvcc_in_install(dir: &Path) -> Option<PathBuf> {
    let rel = Path::new("nvidia").join("cu13").join("bin").join("nvcc");
    let direct = dir.join("site").join(&rel);
    if direct.is_file() {
        return Some(direct);
    }
    for lib in ["lib", "lib64"] {
        let Ok(entries) = fs::read_dir(dir.join(lib)) else {
            continue;
        };
        for entry in entries.flatten() {
            let candidate = entry.path().join("site-packages").join(&rel);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// nvcc was not found anywhere; the message says where we looked and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvccNotFound {
    /// The places searched, in order.
    pub searched: Vec<String>,
}

impl fmt::Display for NvccNotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "nvcc (the CUDA compiler) was not found; searched:")?;
        for place in &self.searched {
            writeln!(f, "  - {place}")?;
        }
        write!(
            f,
            "Install the pinned toolchain (nvcc {NVCC_VERSION} from PyPI, no GPU needed) with:\n\n    \
             {INSTALL_HINT}\n\nor point $NVCC at an nvcc binary."
        )
    }
}

impl std::error::Error for NvccNotFound {}

/// Finds nvcc: `$NVCC`, then `nvcc` on `PATH`, then the pinned toolchain.
pub fn find_nvcc() -> Result<PathBuf, NvccNotFound> {
    let mut searched = Vec::new();
    if let Some(path) = non_empty_env("NVCC") {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        searched.push(format!("$NVCC = {} (not a file)", path.display()));
    } else {
        searched.push("$NVCC (unset)".to_string());
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("nvcc");
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    searched.push("nvcc on PATH".to_string());
    if let Some(nvcc) = pinned_nvcc() {
        return Ok(nvcc);
    }
    searched.push(match pinned_dir() {
        Some(dir) => format!("the pinned toolchain in {}", dir.display()),
        None => "the pinned toolchain (no cache folder: $HOME is unset)".to_string(),
    });
    Err(NvccNotFound { searched })
}

/// A set of kernels compiled into one fatbin: every `.cu` file directly inside the given
/// sub-folders of the kernels root.
#[derive(Debug, Clone)]
pub struct KernelSet {
    /// Name of the fatbin (`<name>.fatbin`), e.g. `field` or `ntt`.
    pub name: String,
    /// The `kernels/` folder; also the include root (`#include "field/fr.cuh"`).
    pub kernels_root: PathBuf,
    /// Sub-folders of the root whose `.cu` files belong to the set.
    pub subdirs: Vec<String>,
}

impl KernelSet {
    /// A kernel set named `name` made of the `.cu` files of `subdirs`.
    pub fn new(name: &str, kernels_root: &Path, subdirs: &[&str]) -> Self {
        Self {
            name: name.to_string(),
            kernels_root: kernels_root.to_path_buf(),
            subdirs: subdirs.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The `.cu` files of the set, sorted.
    pub fn sources(&self) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for sub in &self.subdirs {
            for entry in fs::read_dir(self.kernels_root.join(sub))? {
                let path = entry?.path();
                if path.extension().is_some_and(|e| e == "cu") {
                    out.push(path);
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Every `.cu` and `.cuh` file under `root`, recursively, sorted: what a fatbin may depend on.
pub fn kernel_files(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "cu" || e == "cuh") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Every folder under `root`, including `root`: watching them catches added files.
fn kernel_dirs(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        for entry in fs::read_dir(&out[i])? {
            let path = entry?.path();
            if path.is_dir() {
                out.push(path);
            }
        }
        i += 1;
    }
    Ok(out)
}

/// The nvcc flags of every kernel build, except input and output.
pub fn nvcc_flags(kernels_root: &Path) -> Vec<OsString> {
    nvcc_flags_for(kernels_root, &sass_archs())
}

/// [`nvcc_flags`] for the given SASS architectures, whatever [`ARCHS_ENV`] says.
fn nvcc_flags_for(kernels_root: &Path, archs: &[u32]) -> Vec<OsString> {
    let mut flags: Vec<OsString> = vec![
        "-fatbin".into(),
        "-O3".into(),
        "-std=c++17".into(),
        // Compile the architectures in parallel.
        "--threads".into(),
        "0".into(),
        "-Xptxas".into(),
        "-warn-spills".into(),
    ];
    for gencode in gencodes_for(archs) {
        flags.push("-gencode".into());
        flags.push(gencode.into());
    }
    let mut include = OsString::from("-I");
    include.push(kernels_root.as_os_str());
    flags.push(include);
    flags
}

/// The `-gencode` values: one per major architecture, whose SASS targets all come from the PTX
/// of its oldest SASS architecture (`arch=compute_80,code=[sm_80,sm_86,sm_89]`), and the PTX
/// itself with its major's group. Each virtual architecture is one front-end (cicc) run, about
/// as long as a ptxas run for the MSM kernels, so this saves two of six compilations. Within a
/// major the virtual architectures differ only in the PTX instructions they allow, and no
/// kernel tests `__CUDA_ARCH__`'s value, so sm_86 and sm_89 lose nothing by compute_80's PTX.
/// The environment variable that narrows the SASS architectures to a comma-separated list of
/// [`SASS_ARCHS`] (`cargo xtask device-pack` sets `90`: the GPU machines are Hopper, and one
/// architecture makes the packed binaries a fraction of the size).
pub const ARCHS_ENV: &str = "CUZK_CUDA_ARCHS";

/// [`SASS_ARCHS`], or those of them that [`ARCHS_ENV`] names.
fn sass_archs() -> Vec<u32> {
    let Some(list) = non_empty_env(ARCHS_ENV) else {
        return SASS_ARCHS.to_vec();
    };
    let named: Vec<u32> = list
        .to_string_lossy()
        .split(',')
        .filter_map(|a| a.trim().parse().ok())
        .filter(|a| SASS_ARCHS.contains(a))
        .collect();
    if named.is_empty() {
        SASS_ARCHS.to_vec()
    } else {
        named
    }
}

fn gencodes_for(archs: &[u32]) -> Vec<String> {
    let mut groups: Vec<(u32, Vec<String>)> = Vec::new();
    for &arch in archs {
        match groups.iter_mut().find(|(virt, _)| virt / 10 == arch / 10) {
            Some((_, codes)) => codes.push(format!("sm_{arch}")),
            None => groups.push((arch, vec![format!("sm_{arch}")])),
        }
    }
    match groups.iter_mut().find(|(virt, _)| *virt == PTX_ARCH) {
        Some((_, codes)) => codes.push(format!("compute_{PTX_ARCH}")),
        None => groups.push((PTX_ARCH, vec![format!("compute_{PTX_ARCH}")])),
    }
    groups
        .into_iter()
        .map(|(virt, codes)| format!("arch=compute_{virt},code=[{}]", codes.join(",")))
        .collect()
}

/// What went wrong while compiling kernels.
#[derive(Debug)]
pub enum BuildError {
    /// No nvcc anywhere.
    NvccNotFound(NvccNotFound),
    /// Reading sources or writing outputs failed.
    Io { what: String, source: io::Error },
    /// nvcc ran and failed.
    Nvcc { command: String, output: String },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::NvccNotFound(e) => e.fmt(f),
            BuildError::Io { what, source } => write!(f, "{what}: {source}"),
            BuildError::Nvcc { command, output } => {
                write!(f, "nvcc failed:\n  {command}\n{output}")
            }
        }
    }
}

impl std::error::Error for BuildError {}

impl From<NvccNotFound> for BuildError {
    fn from(e: NvccNotFound) -> Self {
        BuildError::NvccNotFound(e)
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> BuildError {
    let what = what.into();
    move |source| BuildError::Io { what, source }
}

/// How a fatbin was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// nvcc ran.
    Compiled,
    /// An identical earlier build was copied from the cache.
    Cached,
}

/// Compiles `set` with `nvcc` into `out` (a `.fatbin` path). `work_dir` receives the generated
/// translation unit; `cache_dir`, when given, holds fatbins keyed by a hash of everything that
/// goes into them.
pub fn compile(
    nvcc: &Path,
    set: &KernelSet,
    work_dir: &Path,
    out: &Path,
    cache_dir: Option<&Path>,
) -> Result<Outcome, BuildError> {
    let root = &set.kernels_root;
    let sources = set
        .sources()
        .map_err(io_err(format!("listing kernels of `{}`", set.name)))?;
    let flags = nvcc_flags(root);
    let key = cache_key(nvcc, set, &sources)?;

    if let Some(cache) = cache_dir {
        let cached = cache.join(&key);
        if cached.is_file() && fs::copy(&cached, out).is_ok() {
            return Ok(Outcome::Cached);
        }
    }

    fs::create_dir_all(work_dir).map_err(io_err(format!("creating {}", work_dir.display())))?;
    let unity = work_dir.join(format!("{}_all.cu", set.name));
    let mut text =
        String::from("// Generated by cuzk-gpu-build: one translation unit per kernel set.\n");
    for src in &sources {
        text.push_str(&format!("#include \"{}\"\n", src.display()));
    }
    fs::write(&unity, text).map_err(io_err(format!("writing {}", unity.display())))?;

    let mut cmd = Command::new(nvcc);
    cmd.args(&flags).arg("-o").arg(out).arg(&unity);
    let command = format!("{cmd:?}");
    let output = cmd
        .output()
        .map_err(io_err(format!("running {}", nvcc.display())))?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        return Err(BuildError::Nvcc {
            command,
            output: text,
        });
    }

    if let Some(cache) = cache_dir {
        // Best effort: a failed cache write only costs a later recompile. Write then rename, so
        // concurrent builds never see half a file.
        if fs::create_dir_all(cache).is_ok() {
            let tmp = cache.join(format!("{key}.{}.tmp", std::process::id()));
            if fs::copy(out, &tmp).is_ok() && fs::rename(&tmp, cache.join(&key)).is_err() {
                let _ = fs::remove_file(&tmp);
            }
        }
    }
    Ok(Outcome::Compiled)
}

/// The cache entry of `set` built from `sources` with `nvcc`: a hash of the compiler, the flags,
/// the set, and the bytes and path of the set's own `.cu` files and of every header (any .cu may
/// include any .cuh; no .cu includes another set's .cu), so that a change to one set's kernels
/// leaves the other sets' entries valid. The paths and the include flag are taken relative to the kernels folder, so that
/// every checkout of the same sources (worktrees, CI's fresh clones) shares one entry: the
/// fatbin holds no path (no debug or line information is compiled in).
fn cache_key(nvcc: &Path, set: &KernelSet, sources: &[PathBuf]) -> Result<String, BuildError> {
    let root = &set.kernels_root;
    let relative = |p: &Path| p.strip_prefix(root).unwrap_or(p).as_os_str().to_owned();
    let mut hash = Fnv::new();
    hash.write(nvcc.as_os_str().as_encoded_bytes());
    if let Ok(meta) = fs::metadata(nvcc) {
        hash.write(&meta.len().to_le_bytes());
    }
    for flag in nvcc_flags(Path::new("<kernels>")) {
        hash.write(flag.as_encoded_bytes());
    }
    hash.write(set.name.as_bytes());
    for src in sources {
        hash.write(relative(src).as_encoded_bytes());
    }
    let headers = kernel_files(root).map_err(io_err("listing kernel files"))?;
    let headers = headers
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "cuh"));
    let mut files: Vec<PathBuf> = headers.chain(sources.iter().cloned()).collect();
    files.sort();
    files.dedup();
    for file in files {
        hash.write(relative(&file).as_encoded_bytes());
        hash.write(&fs::read(&file).map_err(io_err(format!("reading {}", file.display())))?);
    }
    Ok(format!("{}-{:016x}.fatbin", set.name, hash.finish()))
}

/// The fatbin cache shared by every build script and `cargo xtask kernels`, whatever the target
/// directory: `<cache root>/kernels`. Entries are keyed by a hash of the compiler, flags and every
/// kernel source, so checkouts and profiles can share it safely.
pub fn kernel_cache_dir() -> Option<PathBuf> {
    cache_root().map(|root| root.join("kernels"))
}

/// The kernels root of this workspace, seen from a crate at `crates/<name>`.
pub fn kernels_root_from_manifest(manifest_dir: &Path) -> PathBuf {
    manifest_dir.join("..").join("..").join("kernels")
}

/// The whole build script of a kernel-owning crate: with the crate's `cuda` feature on, compiles
/// the `.cu` files of `subdirs` into `$OUT_DIR/<name>.fatbin` (which the crate embeds with
/// `include_bytes!`); without it, does nothing. Exits with the fixing command when nvcc is missing.
pub fn build_script(name: &str, subdirs: &[&str]) {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo"));
    let root = kernels_root_from_manifest(&manifest);
    let root = root.canonicalize().unwrap_or(root);
    println!("cargo:rerun-if-env-changed=NVCC");
    println!("cargo:rerun-if-env-changed=CUZK_CACHE_DIR");
    println!("cargo:rerun-if-env-changed={ARCHS_ENV}");
    if let Ok(dirs) = kernel_dirs(&root) {
        for dir in dirs {
            println!("cargo:rerun-if-changed={}", dir.display());
        }
    }
    if let Ok(files) = kernel_files(&root) {
        for file in files {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    if std::env::var_os("CARGO_FEATURE_CUDA").is_none() {
        return;
    }
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("run by cargo"));
    let fail = |message: String| -> ! {
        eprintln!("error: building the `{name}` CUDA kernels failed\n\n{message}");
        std::process::exit(1);
    };
    let nvcc = find_nvcc().unwrap_or_else(|e| fail(e.to_string()));
    let set = KernelSet::new(name, &root, subdirs);
    let out = out_dir.join(format!("{name}.fatbin"));
    let cache = kernel_cache_dir();
    if let Err(e) = compile(&nvcc, &set, &out_dir, &out, cache.as_deref()) {
        fail(e.to_string());
    }
}

fn non_empty_env(key: &str) -> Option<OsString> {
    std::env::var_os(key).filter(|v| !v.is_empty())
}

/// FNV-1a, 64 bits: stable across Rust releases, unlike `DefaultHasher`.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separate consecutive writes so that ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_cover_every_arch_and_ptx() {
        // Independent of CUZK_CUDA_ARCHS, which `cargo xtask ci` sets for the whole run.
        let flags: Vec<String> = nvcc_flags_for(Path::new("/k"), &SASS_ARCHS)
            .into_iter()
            .map(|f| f.into_string().unwrap())
            .collect();
        assert!(flags.contains(&"arch=compute_80,code=[sm_80,sm_86,sm_89]".to_string()));
        assert!(flags.contains(&"arch=compute_90,code=[sm_90,compute_90]".to_string()));
        let gencodes = flags.iter().filter(|f| *f == "-gencode").count();
        assert_eq!(
            gencodes, 2,
            "one front-end run per major architecture: {flags:?}"
        );
        // Every SASS arch and the PTX appear exactly once.
        let codes: Vec<&str> = flags
            .iter()
            .filter_map(|f| f.split_once("code=[").map(|(_, c)| c.trim_end_matches(']')))
            .flat_map(|c| c.split(','))
            .collect();
        let mut want: Vec<String> = SASS_ARCHS.iter().map(|a| format!("sm_{a}")).collect();
        want.push(format!("compute_{PTX_ARCH}"));
        assert_eq!(codes, want);
        assert!(flags.contains(&"-I/k".to_string()));
    }

    #[test]
    fn one_architecture_is_its_sass_and_the_ptx() {
        assert_eq!(
            gencodes_for(&[90]),
            vec!["arch=compute_90,code=[sm_90,compute_90]".to_string()]
        );
        assert_eq!(
            gencodes_for(&[80]),
            vec![
                "arch=compute_80,code=[sm_80]".to_string(),
                "arch=compute_90,code=[compute_90]".to_string()
            ]
        );
    }

    #[test]
    fn missing_nvcc_message_names_the_fix() {
        let e = NvccNotFound {
            searched: vec!["nvcc on PATH".into()],
        };
        assert!(e.to_string().contains(INSTALL_HINT));
    }

    #[test]
    fn fnv_separates_writes() {
        let mut a = Fnv::new();
        a.write(b"ab");
        a.write(b"c");
        let mut b = Fnv::new();
        b.write(b"a");
        b.write(b"bc");
        assert_ne!(a.finish(), b.finish());
    }

    /// A kernels tree of one set (`a/k.cu` including `h.cuh`) under a fresh folder.
    fn kernels_tree(name: &str, header: &str) -> PathBuf {
        let root =
            std::env::temp_dir().join(format!("cuzk-gpu-build-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("a")).unwrap();
        fs::write(root.join("a").join("k.cu"), "#include \"h.cuh\"\n").unwrap();
        fs::write(root.join("h.cuh"), header).unwrap();
        root
    }

    #[test]
    fn the_cache_key_follows_the_sources_not_the_checkout() {
        let key = |root: &Path| {
            let set = KernelSet::new("a", root, &["a"]);
            cache_key(Path::new("/opt/nvcc"), &set, &set.sources().unwrap()).unwrap()
        };
        let one = kernels_tree("one", "// v1\n");
        let two = kernels_tree("two", "// v1\n");
        let three = kernels_tree("three", "// v2\n");
        assert_eq!(key(&one), key(&two), "the same sources elsewhere");
        assert_ne!(key(&one), key(&three), "a header's bytes changed");
        fs::write(one.join("a").join("extra.cuh"), "").unwrap();
        assert_ne!(key(&one), key(&two), "a file was added");
        for root in [one, two, three] {
            fs::remove_dir_all(root).unwrap();
        }
    }

    #[test]
    fn another_sets_kernels_do_not_change_the_key() {
        let root = kernels_tree("other-set", "// h\n");
        let set = KernelSet::new("a", &root, &["a"]);
        let nvcc = Path::new("/usr/bin/true");
        let key = || cache_key(nvcc, &set, &set.sources().unwrap()).unwrap();
        let before = key();
        fs::create_dir_all(root.join("b")).unwrap();
        fs::write(root.join("b").join("other.cu"), "// another set\n").unwrap();
        assert_eq!(key(), before, "another set's .cu is not the set's input");
        fs::write(root.join("b").join("shared.cuh"), "// a header\n").unwrap();
        assert_ne!(key(), before, "any header may be included");
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn the_workspace_kernels_are_listed() {
        let root = kernels_root_from_manifest(Path::new(env!("CARGO_MANIFEST_DIR")));
        let files = kernel_files(&root).unwrap();
        assert!(files.iter().any(|f| f.ends_with("field/fr.cuh")));
    }
}
