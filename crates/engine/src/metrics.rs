//! Counters and histograms, and their Prometheus text exposition.
//!
//! The stage histograms are kept per proof kind (a WinningPoSt's seconds are not a PoRep's), with
//! buckets up to an hour (a 32 GiB PoRep on a CPU, or one waiting behind others). They are
//! updated at job events under the engine's state lock and written into the status snapshot
//! ([`crate::status`]), never read by a request.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use crate::job::{JobTimings, ProofKind};

/// Bucket bounds of the stage histograms, in seconds.
const BUCKETS: [f64; 19] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
    900.0, 1800.0, 3600.0,
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
    /// Per kind, one histogram per stage (in [`STAGES`]' order); a kind appears once one of
    /// its jobs completed.
    stages: BTreeMap<ProofKind, [Histogram; STAGES.len()]>,
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
            let stages = self.stages.entry(kind).or_default();
            for (h, d) in
                stages
                    .iter_mut()
                    .zip([t.queue_wait, t.param_load, t.synthesis, t.proving, t.total])
            {
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

    /// The mean duration of a stage over completed jobs of every kind (zero before any).
    pub fn mean(&self, stage: &str) -> Duration {
        let Some(i) = STAGES.iter().position(|s| *s == stage) else {
            return Duration::ZERO;
        };
        let (count, sum) = self
            .stages
            .values()
            .fold((0, 0.0), |(n, s), h| (n + h[i].count, s + h[i].sum));
        if count == 0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(sum / count as f64)
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
            "# HELP {name} Time completed jobs spent in each stage, by kind.\n# TYPE {name} histogram"
        );
        for (kind, stages) in &self.stages {
            for (stage, h) in STAGES.iter().zip(stages) {
                let labels = format!("kind=\"{kind}\",stage=\"{stage}\"");
                for (bound, count) in BUCKETS.iter().zip(h.counts) {
                    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {count}");
                }
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
                let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum);
                let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
            }
        }
    }
}

