//! Per-partition summary lines and the per-run summary.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::timeline::{SpanKind, SpanRecord, Timeline, WAITS};
use crate::Stage;

/// One partition's time, stage by stage and wait by wait.
///
/// Its `Display` is one line of `key=value` pairs in a fixed order (every stage, then every wait,
/// in milliseconds with one decimal), so lines are grep-able and stable for snapshots:
///
/// `job=0 partition=3 worker=1 device=gpu0 total_ms=6200.0 split_vectors_ms=600.0 ... queue_wait_ms=0.0`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSummary {
    /// The job.
    pub job: u64,
    /// The partition within the job.
    pub partition: u64,
    /// The worker that ran it (from the `partition` span, else its first span).
    pub worker: Option<u64>,
    /// The device it ran on (from the `partition` span, else its first span off the CPU).
    pub device: Option<String>,
    /// Start of its first span.
    pub start_ns: u64,
    /// End of its last span.
    pub end_ns: u64,
    /// Its `partition` span's duration, else first start to last end.
    pub total_ns: u64,
    /// Time in each of [`Stage::ALL`], in that order (spans of one name are added up).
    pub stage_ns: [u64; Stage::ALL.len()],
    /// Time in each of [`WAITS`], in that order.
    pub wait_ns: [u64; WAITS.len()],
    /// The device's own time for its stages, from CUDA events (0 on the CPU).
    #[serde(default)]
    pub gpu_ns: u64,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl fmt::Display for PartitionSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job={} partition={}", self.job, self.partition)?;
        match self.worker {
            Some(w) => write!(f, " worker={w}")?,
            None => write!(f, " worker=-")?,
        }
        write!(f, " device={}", self.device.as_deref().unwrap_or("-"))?;
        write!(f, " total_ms={:.1}", ms(self.total_ns))?;
        for (stage, ns) in Stage::ALL.iter().zip(self.stage_ns) {
            write!(f, " {stage}_ms={:.1}", ms(ns))?;
        }
        for (name, ns) in WAITS.iter().zip(self.wait_ns) {
            write!(f, " {name}_ms={:.1}", ms(ns))?;
        }
        if self.gpu_ns > 0 {
            write!(f, " gpu_ms={:.1}", ms(self.gpu_ns))?;
        }
        Ok(())
    }
}

/// Busy time of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceBusy {
    /// The device.
    pub device: String,
    /// The union of its stage spans (overlapping spans counted once); for a device whose
    /// stages report CUDA-event time (`gpu_ns`), the union of those times, each placed at the
    /// end of its span.
    pub busy_ns: u64,
    /// `busy_ns` over the run's wall time.
    pub busy_fraction: f64,
    /// The device's own time for those stages, from CUDA events, added up over every worker
    /// (0 when none was reported; concurrent work of several workers counts once per worker).
    #[serde(default)]
    pub gpu_ns: u64,
}

/// Percentiles of one stage or wait over the partitions that have it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageStats {
    /// The stage or wait.
    pub name: String,
    /// Partitions that spent time in it.
    pub count: usize,
    /// Median per-partition time (nearest rank).
    pub p50_ns: u64,
    /// 95th percentile per-partition time (nearest rank).
    pub p95_ns: u64,
    /// Sum over all partitions.
    pub total_ns: u64,
}

/// The run at a glance: throughput, busy fraction per device, percentiles per stage and wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// First start to last end of all spans.
    pub wall_ns: u64,
    /// Distinct `(job, partition)` pairs seen.
    pub partitions: usize,
    /// Partitions per second of wall time.
    pub partitions_per_s: f64,
    /// Every device that ran a stage, in name order.
    pub devices: Vec<DeviceBusy>,
    /// Every stage and every wait, in summary order (stages, then waits).
    pub stages: Vec<StageStats>,
}

impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "run partitions={} wall_ms={:.1} throughput_per_s={:.3}",
            self.partitions,
            ms(self.wall_ns),
            self.partitions_per_s
        )?;
        for d in &self.devices {
            write!(
                f,
                "device={} busy_ms={:.1} busy_fraction={:.3}",
                d.device,
                ms(d.busy_ns),
                d.busy_fraction
            )?;
            if d.gpu_ns > 0 {
                write!(f, " gpu_ms={:.1}", ms(d.gpu_ns))?;
            }
            writeln!(f)?;
        }
        for s in &self.stages {
            writeln!(
                f,
                "stage={} n={} p50_ms={:.1} p95_ms={:.1} total_ms={:.1}",
                s.name,
                s.count,
                ms(s.p50_ns),
                ms(s.p95_ns),
                ms(s.total_ns)
            )?;
        }
        Ok(())
    }
}

