//! The `cuzk` command line.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use cuzk::circuits::PorepShaped;
use cuzk::field::Scalar;
use cuzk::pipeline::{PartitionInput, PartitionTiming, ProverConfig, Stage};
use cuzk_groth16::{generate_random_parameters, prepare_verifying_key, verify_proofs_batch};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

mod backend;
#[cfg(feature = "daemon")]
mod daemon_cmd;
#[cfg(feature = "filecoin")]
mod filecoin_cmd;

#[derive(Parser, Debug)]
#[command(name = "cuzk", version, about = "cuzk: a Groth16 prover for BLS12-381")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Synthesise a built-in PoRep-shaped circuit, prove it, verify it and print stage timings.
    Bench(BenchArgs),
    #[cfg(feature = "filecoin")]
    /// Generate a PoRep circuit's Groth16 parameters with cuzk's setup (test sector sizes),
    /// under filecoin-proofs' file names so its verifiers load them.
    Params(filecoin_cmd::ParamsArgs),
    /// Prove a Filecoin proof with cuzk, verify it, and print the stage timing.
    #[cfg(feature = "filecoin")]
    #[command(subcommand)]
    Prove(ProveKind),
    /// Run the proving daemon: the cuzk.v1 gRPC service (docs/config.md).
    #[cfg(feature = "daemon")]
    Daemon(daemon_cmd::DaemonArgs),
    /// Talk to a running daemon.
    #[cfg(feature = "daemon")]
    Client(Box<daemon_cmd::ClientArgs>),
}

#[cfg(feature = "filecoin")]
#[derive(Subcommand, Debug)]
enum ProveKind {
    /// PoRep C2: a C1 output in, `seal_commit_phase2`'s bytes out (default: a built-in 2 KiB
    /// sector, its parameters generated on first use).
    Porep(filecoin_cmd::PorepArgs),
    /// WinningPoSt: vanilla proofs in, `generate_winning_post_with_vanilla`'s bytes out
    /// (default: the built-in 2 KiB sector).
    Winning(filecoin_cmd::PostArgs),
    /// WindowPoSt, one partition: vanilla proofs in, `generate_single_window_post_with_vanilla`'s
    /// bytes out (default: the built-in 2 KiB sector).
    Window(filecoin_cmd::PostArgs),
    /// SnapDeals: partition proofs and commitments in,
    /// `generate_empty_sector_update_proof_with_vanilla`'s bytes out (default: the built-in
    /// 2 KiB update).
    Snap(filecoin_cmd::PostArgs),
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
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
    /// Seed for the circuit's values, the setup and r, s.
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
    /// Workers proving partitions at once (threads; on a GPU each with its own streams, sharing
    /// the device's resident parameters).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    workers: u64,
    /// How a GPU's workers take turns.
    #[arg(long, default_value = "budget", value_parser = backend::policy_parser())]
    policy: cuzk_interlock::PolicyKind,
    /// Synthesised partitions that may wait for a worker while the next one synthesises: the
    /// bound on the host memory of partitions in flight (a 2^27 partition's vectors are about
    /// 17 GiB).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    in_flight: u64,
    /// Synthesise every partition before the proving starts (host memory for all of them): the
    /// `prove` line is then the provers' own throughput, with nothing to wait for.
    #[arg(long, conflicts_with = "in_flight")]
    synthesis_first: bool,
    /// Threads synthesising partitions at once (a circuit's synthesis is sequential; PoRep's
    /// partitions are independent): each holds one partition's vectors while it works (with
    /// `--pce`, the witness alone: about 4 GiB at 2^27).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    synthesis_threads: u64,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Bench(args) => bench(&args),
        #[cfg(feature = "filecoin")]
        Command::Params(args) => filecoin_cmd::params(&args),
        #[cfg(feature = "daemon")]
        Command::Daemon(args) => daemon_cmd::daemon(&args),
        #[cfg(feature = "daemon")]
        Command::Client(args) => daemon_cmd::client(&args),
        #[cfg(feature = "filecoin")]
        Command::Prove(kind) => match kind {
            ProveKind::Porep(args) => filecoin_cmd::porep(&args),
            ProveKind::Winning(args) => {
                filecoin_cmd::post(&args, cuzk_filecoin::post::PostKind::Winning)
            }
            ProveKind::Snap(args) => filecoin_cmd::snap(&args),
            ProveKind::Window(args) => {
                filecoin_cmd::post(&args, cuzk_filecoin::post::PostKind::Window)
            }
        },
    }
}

