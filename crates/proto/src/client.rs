//! A client of the daemon: a channel to `unix:///path` or `host:port` (over TLS with a
//! [`ClientTls`]: the CA that signed the daemon's certificate, and for mutual TLS the client's
//! own), with the bearer token on every call when one is given.

use std::path::{Path, PathBuf};

use hyper_util::rt::TokioIo;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Request, Status};

use crate::proving_engine_client::ProvingEngineClient;

/// Why a client could not be made: what failed (naming the address or file), and the error
/// behind it, if any.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ClientError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ClientError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    fn caused(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }
}

/// Adds `authorization: Bearer <token>` to each call.
#[derive(Clone, Debug)]
pub struct Auth {
    header: Option<MetadataValue<tonic::metadata::Ascii>>,
}

impl Auth {
    /// An interceptor sending `token` (none: sending nothing).
    pub fn new(token: Option<&str>) -> Result<Self, ClientError> {
        let header = token
            .map(|t| {
                MetadataValue::try_from(format!("Bearer {t}"))
                    .map_err(|e| ClientError::caused("the token is not a valid header value", e))
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

/// TLS as a client: whom to trust, and what to present.
#[derive(Clone, Debug, Default)]
pub struct ClientTls {
    /// The CA certificate (PEM) that signed the daemon's certificate.
    pub ca_pem: Vec<u8>,
    /// The client's certificate chain and key (PEM), for a daemon that requires them.
    pub identity_pem: Option<(Vec<u8>, Vec<u8>)>,
    /// The name the daemon's certificate must carry; default: the address's host.
    pub domain: Option<String>,
}

impl ClientTls {
    /// Reads the CA file and, for mutual TLS, the client's certificate and key files.
    pub fn read(
        ca: &Path,
        identity: Option<(&Path, &Path)>,
        domain: Option<String>,
    ) -> Result<Self, ClientError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| ClientError::caused(p.display().to_string(), e))
        };
        Ok(Self {
            ca_pem: read(ca)?,
            identity_pem: identity
                .map(|(cert, key)| Ok::<_, ClientError>((read(cert)?, read(key)?)))
                .transpose()?,
            domain,
        })
    }

    fn config(&self) -> ClientTlsConfig {
        let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&self.ca_pem));
        if let Some((cert, key)) = &self.identity_pem {
            config = config.identity(Identity::from_pem(cert, key));
        }
        if let Some(domain) = &self.domain {
            config = config.domain_name(domain.clone());
        }
        config
    }
}

/// A channel to `addr` (`unix:///path/to.sock`, `host:port` or `http://host:port`).
pub async fn channel(addr: &str) -> Result<Channel, ClientError> {
    channel_with(addr, None).await
}

/// A channel to `addr`, over TLS when `tls` is given (`host:port` or `https://host:port`).
pub async fn channel_with(addr: &str, tls: Option<&ClientTls>) -> Result<Channel, ClientError> {
    let bad = |e: &dyn std::fmt::Display| ClientError::new(format!("{addr}: {e}"));
    let failed =
        |e: tonic::transport::Error| ClientError::caused(format!("connecting to {addr}"), e);
    if let Some(path) = addr.strip_prefix("unix://") {
        if tls.is_some() {
            return Err(bad(&"TLS is for TCP addresses, not unix sockets"));
        }
        let path = PathBuf::from(path);
        // The URI is not used for unix sockets; the connector dials the path.
        Endpoint::try_from("http://[::1]:1")
            .map_err(failed)?
            .connect_with_connector(tower::service_fn(move |_| {
                let path = path.clone();
                async move {
                    Ok::<_, std::io::Error>(TokioIo::new(
                        tokio::net::UnixStream::connect(path).await?,
                    ))
                }
            }))
            .await
            .map_err(failed)
    } else {
        let uri = if addr.contains("://") {
            addr.to_string()
        } else if tls.is_some() {
            format!("https://{addr}")
        } else {
            format!("http://{addr}")
        };
        if uri.starts_with("https://") && tls.is_none() {
            return Err(bad(
                &"an https address needs the CA that signed the daemon's \
                 certificate (--tls-ca)",
            ));
        }
        let mut endpoint = Endpoint::try_from(uri).map_err(failed)?;
        if let Some(tls) = tls {
            endpoint = endpoint.tls_config(tls.config()).map_err(failed)?;
        }
        endpoint.connect().await.map_err(failed)
    }
}

/// A client of the daemon at `addr`, sending `token` if given.
pub async fn connect(addr: &str, token: Option<&str>) -> Result<Client, ClientError> {
    connect_with(addr, token, None).await
}

/// A client of the daemon at `addr`, over TLS when `tls` is given, sending `token` if given.
pub async fn connect_with(
    addr: &str,
    token: Option<&str>,
    tls: Option<&ClientTls>,
) -> Result<Client, ClientError> {
    let header = token
        .map(|t| {
            MetadataValue::try_from(format!("Bearer {t}"))
                .map_err(|e| ClientError::caused("the token is not a valid header value", e))
        })
        .transpose()?;
    let channel = channel_with(addr, tls).await?;
    Ok(
        ProvingEngineClient::with_interceptor(channel, Auth { header })
            .max_decoding_message_size(usize::MAX)
            .max_encoding_message_size(usize::MAX),
    )
}
