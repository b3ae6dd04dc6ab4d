//! A client of the daemon: a channel to `unix:///path` or `host:port`, with the bearer token
//! on every call when one is given.

use std::path::PathBuf;

use hyper_util::rt::TokioIo;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

use crate::proto::proving_engine_client::ProvingEngineClient;
use crate::DaemonError;

/// Adds `authorization: Bearer <token>` to each call.
#[derive(Clone, Debug)]
pub struct Auth {
    header: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Auth {
    /// An interceptor sending `token` (none: sending nothing).
    pub fn new(token: Option<&str>) -> Result<Self, DaemonError> {
        let header = token
            .map(|t| {
                MetadataValue::try_from(format!("Bearer {t}"))
                    .map_err(|e| DaemonError::Client(format!("token: {e}")))
            })
            .transpose()?;
        Ok(Self { header })
    }
}

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(h) = &self.header {
            request.metadata_mut().insert("authorization", h.clone());
        }
        Ok(request)
    }
}

/// The client type.
pub type Client = ProvingEngineClient<InterceptedService<Channel, Auth>>;

/// A channel to `addr` (`unix:///path/to.sock`, `host:port` or `http://host:port`).
pub async fn channel(addr: &str) -> Result<Channel, DaemonError> {
    let bad = |e: &dyn std::fmt::Display| DaemonError::Client(format!("{addr}: {e}"));
    if let Some(path) = addr.strip_prefix("unix://") {
        let path = PathBuf::from(path);
        // The URI is not used for unix sockets; the connector dials the path.
        Endpoint::try_from("http://[::1]:1")
            .map_err(|e| bad(&e))?
            .connect_with_connector(tower::service_fn(move |_| {
                let path = path.clone();
                async move {
                    Ok::<_, std::io::Error>(TokioIo::new(
                        tokio::net::UnixStream::connect(path).await?,
                    ))
                }
            }))
            .await
            .map_err(|e| bad(&crate::error_text(&e)))
    } else {
        let uri = if addr.contains("://") {
            addr.to_string()
        } else {
            format!("http://{addr}")
        };
        Endpoint::try_from(uri)
            .map_err(|e| bad(&e))?
            .connect()
            .await
            .map_err(|e| bad(&crate::error_text(&e)))
    }
}

/// A client of the daemon at `addr`, sending `token` if given.
pub async fn connect(addr: &str, token: Option<&str>) -> Result<Client, DaemonError> {
    let header = token
        .map(|t| {
            MetadataValue::try_from(format!("Bearer {t}"))
                .map_err(|e| DaemonError::Client(format!("token: {e}")))
        })
        .transpose()?;
    let channel = channel(addr).await?;
    Ok(
        ProvingEngineClient::with_interceptor(channel, Auth { header })
            .max_decoding_message_size(usize::MAX)
            .max_encoding_message_size(usize::MAX),
    )
}
