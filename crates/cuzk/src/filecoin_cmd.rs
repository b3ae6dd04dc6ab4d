//! `cuzk params` and `cuzk prove porep|winning|window|snap`: Filecoin's proofs from a C1 output
//! or a job file of vanilla proofs (`cuzk_filecoin::jobs`), proven by the engine in this
//! process (`cuzk_engine::local`: the daemon's checks, workers and pre-compiled circuits, with
//! no journal) on the GPU when there is one, each proof verified as filecoin-proofs verifies it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use cuzk_engine::job::JobControl;
use cuzk_engine::run::{PceStore, RunResult};
use cuzk_engine::{JobRequest, ParamConfig, ParamManager, ProofBackend};
use cuzk_filecoin::post::PostKind;
use cuzk_filecoin::{C1Summary, CircuitKind, PostJobFile, RegisteredSealProof, SnapJobFile};

use crate::backend::{Choice, Chosen};

/// The built-in job: a 2 KiB sector sealed by filecoin-proofs (`testdata/filecoin/`, made by
/// `cargo run -p cuzk-filecoin --example gen_vanilla`), miner 1000, sector 1.
const DEFAULT_C1: &[u8] = include_bytes!("../../../testdata/filecoin/porep-2KiB.c1.json");
const DEFAULT_MINER: u64 = 1000;
const DEFAULT_SECTOR: u64 = 1;

/// The built-in PoSt jobs: the same sector's vanilla proofs (`testdata/filecoin/`).
const DEFAULT_WINNING: &str = include_str!("../../../testdata/filecoin/winning-2KiB.json");
const DEFAULT_WINDOW: &str = include_str!("../../../testdata/filecoin/window-2KiB.json");
const DEFAULT_SNAP: &str = include_str!("../../../testdata/filecoin/snap-2KiB.json");

/// The seed of the test parameters cuzk generates; the cache folder is named by it.
pub use cuzk_filecoin::params::TEST_PARAMS_SEED as PARAMS_SEED;

