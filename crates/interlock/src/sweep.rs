//! The policy sweep behind `cargo xtask bench interlock`: policies × workers × proofs in flight ×
//! VRAM sizes × release modes, rendered as a Markdown table and an SVG plot. Writing them into
//! the workspace's `docs/` is xtask's job; this module touches no file.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::policy::PolicyKind;
use crate::sim::{simulate, DeviceSpec, Profile, Release, SimConfig, SimReport, GIB};

/// What to sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepConfig {
    /// Policies, in column order.
    pub policies: Vec<PolicyKind>,
    /// Workers per GPU.
    pub workers: Vec<usize>,
    /// Proofs in flight.
    pub proofs: Vec<usize>,
    /// Card sizes in GiB.
    pub vram_gib: Vec<u64>,
    /// Release modes, one plot panel each.
    pub release: Vec<Release>,
    /// Partitions per proof.
    pub partitions_per_proof: usize,
    /// The partition's costs.
    pub profile: Profile,
}

impl Default for SweepConfig {
    /// All policies; 1–4 workers; 1 and 3 proofs; 16, 24, 32, 48, 80 and 141 GiB; both release
    /// modes; 10 partitions per proof; the seeds' profile.
    fn default() -> Self {
        Self {
            policies: PolicyKind::ALL.to_vec(),
            workers: vec![1, 2, 3, 4],
            proofs: vec![1, 3],
            vram_gib: vec![16, 24, 32, 48, 80, 141],
            release: Release::ALL.to_vec(),
            partitions_per_proof: 10,
            profile: Profile::seeds(),
        }
    }
}

/// The numbers of one simulation, without its timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowResult {
    /// Partitions per second.
    pub partitions_per_s: f64,
    /// Seconds per proof.
    pub seconds_per_proof: f64,
    /// Fraction of the time the compute engine ran kernels.
    pub gpu_busy: f64,
    /// Fraction of the time the copy engine ran copies.
    pub copy_busy: f64,
    /// Peak VRAM, GiB (SRS included when resident).
    pub peak_vram_gib: f64,
    /// Whether the SRS was resident.
    pub srs_resident: bool,
    /// Longest wait of one partition, seconds.
    pub max_wait_s: f64,
    /// Mean wait per partition, seconds.
    pub mean_wait_s: f64,
    /// Partitions pre-staged.
    pub prestaged: usize,
    /// Partitions run.
    pub partitions: usize,
    /// Device-global syncs.
    pub device_syncs: u64,
}

impl From<&SimReport> for RowResult {
    fn from(r: &SimReport) -> Self {
        Self {
            partitions_per_s: r.partitions_per_s,
            seconds_per_proof: r.seconds_per_proof,
            gpu_busy: r.gpu_busy,
            copy_busy: r.copy_busy,
            peak_vram_gib: r.peak_vram_bytes as f64 / GIB as f64,
            srs_resident: r.srs_resident,
            max_wait_s: r.max_partition_wait_ns as f64 / 1e9,
            mean_wait_s: r.mean_partition_wait_ns as f64 / 1e9,
            prestaged: r.prestaged,
            partitions: r.partitions,
            device_syncs: r.device_syncs,
        }
    }
}

/// One point of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// The policy.
    pub policy: PolicyKind,
    /// Workers.
    pub workers: usize,
    /// Proofs in flight.
    pub proofs: usize,
    /// Card size, GiB.
    pub vram_gib: u64,
    /// Release mode.
    pub release: Release,
    /// The result, or why there is none (a footprint that does not fit, say).
    pub result: Result<RowResult, String>,
}

/// The whole sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// What was swept.
    pub config: SweepConfig,
    /// Every point, in loop order: release mode, VRAM, workers, proofs, policy.
    pub rows: Vec<SweepRow>,
}

