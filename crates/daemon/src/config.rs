//! The daemon's configuration: TOML, every section optional, every key with a default that
//! works on a laptop. An unknown key is an error that names it. `docs/config.md` lists every
//! key; [`Config::defaults_toml`] prints them with their defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cuzk_interlock::PolicyKind;
use serde::Deserialize;

use crate::security::{read_private, Secret, Tls};
use crate::DaemonError;

/// The whole file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Where the daemon listens and keeps its state.
    pub daemon: DaemonSection,
    /// Memory for resident parameters.
    pub memory: MemorySection,
    /// Devices and workers.
    pub gpus: GpusSection,
    /// Queue and journal policy.
    pub scheduler: SchedulerSection,
    /// Parameter files.
    pub srs: SrsSection,
    /// The prover.
    pub pipeline: PipelineSection,
    /// Pre-compiled circuits.
    pub pce: PceSection,
    /// Log output.
    pub logging: LoggingSection,
}

/// `[daemon]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DaemonSection {
    /// `unix:///path/to.sock` or `host:port`. Default: `unix://<data_dir>/cuzk.sock`.
    pub listen: Option<String>,
    /// `host:port` of the HTTP status page and `/metrics`; empty: off.
    pub status_listen: Option<String>,
    /// The daemon's folder (journal, spool, socket). Default: `$XDG_DATA_HOME/cuzk` or
    /// `~/.local/share/cuzk`.
    pub data_dir: Option<PathBuf>,
    /// A file holding the bearer token clients must send; required for a non-loopback TCP
    /// listener. Refused when group or others may read it.
    pub auth_token_file: Option<PathBuf>,
    /// The TCP listener's certificate chain (PEM); with `tls_key`, the listener speaks TLS.
    pub tls_cert: Option<PathBuf>,
    /// The private key of `tls_cert` (PEM), readable by its owner only.
    pub tls_key: Option<PathBuf>,
    /// A CA (PEM): clients must present a certificate it signed (mutual TLS).
    pub tls_client_ca: Option<PathBuf>,
    /// Allow a non-loopback TCP listener without TLS (a network the operator trusts).
    pub insecure_plaintext: Option<bool>,
    /// Allow `status_listen` on a non-loopback address (the page and `/metrics` have no token).
    pub status_listen_public: Option<bool>,
    /// Seconds between HTTP/2 pings on a connection (0: none); a peer that does not answer
    /// within `keepalive_timeout_secs` is disconnected.
    pub keepalive_interval_secs: Option<u64>,
    /// Seconds a ping's answer is waited for.
    pub keepalive_timeout_secs: Option<u64>,
    /// Requests one connection may have in flight (HTTP/2 streams); more wait their turn.
    pub max_concurrent_streams: Option<u32>,
    /// The largest request accepted, e.g. `"128MiB"`.
    pub max_message_size: Option<String>,
    /// Seconds running jobs get to finish on SIGTERM/SIGINT before they are stopped at their
    /// next partition (and journaled to run again).
    pub shutdown_grace_secs: Option<u64>,
    /// Requests whose inputs are at least this large keep them in a spool file; smaller ones
    /// in the journal row, e.g. `"64KiB"`.
    pub spool_threshold: Option<String>,
    /// The spool files' total size beyond which a submission that needs one is refused
    /// (RESOURCE_EXHAUSTED), e.g. `"16GiB"`.
    pub max_spool_bytes: Option<String>,
    /// Accept the built-in synthetic kind (tests and benchmarks; its parameters are generated
    /// only with `[srs] generate_test_params`).
    pub allow_synthetic: Option<bool>,
}

/// `[memory]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySection {
    /// `"auto"` (three quarters of the machine's memory) or a size such as `"64GiB"`: the host
    /// memory of the hot parameter tier and the partitions synthesised ahead of the workers.
    pub total_budget: Option<String>,
}

/// `[gpus]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GpusSection {
    /// CUDA device ordinals to prove on; empty: the CPU. Needs a build with the `cuda` feature.
    pub devices: Vec<u32>,
    /// Workers per GPU, sharing its resident parameters under the interlock policy.
    pub gpu_workers_per_device: Option<u32>,
    /// How a GPU's workers take turns: `"budget"` (any whose memory fits), `"two"` (a staging
    /// and a compute lock) or `"single"` (one at a time).
    pub policy: Option<String>,
    /// Prove a partition again on the CPU when its device fails, instead of failing the job.
    pub cpu_fallback: Option<bool>,
    /// CPU workers when no GPU is used (each uses every core through rayon).
    pub cpu_workers: Option<u32>,
}

