//! Counters and histograms, and their Prometheus text exposition.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use crate::job::{JobTimings, ProofKind};

/// Bucket bounds of the stage histograms, in seconds.
const BUCKETS: [f64; 16] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// The job stages whose durations are histograms.
pub const STAGES: [&str; 5] = ["queue_wait", "param_load", "synthesis", "proving", "total"];

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, d: Duration) {
        let s = d.as_secs_f64();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if s <= *bound {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += s;
    }
}

/// What the engine counts.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    completed: BTreeMap<ProofKind, u64>,
    failed: BTreeMap<ProofKind, u64>,
    cancelled: BTreeMap<ProofKind, u64>,
    stages: [Histogram; STAGES.len()],
}

impl Metrics {
    /// A job ended: COMPLETED (`Some(true)`), FAILED (`Some(false)`) or CANCELLED (`None`).
    pub fn record(&mut self, kind: ProofKind, ok: Option<bool>, t: &JobTimings) {
        let map = match ok {
            Some(true) => &mut self.completed,
            Some(false) => &mut self.failed,
            None => &mut self.cancelled,
        };
        *map.entry(kind).or_default() += 1;
        if ok == Some(true) {
            for (h, d) in self.stages.iter_mut().zip([
                t.queue_wait,
                t.param_load,
                t.synthesis,
                t.proving,
                t.total,
            ]) {
                h.observe(d);
            }
        }
    }

    /// Proofs completed, all kinds.
    pub fn completed(&self) -> u64 {
        self.completed.values().sum()
    }

    /// Proofs failed, all kinds.
    pub fn failed(&self) -> u64 {
        self.failed.values().sum()
    }

    /// The mean duration of a stage over completed jobs (zero before any).
    pub fn mean(&self, stage: &str) -> Duration {
        STAGES
            .iter()
            .position(|s| *s == stage)
            .map(|i| &self.stages[i])
            .filter(|h| h.count > 0)
            .map(|h| Duration::from_secs_f64(h.sum / h.count as f64))
            .unwrap_or_default()
    }

    /// Writes the counters and histograms in Prometheus text format.
    pub fn write(&self, out: &mut String) {
        for (name, help, map) in [
            (
                "cuzk_proofs_completed_total",
                "Proofs completed, by kind.",
                &self.completed,
            ),
            (
                "cuzk_proofs_failed_total",
                "Proofs failed, by kind.",
                &self.failed,
            ),
            (
                "cuzk_proofs_cancelled_total",
                "Proofs cancelled, by kind.",
                &self.cancelled,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for kind in ProofKind::ALL {
                let n = map.get(&kind).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}{{kind=\"{kind}\"}} {n}");
            }
        }
        let name = "cuzk_stage_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time completed jobs spent in each stage.\n# TYPE {name} histogram"
        );
        for (stage, h) in STAGES.iter().zip(&self.stages) {
            for (bound, count) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    out,
                    "{name}_bucket{{stage=\"{stage}\",le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "{name}_bucket{{stage=\"{stage}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(out, "{name}_sum{{stage=\"{stage}\"}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{stage=\"{stage}\"}} {}", h.count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative() {
        let mut m = Metrics::default();
        let t = |ms| JobTimings {
            total: Duration::from_millis(ms),
            ..Default::default()
        };
        m.record(ProofKind::Synthetic, Some(true), &t(7));
        m.record(ProofKind::Synthetic, Some(true), &t(700));
        m.record(ProofKind::WinningPost, Some(false), &t(1));
        let mut text = String::new();
        m.write(&mut text);
        assert!(text.contains("cuzk_proofs_completed_total{kind=\"synthetic\"} 2"));
        assert!(text.contains("cuzk_proofs_failed_total{kind=\"winning\"} 1"));
        assert!(text.contains("cuzk_stage_duration_seconds_bucket{stage=\"total\",le=\"0.01\"} 1"));
        assert!(text.contains("cuzk_stage_duration_seconds_bucket{stage=\"total\",le=\"1\"} 2"));
        assert!(text.contains("cuzk_stage_duration_seconds_count{stage=\"total\"} 2"));
        assert_eq!(m.mean("total"), Duration::from_micros(353_500));
    }
}
