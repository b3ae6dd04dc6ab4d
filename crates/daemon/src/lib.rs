//! cuzk's proving daemon: the `cuzk.v1.ProvingEngine` gRPC service (the contract Curio's
//! client speaks, compiled by cuzk-proto) over cuzk-engine, with the standard health and
//! reflection services, a bearer token and size limit in front of them, an HTTP status page and
//! the TOML configuration.
//!
//! - [`config`]: the file's sections and keys, their defaults and checks.
//! - [`server::run`]: the daemon until its shutdown signal.
//! - [`service`]: the gRPC methods over the engine.
//! - [`guard`]: the token and the message-size limit (RESOURCE_EXHAUSTED).
//! - [`security`]: TLS, and the refusals that keep the token and the status page off the
//!   network.
//! - [`http`]: `/metrics`, `/status`, `/`.
//! - [`metrics`]: the daemon's metrics after the engine's: refused requests, build info,
//!   process start time.
//! - [`notify`]: systemd's `READY=1` and `STOPPING=1`.
//! - [`workers`]: the engine's workers from `[gpus]`: CPU, or GPU workers per device (feature
//!   `cuda`).
//! - [`proto`] and [`client`]: cuzk-proto's messages and client, re-exported.
//!
//! Health reports serving once the engine is ready. The unix socket has mode 0660 in a
//! 0700 data folder the daemon owns. On SIGTERM or SIGINT it stops accepting jobs, gives running
//! ones the grace period, and journals the rest to run again.
//!
//! **Architecture Invariant:** only this crate (and the binary) reads configuration files or
//! environment variables; the engine gets everything as values.

#![forbid(unsafe_code)]

pub mod config;
pub mod guard;
pub mod http;
pub mod metrics;
pub mod notify;
pub mod security;
pub mod server;
pub mod service;
pub mod workers;

pub use cuzk_engine as engine;
// The crates a client (or a test) of the service needs, at the versions the service uses.
pub use {tokio_stream, tonic, tonic_health, tonic_reflection};

/// The generated messages, client and server of `cuzk.v1` (cuzk-proto).
pub use cuzk_proto as proto;
/// A client of the daemon (cuzk-proto's).
pub use cuzk_proto::client;

/// Errors of the daemon.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The configuration is invalid (the message names the key).
    #[error("configuration: {0}")]
    Config(String),
    /// The engine failed to start or preload.
    #[error(transparent)]
    Engine(#[from] cuzk_engine::EngineError),
    /// An I/O error on `path`.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// An error with its sources, `a: b: c`.
pub fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    cuzk_engine::error_chain(e)
}

/// The tracing filter `level`, checked.
pub fn log_filter(level: &str) -> Result<tracing_subscriber::EnvFilter, DaemonError> {
    tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| DaemonError::Config(format!("[logging] level {level:?}: {e}")))
}

/// Installs the global tracing subscriber: the telemetry recorder (the status page's
/// waterfall) and log lines on stderr filtered by `level`, as text or (`json`) one JSON object
/// a line. Returns the recorder's handle.
pub fn init_logging(
    level: &str,
    json: bool,
) -> Result<cuzk_engine::telemetry::RecorderHandle, DaemonError> {
    use tracing_subscriber::prelude::*;
    let filter = log_filter(level)?;
    let (recorder, handle) = cuzk_engine::telemetry::Recorder::new();
    let lines = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let lines = if json {
        lines.json().with_filter(filter).boxed()
    } else {
        lines.with_filter(filter).boxed()
    };
    tracing_subscriber::registry()
        .with(recorder)
        .with(lines)
        .try_init()
        .map_err(|e| DaemonError::Config(format!("logging: {e}")))?;
    Ok(handle)
}