#[derive(clap::Args, Debug)]
pub struct ParamsArgs {
    /// Sector size of the circuits (2KiB, 8MiB, ...).
    #[arg(long, default_value = "2KiB")]
    sector_size: String,
    /// Which circuits: porep, winning, window, snap, or all of them (what `cuzk prove` of
    /// every kind needs). Files that exist are kept.
    #[arg(long, default_value = "all", value_parser = parse_kinds)]
    kind: KindChoice,
    /// Parameter folder (filecoin-proofs' layout); default: $FIL_PROOFS_PARAMETER_CACHE, else
    /// cuzk's cache ($CUZK_CACHE_DIR, $XDG_CACHE_HOME/cuzk or ~/.cache/cuzk)/filecoin-params/seed-0.
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// `--kind`: one circuit kind or all.
#[derive(Clone, Debug)]
pub struct KindChoice(Vec<CircuitKind>);

fn parse_kinds(text: &str) -> Result<KindChoice, String> {
    if text == "all" {
        return Ok(KindChoice(CircuitKind::ALL.to_vec()));
    }
    let kind = text.parse::<CircuitKind>().map_err(|e| e.to_string())?;
    Ok(KindChoice(vec![kind]))
}

#[derive(clap::Args, Debug)]
pub struct PorepArgs {
    /// The C1 output (Curio's wrapper or the bare JSON); default: the built-in 2 KiB sector.
    #[arg(long, value_name = "FILE")]
    c1: Option<PathBuf>,
    /// The miner's actor id (1000 for f01000).
    #[arg(long)]
    miner_id: Option<u64>,
    /// The sector number.
    #[arg(long)]
    sector: Option<u64>,
    /// filecoin-ffi's registered seal proof number, for C1 JSON that does not name one.
    #[arg(long)]
    registered_proof: Option<u64>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(clap::Args, Debug)]
pub struct PostArgs {
    /// The job as JSON: `{"sector_size", "miner_id", "randomness" (hex), "partition_index",
    /// "vanilla_proofs": [base64 of bincode FallbackPoStSectorProof, ...]}` (gen_vanilla's
    /// `winning-*.json`, `window-*.json`); default: the built-in 2 KiB sector.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

/// Where and how every `cuzk prove` job runs.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Write the proof bytes here (192 per partition).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Parameter folder (see `cuzk params --help`). Test sizes (2KiB, 8MiB) are generated on
    /// first use.
    #[arg(long)]
    params: Option<PathBuf>,
    /// Where to prove: the GPU when one is usable (a build with `--features cuda`), else the
    /// CPU; or the one named.
    #[arg(long, value_enum, default_value_t = Choice::Auto)]
    backend: Choice,
    /// The GPU's CUDA ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Workers proving the job's partitions as they are synthesised [default: 2 on a GPU, 1 on
    /// the CPU].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    workers: Option<u64>,
    /// How a GPU's workers take turns.
    #[arg(long, default_value = "budget", value_parser = crate::backend::policy_parser())]
    policy: cuzk_interlock::PolicyKind,
    /// Synthesise from the circuit's pre-compiled constraints (recorded on its first use, then
    /// read from the folder): the witness alone is computed per partition, and a GPU makes
    /// a, b, c itself.
    #[arg(long)]
    pce: bool,
    /// The pre-compiled circuits' folder [default: $CUZK_CACHE_DIR/pce,
    /// $XDG_CACHE_HOME/cuzk/pce or ~/.cache/cuzk/pce].
    #[arg(long, value_name = "DIR", requires = "pce")]
    pce_dir: Option<PathBuf>,
    /// Partitions synthesised at once, each on a thread of its own, ahead of the workers
    /// [default: a quarter of the cores, at least 1].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    synthesis_threads: Option<u64>,
}

/// The parameter folder: the flag, filecoin-proofs' variable, or cuzk's cache.
fn param_dir(flag: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir.clone());
    }
    cuzk_filecoin::params::parameter_dir(cuzk_filecoin::params::test_params_dir)
        .context("no cache folder: set CUZK_CACHE_DIR (or XDG_CACHE_HOME or HOME), or pass --dir")
}

pub fn params(args: &ParamsArgs) -> anyhow::Result<()> {
    let size = cuzk_filecoin::parse_sector_size(&args.sector_size)?;
    let dir = param_dir(&args.dir)?;
    for &kind in &args.kind.0 {
        make_params(&dir, kind, size)?;
    }
    Ok(())
}

