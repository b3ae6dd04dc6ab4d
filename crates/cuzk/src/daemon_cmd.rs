//! `cuzk daemon` and `cuzk client`: the proving service and a command-line client of it.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::builder::PossibleValuesParser;
use cuzk_daemon::client::Client;
use cuzk_daemon::engine::filecoin::post::PostKind;
use cuzk_daemon::engine::JobRequest;
use cuzk_daemon::proto::{self, await_proof_response::Status as AwaitStatus};

#[derive(clap::Args, Debug)]
pub struct DaemonArgs {
    /// The TOML configuration (docs/config.md); without it every default applies: a unix
    /// socket in ~/.local/share/cuzk, the CPU backend.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check a configuration file and print it resolved (every default filled in, secrets
    /// redacted), then exit: 0 when it is valid. Reads the files it names; starts nothing.
    #[arg(long, value_name = "FILE", conflicts_with = "config")]
    check_config: Option<PathBuf>,
}

pub fn daemon(args: &DaemonArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.check_config {
        let resolved = cuzk_daemon::config::Config::read(path)?.resolve()?;
        cuzk_daemon::log_filter(&resolved.log_level)?;
        println!("{resolved:#?}");
        println!("{}: valid", path.display());
        return Ok(());
    }
    let config = match &args.config {
        Some(path) => cuzk_daemon::config::Config::read(path)?,
        None => cuzk_daemon::config::Config::default(),
    };
    let resolved = config.resolve()?;
    let telemetry = cuzk_daemon::init_logging(&resolved.log_level, resolved.log_json)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("cuzk-rpc")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        // The handlers are installed here, before the daemon binds, starts or preloads
        // anything: a SIGTERM during a long preload stops it cleanly instead of killing it.
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        };
        cuzk_daemon::server::run(resolved, Some(telemetry), shutdown).await?;
        anyhow::Ok(())
    })?;
    // Do not wait for a preload abandoned by the signal: its thread ends with the process.
    runtime.shutdown_timeout(Duration::from_secs(5));
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct ClientArgs {
    /// The daemon: unix:///path/to.sock or host:port [default: the default data folder's socket].
    #[arg(long, global = true)]
    addr: Option<String>,
    /// A file holding the bearer token (for a daemon on a non-loopback address).
    #[arg(long, global = true, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Connect over TLS, trusting the CA certificate (PEM) that signed the daemon's.
    #[arg(long, global = true, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// Mutual TLS: this client's certificate chain (PEM), with --tls-key.
    #[arg(long, global = true, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// Mutual TLS: this client's private key (PEM), with --tls-cert.
    #[arg(long, global = true, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The name the daemon's certificate must carry [default: the address's host].
    #[arg(long, global = true)]
    tls_domain: Option<String>,
    #[command(subcommand)]
    command: ClientCommand,
}

#[derive(clap::Subcommand, Debug)]
enum ClientCommand {
    /// Submit a job and wait for its proof (one Prove call).
    Prove(JobArgs),
    /// Submit a job; print its id.
    Submit(JobArgs),
    /// Wait for a job's proof.
    Await {
        job_id: String,
        /// Give up after this many milliseconds (0: no limit).
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
        /// Write the proof bytes here.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Cancel a job.
    Cancel { job_id: String },
    /// Devices, queues, parameters and counters.
    Status,
    /// The Prometheus metrics.
    Metrics,
    /// Load a circuit's parameters into the hot tier (porep-32g, winning-2k, synthetic-10, ...).
    Preload { circuit_id: String },
    /// Drop a circuit's parameters from memory.
    Evict { circuit_id: String },
    /// Prove COUNT copies of a job, CONCURRENCY at a time; print throughput and stage means.
    Batch {
        #[arg(long, default_value_t = 20)]
        count: u32,
        #[arg(long, default_value_t = 4)]
        concurrency: u32,
        #[command(flatten)]
        job: JobArgs,
    },
}

/// `--kind`: the kind of proof a client job asks for.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum JobKind {
    Synthetic,
    Porep,
    Winning,
    Window,
    Snap,
}

/// `--priority`'s values: the engine's priorities by name.
fn priorities() -> [&'static str; 4] {
    cuzk_daemon::engine::Priority::ALL.map(|p| p.name())
}

#[derive(clap::Args, Debug, Clone)]
struct JobArgs {
    /// The kind of proof (the Filecoin kinds default to the built-in 2 KiB jobs; synthetic needs
    /// a daemon with `[daemon] allow_synthetic = true`).
    #[arg(long, value_enum, default_value_t = JobKind::Synthetic)]
    kind: JobKind,
    /// Synthetic: log2 of the circuit size.
    #[arg(long, default_value_t = 10)]
    log_size: u32,
    /// Synthetic: the seed of its values.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Synthetic: the number of partitions.
    #[arg(long, default_value_t = 1)]
    partitions: u32,
    /// PoRep: the C1 output file.
    #[arg(long, value_name = "FILE")]
    c1: Option<PathBuf>,
    /// PoRep: the miner's actor id.
    #[arg(long)]
    miner_id: Option<u64>,
    /// PoRep: the sector number.
    #[arg(long)]
    sector: Option<u64>,
    /// PoRep: filecoin-ffi's registered seal proof number (0: from the C1 output).
    #[arg(long, default_value_t = 0)]
    registered_proof: u64,
    /// PoSt or SnapDeals: the job JSON (`cuzk prove winning --help` describes it).
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// The job's priority.
    #[arg(long, default_value = "normal", ignore_case = true,
          value_parser = PossibleValuesParser::new(priorities()))]
    priority: String,
    /// An idempotency key.
    #[arg(long)]
    request_id: Option<String>,
    /// Write the proof bytes here.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

