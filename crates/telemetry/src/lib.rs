//! Telemetry for cuzk: where every millisecond of a proof went.
//!
//! # Why
//!
//! The incumbent's two-lock interlock made proofs more than twice as slow, and its team could
//! not see why until they timed every stage and every wait by hand (docs/ARCHITECTURE.md, "Why
//! the arena and the policies"). So cuzk is instrumented from the start: every stage and every
//! wait is a `tracing` span, and this crate turns those spans into numbers and pictures.
//!
//! # The conventions it consumes
//!
//! Each stage runs inside a span named after it ([`Stage::name`], made by [`Stage::span`]:
//! `validate`, `split_vectors`, `prep_msm`, `batch_add`, `tail_msm`, `products`, `ntt_h`, `msm_h`,
//! `epilogue`), each wait inside one of [`WAITS`]
//! (`lock_wait`, `vram_wait`, `queue_wait`), with the fields `job` (u64), `partition` (u64),
//! `worker` (u64) and `device` (a string: `cpu`, `gpu0`, ...). They may nest in a [`PARTITION`]
//! span with the same fields, from which children inherit fields they do not set. Other spans are
//! ignored. This crate depends on no other cuzk crate.
//!
//! Two optional fields, never inherited: a stage that ran on a GPU reports the device's own
//! time for its work, measured with CUDA events, in `gpu_ns` (u64, declared empty when the span
//! is made and recorded after each device operation; the reports of one span add up, since a
//! stage may run several operations); a wait for a device's memory or locks carries the memory
//! the partition asked for in `stage_bytes` and `compute_bytes`.
//!
//! # Use
//!
//! ```
//! use cuzk_telemetry::Recorder;
//! use tracing_subscriber::prelude::*;
//!
//! let (recorder, handle) = Recorder::new();
//! // In a binary: tracing_subscriber::registry().with(recorder).init();
//! let subscriber = tracing_subscriber::registry().with(recorder);
//! tracing::subscriber::with_default(subscriber, || {
//!     let _span = tracing::info_span!("ntt_h", job = 1u64, partition = 0u64, worker = 0u64,
//!         device = "gpu0").entered();
//! });
//! let timeline = handle.snapshot();
//! for line in timeline.partition_summaries() {
//!     println!("{line}"); // job=1 partition=0 worker=0 device=gpu0 total_ms=... ntt_h_ms=...
//! }
//! println!("{}", timeline.run_summary());
//! let _perfetto_json = timeline.to_chrome_trace_string();
//! let _svg = timeline.to_svg_waterfall();
//! ```
//!
//! - [`Recorder`]: the `tracing_subscriber` layer; [`RecorderHandle::snapshot`] gives a
//!   [`Timeline`] of the spans closed so far. [`ManualClock`] makes tests deterministic.
//! - [`PartitionSummary`]: one `key=value` line per partition, every stage and wait in ms, in a
//!   fixed order. [`RunSummary`]: throughput, busy fraction per device (the union of its stage
//!   spans over wall time), p50/p95 of every stage and wait.
//! - [`Timeline::to_chrome_trace`]: Chrome trace JSON that Perfetto opens (`pid` = device,
//!   `tid` = worker); [`Timeline::from_json`] reads it (or the timeline's own JSON) back, which
//!   is how the interlock simulator replays a recorded run.
//! - [`Timeline::to_svg_waterfall`]: one lane per worker, stages coloured, waits hatched.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod chrome;
mod memory;
mod recorder;
mod stage;
mod summary;
mod svg;
mod timeline;

pub use memory::peak_rss_bytes;
pub use recorder::{Clock, ManualClock, MonotonicClock, Recorder, RecorderHandle};
pub use stage::Stage;
pub use summary::{DeviceBusy, PartitionSummary, RunSummary, StageStats};
pub use svg::colour;
pub use timeline::{Demand, SpanKind, SpanRecord, Timeline, PARTITION, WAITS};

/// What reading a timeline back can fail on.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The text is not JSON, or not a timeline's JSON.
    #[error("timeline JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is a trace but not one this crate can read.
    #[error("trace format: {0}")]
    Format(String),
}