/// Runs the sweep. Deterministic: the same configuration gives the same report.
pub fn run(config: &SweepConfig) -> SweepReport {
    let mut rows = Vec::new();
    for &release in &config.release {
        for &vram_gib in &config.vram_gib {
            for &workers in &config.workers {
                for &proofs in &config.proofs {
                    for &policy in &config.policies {
                        let sim = SimConfig {
                            policy,
                            workers,
                            proofs,
                            partitions_per_proof: config.partitions_per_proof,
                            device: DeviceSpec::gib(vram_gib, release),
                            profile: config.profile.clone(),
                        };
                        let result = simulate(&sim)
                            .map(|r| RowResult::from(&r))
                            .map_err(|e| e.to_string());
                        rows.push(SweepRow {
                            policy,
                            workers,
                            proofs,
                            vram_gib,
                            release,
                            result,
                        });
                    }
                }
            }
        }
    }
    SweepReport {
        config: config.clone(),
        rows,
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

impl SweepReport {
    /// The row for one point, if swept.
    pub fn row(
        &self,
        policy: PolicyKind,
        workers: usize,
        proofs: usize,
        vram_gib: u64,
        release: Release,
    ) -> Option<&SweepRow> {
        self.rows.iter().find(|r| {
            r.policy == policy
                && r.workers == workers
                && r.proofs == proofs
                && r.vram_gib == vram_gib
                && r.release == release
        })
    }

    /// Whether the SRS is resident on a card of `vram_gib`, and how many partitions fit beside it.
    fn room(&self, vram_gib: u64) -> (bool, u64) {
        let capacity = DeviceSpec::gib(vram_gib, Release::StreamOrdered)
            .vram_bytes
            .saturating_sub(GIB);
        let profile = &self.config.profile;
        let footprint = profile.demand.footprint().max(1);
        let resident = capacity >= profile.srs_bytes + 2 * footprint;
        let left = if resident {
            capacity - profile.srs_bytes
        } else {
            capacity
        };
        (resident, left / footprint)
    }

    /// The workers and proofs the summary tables and the plot show: 3 workers (or the most
    /// swept) and the most proofs in flight.
    fn focus(&self) -> (usize, usize) {
        let workers = if self.config.workers.contains(&3) {
            3
        } else {
            self.config.workers.iter().copied().max().unwrap_or(1)
        };
        let proofs = self.config.proofs.iter().copied().max().unwrap_or(1);
        (workers, proofs)
    }

    /// The report as Markdown: the model, the seeds' scenario, GPU busy by card size, and every
    /// point of the sweep.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let profile = &self.config.profile;
        let gpu_s = profile.gpu_ns() as f64 / 1e9;
        md.push_str("# Interlock policies on one shared GPU, simulated\n\n");
        md.push_str(
            "Generated by `cargo xtask bench interlock` (`cuzk_interlock::sweep::run`); do not \
             edit by hand. The simulator (`cuzk_interlock::sim`) runs the real policy types \
             against a real `cuzk-vram` arena on a simulated device with one copy engine, one \
             compute engine and a VRAM capacity (less 1 GiB of margin). All proofs are \
             submitted at the start; workers take partitions from one queue.\n\n",
        );
        md.push_str("## Profile\n\n| stage | where | ms |\n|---|---|---:|\n");
        let _ = writeln!(
            md,
            "| input copies (recorded as part of `ntt_h`) | copy engine | {:.1} |",
            profile.stage_copy_ns as f64 / 1e6
        );
        for s in &profile.stages {
            let _ = writeln!(
                md,
                "| `{}` | {} | {:.1} |",
                s.name,
                if s.on_gpu { "compute engine" } else { "host" },
                s.ns as f64 / 1e6
            );
        }
        let _ = writeln!(
            md,
            "\nPer partition: {:.1} s on the GPU, {:.1} s on the host; {} GiB staged inputs + {} \
             GiB scratch; SRS {} GiB, resident when it leaves room for two partitions, else \
             streamed. Release modes: *sync on free* returns freed memory only at a \
             device-global synchronisation (`cudaDeviceSynchronize` + `cudaMemPoolTrimTo`, \
             the incumbent), issued by a worker that cannot get memory and waiting for all \
             enqueued work; *stream-ordered* returns it when the freeing partition's kernels \
             finish (cuzk's arena).\n",
            gpu_s,
            profile.host_ns() as f64 / 1e9,
            profile.demand.stage_bytes / GIB,
            profile.demand.compute_bytes / GIB,
            profile.srs_bytes / GIB,
        );

        md.push_str("## The seeds' failure, reproduced\n\n");
        let _ = writeln!(
            md,
            "3 workers, one 10-partition proof, a 16 GiB card. Waits are per partition, blocked \
             on a lock or on memory; one partition's GPU time is {gpu_s:.1} s.\n"
        );
        md.push_str(
            "| policy | release | s/proof | partitions/s | GPU busy | max wait (s) | max wait / GPU time | mean wait (s) | pre-staged | syncs |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for release in Release::ALL {
            for &policy in &self.config.policies {
                if let Some(SweepRow { result: Ok(r), .. }) = self.row(policy, 3, 1, 16, release) {
                    let _ = writeln!(
                        md,
                        "| {policy} | {} | {:.1} | {:.3} | {} | {:.1} | {:.2} | {:.1} | {}/{} | {} |",
                        release.label(),
                        r.seconds_per_proof,
                        r.partitions_per_s,
                        pct(r.gpu_busy),
                        r.max_wait_s,
                        r.max_wait_s / gpu_s,
                        r.mean_wait_s,
                        r.prestaged,
                        r.partitions,
                        r.device_syncs
                    );
                }
            }
        }
        md.push_str(
            "\nOn 16 GiB two partitions' footprints never fit, so pre-staging never finds room \
             (`TwoLock` pre-stages only the very first partition, the seeds' \
             `prestage_setup=skip_vram`) and `TwoLock` is `SingleLock` again. The third worker of \
             the first round waits exactly two other workers' GPU time; in steady state a worker \
             waits two other workers' GPU time less its own host time. The seeds' absolute \
             73.8 s is not reproduced: the model charges nothing for host-side contention or for \
             the fallback's allocations; the shape is.\n\n",
        );

        let (workers, proofs) = self.focus();
        let _ = writeln!(
            md,
            "## GPU busy by card size\n\n{workers} workers, {proofs} proofs in flight. \
             Cells: GPU busy / partitions per second.\n"
        );
        md.push_str("| VRAM (GiB) | SRS | partitions that fit | release |");
        for p in &self.config.policies {
            let _ = write!(md, " {p} |");
        }
        md.push_str("\n|---:|---|---:|---|");
        for _ in &self.config.policies {
            md.push_str("---:|");
        }
        md.push('\n');
        for &release in &self.config.release {
            for &vram in &self.config.vram_gib {
                let (resident, room) = self.room(vram);
                let _ = write!(
                    md,
                    "| {vram} | {} | {room} | {} |",
                    if resident { "resident" } else { "streamed" },
                    release.label()
                );
                for &policy in &self.config.policies {
                    match self
                        .row(policy, workers, proofs, vram, release)
                        .map(|r| &r.result)
                    {
                        Some(Ok(r)) => {
                            let _ =
                                write!(md, " {} / {:.3} |", pct(r.gpu_busy), r.partitions_per_s);
                        }
                        _ => md.push_str(" — |"),
                    }
                }
                md.push('\n');
            }
        }
        md.push_str(
            "\nWith stream-ordered release and room for two partitions, the next partition's \
             inputs go up while the current one computes and `VramBudget` keeps the GPU busy. \
             With sync on free, freed memory comes back only after a device-global sync that \
             waits for the partition computing now, so the next one cannot stage in time unless \
             there is room for three. `TwoLock` needs room to spare too: once both slots are \
             taken its fallback copies inside the compute lock. The 80 GiB card holds the SRS \
             resident and so has room for fewer partitions than the 48 GiB one, which streams \
             it; this profile does not credit residency with faster kernels. With one proof \
             the ramp-up and the tail weigh more, which is why overlap is judged with several \
             proofs in flight.\n\n\
             ## Waterfalls\n\n\
             `interlock-seeds-twolock.svg`: the seeds' scenario under `TwoLock` (16 GiB, sync on \
             free, 3 workers, 1 proof): hatched lock and VRAM waits between the CPU stages and \
             the GPU stages. `interlock-vrambudget-141gib.svg`: `VramBudget` on 141 GiB with \
             stream-ordered release, 3 workers, 3 proofs: copies overlap kernels. Both are the \
             simulator's timelines drawn by `cuzk-telemetry`.\n\n\
             ## Replaying a real run\n\n\
             `cuzk bench --backend gpu --workers N --policy P --timeline FILE.json` records a \
             run on a device: its stage spans (with the device's CUDA-event time) and each \
             partition's wait with its memory demand. `cargo xtask bench interlock --replay \
             FILE.json --policy P --vram-gib G` runs the simulator on that recording (its \
             workers, partitions, stage medians and demand; `G` the device memory the \
             partitions shared) and prints the measured and predicted wall time, throughput, \
             device busy fraction and stage medians side by side.\n\n",
        );

        md.push_str(
            "## Every point\n\n\
             `interlock-points.csv`, beside this file: one row per simulated point (policy, release \
             mode, VRAM, workers and proofs, then throughput, seconds per proof, GPU and copy \
             busy, peak VRAM, whether the SRS was resident, waits, pre-staged partitions and \
             device syncs; a point whose partition does not fit says so in `error`).\n",
        );
        md
    }

    /// Every point as CSV (a header, then one line per row of [`SweepReport::rows`]); a point
    /// that could not run has its error in the last column and the results empty.
    pub fn to_csv(&self) -> String {
        let mut csv = String::from(
            "policy,release,vram_gib,workers,proofs,partitions_per_s,seconds_per_proof,gpu_busy,\
             copy_busy,peak_vram_gib,srs,max_wait_s,mean_wait_s,prestaged,partitions,\
             device_syncs,error\n",
        );
        for row in &self.rows {
            let _ = write!(
                csv,
                "{},{},{},{},{},",
                row.policy,
                row.release.label(),
                row.vram_gib,
                row.workers,
                row.proofs
            );
            match &row.result {
                Ok(r) => {
                    let _ = writeln!(
                        csv,
                        "{:.4},{:.2},{:.4},{:.4},{:.2},{},{:.2},{:.2},{},{},{},",
                        r.partitions_per_s,
                        r.seconds_per_proof,
                        r.gpu_busy,
                        r.copy_busy,
                        r.peak_vram_gib,
                        if r.srs_resident {
                            "resident"
                        } else {
                            "streamed"
                        },
                        r.max_wait_s,
                        r.mean_wait_s,
                        r.prestaged,
                        r.partitions,
                        r.device_syncs
                    );
                }
                Err(e) => {
                    let _ = writeln!(csv, ",,,,,,,,,,,\"{}\"", e.replace('"', "'"));
                }
            }
        }
        csv
    }

    /// The plot: GPU busy against card size, one line per policy, one panel per release mode,
    /// at the workers and proofs of the summary table.
    pub fn to_svg(&self) -> String {
        const PANEL_W: f64 = 460.0;
        const PANEL_H: f64 = 300.0;
        const LEFT: f64 = 60.0;
        const TOP: f64 = 60.0;
        const GAP: f64 = 70.0;
        let colours = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1"];
        let (workers, proofs) = self.focus();
        let panels = &self.config.release;
        let width = LEFT + (PANEL_W + GAP) * panels.len() as f64;
        let height = TOP + PANEL_H + 90.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(
            s,
            r#"<rect width="{width}" height="{height}" fill="white"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="24" font-size="15">GPU busy by card size: {workers} workers, {proofs} proofs in flight (simulated)</text>"#
        );
        let n = self.config.vram_gib.len().max(1);
        // Start the axis at 50% when every point is above it, so differences show.
        let lowest = self
            .rows
            .iter()
            .filter(|r| r.workers == workers && r.proofs == proofs)
            .filter_map(|r| r.result.as_ref().ok())
            .map(|r| r.gpu_busy)
            .fold(1.0, f64::min);
        let y_min = if lowest >= 0.5 { 0.5 } else { 0.0 };
        for (pi, &release) in panels.iter().enumerate() {
            let x0 = LEFT + (PANEL_W + GAP) * pi as f64;
            let _ = writeln!(s, r#"<g class="panel" data-release="{}">"#, release.label());
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle" font-size="13">{}</text>"#,
                x0 + PANEL_W / 2.0,
                TOP - 10.0,
                release.label()
            );
            let _ = writeln!(
                s,
                r##"<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#999999"/>"##
            );
            for tick in 0..=5 {
                let y = TOP + PANEL_H - PANEL_H * tick as f64 / 5.0;
                let label = (y_min + (1.0 - y_min) * tick as f64 / 5.0) * 100.0;
                let _ = writeln!(
                    s,
                    r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#e5e5e5"/><text x="{}" y="{}" text-anchor="end">{}%</text>"##,
                    x0 + PANEL_W,
                    x0 - 6.0,
                    y + 4.0,
                    label.round()
                );
            }
            let px = |i: usize| x0 + PANEL_W * (i as f64 + 0.5) / n as f64;
            let py = |busy: f64| {
                TOP + PANEL_H - PANEL_H * ((busy - y_min) / (1.0 - y_min)).clamp(0.0, 1.0)
            };
            for (i, vram) in self.config.vram_gib.iter().enumerate() {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{}" text-anchor="middle">{vram} GiB</text>"#,
                    px(i),
                    TOP + PANEL_H + 18.0
                );
            }
            for (k, &policy) in self.config.policies.iter().enumerate() {
                let colour = colours[k % colours.len()];
                let points: Vec<(f64, f64)> = self
                    .config
                    .vram_gib
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &vram)| {
                        match self.row(policy, workers, proofs, vram, release) {
                            Some(SweepRow { result: Ok(r), .. }) => Some((px(i), py(r.gpu_busy))),
                            _ => None,
                        }
                    })
                    .collect();
                let path: Vec<String> = points
                    .iter()
                    .map(|(x, y)| format!("{x:.1},{y:.1}"))
                    .collect();
                let _ = writeln!(
                    s,
                    r#"<polyline class="series" data-policy="{policy}" points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
                    path.join(" ")
                );
                for (x, y) in points {
                    let _ = writeln!(
                        s,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{colour}"/>"#
                    );
                }
            }
            s.push_str("</g>\n");
        }
        let legend_y = TOP + PANEL_H + 50.0;
        for (k, policy) in self.config.policies.iter().enumerate() {
            let x = LEFT + 150.0 * k as f64;
            let _ = writeln!(
                s,
                r#"<rect x="{x}" y="{}" width="14" height="14" fill="{}"/><text x="{}" y="{legend_y}">{policy}</text>"#,
                legend_y - 11.0,
                colours[k % colours.len()],
                x + 20.0
            );
        }
        s.push_str("</svg>\n");
        s
    }
}