/// Checks Prometheus text exposition (version 0.0.4) as a scraper reads it: every sample's
/// family has its `# TYPE` line (and at most one `# HELP`) before its samples, a family's lines
/// are together, names and labels are well formed, a histogram's buckets carry `le`, values are
/// numbers. Returns the samples as (`name{labels}` as written, value), for tests of the engine's
/// and the daemon's metrics.
pub fn parse_exposition(text: &str) -> Result<Vec<(String, f64)>, String> {
    use std::collections::{HashMap, HashSet};
    let name_ok = |n: &str| {
        let mut chars = n.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut types: HashMap<String, String> = HashMap::new();
    let mut helps: HashSet<String> = HashSet::new();
    let mut done: HashSet<String> = HashSet::new();
    let mut current = String::new();
    let mut samples = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("line {}: {why}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix("# ") {
            let mut words = comment.splitn(3, ' ');
            let (what, name, rest) = (words.next(), words.next(), words.next());
            let (Some(what @ ("HELP" | "TYPE")), Some(name)) = (what, name) else {
                continue;
            };
            if !name_ok(name) {
                return Err(bad("a bad family name"));
            }
            if what == "HELP" && !helps.insert(name.to_string()) {
                return Err(bad("a second HELP"));
            }
            if what == "TYPE" {
                let kind = rest.unwrap_or("");
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                    return Err(bad("an unknown type"));
                }
                if types.insert(name.to_string(), kind.to_string()).is_some() {
                    return Err(bad("a second TYPE"));
                }
                if done.contains(name) || current == name {
                    return Err(bad("TYPE after the family's samples"));
                }
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').ok_or_else(|| bad("no value"))?;
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| bad("a value that is not a number"))?,
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => (name, rest.strip_suffix('}').ok_or_else(|| bad("no }"))?),
            None => (series, ""),
        };
        if !name_ok(name) {
            return Err(bad("a bad metric name"));
        }
        let mut label_names = Vec::new();
        let mut rest = labels;
        while !rest.is_empty() {
            let (label, after) = rest.split_once("=\"").ok_or_else(|| bad("a bad label"))?;
            let close = after
                .char_indices()
                .scan(false, |escaped, (i, c)| {
                    let end = c == '"' && !*escaped;
                    *escaped = c == '\\' && !*escaped;
                    Some((i, end))
                })
                .find(|(_, end)| *end)
                .map(|(i, _)| i)
                .ok_or_else(|| bad("an unclosed label value"))?;
            if !name_ok(label) || label_names.contains(&label) {
                return Err(bad("a bad or repeated label name"));
            }
            label_names.push(label);
            rest = &after[close + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        let family = if types.contains_key(name) {
            name
        } else {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|f| {
                    types
                        .get(*f)
                        .is_some_and(|t| t == "histogram" || t == "summary")
                })
                .ok_or_else(|| bad("a sample with no TYPE line before it"))?
        };
        if name.ends_with("_bucket") && family != name && !label_names.contains(&"le") {
            return Err(bad("a bucket without le"));
        }
        if family != current {
            if done.contains(family) {
                return Err(bad("a family whose lines are not together"));
            }
            done.insert(std::mem::replace(&mut current, family.to_string()));
        }
        samples.push((series.to_string(), value));
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_kept_per_kind() {
        let mut m = Metrics::default();
        let t = |ms| JobTimings {
            total: Duration::from_millis(ms),
            ..Default::default()
        };
        m.record(ProofKind::Synthetic, Some(true), &t(7));
        m.record(ProofKind::Synthetic, Some(true), &t(700));
        m.record(ProofKind::WinningPost, Some(true), &t(3_000_000));
        m.record(ProofKind::WinningPost, Some(false), &t(1));
        let mut text = String::new();
        m.write(&mut text);
        let h = "cuzk_stage_duration_seconds";
        for line in [
            "cuzk_proofs_completed_total{kind=\"synthetic\"} 2",
            "cuzk_proofs_failed_total{kind=\"winning\"} 1",
            &format!("{h}_bucket{{kind=\"synthetic\",stage=\"total\",le=\"0.01\"}} 1"),
            &format!("{h}_bucket{{kind=\"synthetic\",stage=\"total\",le=\"1\"}} 2"),
            &format!("{h}_count{{kind=\"synthetic\",stage=\"total\"}} 2"),
            // Fifty minutes: above the old 600 s top, within the hour.
            &format!("{h}_bucket{{kind=\"winning\",stage=\"total\",le=\"1800\"}} 0"),
            &format!("{h}_bucket{{kind=\"winning\",stage=\"total\",le=\"3600\"}} 1"),
            &format!("{h}_count{{kind=\"winning\",stage=\"total\"}} 1"),
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(
            !text.contains("kind=\"porep\",stage"),
            "a kind with no job has no histogram"
        );
        assert_eq!(m.mean("total").as_millis(), 1_000_235);
        assert_eq!(
            parse_exposition(&text).map(|s| s.len()),
            Ok(3 * 5 + 2 * 5 * 22)
        );
    }

    #[test]
    fn the_exposition_checker_refuses_what_a_scraper_would() {
        let ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{k=\"v\\\"\"} 1\n";
        assert_eq!(
            parse_exposition(ok),
            Ok(vec![("a_total{k=\"v\\\"\"}".to_string(), 1.0)])
        );
        for bad in [
            "a_total 1\n",
            "# TYPE a_total counter\n# TYPE a_total counter\na_total 1\n",
            "# TYPE a_total counter\na_total one\n",
            "# TYPE a_total counter\na_total{k=\"v} 1\n",
            "# TYPE a_total counter\na_total{k=\"v\",k=\"w\"} 1\n",
            "# TYPE a counter\n# TYPE b counter\na 1\nb 1\na 2\n",
            "# TYPE h histogram\nh_bucket{k=\"v\"} 1\n",
            "# TYPE a gauge\na 1\n# TYPE a gauge\n",
        ] {
            assert!(parse_exposition(bad).is_err(), "{bad:?} passed");
        }
    }
}