fn bench(args: &BenchArgs) -> anyhow::Result<()> {
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
    let backend = backend::open(
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
        backend.describe()
    );
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
    let r: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();
    let s: Vec<Scalar> = (0..partitions).map(|_| Scalar::random(&mut rng)).collect();

    // With `--pce`, synthesis is the witness pass alone: the backend makes a, b, c in its
    // `products` stage (on a GPU, on the device where the circuit's matrices are resident).
    let pre_compiled = if args.pce {
        let pc = std::sync::Arc::new(pre_compiled(args, &circuits[0])?);
        if let Some(report) = backend.preload_circuit(&pc)? {
            println!("{report}");
        }
        Some(pc)
    } else {
        None
    };
    let synthesize = |c: PorepShaped| -> anyhow::Result<(PartitionInput, Duration)> {
        let start = Instant::now();
        let input = match &pre_compiled {
            Some(pc) => PartitionInput::precompiled(
                pc.clone(),
                pc.witness(c).context("pre-compiled synthesis")?,
            )?,
            None => cuzk_groth16::synthesize(c).context("synthesis")?.into(),
        };
        Ok((input, start.elapsed()))
    };

    // The first partition alone: the timing parameters take their counts from it. The wall
    // time of the proof starts here.
    let wall = Instant::now();
    let mut circuits = circuits.into_iter();
    let first = circuits.next().expect("at least one partition");
    let (first, first_synth) = synthesize(first)?;
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
                "parameters for timing only (multiples of the generators; the proofs will not \
                 verify): {:.3} s",
                start.elapsed().as_secs_f64()
            );
            params
        }
    };
    // A pre-compiled witness is checked row by row where its products are made.
    let config = ProverConfig::default();
    let params = std::sync::Arc::new(params);
    if let Some(report) = backend.preload(&params)? {
        println!("{report}");
    }
    let setup_done = wall.elapsed();

    // Partition k + 1 synthesises on its own thread while the workers prove; at most
    // `--in-flight` finished partitions wait for a worker (their memory is the bound). With
    // `--synthesis-first`, every partition is synthesised before the proving starts.
    let in_flight = args.in_flight as usize;
    // Every partition fits in the channel before a worker takes one when they all go first.
    let waiting = if args.synthesis_first {
        partitions
    } else {
        in_flight - 1
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(waiting);
    let threads = args.synthesis_threads as usize;
    let produce = move || -> anyhow::Result<Vec<Duration>> {
        // A send fails only when every worker has stopped (an error they report).
        if tx.send((0, first)).is_err() {
            return Ok(vec![first_synth]);
        }
        // The other partitions, each taken by the next idle synthesis thread.
        let next = std::sync::Mutex::new(circuits.enumerate());
        let times = std::thread::scope(|scope| -> anyhow::Result<Vec<Duration>> {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let (next, tx, synthesize) = (&next, tx.clone(), &synthesize);
                    scope.spawn(move || -> anyhow::Result<Vec<Duration>> {
                        let mut times = Vec::new();
                        loop {
                            let taken = next.lock().unwrap_or_else(|e| e.into_inner()).next();
                            let Some((k, circuit)) = taken else {
                                return Ok(times);
                            };
                            let (input, took) = synthesize(circuit)?;
                            times.push(took);
                            if tx.send((k + 1, input)).is_err() {
                                return Ok(times);
                            }
                        }
                    })
                })
                .collect();
            let mut times = vec![first_synth];
            for h in handles {
                let more = h
                    .join()
                    .map_err(|_| anyhow::anyhow!("a synthesis thread panicked"))??;
                times.extend(more);
            }
            Ok(times)
        })?;
        Ok(times)
    };
    let (start, results, synth) = if args.synthesis_first {
        let synth = produce()?;
        let start = Instant::now();
        (
            start,
            backend.prove_stream(config, &params, rx, &r, &s),
            synth,
        )
    } else {
        let start = Instant::now();
        let (results, synth) = std::thread::scope(|scope| {
            let producer = scope.spawn(produce);
            let results = backend.prove_stream(config, &params, rx, &r, &s);
            let synth = producer
                .join()
                .map_err(|_| anyhow::anyhow!("the synthesis thread panicked"))?;
            anyhow::Ok((results, synth?))
        })?;
        (start, results, synth)
    };
    let results = results.context("proving")?;
    let prove = start.elapsed();
    let wall = wall.elapsed();

    print_table(&results.iter().map(|p| p.timing.clone()).collect::<Vec<_>>());
    let synth_total: Duration = synth.iter().sum();
    println!(
        "synthesis: {:.3} s per partition ({:.3} s in all; {})",
        synth_total.as_secs_f64() / synth.len() as f64,
        synth_total.as_secs_f64(),
        if args.synthesis_first {
            "every partition before the proving".to_string()
        } else {
            format!(
                "after partition 0 on {threads} thread(s) of their own beside the proving, at \
                 most {in_flight} waiting"
            )
        }
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
    let ends: Vec<Duration> = results
        .chunks(per_proof)
        .map(|proof| {
            proof
                .iter()
                .map(|p| p.finished.saturating_duration_since(start))
                .max()
                .unwrap_or_default()
        })
        .collect();
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
    if !args.synthesis_first {
        println!(
            "hot: {:.3} s for the first proof with the parameters already loaded (partition 0's \
             synthesis {:.3} s + its proving {:.3} s)",
            (first_synth + ends[0]).as_secs_f64(),
            first_synth.as_secs_f64(),
            ends[0].as_secs_f64()
        );
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    match cuzk_telemetry::peak_rss_bytes() {
        Some(rss) => println!("peak host memory (VmHWM): {:.2} GiB", gib(rss)),
        None => println!("peak host memory: unknown (no /proc/self/status)"),
    }
    if let Some((peak, capacity)) = backend.peak_vram() {
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
    let proved: Vec<_> = results.iter().map(|p| &p.proof).collect();
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

/// The pre-compiled circuits' folder: `--pce-dir`, else cuzk's cache's `pce`.
fn pce_dir(flag: &Option<std::path::PathBuf>) -> anyhow::Result<std::path::PathBuf> {
    match flag {
        Some(dir) => Ok(dir.clone()),
        None => cuzk_pce::default_dir().context(
            "no cache folder for pre-compiled circuits: pass --pce-dir or set CUZK_CACHE_DIR",
        ),
    }
}

/// The bench circuit's pre-compiled form: loaded from the cache folder, or recorded into it.
fn pre_compiled(args: &BenchArgs, circuit: &PorepShaped) -> anyhow::Result<cuzk_pce::PreCompiled> {
    let cache = cuzk_pce::PceCache::new(pce_dir(&args.pce_dir)?);
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

fn print_table(timings: &[PartitionTiming]) {
    println!("{:<14} {:>12} {:>8}", "stage", "ms/partition", "share");
    let total: f64 =
        timings.iter().map(|t| t.total().as_secs_f64()).sum::<f64>() / timings.len() as f64;
    for stage in Stage::ALL {
        let ms = timings
            .iter()
            .map(|t| t.get(stage).as_secs_f64())
            .sum::<f64>()
            / timings.len() as f64;
        println!(
            "{:<14} {:>12.2} {:>7.1}%",
            stage.name(),
            ms * 1e3,
            100.0 * ms / total
        );
    }
    println!("{:<14} {:>12.2} {:>7.1}%", "total", total * 1e3, 100.0);
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// The command line's shape: every flag's relations (`requires`, `conflicts_with`), default
    /// values within their parsers' ranges, no clashing names.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