/// Nearest-rank percentile of sorted values; 0 when empty.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Total length of the union of `[start, end)` intervals.
pub(crate) fn union_ns(mut intervals: Vec<(u64, u64)>) -> u64 {
    intervals.sort_unstable();
    let mut total = 0;
    let mut current: Option<(u64, u64)> = None;
    for (s, e) in intervals {
        match current {
            Some((cs, ce)) if s <= ce => current = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                current = Some((s, e));
            }
            None => current = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = current {
        total += ce - cs;
    }
    total
}

impl Timeline {
    /// One summary per partition, ordered by `(job, partition)`. Spans without a job and a
    /// partition are left out.
    pub fn partition_summaries(&self) -> Vec<PartitionSummary> {
        let mut by_key: BTreeMap<(u64, u64), Vec<&SpanRecord>> = BTreeMap::new();
        for span in &self.spans {
            if let Some(key) = span.partition_key() {
                by_key.entry(key).or_default().push(span);
            }
        }
        by_key
            .into_iter()
            .map(|((job, partition), spans)| summarise(job, partition, &spans))
            .collect()
    }

    /// The run summary: throughput, busy fraction per device, p50/p95 per stage and wait.
    pub fn run_summary(&self) -> RunSummary {
        let wall_ns = self.wall_ns();
        let partitions = self.partition_summaries();
        // Per device: its stage spans, and the device-time intervals of those that report
        // one (the span's last `gpu_ns`: its device work ends when the span does).
        #[derive(Default)]
        struct Busy {
            spans: Vec<(u64, u64)>,
            timed: Vec<(u64, u64)>,
            gpu_ns: u64,
        }
        let mut busy: BTreeMap<&str, Busy> = BTreeMap::new();
        for span in &self.spans {
            if span.kind == SpanKind::Stage {
                if let Some(device) = &span.device {
                    let entry = busy.entry(device).or_default();
                    entry.spans.push((span.start_ns, span.end_ns));
                    if let Some(g) = span.gpu_ns {
                        let from = span.end_ns.saturating_sub(g).max(span.start_ns);
                        entry.timed.push((from, span.end_ns));
                        entry.gpu_ns += g;
                    }
                }
            }
        }
        let fraction = |ns: u64| {
            if wall_ns == 0 {
                0.0
            } else {
                ns as f64 / wall_ns as f64
            }
        };
        let devices = busy
            .into_iter()
            .map(|(device, b)| {
                // A device that reports its own time is busy for that time only (a GPU
                // backend's host stages carry its name too); else for its stages' spans.
                let busy_ns = union_ns(if b.timed.is_empty() { b.spans } else { b.timed });
                DeviceBusy {
                    device: device.to_owned(),
                    busy_ns,
                    busy_fraction: fraction(busy_ns),
                    gpu_ns: b.gpu_ns,
                }
            })
            .collect();
        let columns = Stage::ALL
            .iter()
            .map(|s| {
                (
                    s.name(),
                    partitions.iter().map(move |p| p.stage_ns[s.index()]),
                )
            })
            .map(|(name, values)| (name, values.collect::<Vec<u64>>()))
            .chain(
                WAITS
                    .iter()
                    .enumerate()
                    .map(|(i, name)| (*name, partitions.iter().map(|p| p.wait_ns[i]).collect())),
            );
        let stages = columns
            .map(|(name, values)| {
                let mut values: Vec<u64> = values.into_iter().filter(|&v| v > 0).collect();
                values.sort_unstable();
                StageStats {
                    name: name.to_owned(),
                    count: values.len(),
                    p50_ns: percentile(&values, 0.50),
                    p95_ns: percentile(&values, 0.95),
                    total_ns: values.iter().sum(),
                }
            })
            .collect();
        let partitions_per_s = if wall_ns == 0 {
            0.0
        } else {
            partitions.len() as f64 / (wall_ns as f64 / 1e9)
        };
        RunSummary {
            wall_ns,
            partitions: partitions.len(),
            partitions_per_s,
            devices,
            stages,
        }
    }
}

fn summarise(job: u64, partition: u64, spans: &[&SpanRecord]) -> PartitionSummary {
    let whole = spans.iter().find(|s| s.kind == SpanKind::Partition);
    let start_ns = spans.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let end_ns = spans.iter().map(|s| s.end_ns).max().unwrap_or(0);
    let worker = whole
        .and_then(|s| s.worker)
        .or_else(|| spans.iter().find_map(|s| s.worker));
    let device = whole
        .and_then(|s| s.device.clone())
        .or_else(|| {
            spans
                .iter()
                .filter_map(|s| s.device.as_deref())
                .find(|d| *d != "cpu")
                .map(str::to_owned)
        })
        .or_else(|| spans.iter().find_map(|s| s.device.clone()));
    let mut stage_ns = [0; Stage::ALL.len()];
    let mut wait_ns = [0; WAITS.len()];
    let mut gpu_ns = 0;
    for span in spans {
        if let Some(stage) = Stage::from_name(&span.name) {
            stage_ns[stage.index()] += span.duration_ns();
            gpu_ns += span.gpu_ns.unwrap_or(0);
        } else if let Some(i) = WAITS.iter().position(|n| *n == span.name) {
            wait_ns[i] += span.duration_ns();
        }
    }
    PartitionSummary {
        job,
        partition,
        worker,
        device,
        start_ns,
        end_ns,
        total_ns: whole.map_or(end_ns - start_ns, |s| s.duration_ns()),
        stage_ns,
        wait_ns,
        gpu_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 0.5), 10);
        assert_eq!(percentile(&v, 0.95), 19);
        assert_eq!(percentile(&[7], 0.95), 7);
        assert_eq!(percentile(&[], 0.5), 0);
    }

    #[test]
    fn union_counts_overlaps_once() {
        assert_eq!(union_ns(vec![(0, 10), (5, 15), (20, 25), (25, 30)]), 25);
        assert_eq!(union_ns(vec![]), 0);
    }
}
