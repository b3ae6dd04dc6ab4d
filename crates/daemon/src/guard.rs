//! A tower layer in front of every gRPC service (ProvingEngine, health, reflection): the
//! bearer token, compared in constant time, and the message-size limit, answered with
//! RESOURCE_EXHAUSTED from the gRPC frame header before the message is read. It counts every
//! request answered with an error status, its own refusals and the services'
//! ([`crate::metrics::REFUSED`]).
//!
//! tonic's own decoding limit answers OUT_OF_RANGE after buffering; gRPC's convention (and
//! Go's client) expect RESOURCE_EXHAUSTED, and a 5-byte header is enough to refuse.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderValue, Request, Response};
use http_body_util::BodyExt;
use tonic::body::BoxBody;
use tonic::{Code, Status};

/// What the guard checks.
#[derive(Clone, Debug)]
pub struct GuardConfig {
    /// The bearer token every call must carry (`authorization: Bearer <token>`); None: no
    /// token is required.
    pub token: Option<Arc<str>>,
    /// The largest gRPC message accepted, in bytes.
    pub max_message_size: usize,
}

/// The layer.
#[derive(Clone, Debug)]
pub struct GuardLayer {
    config: GuardConfig,
}

impl GuardLayer {
    /// A layer checking `config`.
    pub fn new(config: GuardConfig) -> Self {
        Self { config }
    }
}

impl<S> tower::Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Guard {
            inner,
            config: self.config.clone(),
        }
    }
}

/// The service the layer makes.
#[derive(Clone, Debug)]
pub struct Guard<S> {
    inner: S,
    config: GuardConfig,
}

/// A trailers-only gRPC response carrying `status`, counted.
fn refuse(status: Status) -> Response<BoxBody> {
    crate::metrics::REFUSED.count(status.code());
    let mut response = Response::new(tonic::body::empty_body());
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(status.code() as i32));
    if let Ok(v) = HeaderValue::from_str(&percent_encode(status.message())) {
        headers.insert("grpc-message", v);
    }
    response
}

/// gRPC's percent-encoding of grpc-message: printable ASCII except `%` stays.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether the request's `authorization` header carries `token`, compared in constant time.
fn authorized(request: &Request<BoxBody>, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let Some(value) = request.headers().get("authorization") else {
        return false;
    };
    let Some(given) = value.as_bytes().strip_prefix(b"Bearer ") else {
        return false;
    };
    // `ct_eq` on slices of different lengths is false without comparing contents; the
    // length of the token is not secret.
    given.ct_eq(token.as_bytes()).into()
}