impl JobArgs {
    fn request(&self) -> anyhow::Result<proto::SubmitProofRequest> {
        use crate::filecoin_cmd as jobs;
        let (request, _) = match self.kind {
            JobKind::Synthetic => (
                JobRequest::synthetic(self.log_size, self.seed, self.partitions),
                String::new(),
            ),
            JobKind::Porep => jobs::porep_request(
                &self.c1,
                self.miner_id,
                self.sector,
                (self.registered_proof != 0).then_some(self.registered_proof),
            )?,
            JobKind::Winning => jobs::post_request(&self.input, PostKind::Winning)?,
            JobKind::Window => jobs::post_request(&self.input, PostKind::Window)?,
            JobKind::Snap => jobs::snap_request(&self.input)?,
        };
        let mut r = cuzk_daemon::service::wire_request(request);
        let priority = cuzk_daemon::engine::Priority::parse(&self.priority)
            .with_context(|| format!("unknown priority {:?}", self.priority))?;
        r.priority = priority.number();
        r.request_id = self.request_id.clone().unwrap_or_default();
        Ok(r)
    }
}

fn default_addr() -> anyhow::Result<String> {
    Ok(format!(
        "unix://{}",
        cuzk_daemon::config::default_data_dir()?
            .join("cuzk.sock")
            .display()
    ))
}

/// A progress line on stderr while a call is outstanding (only on a terminal).
fn progress(what: &'static str) -> Option<tokio::task::JoinHandle<()>> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(tokio::spawn(async move {
        let start = Instant::now();
        let frames = ['|', '/', '-', '\\'];
        for i in 0usize.. {
            eprint!(
                "\r{} {what} {:.1} s",
                frames[i % 4],
                start.elapsed().as_secs_f64()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }))
}

fn end_progress(p: Option<tokio::task::JoinHandle<()>>) {
    if let Some(p) = p {
        p.abort();
        eprint!("\r\x1b[K");
    }
}

