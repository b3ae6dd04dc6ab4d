//! Replaying a recorded run: the simulator's prediction for the timeline a real run recorded
//! (`cuzk bench --timeline FILE.json` on a GPU), beside what the run measured.
//!
//! The recording gives the simulator its inputs: the stage durations (medians over the
//! partitions, [`Profile::from_timeline`]), which stages ran on the device (those that report
//! CUDA-event time), the partition's device-memory demand (carried by its `vram_wait` or
//! `lock_wait` span), the workers, the proofs and their partitions. What it cannot give, the
//! device's working memory and the policy, the caller states. The report puts the two side by
//! side: wall time, partitions per second, device busy fraction, and each stage's median; a
//! prediction far from the measurement says the model misses something the device does.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use cuzk_telemetry::{SpanKind, Stage, Timeline};
use serde::{Deserialize, Serialize};

use crate::policy::Demand;
use crate::sim::{simulate, DeviceSpec, Profile, SimConfig, SimReport};
use crate::{InterlockError, PolicyKind};

/// What the caller states about the recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayConfig {
    /// The policy the run used (a recording does not name it).
    pub policy: PolicyKind,
    /// The device memory the partitions shared: the card's memory less what resident
    /// parameters took (a GPU backend's default leaves half of the card to partitions).
    pub device: DeviceSpec,
    /// Input copies the simulator should put on the copy engine, per partition. The GPU
    /// backend uploads `a`, `b`, `c` inside `ntt_h` on the worker's stream, so their copy is
    /// part of that stage's time: 0 replays it as recorded.
    pub stage_copy_ns: u64,
}

/// The figures compared, for the recording and the prediction alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFigures {
    /// First start to last end.
    pub wall_ns: u64,
    /// Partitions finished.
    pub partitions: usize,
    /// Partitions per second of wall time.
    pub partitions_per_s: f64,
    /// Fraction of the wall time the device computed.
    pub device_busy: f64,
    /// Each stage's median per partition, in [`Stage::ALL`] order (0 when absent).
    pub stage_p50_ns: Vec<u64>,
}

impl RunFigures {
    fn of(timeline: &Timeline, device: Option<&str>) -> Self {
        let summary = timeline.run_summary();
        let device_busy = summary
            .devices
            .iter()
            .find(|d| Some(d.device.as_str()) == device)
            .map_or(0.0, |d| d.busy_fraction);
        let stage_p50_ns = Stage::ALL
            .iter()
            .map(|stage| {
                summary
                    .stages
                    .iter()
                    .find(|s| s.name == stage.name())
                    .map_or(0, |s| s.p50_ns)
            })
            .collect();
        Self {
            wall_ns: summary.wall_ns,
            partitions: summary.partitions,
            partitions_per_s: summary.partitions_per_s,
            device_busy,
            stage_p50_ns,
        }
    }
}

/// A recorded run beside the simulator's prediction for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// The device the recording's stages ran on.
    pub device: String,
    /// What the run measured.
    pub recorded: RunFigures,
    /// What the simulator predicts.
    pub predicted: RunFigures,
    /// The full simulation, its configuration (taken from the recording) included.
    pub simulation: SimReport,
}

/// The median of the wait spans' demands, or an error saying how to record one.
fn recorded_demand(timeline: &Timeline) -> Result<Demand, InterlockError> {
    let mut demands: Vec<(u64, u64)> = timeline
        .spans
        .iter()
        .filter(|s| s.kind == SpanKind::Wait)
        .filter_map(|s| s.demand)
        .map(|d| (d.stage_bytes, d.compute_bytes))
        .collect();
    if demands.is_empty() {
        return Err(InterlockError::Config(
            "the timeline records no partition's device-memory demand (a vram_wait or lock_wait \
             span with stage_bytes and compute_bytes): record it with a GPU backend under a \
             policy, e.g. `cuzk bench --backend gpu --workers 2 --timeline FILE.json`"
                .into(),
        ));
    }
    demands.sort_unstable();
    let (stage_bytes, compute_bytes) = demands[(demands.len() - 1) / 2];
    Ok(Demand {
        stage_bytes,
        compute_bytes,
    })
}

/// Replays `timeline` under `config`: the simulation of the same workers, proofs and
/// partitions with the recorded stage times and demand, and both runs' figures.
pub fn replay(timeline: &Timeline, config: &ReplayConfig) -> Result<ReplayReport, InterlockError> {
    let summaries = timeline.partition_summaries();
    if summaries.is_empty() {
        return Err(InterlockError::EmptyTimeline);
    }
    let base = Profile {
        stages: Vec::new(),
        stage_copy_ns: config.stage_copy_ns,
        demand: recorded_demand(timeline)?,
        // Resident parameters are outside the memory the partitions share (`config.device`).
        srs_bytes: 0,
    };
    let profile = Profile::from_timeline(timeline, &base)?;
    let workers = timeline.workers().len().max(1);
    let jobs: BTreeSet<u64> = summaries.iter().map(|p| p.job).collect();
    let proofs = jobs.len();
    if summaries.len() % proofs != 0 {
        return Err(InterlockError::Config(format!(
            "{} partitions over {proofs} proofs: the simulator gives every proof the same \
             number of partitions",
            summaries.len()
        )));
    }
    let sim = SimConfig {
        policy: config.policy,
        workers,
        proofs,
        partitions_per_proof: summaries.len() / proofs,
        device: config.device,
        profile,
    };
    let simulation = simulate(&sim)?;
    let device = timeline
        .devices()
        .into_iter()
        .find(|d| d != "cpu")
        .unwrap_or_else(|| "cpu".into());
    Ok(ReplayReport {
        recorded: RunFigures::of(timeline, Some(&device)),
        predicted: RunFigures::of(&simulation.timeline, Some("gpu0")),
        device,
        simulation,
    })
}