/// The GPU workers `[gpus]` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuWorkers {
    /// Device ordinals, each once.
    pub devices: Vec<u32>,
    /// Workers per device.
    pub workers_per_device: u32,
    /// How a device's workers take turns.
    pub policy: PolicyKind,
    /// Retry a failed device's partition on the CPU.
    pub cpu_fallback: bool,
}

/// Whether this build has the GPU backend (the `cuda` feature).
pub const GPU_BUILT: bool = cfg!(feature = "cuda");

/// `[scheduler]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerSection {
    /// How far behind the head of a priority a worker looks for a job whose parameters are
    /// already hot (0: strict FIFO).
    pub group_window: Option<u32>,
    /// Hours ended jobs' results are kept for `AwaitProof`.
    pub result_retention_hours: Option<u64>,
    /// Starts of a job (each cut short by a crash) after which it fails.
    pub max_attempts: Option<u32>,
    /// Pending jobs (queued, not yet running) beyond which a submission is refused
    /// (RESOURCE_EXHAUSTED).
    pub max_pending_jobs: Option<u32>,
}

/// `[srs]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SrsSection {
    /// filecoin-proofs' parameter folder. Default: `$FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`.
    pub param_cache: Option<PathBuf>,
    /// Generate missing parameters of test sector sizes (2 KiB, 8 MiB) with cuzk's setup.
    pub generate_test_params: Option<bool>,
    /// Circuit ids to load into the hot tier before serving (`porep-32g`, ...).
    pub preload: Vec<String>,
}

/// `[pipeline]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PipelineSection {
    /// Check every constraint before proving.
    pub check_satisfied: Option<bool>,
    /// Partitions of one job synthesised at once (default: a quarter of the cores).
    pub synthesis_threads: Option<u32>,
}

/// `[pce]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PceSection {
    /// Synthesise through pre-compiled circuits (cuzk-pce), recorded on a circuit's first job.
    pub enabled: Option<bool>,
    /// Their folder. Default: `<data_dir>/pce`.
    pub dir: Option<PathBuf>,
}

/// `[logging]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoggingSection {
    /// A tracing filter: `info`, `debug`, `cuzk_engine=debug,info`, ...
    pub level: Option<String>,
    /// `"text"` (for people) or `"json"` (one object a line, for log shippers).
    pub format: Option<String>,
}

/// Where the gRPC service listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// A unix socket.
    Unix(PathBuf),
    /// TCP.
    Tcp(std::net::SocketAddr),
}

impl Listen {
    /// Parses `unix:///path` or `host:port`.
    pub fn parse(text: &str) -> Result<Self, DaemonError> {
        if let Some(path) = text.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(DaemonError::Config(format!(
                    "listen {text:?}: a unix socket path must be absolute (unix:///...)"
                )));
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        use std::net::ToSocketAddrs;
        let addr = text
            .to_socket_addrs()
            .map_err(|e| DaemonError::Config(format!("listen {text:?}: {e}")))?
            .next()
            .ok_or_else(|| DaemonError::Config(format!("listen {text:?}: no address")))?;
        Ok(Listen::Tcp(addr))
    }

    /// Whether only this machine can reach it.
    pub fn is_local(&self) -> bool {
        match self {
            Listen::Unix(_) => true,
            Listen::Tcp(a) => a.ip().is_loopback(),
        }
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Unix(p) => write!(f, "unix://{}", p.display()),
            Listen::Tcp(a) => write!(f, "{a}"),
        }
    }
}

/// Parses `"128MiB"`, `"64GiB"`, `"1000"` (bytes), `"2KB"`.
pub fn parse_size(text: &str) -> Result<u64, DaemonError> {
    let t = text.trim();
    let at = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(at);
    let n: u64 = digits
        .parse()
        .map_err(|_| DaemonError::Config(format!("size {text:?}: expected a number and a unit")))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        other => {
            return Err(DaemonError::Config(format!(
                "size {text:?}: unknown unit {other:?} (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
            )))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| DaemonError::Config(format!("size {text:?} overflows")))
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Three quarters of the machine's memory, from `/proc/meminfo` (16 GiB where it cannot be
/// read): a 32 GiB PoRep's parameters (about 50 GiB decoded) and its partitions in flight (about
/// 4 GiB each with pre-compiled circuits) on a 128 GiB host, the rest left to the system.
fn auto_budget() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib / 4 * 3 * 1024)
        })
        .unwrap_or(16 << 30)
}

