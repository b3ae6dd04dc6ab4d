//! Running the daemon: the data folder, the listeners, the gRPC services (ProvingEngine,
//! `grpc.health.v1`, reflection) behind the guard, the HTTP status listener, the engine, and
//! the graceful shutdown.

use std::future::Future;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use cuzk_engine::telemetry::RecorderHandle;
use cuzk_engine::{DataDirLock, Engine, EngineConfig, ParamConfig};
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};

use crate::config::{Listen, Resolved};
use crate::guard::{GuardConfig, GuardLayer};
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::service::Service;
use crate::DaemonError;

/// What a running daemon writes to `<data_dir>/daemon.json` once it serves: how to reach it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Endpoints {
    /// The process id.
    pub pid: u32,
    /// The gRPC address (`unix:///...` or `host:port`, the port resolved).
    pub listen: String,
    /// The status page's URL, when on.
    pub status_url: Option<String>,
}

/// The file [`Endpoints`] are written to.
pub fn endpoints_file(data_dir: &Path) -> PathBuf {
    data_dir.join("daemon.json")
}

/// Creates the data folder (mode 0700) or checks that this user owns it.
fn own_data_dir(dir: &Path) -> Result<(), DaemonError> {
    let io = |e: std::io::Error| DaemonError::Io {
        path: dir.to_path_buf(),
        source: e,
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    let meta = std::fs::metadata(dir).map_err(io)?;
    // /proc/self belongs to the process's effective user.
    let me = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(io)?;
    if meta.uid() != me {
        return Err(DaemonError::Config(format!(
            "data_dir {} belongs to uid {}, not this user ({me})",
            dir.display(),
            meta.uid()
        )));
    }
    Ok(())
}

/// Binds the unix socket with mode 0660, replacing a stale socket but never a live daemon's.
/// The socket is bound in a private (0700) folder beside its path, given its mode there and
/// renamed into place, so there is no moment when it exists at its path with the umask's mode.
fn bind_unix(path: &Path) -> Result<tokio::net::UnixListener, DaemonError> {
    let io = |e: std::io::Error| DaemonError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(DaemonError::Config(format!(
                "{} exists and is not a socket",
                path.display()
            )));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(DaemonError::Config(format!(
                "another daemon is serving on {}",
                path.display()
            )));
        }
        std::fs::remove_file(path).map_err(io)?;
    }
    let parent = path
        .parent()
        .ok_or_else(|| DaemonError::Config(format!("{}: no parent folder", path.display())))?;
    std::fs::create_dir_all(parent).map_err(io)?;
    let private = parent.join(format!(".cuzk-bind-{}", std::process::id()));
    let private_io = |e: std::io::Error| DaemonError::Io {
        path: private.clone(),
        source: e,
    };
    if private.exists() {
        std::fs::remove_dir_all(&private).map_err(private_io)?;
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(private_io)?;
    let bound = (|| -> std::io::Result<tokio::net::UnixListener> {
        let staged = private.join("socket");
        let listener = tokio::net::UnixListener::bind(&staged)?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o660))?;
        std::fs::rename(&staged, path)?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir_all(&private);
    bound.map_err(io)
}

/// Stops the engine: running jobs get `grace`, the rest are journaled to run again.
async fn stop_engine(engine: &Arc<Engine>, grace: std::time::Duration) {
    let stopping = Arc::clone(engine);
    if let Err(e) = tokio::task::spawn_blocking(move || stopping.shutdown(grace)).await {
        tracing::error!(error = %e, "engine shutdown");
    }
}

/// The end of serving, after a stop during the preload or after serving: the engine stopped
/// (running jobs get the grace period), the gRPC and status servers told to stop and given 5 s
/// each (open streams, such as awaiters, are dropped by their graceful stop: do not hang on
/// them), the unix socket removed.
async fn stop_serving<G: std::future::Future, H: std::future::Future>(
    engine: &Arc<Engine>,
    config: &Resolved,
    stops: [tokio::sync::oneshot::Sender<()>; 2],
    grpc: G,
    http: Option<H>,
) {
    stop_engine(engine, config.shutdown_grace).await;
    for stop in stops {
        let _ = stop.send(());
    }
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), grpc).await;
    if let Some(http) = http {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), http).await;
    }
    remove_socket(&config.listen);
}