impl<S> tower::Service<Request<BoxBody>> for Guard<S>
where
    S: tower::Service<Request<BoxBody>, Response = Response<BoxBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<BoxBody>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<BoxBody>) -> Self::Future {
        // The clone that was made ready goes into the future; the fresh clone stays.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = self.config.clone();
        Box::pin(async move {
            if let Some(token) = &config.token {
                if !authorized(&request, token) {
                    return Ok(refuse(Status::new(
                        Code::Unauthenticated,
                        "missing or wrong bearer token",
                    )));
                }
            }
            let (parts, mut body) = request.into_parts();
            // Read until the first message's 5-byte header (compression flag, big-endian
            // length) is in hand; everything read is put back in front of the rest.
            let mut head = BytesMut::new();
            let mut trailers = None;
            let mut ended = false;
            while head.len() < 5 {
                match body.frame().await {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(mut data) => {
                            head.extend_from_slice(&data.copy_to_bytes(data.remaining()))
                        }
                        Err(frame) => {
                            trailers = frame.into_trailers().ok();
                            ended = true;
                            break;
                        }
                    },
                    Some(Err(status)) => return Ok(refuse(status)),
                    None => {
                        ended = true;
                        break;
                    }
                }
            }
            if head.len() >= 5 {
                let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
                if len > config.max_message_size {
                    return Ok(refuse(Status::resource_exhausted(format!(
                        "the request is {len} bytes; the limit is {} bytes ([daemon] max_message_size)",
                        config.max_message_size
                    ))));
                }
            }
            let head: Bytes = head.freeze();
            let body = if ended {
                let mut frames = vec![http_body::Frame::data(head)];
                if let Some(t) = trailers {
                    frames.push(http_body::Frame::trailers(t));
                }
                let stream = futures_util::stream::iter(frames.into_iter().map(Ok::<_, Status>));
                http_body_util::StreamBody::new(stream).boxed_unsync()
            } else {
                let first = futures_util::stream::once(async move {
                    Ok::<_, Status>(http_body::Frame::data(head))
                });
                let rest = http_body_util::BodyStream::new(body);
                use futures_util::StreamExt;
                http_body_util::StreamBody::new(first.chain(rest)).boxed_unsync()
            };
            let response = inner.call(Request::from_parts(parts, body)).await?;
            // A unary call's error is a trailers-only response: its status is in the headers.
            // (A stream's error in its trailers, the health service's `Watch`, is not counted.)
            if let Some(code) = response
                .headers()
                .get("grpc-status")
                .and_then(|v| v.to_str().ok()?.parse::<i32>().ok())
            {
                crate::metrics::REFUSED.count(Code::from_i32(code));
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::metrics::REFUSED;
    use crate::proto::{self, proving_engine_server::ProvingEngineServer};
    use crate::service::Service;

    /// The guard counts what it refuses and what the service behind it refuses, once each, and
    /// the daemon's metrics carry the counts, with the build and the process's start. The only
    /// test of this crate whose requests pass through the guard, so it may count the process's
    /// refusals exactly.
    #[test]
    fn refused_requests_are_counted_by_code() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let cell = Arc::new(OnceLock::new());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let guard = GuardLayer::new(GuardConfig {
                token: Some(Arc::from("a-token")),
                max_message_size: 1024,
            });
            let server = tonic::transport::Server::builder()
                .layer(guard)
                .add_service(ProvingEngineServer::new(Service::new(Arc::clone(&cell))))
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener));
            tokio::spawn(server);
            let codes = [
                (Code::Unauthenticated, "UNAUTHENTICATED"),
                (Code::Unavailable, "UNAVAILABLE"),
                (Code::ResourceExhausted, "RESOURCE_EXHAUSTED"),
            ];
            let before = codes.map(|(c, _)| REFUSED.get(c));

            let mut stranger = crate::client::connect(&addr, None).await.unwrap();
            let r = stranger.get_status(proto::GetStatusRequest {}).await;
            assert_eq!(r.unwrap_err().code(), Code::Unauthenticated);
            let mut c = crate::client::connect(&addr, Some("a-token"))
                .await
                .unwrap();
            // No engine yet: the service answers UNAVAILABLE.
            let r = c.get_status(proto::GetStatusRequest {}).await;
            assert_eq!(r.unwrap_err().code(), Code::Unavailable);
            let big = proto::SubmitProofRequest {
                vanilla_proof: vec![7; 4096],
                ..Default::default()
            };
            let r = c.submit_proof(big).await;
            assert_eq!(r.unwrap_err().code(), Code::ResourceExhausted);

            // The daemon's families, as `/metrics` and `GetMetrics` write them after the
            // engine's (whose own are checked in cuzk-engine).
            let mut text = String::new();
            crate::metrics::write(&mut text);
            let samples =
                cuzk_engine::parse_exposition(&text).unwrap_or_else(|why| panic!("{why}\n{text}"));
            let get = |series: &str| {
                samples
                    .iter()
                    .find(|(s, _)| s == series)
                    .map(|(_, v)| *v)
                    .unwrap_or_else(|| panic!("no {series} in\n{text}"))
            };
            for ((code, name), before) in codes.into_iter().zip(before) {
                assert_eq!(REFUSED.get(code), before + 1, "{code:?} counted once");
                let series = format!("cuzk_requests_refused_total{{code=\"{name}\"}}");
                assert_eq!(get(&series), (before + 1) as f64);
            }
            let version = env!("CARGO_PKG_VERSION");
            assert!(
                samples.iter().any(|(s, v)| {
                    s.starts_with(&format!("cuzk_build_info{{version=\"{version}\"")) && *v == 1.0
                }),
                "{text}"
            );
            if cfg!(target_os = "linux") {
                assert!(get("process_start_time_seconds") > 1.5e9);
            }
        });
    }
}