/// The configuration with every default filled in and checked.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The gRPC listener.
    pub listen: Listen,
    /// The HTTP status listener.
    pub status_listen: Option<std::net::SocketAddr>,
    /// The daemon's folder.
    pub data_dir: PathBuf,
    /// The bearer token, if one is configured.
    pub auth_token: Option<Secret>,
    /// TLS on the TCP listener.
    pub tls: Option<Tls>,
    /// Plaintext on a non-loopback listener was allowed.
    pub insecure_plaintext: bool,
    /// The HTTP/2 ping interval, if pings are on.
    pub keepalive_interval: Option<Duration>,
    /// How long a ping's answer is waited for.
    pub keepalive_timeout: Duration,
    /// Requests in flight per connection.
    pub max_concurrent_streams: u32,
    /// The largest request in bytes.
    pub max_message_size: usize,
    /// The shutdown grace period.
    pub shutdown_grace: Duration,
    /// Inputs at least this large go to spool files.
    pub spool_threshold: usize,
    /// The spool files' total size limit in bytes.
    pub max_spool_bytes: u64,
    /// Whether synthetic jobs and circuits are accepted.
    pub allow_synthetic: bool,
    /// The hot-tier budget in bytes.
    pub memory_budget: u64,
    /// CPU workers (when no GPU is used).
    pub cpu_workers: u32,
    /// GPU workers, when `[gpus] devices` names any.
    pub gpus: Option<GpuWorkers>,
    /// The queue's grouping window.
    pub group_window: u32,
    /// How long results are kept.
    pub retention: Duration,
    /// Starts before a job fails.
    pub max_attempts: u32,
    /// Pending jobs beyond which submissions are refused.
    pub max_pending_jobs: usize,
    /// filecoin-proofs' parameter folder.
    pub param_cache: PathBuf,
    /// Generate test-size parameters.
    pub generate_test_params: bool,
    /// Circuits to preload.
    pub preload: Vec<String>,
    /// Check constraints before proving.
    pub check_satisfied: bool,
    /// Partitions of one job synthesised at once.
    pub synthesis_threads: usize,
    /// The pre-compiled circuits' folder, when they are used.
    pub pce_dir: Option<PathBuf>,
    /// The tracing filter.
    pub log_level: String,
    /// Log lines as JSON objects.
    pub log_json: bool,
}

/// The default data folder.
pub fn default_data_dir() -> Result<PathBuf, DaemonError> {
    if let Some(dir) = env_path("XDG_DATA_HOME") {
        return Ok(dir.join("cuzk"));
    }
    env_path("HOME")
        .map(|h| h.join(".local/share/cuzk"))
        .ok_or_else(|| {
            DaemonError::Config(
                "set [daemon] data_dir (neither XDG_DATA_HOME nor HOME is set)".into(),
            )
        })
}

impl Config {
    /// Parses TOML text; an unknown section or key is an error naming it.
    pub fn parse(text: &str) -> Result<Self, DaemonError> {
        toml::from_str(text)
            .map_err(|e| DaemonError::Config(e.message().to_string() + &location(text, &e)))
    }

