//! `cuzk bench`: a built-in PoRep-shaped circuit proven on the engine's workers, as a daemon's
//! job is (`cuzk_engine::local::prove_partitions`: partitions synthesised on threads of their
//! own ahead of the workers, each proven by the first idle one), with the stage times, the
//! device's busy fraction, peak host memory and peak VRAM.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use cuzk::circuits::PorepShaped;
use cuzk::field::Scalar;
use cuzk::pipeline::PartitionInput;
use cuzk_engine::filecoin::synthesize_partition;
use cuzk_engine::job::JobControl;
use cuzk_engine::EngineError;
use cuzk_groth16::{
    generate_random_parameters, prepare_verifying_key, verify_proofs_batch, Ahead, Capacity,
};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use crate::backend;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// log2 of the circuit's domain size (its constraint count, rounded up).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(8..=27))]
    log_size: u32,
    /// Number of partitions (independent proofs of the same circuit shape) to prove.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    partitions: u64,
    /// Proofs of `--partitions` partitions each, one after the other through the same workers
    /// (the next proof's partitions start as the last one's finish, as in the daemon): prints
    /// when each proof was done and the sustained time per proof.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    proofs: u64,
    /// Seed for the circuit's values and the setup.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the stage timeline as Chrome trace JSON (opens in Perfetto; replayable by the
    /// interlock simulator).
    #[arg(long, value_name = "FILE.json")]
    timeline: Option<std::path::PathBuf>,
    /// Write an SVG waterfall of the stages (one lane per worker).
    #[arg(long, value_name = "FILE.svg")]
    waterfall: Option<std::path::PathBuf>,
    /// Synthesise through a pre-compiled circuit (recorded on first use into the cache folder,
    /// reused after): the witness alone, then sparse A·z, B·z, C·z. Proofs are unchanged.
    #[arg(long)]
    pce: bool,
    /// The pre-compiled circuits' folder [default: $CUZK_CACHE_DIR/pce,
    /// $XDG_CACHE_HOME/cuzk/pce or ~/.cache/cuzk/pce].
    #[arg(long, value_name = "DIR", requires = "pce")]
    pce_dir: Option<std::path::PathBuf>,
    /// Prove with parameters for timing only: valid points of the circuit's counts, made in
    /// seconds instead of a setup's minutes or hours (`cuzk_groth16::timing_parameters`). The
    /// stage times are a real proof's; the proofs do not verify, so verification is skipped.
    #[arg(long)]
    timing_params: bool,
    /// Where the heavy stages run: `cpu`; `gpu` (an error without a usable GPU); `auto`, the
    /// GPU when one is usable (a build with the `cuda` feature and a device), else the CPU.
    #[arg(long, value_enum, default_value_t = backend::Choice::Auto)]
    backend: backend::Choice,
    /// The GPU to prove on (CUDA ordinal), with `--backend gpu|auto`.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// The engine's workers proving partitions at once (on a GPU each with its own streams,
    /// sharing the device's resident parameters).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    workers: u64,
    /// How a GPU's workers take turns.
    #[arg(long, default_value = "budget", value_parser = backend::policy_parser())]
    policy: cuzk_interlock::PolicyKind,
    /// Partitions synthesised at once, each on a thread of its own (a circuit's synthesis is
    /// sequential; PoRep's partitions are independent), ahead of the workers.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    synthesis_threads: u64,
    /// Partitions held ahead of the workers, at most: being synthesised, or done and waiting
    /// for a worker (the bound on their host memory: a 2^27 partition is about 4 GiB of witness
    /// with `--pce`, 17 GiB without) [default: one more than the synthesis threads].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
    in_flight: Option<u64>,
}

