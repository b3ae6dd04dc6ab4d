//! `cuzk params` and `cuzk prove porep|winning|window|snap`: Filecoin's proofs from a C1 output
//! or a job file of vanilla proofs (`cuzk_filecoin::jobs`), proven by cuzk's pipeline and
//! checked as filecoin-proofs checks them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use cuzk::field::Scalar;
use cuzk::pipeline::{
    CpuBackend, JobContext, PartitionInput, PartitionTiming, Prover, ProverConfig,
};
use cuzk_filecoin::post::PostKind;
use cuzk_filecoin::{
    C1Output, CircuitKind, FilecoinProof, PorepJob, PostJobFile, RegisteredSealProof, SectorId,
    SnapJobFile,
};
use cuzk_groth16::{Parameters, Proof};
use ff::Field;

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
    /// Write the proof bytes (192 per partition) here.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Parameter folder (see `cuzk params --help`). Test sizes (2KiB, 8MiB) are generated on
    /// first use.
    #[arg(long)]
    params: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct PostArgs {
    /// The job as JSON: `{"sector_size", "miner_id", "randomness" (hex), "partition_index",
    /// "vanilla_proofs": [base64 of bincode FallbackPoStSectorProof, ...]}` (gen_vanilla's
    /// `winning-*.json`, `window-*.json`); default: the built-in 2 KiB sector.
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Write the proof bytes here.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Parameter folder (see `cuzk params --help`); test sizes are generated on first use.
    #[arg(long)]
    params: Option<PathBuf>,
}

/// The parameter folder: the flag, filecoin-proofs' variable, or cuzk's cache.
fn param_dir(flag: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir.clone());
    }
    if let Some(dir) = std::env::var_os("FIL_PROOFS_PARAMETER_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    cuzk_filecoin::params::test_params_dir()
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
    if sector_size <= 8 << 20 {
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

pub fn post(args: &PostArgs, kind: PostKind) -> anyhow::Result<()> {
    let default = match kind {
        PostKind::Winning => DEFAULT_WINNING,
        PostKind::Window => DEFAULT_WINDOW,
    };
    let file = PostJobFile::parse(&job_text(&args.input, default)?).context("the job file")?;
    println!(
        "cuzk prove: {kind:?}PoSt {} (miner {}, partition {}), backend cpu ({} threads)",
        cuzk_filecoin::registered::format_sector_size(file.sector_size),
        file.miner_id,
        file.partition_index,
        rayon::current_num_threads()
    );
    let dir = prove_params(&args.params, kind.into(), file.sector_size)?;
    let (mut prove, timings) = pipeline_prover();
    let start = Instant::now();
    let proof = file.job(kind).prove(&dir, &mut prove)?;
    let timings = timings.borrow().clone();
    report(&proof, &timings, start.elapsed(), &args.out)
}

/// `cuzk prove snap`: the job as JSON `{"sector_size", "comm_r_old", "comm_r_new",
/// "comm_d_new" (hex), "vanilla_proofs": [base64 of bincode PartitionProof, ...]}`
/// (gen_vanilla's `snap-*.json`), default the built-in 2 KiB update.
pub fn snap(args: &PostArgs) -> anyhow::Result<()> {
    let file = SnapJobFile::parse(&job_text(&args.input, DEFAULT_SNAP)?).context("the job file")?;
    println!(
        "cuzk prove: SnapDeals {}, backend cpu ({} threads)",
        cuzk_filecoin::registered::format_sector_size(file.sector_size),
        rayon::current_num_threads()
    );
    let dir = prove_params(&args.params, CircuitKind::Snap, file.sector_size)?;
    let (mut prove, timings) = pipeline_prover();
    let start = Instant::now();
    let proof = file.job().prove(&dir, &mut prove)?;
    let timings = timings.borrow().clone();
    report(&proof, &timings, start.elapsed(), &args.out)
}

/// cuzk's CPU pipeline as a [`cuzk_filecoin::PartitionProver`] with random r and s, and the
/// stage timings it records.
#[allow(clippy::type_complexity)]
fn pipeline_prover() -> (
    impl FnMut(
        &Parameters,
        PartitionInput,
        usize,
    ) -> Result<Proof, Box<dyn std::error::Error + Send + Sync>>,
    std::rc::Rc<std::cell::RefCell<Vec<PartitionTiming>>>,
) {
    let prover = Prover::new(CpuBackend, ProverConfig::default());
    let timings = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let recorded = timings.clone();
    let prove = move |params: &Parameters, input: PartitionInput, k: usize| {
        let mut rng = rand::thread_rng();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        // As `prove_batch` of one partition did: the job is the partition's index.
        let ctx = JobContext {
            job: k as u64,
            worker: 0,
        };
        let (proof, timing) = prover.prove(params, input, r, s, ctx, 0)?;
        recorded.borrow_mut().push(timing);
        Ok(proof)
    };
    (prove, timings)
}

fn report(
    proof: &FilecoinProof,
    timings: &[PartitionTiming],
    total: std::time::Duration,
    out: &Option<PathBuf>,
) -> anyhow::Result<()> {
    println!(
        "load parameters: {:.3} s (beside partition 0's synthesis)",
        proof.load_params.as_secs_f64()
    );
    for (k, p) in proof.partitions.iter().enumerate() {
        println!(
            "partition {k}: {} constraints, synthesis {:.3} s, prove {:.3} s, verify {:.3} s",
            p.constraints,
            p.synthesis.as_secs_f64(),
            p.prove.as_secs_f64(),
            p.verify.as_secs_f64()
        );
    }
    crate::print_table(timings);
    println!(
        "proof: {} bytes ({} partition(s)), verified, {:.3} s in all",
        proof.bytes.len(),
        proof.partitions.len(),
        total.as_secs_f64()
    );
    if let Some(out) = out {
        std::fs::write(out, &proof.bytes).with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

pub fn porep(args: &PorepArgs) -> anyhow::Result<()> {
    let (bytes, miner_id, sector) = match &args.c1 {
        Some(path) => (
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
            args.miner_id.context("--miner-id is required with --c1")?,
            args.sector.context("--sector is required with --c1")?,
        ),
        None => (
            DEFAULT_C1.to_vec(),
            args.miner_id.unwrap_or(DEFAULT_MINER),
            args.sector.unwrap_or(DEFAULT_SECTOR),
        ),
    };
    let registered = args
        .registered_proof
        .map(RegisteredSealProof::from_number)
        .transpose()?;
    let c1 = C1Output::parse(&bytes, registered).context("parsing the C1 output")?;
    println!(
        "cuzk prove porep: {} (miner {miner_id}, sector {sector}), backend cpu ({} threads)",
        c1.registered_proof,
        rayon::current_num_threads()
    );
    let job = PorepJob::new(
        &c1,
        SectorId {
            miner_id,
            sector_number: sector,
        },
    )?;
    let dir = prove_params(
        &args.params,
        CircuitKind::Porep,
        c1.registered_proof.sector_size,
    )?;

    let (mut prove, timings) = pipeline_prover();
    let start = Instant::now();
    let proof = job.prove(&dir, &mut prove)?;
    let timings = timings.borrow().clone();
    report(&proof, &timings, start.elapsed(), &args.out)
}