fn remove_socket(listen: &Listen) {
    if let Listen::Unix(path) = listen {
        let _ = std::fs::remove_file(path);
    }
}

/// Runs the daemon until `shutdown` resolves, then stops gracefully. The data folder's lock is
/// taken first, then the listeners bound, then the engine started and its parameters
/// preloaded; `shutdown` is watched from the preload on.
pub async fn run(
    config: Resolved,
    telemetry: Option<RecorderHandle>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DaemonError> {
    own_data_dir(&config.data_dir)?;
    // One daemon per data folder: the lock is taken before any socket is bound, so a second
    // daemon stops here, naming the first one's pid, before it touches the first one's socket.
    let lock = DataDirLock::acquire(&config.data_dir)?;
    tokio::pin!(shutdown);
    let engine_cell: Arc<OnceLock<Arc<Engine>>> = Arc::default();
    let (mut health, health_service) = tonic_health::server::health_reporter();
    health
        .set_not_serving::<ProvingEngineServer<Service>>()
        .await;
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| DaemonError::Config(format!("reflection: {e}")))?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(|e| DaemonError::Config(format!("reflection: {e}")))?;
    let engine_service = ProvingEngineServer::new(Service::new(Arc::clone(&engine_cell)))
        .max_decoding_message_size(config.max_message_size)
        .max_encoding_message_size(usize::MAX);
    let guard = GuardLayer::new(GuardConfig {
        token: config.auth_token.as_ref().map(|t| Arc::from(t.expose())),
        max_message_size: config.max_message_size,
    });
    let mut builder = tonic::transport::Server::builder()
        // A peer that stops answering pings (a half-open connection behind a NAT or a dead
        // client) is disconnected, and its waits end.
        .http2_keepalive_interval(config.keepalive_interval)
        .http2_keepalive_timeout(Some(config.keepalive_timeout))
        // One connection's requests in flight are bounded: HTTP/2's own limit tells the client
        // to queue beyond it, and the per-connection limit holds against one that does not.
        .max_concurrent_streams(config.max_concurrent_streams)
        .concurrency_limit_per_connection(config.max_concurrent_streams as usize);
    if let (Listen::Tcp(_), Some(tls)) = (&config.listen, &config.tls) {
        builder = builder
            .tls_config(tls.server_config())
            .map_err(|e| DaemonError::Config(format!("TLS: {}", crate::error_text(&e))))?;
    }
    let router = builder
        .layer(guard)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(engine_service);

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        let _ = stop_rx.await;
    };
    let (listen_text, grpc) = match &config.listen {
        Listen::Unix(path) => {
            let listener = bind_unix(path)?;
            let incoming = UnixListenerStream::new(listener);
            (
                config.listen.to_string(),
                tokio::spawn(router.serve_with_incoming_shutdown(incoming, stop)),
            )
        }
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| DaemonError::Config(format!("listen {addr}: {e}")))?;
            let local = listener.local_addr().map_err(|e| DaemonError::Io {
                path: PathBuf::from(addr.to_string()),
                source: e,
            })?;
            let incoming = TcpListenerStream::new(listener);
            (
                local.to_string(),
                tokio::spawn(router.serve_with_incoming_shutdown(incoming, stop)),
            )
        }
    };

    let (http_stop_tx, http_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let mut status_url = None;
    let http = match config.status_listen {
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| DaemonError::Config(format!("status_listen {addr}: {e}")))?;
            let local = listener.local_addr().map_err(|e| DaemonError::Io {
                path: PathBuf::from(addr.to_string()),
                source: e,
            })?;
            status_url = Some(format!("http://{local}/"));
            let app = crate::http::router(Arc::clone(&engine_cell));
            Some(tokio::spawn(async move {
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = http_stop_rx.await;
                    })
                    .await
            }))
        }
        None => None,
    };

    // The engine: the journal read, the workers started, the preloads made; then it serves.
    let engine_config = EngineConfig {
        data_dir: config.data_dir.clone(),
        params: ParamConfig {
            filecoin_dir: config.param_cache.clone(),
            synthetic_dir: config.data_dir.join("params"),
            generate_test_params: config.generate_test_params,
            budget_bytes: config.memory_budget,
        },
        group_window: config.group_window as usize,
        retention: config.retention,
        max_attempts: config.max_attempts,
        spool_threshold: config.spool_threshold,
        pce_dir: config.pce_dir.clone(),
        max_pending_jobs: config.max_pending_jobs,
        max_spool_bytes: config.max_spool_bytes,
        allow_synthetic: config.allow_synthetic,
        synthesis_threads: config.synthesis_threads,
    };
    let backends = crate::workers::backends(&config)?;
    let preload = config.preload.clone();
    // The engine starts and preloads on a thread of its own, so a signal can end the daemon
    // during a preload of many minutes: the preload is then abandoned (parameter files are
    // written beside their names and renamed, so none is left half-written) and the engine
    // stopped as at any shutdown.
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let (preloaded_tx, preloaded_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("cuzk-start".into())
        .spawn(move || {
            let engine = match Engine::start_locked(engine_config, backends, telemetry, lock) {
                Ok(engine) => Arc::new(engine),
                Err(e) => {
                    let _ = started_tx.send(Err(e));
                    return;
                }
            };
            let _ = started_tx.send(Ok(Arc::clone(&engine)));
            let preloaded = preload
                .iter()
                .try_for_each(|id| -> Result<(), DaemonError> {
                    let (_, load) = engine.preload(id)?;
                    tracing::info!(circuit = %id, ms = load.as_millis() as u64, "preloaded");
                    Ok(())
                });
            let _ = preloaded_tx.send(preloaded);
        })
        .map_err(|e| DaemonError::Io {
            path: config.data_dir.clone(),
            source: e,
        })?;
    // Starting (opening the journal, queueing its jobs again) is short: it is let finish even
    // when a signal comes meanwhile, which the handler keeps for the select below.
    let engine = started_rx
        .await
        .map_err(|_| DaemonError::Config("the engine's start thread ended".into()))??;
    let preloaded = tokio::select! {
        _ = &mut shutdown => None,
        r = preloaded_rx => Some(r),
    };
    match preloaded {
        Some(Ok(Ok(()))) => {}
        Some(Ok(Err(e))) => {
            stop_engine(&engine, config.shutdown_grace).await;
            return Err(e);
        }
        Some(Err(_)) => {
            stop_engine(&engine, config.shutdown_grace).await;
            return Err(DaemonError::Config(
                "the engine's start thread ended".into(),
            ));
        }
        None => {
            tracing::info!("stopping during the preload");
            crate::notify::notify("STOPPING=1");
            let stops = [stop_tx, http_stop_tx];
            stop_serving(&engine, &config, stops, grpc, http).await;
            println!("cuzk daemon: stopped before serving");
            return Ok(());
        }
    }
    let _ = engine_cell.set(Arc::clone(&engine));
    health.set_serving::<ProvingEngineServer<Service>>().await;
    health
        .set_service_status("", tonic_health::ServingStatus::Serving)
        .await;

    let endpoints = Endpoints {
        pid: std::process::id(),
        listen: listen_text.clone(),
        status_url: status_url.clone(),
    };
    let path = endpoints_file(&config.data_dir);
    let json = serde_json::to_string_pretty(&endpoints).expect("plain struct");
    std::fs::write(&path, json).map_err(|e| DaemonError::Io { path, source: e })?;
    tracing::info!(listen = %listen_text, status = ?status_url, "serving");
    println!(
        "cuzk daemon: serving on {listen_text}{}",
        status_url
            .as_deref()
            .map(|u| format!(", status page {u}"))
            .unwrap_or_default()
    );

    crate::notify::notify("READY=1");

    tokio::pin!(grpc);
    let early = tokio::select! {
        _ = &mut shutdown => None,
        r = &mut grpc => Some(r),
    };
    if let Some(r) = early {
        let r = r.map_err(|e| DaemonError::Config(format!("gRPC server task: {e}")))?;
        return r.map_err(|e| DaemonError::Config(format!("gRPC server: {e}")));
    }
    tracing::info!("shutting down: no new jobs; running ones get the grace period");
    crate::notify::notify("STOPPING=1");
    health
        .set_not_serving::<ProvingEngineServer<Service>>()
        .await;
    health
        .set_service_status("", tonic_health::ServingStatus::NotServing)
        .await;
    stop_serving(&engine, &config, [stop_tx, http_stop_tx], grpc, http).await;
    let _ = std::fs::remove_file(endpoints_file(&config.data_dir));
    println!("cuzk daemon: stopped");
    Ok(())
}
