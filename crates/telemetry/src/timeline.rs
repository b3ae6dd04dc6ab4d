//! The recorded spans of a run, as plain data.

use serde::{Deserialize, Serialize};

use crate::Stage;

/// The waits a partition can spend time in, in summary order.
pub const WAITS: [&str; 3] = ["lock_wait", "vram_wait", "queue_wait"];

/// The name of the span covering one partition's whole proof, parent of its stage and wait spans.
pub const PARTITION: &str = "partition";

/// What a recorded span measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// One of [`Stage::ALL`]: work.
    Stage,
    /// One of [`WAITS`]: time blocked on a lock, on VRAM, or in a queue.
    Wait,
    /// A [`PARTITION`] span: one partition's proof from start to end.
    Partition,
}

impl SpanKind {
    /// The kind of a span called `name`, or `None` for names telemetry does not record.
    pub fn of(name: &str) -> Option<Self> {
        if Stage::from_name(name).is_some() {
            Some(Self::Stage)
        } else if WAITS.contains(&name) {
            Some(Self::Wait)
        } else if name == PARTITION {
            Some(Self::Partition)
        } else {
            None
        }
    }
}

/// One closed span: what, for whom, where, and when (nanoseconds from the recorder's start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanRecord {
    /// The span's name: a stage, a wait, or `partition`.
    pub name: String,
    /// What the span measures.
    pub kind: SpanKind,
    /// The job (proof request) the partition belongs to.
    pub job: Option<u64>,
    /// The partition index within its job.
    pub partition: Option<u64>,
    /// The worker that ran it.
    pub worker: Option<u64>,
    /// Where it ran: `cpu`, `gpu0`, ...
    pub device: Option<String>,
    /// Start, in nanoseconds from the recorder's start.
    pub start_ns: u64,
    /// End, in nanoseconds from the recorder's start (never before `start_ns`).
    pub end_ns: u64,
    /// The device's own time for the span's work, from CUDA events (a stage on a GPU); `None`
    /// for host work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_ns: Option<u64>,
    /// For a wait for device memory or a device lock: the device memory the partition asked
    /// for, staged inputs and compute workspace in bytes (what the interlock simulator needs
    /// to replay the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand: Option<Demand>,
}

/// The device memory a partition asks for before its device stages, as recorded on its wait
/// span (`stage_bytes` and `compute_bytes` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Demand {
    /// Its staged inputs.
    pub stage_bytes: u64,
    /// Its compute workspace.
    pub compute_bytes: u64,
}

impl SpanRecord {
    /// A span of `name` (its kind derived from the name; `None` for an unknown name).
    pub fn new(name: &str, start_ns: u64, end_ns: u64) -> Option<Self> {
        Some(Self {
            name: name.to_owned(),
            kind: SpanKind::of(name)?,
            job: None,
            partition: None,
            worker: None,
            device: None,
            start_ns,
            end_ns: end_ns.max(start_ns),
            gpu_ns: None,
            demand: None,
        })
    }

    /// Sets the job and partition.
    pub fn for_partition(mut self, job: u64, partition: u64) -> Self {
        self.job = Some(job);
        self.partition = Some(partition);
        self
    }

    /// Sets the worker and device.
    pub fn on(mut self, worker: u64, device: &str) -> Self {
        self.worker = Some(worker);
        self.device = Some(device.to_owned());
        self
    }

    /// Sets the device time measured by CUDA events.
    pub fn with_gpu_ns(mut self, gpu_ns: u64) -> Self {
        self.gpu_ns = Some(gpu_ns);
        self
    }

    /// Sets the device memory asked for (a wait span).
    pub fn with_demand(mut self, demand: Demand) -> Self {
        self.demand = Some(demand);
        self
    }

    /// `end_ns - start_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    /// `(job, partition)` when both are known.
    pub fn partition_key(&self) -> Option<(u64, u64)> {
        Some((self.job?, self.partition?))
    }
}

/// A run's spans, ordered by start time: what the exports and summaries are computed from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeline {
    /// The spans, ordered by start, then end, then name.
    pub spans: Vec<SpanRecord>,
}

impl Timeline {
    /// A timeline of `spans`, put in order.
    pub fn new(mut spans: Vec<SpanRecord>) -> Self {
        spans.sort_by(|a, b| {
            (a.start_ns, a.end_ns, &a.name, a.worker)
                .cmp(&(b.start_ns, b.end_ns, &b.name, b.worker))
        });
        Self { spans }
    }

    /// The earliest start and latest end of any span; `(0, 0)` when empty.
    pub fn bounds_ns(&self) -> (u64, u64) {
        let start = self.spans.iter().map(|s| s.start_ns).min().unwrap_or(0);
        let end = self.spans.iter().map(|s| s.end_ns).max().unwrap_or(0);
        (start, end)
    }

    /// The wall time the timeline covers, first start to last end.
    pub fn wall_ns(&self) -> u64 {
        let (start, end) = self.bounds_ns();
        end - start
    }

    /// The distinct workers, in order.
    pub fn workers(&self) -> Vec<u64> {
        let mut workers: Vec<u64> = self.spans.iter().filter_map(|s| s.worker).collect();
        workers.sort_unstable();
        workers.dedup();
        workers
    }

    /// The distinct devices, in order.
    pub fn devices(&self) -> Vec<String> {
        let mut devices: Vec<String> = self.spans.iter().filter_map(|s| s.device.clone()).collect();
        devices.sort_unstable();
        devices.dedup();
        devices
    }

    /// The timeline as pretty JSON (its serde form).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a timeline always serialises")
    }

    /// Reads a timeline from its serde JSON form, or from a Chrome trace written by
    /// [`Timeline::to_chrome_trace`].
    pub fn from_json(text: &str) -> Result<Self, crate::TelemetryError> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        if value.get("traceEvents").is_some() {
            return crate::chrome::from_chrome_trace(&value);
        }
        Ok(Self::new(serde_json::from_value::<Timeline>(value)?.spans))
    }
}