/// Makes the parameters of `kind`'s circuit of `sector_size` in `dir`, unless they exist.
fn make_params(dir: &Path, kind: CircuitKind, sector_size: u64) -> anyhow::Result<()> {
    let files = kind.param_files(dir, sector_size)?;
    if files.exist() {
        println!("parameters ({kind}): {} (cached)", files.params.display());
        return Ok(());
    }
    println!(
        "parameters ({kind}): generating {} with cuzk's setup (seed {PARAMS_SEED}); this runs once per machine",
        files.params.display()
    );
    let start = Instant::now();
    let (_, report) = kind.generate_params(dir, sector_size, PARAMS_SEED)?;
    println!(
        "parameters ({kind}): setup {:.1} s, write {:.1} s, total {:.1} s",
        report.setup.as_secs_f64(),
        report.write.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The parameter folder of a `cuzk prove` job, its circuit's parameters made on first use for
/// test sizes (up to 8 MiB); larger sizes need filecoin-proofs' published parameters.
fn prove_params(
    flag: &Option<PathBuf>,
    kind: CircuitKind,
    sector_size: u64,
) -> anyhow::Result<PathBuf> {
    let dir = param_dir(flag)?;
    if sector_size <= cuzk_filecoin::params::MAX_TEST_SECTOR_SIZE {
        make_params(&dir, kind, sector_size)?;
    }
    Ok(dir)
}

/// The job file at `input`, or the built-in one.
fn job_text(input: &Option<PathBuf>, default: &str) -> anyhow::Result<String> {
    match input {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
        }
        None => Ok(default.to_string()),
    }
}

/// The engine's request for a WinningPoSt or WindowPoSt job file (the built-in one without
/// `input`), and a line naming it.
pub fn post_request(
    input: &Option<PathBuf>,
    kind: PostKind,
) -> anyhow::Result<(JobRequest, String)> {
    let default = match kind {
        PostKind::Winning => DEFAULT_WINNING,
        PostKind::Window => DEFAULT_WINDOW,
    };
    let file = PostJobFile::parse(&job_text(input, default)?).context("the job file")?;
    let what = format!(
        "{kind:?}PoSt {} (miner {}, partition {})",
        cuzk_filecoin::registered::format_sector_size(file.sector_size),
        file.miner_id,
        file.partition_index
    );
    Ok((JobRequest::post(file, kind)?, what))
}

/// The engine's request for a SnapDeals job file: JSON `{"sector_size", "comm_r_old",
/// "comm_r_new", "comm_d_new" (hex), "vanilla_proofs": [base64 of bincode PartitionProof,
/// ...]}` (gen_vanilla's `snap-*.json`), default the built-in 2 KiB update.
pub fn snap_request(input: &Option<PathBuf>) -> anyhow::Result<(JobRequest, String)> {
    let file = SnapJobFile::parse(&job_text(input, DEFAULT_SNAP)?).context("the job file")?;
    let what = format!(
        "SnapDeals {}",
        cuzk_filecoin::registered::format_sector_size(file.sector_size)
    );
    Ok((JobRequest::snap(file)?, what))
}

/// The engine's request for a C1 output (the built-in 2 KiB sector's, miner 1000, sector 1,
/// without `c1`), and a line naming it. The request names the C1 output's registered proof.
pub fn porep_request(
    c1: &Option<PathBuf>,
    miner_id: Option<u64>,
    sector: Option<u64>,
    registered_proof: Option<u64>,
) -> anyhow::Result<(JobRequest, String)> {
    let (bytes, miner_id, sector) = match c1 {
        Some(path) => (
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
            miner_id.context("--miner-id is required with --c1")?,
            sector.context("--sector is required with --c1")?,
        ),
        None => (
            DEFAULT_C1.to_vec(),
            miner_id.unwrap_or(DEFAULT_MINER),
            sector.unwrap_or(DEFAULT_SECTOR),
        ),
    };
    let registered = registered_proof
        .map(RegisteredSealProof::from_number)
        .transpose()?;
    // A scan, not a copy: a 32 GiB sector's C1 output is about 128 MiB.
    let registered = C1Summary::read(&bytes, registered)
        .context("reading the C1 output")?
        .registered_proof;
    let what = format!("porep {registered} (miner {miner_id}, sector {sector})");
    let mut request = JobRequest::porep(bytes, miner_id, sector, registered.number());
    request.sector_size = registered.sector_size;
    Ok((request, what))
}

pub fn post(args: &PostArgs, kind: PostKind) -> anyhow::Result<()> {
    let (request, what) = post_request(&args.input, kind)?;
    prove(&what, request, kind.into(), &args.run)
}

/// `cuzk prove snap`.
pub fn snap(args: &PostArgs) -> anyhow::Result<()> {
    let (request, what) = snap_request(&args.input)?;
    prove(&what, request, CircuitKind::Snap, &args.run)
}

pub fn porep(args: &PorepArgs) -> anyhow::Result<()> {
    let (request, what) =
        porep_request(&args.c1, args.miner_id, args.sector, args.registered_proof)?;
    prove(&what, request, CircuitKind::Porep, &args.run)
}

/// Proves `request` (`what`, a circuit of `kind`) as `run` says, and reports.
fn prove(what: &str, request: JobRequest, kind: CircuitKind, run: &RunArgs) -> anyhow::Result<()> {
    let (backends, describe) = backends(run)?;
    println!("cuzk prove: {what}, backend {describe}");
    let dir = prove_params(&run.params, kind, request.sector_size)?;
    let params = ParamManager::new(ParamConfig {
        synthetic_dir: dir.join("synthetic"),
        filecoin_dir: dir,
        // Made above, with progress, for the sizes that may be.
        generate_test_params: false,
        budget_bytes: u64::MAX,
    });
    params.attach(&backends);
    let pce = match run.pce {
        true => Some(PceStore::new(crate::pce_dir(&run.pce_dir)?)),
        false => None,
    };
    let control = Arc::new(JobControl::default());
    let start = Instant::now();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let result = std::thread::scope(|scope| {
        let control = &control;
        scope.spawn(move || progress(control, start, finished));
        let result = cuzk_engine::local::prove(
            request,
            &backends,
            &params,
            pce.as_ref(),
            run.synthesis_threads
                .map_or_else(cuzk_engine::default_synthesis_threads, |n| n as usize),
            control,
        );
        drop(done);
        result
    })
    .map_err(|e| anyhow::anyhow!(cuzk_engine::error_chain(&e)))?;
    report(&result, &control, start.elapsed(), &run.out)
}

/// A line each time partitions are proven (a 32 GiB sector's ten take minutes on a GPU and
/// hours on a CPU), until `finished` is closed.
fn progress(control: &JobControl, start: Instant, finished: std::sync::mpsc::Receiver<()>) {
    let mut shown = 0;
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
        finished.recv_timeout(std::time::Duration::from_millis(500))
    {
        let proven = control.timings().len();
        if proven > shown {
            shown = proven;
            println!(
                "proven: {proven} partition(s) at {:.1} s",
                start.elapsed().as_secs_f64()
            );
        }
    }
}

/// The engine's workers `run` asks for, and a line describing them.
fn backends(run: &RunArgs) -> anyhow::Result<(Vec<Arc<dyn ProofBackend>>, String)> {
    let gpu_workers = run.workers.unwrap_or(2) as usize;
    let chosen = match crate::backend::open(run.backend, run.device, gpu_workers, run.policy)? {
        // Each CPU worker proves on every core: one unless more are asked for.
        Chosen::Cpu(_) => Chosen::Cpu(run.workers.unwrap_or(1) as usize),
        #[cfg(feature = "cuda")]
        gpu => gpu,
    };
    let describe = chosen.describe();
    // Every constraint checked before proving, as the daemon does by default: a circuit that
    // does not hold is an error naming its first failing constraint, not a proof that fails to
    // verify.
    Ok((chosen.into_workers(true).backends, describe))
}

fn report(
    result: &RunResult,
    control: &JobControl,
    total: std::time::Duration,
    out: &Option<PathBuf>,
) -> anyhow::Result<()> {
    println!(
        "load parameters: {:.3} s (beside partition 0's synthesis)",
        result.param_load.as_secs_f64()
    );
    for (k, p) in result.partitions.iter().enumerate() {
        println!(
            "partition {k}: {} constraints, synthesis {:.3} s, prove {:.3} s, verify {:.3} s",
            p.constraints,
            p.synthesis.as_secs_f64(),
            p.prove.as_secs_f64(),
            p.verify.as_secs_f64()
        );
    }
    let timings = control.timings();
    crate::print_table(&timings);
    if !result.device.is_zero() {
        println!(
            "device time: {:.3} s ({:.3} s a partition, CUDA events)",
            result.device.as_secs_f64(),
            result.device.as_secs_f64() / timings.len().max(1) as f64
        );
    }
    println!(
        "proof: {} bytes ({} partition(s)), verified, {:.3} s in all",
        result.proof.len(),
        result.partitions.len(),
        total.as_secs_f64()
    );
    if let Some(out) = out {
        std::fs::write(out, &result.proof).with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
