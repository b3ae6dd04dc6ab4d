//! A tower layer in front of every gRPC service (ProvingEngine, health, reflection): the
//! bearer token, compared in constant time, and the message-size limit, answered with
//! RESOURCE_EXHAUSTED from the gRPC frame header before the message is read.
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

/// A trailers-only gRPC response carrying `status`.
fn refuse(status: Status) -> Response<BoxBody> {
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
            inner.call(Request::from_parts(parts, body)).await
        })
    }
}
