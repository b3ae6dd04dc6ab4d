//! The `tracing` layer that records stage, wait and partition spans.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::timeline::{Demand, SpanKind, SpanRecord, Timeline};

/// Where the recorder reads the time: nanoseconds since some fixed start.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Nanoseconds since the clock's start; never decreases.
    fn now_ns(&self) -> u64;
}

/// The real clock: an [`Instant`] taken when the clock is made.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    start: Instant,
}

impl MonotonicClock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A clock moved by hand, for deterministic tests. Clones share the time.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now_ns: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `ns` nanoseconds.
    pub fn advance_ns(&self, ns: u64) {
        self.now_ns.fetch_add(ns, Ordering::SeqCst);
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: u64) {
        self.advance_ns(ms * 1_000_000);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.now_ns.load(Ordering::SeqCst)
    }
}

#[derive(Debug)]
struct Inner {
    clock: Box<dyn Clock>,
    closed: Mutex<Vec<SpanRecord>>,
}

/// A [`Layer`] that records every span named after a stage, a wait or `partition`, with its
/// `job`, `partition`, `worker` and `device` fields (inherited from the nearest recorded ancestor
/// when the span does not set them) and its start (first enter) and end (close).
///
/// ```
/// use cuzk_telemetry::Recorder;
/// use tracing_subscriber::prelude::*;
///
/// let (recorder, handle) = Recorder::new();
/// let subscriber = tracing_subscriber::registry().with(recorder);
/// tracing::subscriber::with_default(subscriber, || {
///     let _partition = tracing::info_span!("partition", job = 0u64, partition = 3u64,
///         worker = 1u64, device = "gpu0").entered();
///     let _ntt = tracing::info_span!("ntt_h").entered();
/// });
/// let timeline = handle.snapshot();
/// assert_eq!(timeline.spans.len(), 2);
/// assert_eq!(timeline.spans[1].partition, Some(3));
/// ```
#[derive(Debug)]
pub struct Recorder {
    inner: Arc<Inner>,
}

/// The reading side of a [`Recorder`]: takes snapshots of the spans closed so far.
#[derive(Debug, Clone)]
pub struct RecorderHandle {
    inner: Arc<Inner>,
}

impl Recorder {
    /// A recorder on the real clock (zero = now) and the handle to read it.
    pub fn new() -> (Self, RecorderHandle) {
        Self::with_clock(MonotonicClock::new())
    }

    /// A recorder reading `clock`, for deterministic tests ([`ManualClock`]).
    pub fn with_clock(clock: impl Clock) -> (Self, RecorderHandle) {
        let inner = Arc::new(Inner {
            clock: Box::new(clock),
            closed: Mutex::new(Vec::new()),
        });
        (
            Self {
                inner: Arc::clone(&inner),
            },
            RecorderHandle { inner },
        )
    }
}

impl RecorderHandle {
    /// The spans closed so far, as a [`Timeline`]. Spans still open are not included.
    pub fn snapshot(&self) -> Timeline {
        let closed = self
            .inner
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Timeline::new(closed.clone())
    }

    /// Forgets the spans closed so far (between benchmark runs, say).
    pub fn clear(&self) {
        self.inner
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// The fields telemetry reads from a span.
#[derive(Debug, Clone, Default)]
struct Fields {
    job: Option<u64>,
    partition: Option<u64>,
    worker: Option<u64>,
    device: Option<String>,
    /// Device time reported by the span itself (added up; not inherited).
    gpu_ns: Option<u64>,
    stage_bytes: Option<u64>,
    compute_bytes: Option<u64>,
}

impl Fields {
    fn inherit(&mut self, parent: &Fields) {
        self.job = self.job.or(parent.job);
        self.partition = self.partition.or(parent.partition);
        self.worker = self.worker.or(parent.worker);
        if self.device.is_none() {
            self.device.clone_from(&parent.device);
        }
    }

    fn set_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "job" => self.job = Some(value),
            "partition" => self.partition = Some(value),
            "worker" => self.worker = Some(value),
            "device" => self.device = Some(value.to_string()),
            "gpu_ns" => self.gpu_ns = Some(self.gpu_ns.unwrap_or(0).saturating_add(value)),
            "stage_bytes" => self.stage_bytes = Some(value),
            "compute_bytes" => self.compute_bytes = Some(value),
            _ => {}
        }
    }

    fn demand(&self) -> Option<Demand> {
        Some(Demand {
            stage_bytes: self.stage_bytes?,
            compute_bytes: self.compute_bytes?,
        })
    }
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set_u64(field, value);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.set_u64(field, value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "device" => self.device = Some(value.to_owned()),
            "job" | "partition" | "worker" => {
                if let Ok(v) = value.parse() {
                    self.set_u64(field, v);
                }
            }
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%x` and `?x` fields arrive here; a `?` string carries quotes, which are not part of it.
        let text = format!("{value:?}");
        self.record_str(field, text.trim_matches('"'));
    }
}

/// What the recorder keeps in a span's extensions while it is open.
#[derive(Debug)]
struct Open {
    kind: SpanKind,
    fields: Fields,
    created_ns: u64,
    entered_ns: Option<u64>,
}

impl<S> Layer<S> for Recorder
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(kind) = SpanKind::of(attrs.metadata().name()) else {
            return;
        };
        let Some(span) = ctx.span(id) else {
            return;
        };
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let mut ancestor = span.parent();
        while let Some(parent) = ancestor {
            if let Some(open) = parent.extensions().get::<Open>() {
                fields.inherit(&open.fields);
                break;
            }
            ancestor = parent.parent();
        }
        span.extensions_mut().insert(Open {
            kind,
            fields,
            created_ns: self.inner.clock.now_ns(),
            entered_ns: None,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(open) = span.extensions_mut().get_mut::<Open>() {
                values.record(&mut open.fields);
            }
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(open) = span.extensions_mut().get_mut::<Open>() {
                if open.entered_ns.is_none() {
                    open.entered_ns = Some(self.inner.clock.now_ns());
                }
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        let start_ns = open.entered_ns.unwrap_or(open.created_ns);
        let record = SpanRecord {
            name: span.name().to_owned(),
            kind: open.kind,
            job: open.fields.job,
            partition: open.fields.partition,
            worker: open.fields.worker,
            gpu_ns: open.fields.gpu_ns,
            demand: open.fields.demand(),
            device: open.fields.device,
            start_ns,
            end_ns: self.inner.clock.now_ns().max(start_ns),
        };
        self.inner
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record);
    }
}