    /// Reads and parses `path`.
    pub fn read(path: &Path) -> Result<Self, DaemonError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DaemonError::Config(format!("{}: {e}", path.display())))?;
        Self::parse(&text).map_err(|e| DaemonError::Config(format!("{}: {e}", path.display())))
    }

    /// Fills in the defaults and checks the values.
    pub fn resolve(&self) -> Result<Resolved, DaemonError> {
        let d = &self.daemon;
        let data_dir = match &d.data_dir {
            Some(dir) => dir.clone(),
            None => default_data_dir()?,
        };
        let listen = match &d.listen {
            Some(text) => Listen::parse(text)?,
            None => Listen::Unix(data_dir.join("cuzk.sock")),
        };
        let status_listen = match d.status_listen.as_deref() {
            None | Some("") => None,
            Some(text) => match Listen::parse(text)? {
                Listen::Tcp(a)
                    if !a.ip().is_loopback() && !d.status_listen_public.unwrap_or(false) =>
                {
                    return Err(DaemonError::Config(format!(
                        "status_listen {a} is reachable from other machines, and the status page \
                         and /metrics have no token: listen on 127.0.0.1, or set [daemon] \
                         status_listen_public = true"
                    )))
                }
                Listen::Tcp(a) => Some(a),
                Listen::Unix(_) => {
                    return Err(DaemonError::Config(
                        "status_listen must be host:port".into(),
                    ))
                }
            },
        };
        let auth_token = match &d.auth_token_file {
            Some(path) => {
                let token = String::from_utf8(read_private("auth_token_file", path)?)
                    .map_err(|_| {
                        DaemonError::Config(format!(
                            "auth_token_file {}: not UTF-8",
                            path.display()
                        ))
                    })?
                    .trim()
                    .to_string();
                if token.len() < 16 {
                    return Err(DaemonError::Config(format!(
                        "auth_token_file {}: the token must be at least 16 characters",
                        path.display()
                    )));
                }
                Some(Secret::new(token))
            }
            None => None,
        };
        if !listen.is_local() && auth_token.is_none() {
            return Err(DaemonError::Config(format!(
                "listen {listen} is reachable from other machines: set [daemon] auth_token_file"
            )));
        }
        let tls = match (&d.tls_cert, &d.tls_key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(Tls::read(cert, key, d.tls_client_ca.as_deref())?),
            _ => {
                return Err(DaemonError::Config(
                    "[daemon] tls_cert and tls_key go together".into(),
                ))
            }
        };
        if tls.is_none() && d.tls_client_ca.is_some() {
            return Err(DaemonError::Config(
                "[daemon] tls_client_ca needs tls_cert and tls_key".into(),
            ));
        }
        if tls.is_some() && matches!(listen, Listen::Unix(_)) {
            return Err(DaemonError::Config(format!(
                "listen {listen}: TLS is for TCP listeners (a unix socket is guarded by its \
                 mode); remove tls_cert and tls_key or listen on host:port"
            )));
        }
        let insecure_plaintext = d.insecure_plaintext.unwrap_or(false);
        if !listen.is_local() && tls.is_none() && !insecure_plaintext {
            return Err(DaemonError::Config(format!(
                "listen {listen} is reachable from other machines, and without TLS the token \
                 would cross the network in the clear: set [daemon] tls_cert and tls_key, or \
                 insecure_plaintext = true on a network you trust"
            )));
        }
        let keepalive_interval = match d.keepalive_interval_secs.unwrap_or(30) {
            0 => None,
            secs => Some(Duration::from_secs(secs)),
        };
        let keepalive_timeout = Duration::from_secs(d.keepalive_timeout_secs.unwrap_or(20));
        if keepalive_timeout.is_zero() {
            return Err(DaemonError::Config(
                "[daemon] keepalive_timeout_secs must be at least 1".into(),
            ));
        }
        let max_concurrent_streams = d.max_concurrent_streams.unwrap_or(1024);
        if max_concurrent_streams == 0 {
            return Err(DaemonError::Config(
                "[daemon] max_concurrent_streams must be at least 1".into(),
            ));
        }
        let max_message_size = parse_size(d.max_message_size.as_deref().unwrap_or("128MiB"))?;
        let memory_budget = match self.memory.total_budget.as_deref() {
            None | Some("auto") => auto_budget(),
            Some(size) => parse_size(size)?,
        };
        let gpus = self.gpus.resolve()?;
        let cpu_workers = self.gpus.cpu_workers.unwrap_or(1);
        if cpu_workers == 0 || cpu_workers > 256 {
            return Err(DaemonError::Config(format!(
                "[gpus] cpu_workers = {cpu_workers}: expected 1..=256"
            )));
        }
        let param_cache = match &self.srs.param_cache {
            Some(dir) => dir.clone(),
            None => {
                use cuzk_engine::filecoin::params::{parameter_dir, DEFAULT_PARAMETER_CACHE};
                parameter_dir(|| None).unwrap_or_else(|| PathBuf::from(DEFAULT_PARAMETER_CACHE))
            }
        };
        let pce_dir = self
            .pce
            .enabled
            .unwrap_or(false)
            .then(|| self.pce.dir.clone().unwrap_or_else(|| data_dir.join("pce")));
        let max_attempts = self.scheduler.max_attempts.unwrap_or(3);
        if max_attempts == 0 {
            return Err(DaemonError::Config(
                "[scheduler] max_attempts must be at least 1".into(),
            ));
        }
        let max_pending_jobs = self.scheduler.max_pending_jobs.unwrap_or(1000);
        if max_pending_jobs == 0 {
            return Err(DaemonError::Config(
                "[scheduler] max_pending_jobs must be at least 1".into(),
            ));
        }
        let allow_synthetic = d.allow_synthetic.unwrap_or(false);
        if let Some(id) = self
            .srs
            .preload
            .iter()
            .find(|id| id.starts_with("synthetic-"))
        {
            if !allow_synthetic {
                return Err(DaemonError::Config(format!(
                    "[srs] preload lists {id:?}, a synthetic circuit: set [daemon] \
                     allow_synthetic = true, or remove it"
                )));
            }
        }
        Ok(Resolved {
            listen,
            status_listen,
            data_dir,
            auth_token,
            tls,
            insecure_plaintext,
            keepalive_interval,
            keepalive_timeout,
            max_concurrent_streams,
            max_message_size: usize::try_from(max_message_size).unwrap_or(usize::MAX),
            shutdown_grace: Duration::from_secs(d.shutdown_grace_secs.unwrap_or(30)),
            spool_threshold: usize::try_from(parse_size(
                d.spool_threshold.as_deref().unwrap_or("64KiB"),
            )?)
            .unwrap_or(usize::MAX),
            max_spool_bytes: parse_size(d.max_spool_bytes.as_deref().unwrap_or("16GiB"))?,
            allow_synthetic,
            memory_budget,
            cpu_workers,
            gpus,
            group_window: self.scheduler.group_window.unwrap_or(4),
            retention: Duration::from_secs(
                3600 * self.scheduler.result_retention_hours.unwrap_or(24),
            ),
            max_attempts,
            max_pending_jobs: max_pending_jobs as usize,
            param_cache,
            generate_test_params: self.srs.generate_test_params.unwrap_or(false),
            preload: self.srs.preload.clone(),
            check_satisfied: self.pipeline.check_satisfied.unwrap_or(true),
            synthesis_threads: match self.pipeline.synthesis_threads {
                None => cuzk_engine::default_synthesis_threads(),
                Some(n @ 1..=64) => n as usize,
                Some(n) => {
                    return Err(DaemonError::Config(format!(
                        "[pipeline] synthesis_threads = {n}: expected 1..=64"
                    )))
                }
            },
            pce_dir,
            log_level: self.logging.level.clone().unwrap_or_else(|| "info".into()),
            log_json: match self.logging.format.as_deref() {
                None | Some("text") => false,
                Some("json") => true,
                Some(other) => {
                    return Err(DaemonError::Config(format!(
                        "[logging] format = {other:?}: expected \"text\" or \"json\""
                    )))
                }
            },
        })
    }
}