fn print_result(r: &proto::AwaitProofResponse, out: &Option<PathBuf>) -> anyhow::Result<()> {
    let status = AwaitStatus::try_from(r.status).unwrap_or(AwaitStatus::Unknown);
    println!(
        "job {}: {} ({} bytes){}",
        r.job_id,
        status.as_str_name(),
        r.proof.len(),
        if r.error_message.is_empty() {
            String::new()
        } else {
            format!(": {}", r.error_message)
        }
    );
    println!(
        "queue_wait {} ms, srs_load {} ms, synthesis {} ms, prove {} ms (device {} ms), total {} \
         ms",
        r.queue_wait_ms, r.srs_load_ms, r.synthesis_ms, r.proving_ms, r.gpu_compute_ms, r.total_ms
    );
    if let Some(out) = out {
        std::fs::write(out, &r.proof).with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    if status != AwaitStatus::Completed {
        bail!("the job did not complete");
    }
    Ok(())
}

pub fn client(args: &ClientArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(client_async(args))
}

async fn client_async(args: &ClientArgs) -> anyhow::Result<()> {
    let addr = match &args.addr {
        Some(a) => a.clone(),
        None => default_addr()?,
    };
    let token = match &args.token_file {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .with_context(|| format!("reading {}", p.display()))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    let tls = match &args.tls_ca {
        Some(ca) => Some(cuzk_daemon::client::ClientTls::read(
            ca,
            args.tls_cert.as_deref().zip(args.tls_key.as_deref()),
            args.tls_domain.clone(),
        )?),
        None if args.tls_cert.is_some() || args.tls_domain.is_some() => {
            bail!("--tls-cert, --tls-key and --tls-domain need --tls-ca")
        }
        None => None,
    };
    let mut c = cuzk_daemon::client::connect_with(&addr, token.as_deref(), tls.as_ref()).await?;
    match &args.command {
        ClientCommand::Prove(job) => {
            let p = progress("proving");
            let r = c
                .prove(proto::ProveRequest {
                    submit: Some(job.request()?),
                })
                .await;
            end_progress(p);
            let r = r?.into_inner().result.context("no result")?;
            print_result(&r, &job.out)
        }
        ClientCommand::Submit(job) => {
            let r = c.submit_proof(job.request()?).await?.into_inner();
            println!("{} (queue position {})", r.job_id, r.queue_position);
            Ok(())
        }
        ClientCommand::Await {
            job_id,
            timeout_ms,
            out,
        } => {
            let p = progress("waiting");
            let r = c
                .await_proof(proto::AwaitProofRequest {
                    job_id: job_id.clone(),
                    timeout_ms: *timeout_ms,
                })
                .await;
            end_progress(p);
            print_result(&r?.into_inner(), out)
        }
        ClientCommand::Cancel { job_id } => {
            let r = c
                .cancel_proof(proto::CancelProofRequest {
                    job_id: job_id.clone(),
                })
                .await?
                .into_inner();
            println!("cancelled {job_id} (was running: {})", r.was_running);
            Ok(())
        }
        ClientCommand::Status => {
            let s = c.get_status(proto::GetStatusRequest {}).await?.into_inner();
            print_status(&s);
            Ok(())
        }
        ClientCommand::Metrics => {
            let m = c
                .get_metrics(proto::GetMetricsRequest {})
                .await?
                .into_inner();
            print!("{}", m.prometheus_text);
            Ok(())
        }
        ClientCommand::Preload { circuit_id } => {
            let r = c
                .preload_srs(proto::PreloadSrsRequest {
                    circuit_id: circuit_id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "{circuit_id}: {} ({} ms)",
                if r.already_loaded {
                    "already hot"
                } else {
                    "loaded"
                },
                r.load_time_ms
            );
            Ok(())
        }
        ClientCommand::Evict { circuit_id } => {
            let r = c
                .evict_srs(proto::EvictSrsRequest {
                    circuit_id: circuit_id.clone(),
                })
                .await?
                .into_inner();
            println!(
                "{circuit_id}: {} ({} bytes freed)",
                if r.was_loaded {
                    "evicted"
                } else {
                    "was not hot"
                },
                r.freed_bytes
            );
            Ok(())
        }
        ClientCommand::Batch {
            count,
            concurrency,
            job,
        } => batch(c, *count, *concurrency, job).await,
    }
}

fn print_status(s: &proto::GetStatusResponse) {
    println!(
        "uptime {} s, {} completed, {} failed, hot parameters {} of {} bytes",
        s.uptime_seconds,
        s.total_proofs_completed,
        s.total_proofs_failed,
        s.pinned_memory_bytes,
        s.pinned_memory_limit_bytes
    );
    if s.gpus.is_empty() {
        println!("no GPUs: proving on the CPU");
    }
    for g in &s.gpus {
        println!(
            "GPU {} ({}, {} of {} bytes free): {}",
            g.ordinal,
            g.name,
            g.vram_free_bytes,
            g.vram_total_bytes,
            if g.current_job_id.is_empty() {
                "idle".to_string()
            } else {
                format!("{} {}", g.current_proof_kind, g.current_job_id)
            }
        );
    }
    for q in &s.queues {
        println!(
            "queue {:<10} pending {:>4} running {:>3}",
            q.proof_kind, q.pending, q.in_progress
        );
    }
    for p in &s.loaded_srs {
        let tier = proto::srs_status::Tier::try_from(p.tier)
            .map(|t| t.as_str_name())
            .unwrap_or("?");
        println!(
            "params {:<16} {:<5} {:>12} bytes, {} in use",
            p.circuit_id, tier, p.size_bytes, p.ref_count
        );
    }
}

async fn batch(c: Client, count: u32, concurrency: u32, job: &JobArgs) -> anyhow::Result<()> {
    if count == 0 || concurrency == 0 {
        bail!("--count and --concurrency must be at least 1");
    }
    let template = job.request()?;
    let start = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency.min(count) {
        let mut c = c.clone();
        let template = template.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut results = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < count {
                let r = c
                    .prove(proto::ProveRequest {
                        submit: Some(template.clone()),
                    })
                    .await?
                    .into_inner()
                    .result
                    .context("no result")?;
                results.push(r);
            }
            anyhow::Ok(results)
        }));
    }
    let p = progress("batch");
    let mut results = Vec::new();
    for t in tasks {
        results.extend(t.await??);
    }
    end_progress(p);
    let wall = start.elapsed();
    let ok = results
        .iter()
        .filter(|r| r.status == AwaitStatus::Completed as i32)
        .count();
    let mean = |f: fn(&proto::AwaitProofResponse) -> u64| {
        results.iter().map(f).sum::<u64>() as f64 / results.len().max(1) as f64
    };
    println!(
        "batch: {ok}/{count} completed in {:.3} s, {:.3} proofs/s (concurrency {concurrency})",
        wall.as_secs_f64(),
        ok as f64 / wall.as_secs_f64()
    );
    println!(
        "mean ms: queue_wait {:.1}, srs_load {:.1}, synthesis {:.1}, prove {:.1} (device {:.1}), \
         total {:.1}",
        mean(|r| r.queue_wait_ms),
        mean(|r| r.srs_load_ms),
        mean(|r| r.synthesis_ms),
        mean(|r| r.proving_ms),
        mean(|r| r.gpu_compute_ms),
        mean(|r| r.total_ms)
    );
    if ok as u32 != count {
        bail!("{} of {count} jobs did not complete", count as usize - ok);
    }
    Ok(())
}