pub fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    use tracing_subscriber::prelude::*;
    let (recorder, telemetry) = cuzk_telemetry::Recorder::new();
    tracing_subscriber::registry()
        .with(recorder)
        .with(
            tracing_subscriber::fmt::layer()
                .with_filter(tracing_subscriber::EnvFilter::from_env("CUZK_LOG")),
        )
        .init();
    let per_proof = args.partitions as usize;
    let proofs = args.proofs as usize;
    let partitions = per_proof * proofs;
    let chosen = backend::open(
        args.backend,
        args.device,
        args.workers as usize,
        args.policy,
    )?;
    println!(
        "cuzk bench: PoRep-shaped circuit, 2^{} domain, {} proof(s) of {} partition(s), backend {}",
        args.log_size,
        proofs,
        per_proof,
        chosen.describe()
    );
    // A pre-compiled witness is checked row by row where its products are made; a full
    // assignment is not checked (the bench's circuits hold by construction).
    let workers = chosen.into_workers(false);
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let circuits: Vec<PorepShaped> = (0..partitions)
        .map(|i| PorepShaped::new(args.log_size, args.seed + i as u64))
        .collect();

    // A real setup before synthesis (it consumes the circuit); timing parameters after it, from
    // the first assignment's counts.
    let setup = if args.timing_params {
        None
    } else {
        let start = Instant::now();
        let params = generate_random_parameters(circuits[0].clone(), &mut rng).context("setup")?;
        println!(
            "setup (test parameters): {:.3} s",
            start.elapsed().as_secs_f64()
        );
        Some(params)
    };
    let inputs: Vec<Vec<Scalar>> = circuits.iter().map(|c| c.public_inputs()).collect();

    // With `--pce`, synthesis is the witness pass alone: the workers make a, b, c in their
    // `products` stage (on a GPU, on the device where the circuit's matrices are resident).
    let pre_compiled = if args.pce {
        let pc = Arc::new(pre_compiled(args, &circuits[0])?);
        if let Some(report) = workers.preload_circuit(&pc)? {
            println!("{report}");
        }
        Some(pc)
    } else {
        None
    };
    let synthesize = |c: PorepShaped| -> Result<PartitionInput, EngineError> {
        Ok(synthesize_partition(
            c,
            pre_compiled.clone(),
            Capacity::default(),
        )?)
    };

    // The first partition alone: the timing parameters take their counts from it. The wall
    // time of the proof starts here.
    let wall = Instant::now();
    let first = synthesize(circuits[0].clone())?;
    let first_synth = wall.elapsed();
    println!(
        "synthesis{} of partition 0: {:.3} s ({} constraints, {} private variables per partition)",
        if args.pce {
            " (pre-compiled: the witness)"
        } else {
            ""
        },
        first_synth.as_secs_f64(),
        first.num_constraints(),
        first.shape().num_aux
    );
    let params = match setup {
        Some(params) => params,
        None => {
            let start = Instant::now();
            let params =
                cuzk_groth16::timing_parameters_for(&first.shape()).context("timing parameters")?;
            println!(
                "parameters for timing only (multiples of the generators, made when read; \
                 the proofs will not verify): {:.3} s",
                start.elapsed().as_secs_f64()
            );
            params
        }
    };
    let params = Arc::new(params);
    println!("{}", workers.preload(&params)?);
    let setup_done = wall.elapsed();

    // Partition 0 is made already; the others are synthesised as the engine's job would.
    let first = Mutex::new(Some(first));
    let make = |k: usize| {
        let made = (k == 0)
            .then(|| first.lock().unwrap_or_else(|e| e.into_inner()).take())
            .flatten();
        made.map_or_else(|| synthesize(circuits[k].clone()), Ok)
    };
    let threads = args.synthesis_threads as usize;
    let ahead = Ahead::new(threads, args.in_flight.map_or(threads + 1, |n| n as usize));
    let control = Arc::new(JobControl::default());
    let start = Instant::now();
    let proven = cuzk_engine::local::prove_partitions(
        &workers.backends,
        Arc::clone(&params),
        partitions,
        ahead,
        &make,
        &control,
    )
    .map_err(|e| anyhow::anyhow!(cuzk_engine::error_chain(&e)))
    .context("proving")?;
    let prove = start.elapsed();
    let wall = wall.elapsed();
    let done = control.proven();

    crate::print_table(&control.timings());
    // Partition 0's synthesis was timed above, before the proving; the engine timed the rest.
    let synth_total = proven.synthesis + first_synth;
    println!(
        "synthesis: {:.3} s per partition ({:.3} s in all; after partition 0, {} at \
         once beside the proving, at most {} ahead of the workers)",
        synth_total.as_secs_f64() / partitions as f64,
        synth_total.as_secs_f64(),
        ahead.threads(),
        ahead.limit()
    );
    println!(
        "prove: {:.3} s for {} partition(s), {:.3} s per partition (from the first proving to \
         the last proof)",
        prove.as_secs_f64(),
        partitions,
        prove.as_secs_f64() / partitions as f64
    );
    // Proof j is done when the last of its partitions is; from the first proof's end on, the
    // pipeline is full and the gaps between ends are the sustained time per proof.
    let mut ends = vec![Duration::ZERO; proofs];
    for p in &done {
        let end = &mut ends[p.partition / per_proof];
        *end = (*end).max(p.finished.saturating_duration_since(start));
    }
    if proofs > 1 {
        let ends_text: Vec<String> = ends
            .iter()
            .map(|e| format!("{:.3}", e.as_secs_f64()))
            .collect();
        let sustained =
            (ends[proofs - 1].saturating_sub(ends[0])).as_secs_f64() / (proofs - 1) as f64;
        println!(
            "proofs: {proofs} done at [{}] s from the first proving; sustained {:.3} s per \
             proof (between the first proof's end and the last's)",
            ends_text.join(", "),
            sustained
        );
    }
    println!(
        "wall: {:.3} s for {} proof(s) of {} partition(s), synthesis included ({:.3} s before \
         the proving: partition 0's synthesis, parameters, preload)",
        wall.as_secs_f64(),
        proofs,
        per_proof,
        setup_done.as_secs_f64()
    );
    // What a daemon with these parameters already loaded (and the circuit already resident)
    // takes for the same proof: partition 0's synthesis, then the proving (which overlaps the
    // other partitions' synthesis).
    println!(
        "hot: {:.3} s for the first proof with the parameters already loaded (partition 0's \
         synthesis {:.3} s + its proving {:.3} s)",
        (first_synth + ends[0]).as_secs_f64(),
        first_synth.as_secs_f64(),
        ends[0].as_secs_f64()
    );
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    match cuzk_telemetry::peak_rss_bytes() {
        Some(rss) => println!("peak host memory (VmHWM): {:.2} GiB", gib(rss)),
        None => println!("peak host memory: unknown (no /proc/self/status)"),
    }
    if let Some((peak, capacity)) = workers.peak_vram() {
        println!(
            "peak VRAM: {:.2} GiB in use of the {:.2} GiB arena (resident parameters and \
             partitions' buffers)",
            gib(peak),
            gib(capacity)
        );
    }

    let timeline = telemetry.snapshot();
    for line in timeline.partition_summaries() {
        println!("{line}");
    }
    // Throughput, each device's busy fraction (its CUDA-event time on a GPU), stage percentiles.
    print!("{}", timeline.run_summary());
    if let Some(path) = &args.timeline {
        std::fs::write(path, timeline.to_chrome_trace_string())
            .with_context(|| format!("writing {}", path.display()))?;
        println!("timeline: {}", path.display());
    }
    if let Some(path) = &args.waterfall {
        std::fs::write(path, timeline.to_svg_waterfall())
            .with_context(|| format!("writing {}", path.display()))?;
        println!("waterfall: {}", path.display());
    }

    if args.timing_params {
        println!("verify: skipped (parameters for timing only)");
        return Ok(());
    }
    let pvk = prepare_verifying_key(&params.vk);
    let proved: Vec<_> = proven.proofs.iter().collect();
    let start = Instant::now();
    let ok = verify_proofs_batch(&pvk, &mut rng, &proved, &inputs).context("verification")?;
    println!(
        "verify: {} in {:.3} s",
        if ok { "ok" } else { "FAILED" },
        start.elapsed().as_secs_f64()
    );
    if !ok {
        bail!("the proofs do not verify");
    }
    Ok(())
}

/// The bench circuit's pre-compiled form: loaded from the cache folder, or recorded into it.
fn pre_compiled(args: &BenchArgs, circuit: &PorepShaped) -> anyhow::Result<cuzk_pce::PreCompiled> {
    let cache = cuzk_pce::PceCache::new(crate::pce_dir(&args.pce_dir)?);
    // The topology depends on the size only; the seed changes the witness.
    let key = format!("porep_shaped-2^{}", args.log_size);
    let start = Instant::now();
    let (pc, origin) = cache
        .load_or_record(&key, || circuit.clone())
        .with_context(|| format!("pre-compiled circuit {}", cache.path(&key).display()))?;
    println!(
        "pre-compiled circuit: {} ({:?} in {:.3} s, {:.1} MiB, topology {})",
        cache.path(&key).display(),
        origin,
        start.elapsed().as_secs_f64(),
        pc.file_len() as f64 / (1024.0 * 1024.0),
        &pc.topology_hex()[..16]
    );
    Ok(pc)
}
