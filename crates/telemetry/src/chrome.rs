//! Chrome trace event JSON: what `chrome://tracing` and Perfetto (ui.perfetto.dev) open.
//!
//! Each span is a complete event (`ph: "X"`) with `ts` and `dur` in microseconds; `pid` is the
//! device (named by a `process_name` metadata event) and `tid` the worker (named by a
//! `thread_name` event). `args` carry the span's fields, so a trace reads back into the same
//! [`Timeline`] ([`Timeline::from_json`]).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::timeline::{SpanKind, SpanRecord, Timeline};
use crate::TelemetryError;

/// The `tid` of spans that name no worker.
const NO_WORKER: u64 = u32::MAX as u64;
/// The device name of spans that name no device.
const NO_DEVICE: &str = "unknown";

fn category(kind: SpanKind) -> &'static str {
    match kind {
        SpanKind::Stage => "stage",
        SpanKind::Wait => "wait",
        SpanKind::Partition => "partition",
    }
}

impl Timeline {
    /// The timeline as a Chrome trace (`{"traceEvents": [...]}`), ready to write to a file that
    /// Perfetto opens.
    pub fn to_chrome_trace(&self) -> Value {
        let device = |s: &SpanRecord| s.device.clone().unwrap_or_else(|| NO_DEVICE.to_owned());
        let mut pids: BTreeMap<String, u64> = BTreeMap::new();
        for span in &self.spans {
            pids.entry(device(span)).or_insert(0);
        }
        for (i, pid) in pids.values_mut().enumerate() {
            *pid = i as u64 + 1;
        }
        let mut events = Vec::new();
        for (name, pid) in &pids {
            events.push(json!({
                "name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                "args": { "name": name },
            }));
        }
        let mut threads: BTreeMap<(u64, u64), ()> = BTreeMap::new();
        for span in &self.spans {
            threads.insert((pids[&device(span)], span.worker.unwrap_or(NO_WORKER)), ());
        }
        for (pid, tid) in threads.keys() {
            let name = if *tid == NO_WORKER {
                "no worker".to_owned()
            } else {
                format!("worker {tid}")
            };
            events.push(json!({
                "name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                "args": { "name": name },
            }));
        }
        for span in &self.spans {
            let mut args = serde_json::Map::new();
            if let Some(job) = span.job {
                args.insert("job".into(), job.into());
            }
            if let Some(partition) = span.partition {
                args.insert("partition".into(), partition.into());
            }
            if let Some(worker) = span.worker {
                args.insert("worker".into(), worker.into());
            }
            if let Some(device) = &span.device {
                args.insert("device".into(), device.clone().into());
            }
            if let Some(gpu_ns) = span.gpu_ns {
                args.insert("gpu_ns".into(), gpu_ns.into());
            }
            if let Some(d) = span.demand {
                args.insert("stage_bytes".into(), d.stage_bytes.into());
                args.insert("compute_bytes".into(), d.compute_bytes.into());
            }
            events.push(json!({
                "name": span.name,
                "cat": category(span.kind),
                "ph": "X",
                "ts": span.start_ns as f64 / 1e3,
                "dur": span.duration_ns() as f64 / 1e3,
                "pid": pids[&device(span)],
                "tid": span.worker.unwrap_or(NO_WORKER),
                "args": args,
            }));
        }
        json!({
            "displayTimeUnit": "ms",
            "otherData": { "generator": "cuzk-telemetry" },
            "traceEvents": events,
        })
    }

    /// [`Timeline::to_chrome_trace`] as pretty text.
    pub fn to_chrome_trace_string(&self) -> String {
        serde_json::to_string_pretty(&self.to_chrome_trace()).expect("JSON values serialise")
    }
}

/// Reads back the complete events of a trace written by [`Timeline::to_chrome_trace`]; events
/// of other kinds or with unknown names are skipped.
pub(crate) fn from_chrome_trace(trace: &Value) -> Result<Timeline, TelemetryError> {
    let events = trace
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or_else(|| TelemetryError::Format("traceEvents is not an array".into()))?;
    let mut spans = Vec::new();
    for event in events {
        if event.get("ph").and_then(Value::as_str) != Some("X") {
            continue;
        }
        let name = event.get("name").and_then(Value::as_str).unwrap_or("");
        let micros = |key: &str| {
            event
                .get(key)
                .and_then(Value::as_f64)
                .ok_or_else(|| TelemetryError::Format(format!("event {name} has no {key}")))
        };
        let start_ns = (micros("ts")? * 1e3).round().max(0.0) as u64;
        let end_ns = start_ns + (micros("dur")? * 1e3).round().max(0.0) as u64;
        let Some(mut span) = SpanRecord::new(name, start_ns, end_ns) else {
            continue;
        };
        let args = event.get("args");
        let number = |key: &str| args.and_then(|a| a.get(key)).and_then(Value::as_u64);
        span.job = number("job");
        span.partition = number("partition");
        span.worker = number("worker");
        span.device = args
            .and_then(|a| a.get("device"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        span.gpu_ns = number("gpu_ns");
        span.demand = match (number("stage_bytes"), number("compute_bytes")) {
            (Some(stage_bytes), Some(compute_bytes)) => Some(crate::Demand {
                stage_bytes,
                compute_bytes,
            }),
            _ => None,
        };
        spans.push(span);
    }
    Ok(Timeline::new(spans))
}