impl GpusSection {
    fn resolve(&self) -> Result<Option<GpuWorkers>, DaemonError> {
        let policy = match self.policy.as_deref() {
            None => PolicyKind::VramBudget,
            Some(text) => PolicyKind::from_short_name(text).ok_or_else(|| {
                DaemonError::Config(format!(
                    "[gpus] policy = {text:?}: expected \"budget\", \"two\" or \"single\""
                ))
            })?,
        };
        let workers_per_device = self.gpu_workers_per_device.unwrap_or(2);
        if workers_per_device == 0 || workers_per_device > 64 {
            return Err(DaemonError::Config(format!(
                "[gpus] gpu_workers_per_device = {workers_per_device}: expected 1..=64"
            )));
        }
        if self.devices.is_empty() {
            return Ok(None);
        }
        if !GPU_BUILT {
            return Err(DaemonError::Config(format!(
                "[gpus] devices = {:?}: this cuzk was built without the GPU backend (the `cuda` \
                 feature); leave it empty to prove on the CPU",
                self.devices
            )));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(d) = self.devices.iter().find(|d| !seen.insert(**d)) {
            return Err(DaemonError::Config(format!(
                "[gpus] devices lists device {d} twice"
            )));
        }
        Ok(Some(GpuWorkers {
            devices: self.devices.clone(),
            workers_per_device,
            policy,
            cpu_fallback: self.cpu_fallback.unwrap_or(false),
        }))
    }
}

fn location(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_resolves_to_defaults() {
        let mut c = Config::parse("").unwrap();
        c.daemon.data_dir = Some("/tmp/x".into());
        let r = c.resolve().unwrap();
        assert_eq!(r.listen, Listen::Unix("/tmp/x/cuzk.sock".into()));
        assert_eq!(r.max_message_size, 128 << 20);
        assert_eq!(r.cpu_workers, 1);
        assert!(r.status_listen.is_none());
        assert_eq!(r.max_pending_jobs, 1000);
        assert_eq!(r.max_spool_bytes, 16 << 30);
        assert!(!r.allow_synthetic && !r.generate_test_params);
    }

    /// A synthetic preload needs `allow_synthetic`, and the error names the key.
    #[test]
    fn synthetic_preloads_need_allow_synthetic() {
        let text =
            "[daemon]\ndata_dir = \"/tmp/x\"\n{daemon}\n[srs]\npreload = [\"synthetic-10\"]\n";
        let err = Config::parse(&text.replace("{daemon}", ""))
            .unwrap()
            .resolve()
            .unwrap_err()
            .to_string();
        assert!(err.contains("allow_synthetic"), "{err}");
        let c = Config::parse(&text.replace("{daemon}", "allow_synthetic = true")).unwrap();
        assert!(c.resolve().unwrap().allow_synthetic);
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::parse("[daemon]\nlisten = \"127.0.0.1:1\"\nlisen = 3\n").unwrap_err();
        assert!(err.to_string().contains("lisen"), "{err}");
        let err = Config::parse("[deamon]\n").unwrap_err();
        assert!(err.to_string().contains("deamon"), "{err}");
    }

    #[test]
    fn sizes_and_listeners() {
        assert_eq!(parse_size("128MiB").unwrap(), 128 << 20);
        assert_eq!(parse_size("2 GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("10").unwrap(), 10);
        assert!(parse_size("10 parsecs").is_err());
        assert!(Listen::parse("unix://relative").is_err());
        assert!(Listen::parse("127.0.0.1:0").unwrap().is_local());
        assert!(!Listen::parse("0.0.0.0:9000").unwrap().is_local());
    }

    #[test]
    fn public_tcp_needs_a_token() {
        let c =
            Config::parse("[daemon]\nlisten = \"0.0.0.0:9000\"\ndata_dir = \"/tmp/x\"\n").unwrap();
        assert!(c
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("auth_token_file"));
    }

    fn gpus(section: &str) -> Result<Option<GpuWorkers>, DaemonError> {
        let c = Config::parse(&format!(
            "[daemon]\ndata_dir = \"/tmp/x\"\n[gpus]\n{section}"
        ))?;
        c.resolve().map(|r| r.gpus)
    }

    #[test]
    fn gpus_select_workers_or_say_why_not() {
        assert_eq!(gpus("").unwrap(), None);
        let err = gpus("policy = \"fair\"").unwrap_err().to_string();
        assert!(err.contains("policy") && err.contains("budget"), "{err}");
        let err = gpus("gpu_workers_per_device = 0").unwrap_err().to_string();
        assert!(err.contains("gpu_workers_per_device"), "{err}");
        let chosen = gpus("devices = [0, 1]\npolicy = \"two\"\ncpu_fallback = true");
        if GPU_BUILT {
            assert_eq!(
                chosen.unwrap(),
                Some(GpuWorkers {
                    devices: vec![0, 1],
                    workers_per_device: 2,
                    policy: PolicyKind::TwoLock,
                    cpu_fallback: true,
                })
            );
            let err = gpus("devices = [1, 1]").unwrap_err().to_string();
            assert!(err.contains("twice"), "{err}");
        } else {
            let err = chosen.unwrap_err().to_string();
            assert!(err.contains("without the GPU backend"), "{err}");
        }
    }

    #[test]
    fn synthesis_threads_default_to_a_quarter_of_the_cores_and_are_checked() {
        let resolve = |pipeline: &str| {
            Config::parse(&format!(
                "[daemon]\ndata_dir = \"/tmp/x\"\n[pipeline]\n{pipeline}"
            ))
            .and_then(|c| c.resolve())
        };
        assert_eq!(
            resolve("").unwrap().synthesis_threads,
            cuzk_engine::default_synthesis_threads()
        );
        assert_eq!(
            resolve("synthesis_threads = 3").unwrap().synthesis_threads,
            3
        );
        let err = resolve("synthesis_threads = 0").unwrap_err().to_string();
        assert!(err.contains("synthesis_threads"), "{err}");
    }
}