impl ReplayReport {
    /// The comparison as a Markdown table, with the simulated configuration above it.
    pub fn to_markdown(&self) -> String {
        let c = &self.simulation.config;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Replay of a recorded run on {}: {} under {}, {} worker(s), {} proof(s) of {} \
             partition(s), {:.1} GiB of device memory for partitions, a partition asking {:.2} \
             GiB staged + {:.2} GiB compute.\n",
            self.device,
            self.simulation.partitions,
            c.policy.name(),
            c.workers,
            c.proofs,
            c.partitions_per_proof,
            c.device.vram_bytes as f64 / (1u64 << 30) as f64,
            c.profile.demand.stage_bytes as f64 / (1u64 << 30) as f64,
            c.profile.demand.compute_bytes as f64 / (1u64 << 30) as f64,
        );
        s.push_str("| figure | recorded | simulated | simulated / recorded |\n");
        s.push_str("|---|---|---|---|\n");
        let ratio = |p: f64, r: f64| {
            if r > 0.0 {
                format!("{:.2}", p / r)
            } else {
                "-".into()
            }
        };
        let (r, p) = (&self.recorded, &self.predicted);
        let ms = |ns: u64| ns as f64 / 1e6;
        let _ = writeln!(
            s,
            "| wall time | {:.1} ms | {:.1} ms | {} |",
            ms(r.wall_ns),
            ms(p.wall_ns),
            ratio(ms(p.wall_ns), ms(r.wall_ns))
        );
        let _ = writeln!(
            s,
            "| partitions per second | {:.3} | {:.3} | {} |",
            r.partitions_per_s,
            p.partitions_per_s,
            ratio(p.partitions_per_s, r.partitions_per_s)
        );
        let _ = writeln!(
            s,
            "| device busy | {:.1}% | {:.1}% | {} |",
            r.device_busy * 100.0,
            p.device_busy * 100.0,
            ratio(p.device_busy, r.device_busy)
        );
        for (i, stage) in Stage::ALL.iter().enumerate() {
            let (rv, pv) = (r.stage_p50_ns[i], p.stage_p50_ns[i]);
            if rv == 0 && pv == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "| {} p50 | {:.1} ms | {:.1} ms | {} |",
                stage.name(),
                ms(rv),
                ms(pv),
                ratio(ms(pv), ms(rv))
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Release;

    fn config(policy: PolicyKind) -> SimConfig {
        let mut profile = Profile::seeds();
        profile.stage_copy_ns = 0;
        profile.srs_bytes = 0;
        SimConfig {
            policy,
            workers: 2,
            proofs: 3,
            partitions_per_proof: 4,
            // Room for one partition's 12 GiB at a time: every policy makes some wait.
            device: DeviceSpec::gib(20, Release::StreamOrdered),
            profile,
        }
    }

    /// A simulated run, replayed under its own policy and memory, predicts itself: the
    /// recording carries everything the simulator needs.
    #[test]
    fn a_simulated_run_replays_to_itself() {
        for policy in [
            PolicyKind::SingleLock,
            PolicyKind::TwoLock,
            PolicyKind::VramBudget,
        ] {
            let sim = config(policy);
            let recorded = simulate(&sim).unwrap().timeline;
            let text = recorded.to_chrome_trace_string();
            let read = Timeline::from_json(&text).unwrap();
            let report = replay(
                &read,
                &ReplayConfig {
                    policy,
                    device: sim.device,
                    stage_copy_ns: 0,
                },
            )
            .unwrap();
            assert_eq!(report.simulation.config.workers, 2, "{policy:?}");
            assert_eq!(report.simulation.config.proofs, 3, "{policy:?}");
            assert_eq!(report.simulation.config.partitions_per_proof, 4);
            assert_eq!(report.simulation.config.profile.demand, sim.profile.demand);
            let (r, p) = (&report.recorded, &report.predicted);
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1.0);
            assert!(
                close(r.wall_ns as f64, p.wall_ns as f64),
                "{policy:?}: {r:?} {p:?}"
            );
            assert!(
                close(r.device_busy, p.device_busy),
                "{policy:?}: {r:?} {p:?}"
            );
            assert_eq!(r.stage_p50_ns, p.stage_p50_ns, "{policy:?}");
            assert!(report.to_markdown().contains("| device busy |"));
        }
    }

    /// A recording without any demand (a CPU run) is refused with a message saying how to
    /// record one.
    #[test]
    fn a_recording_without_demand_is_refused() {
        let mut recorded = simulate(&config(PolicyKind::VramBudget)).unwrap().timeline;
        for span in &mut recorded.spans {
            span.demand = None;
        }
        let err = replay(
            &recorded,
            &ReplayConfig {
                policy: PolicyKind::VramBudget,
                device: DeviceSpec::gib(20, Release::StreamOrdered),
                stage_copy_ns: 0,
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("--timeline"), "{err}");
    }
}
