//! `cargo xtask bench interlock`: the interlock simulator over policies × workers × proofs in
//! flight × VRAM sizes, written to `docs/interlock.md` and the SVG plots beside it.
//!
//! `--replay FILE.json` instead replays a recorded run (`cuzk bench --backend gpu --workers N
//! --timeline FILE.json`): the simulator's prediction for the same workers, partitions, stage
//! times and demand, beside what the run measured (`cuzk_interlock::replay`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use cuzk_interlock::replay::{replay, ReplayConfig};
use cuzk_interlock::sim::{simulate, DeviceSpec, Release, SimConfig, GIB};
use cuzk_interlock::sweep::{self, SweepConfig, SweepReport};
use cuzk_interlock::PolicyKind;
use cuzk_telemetry::Timeline;

use crate::project_root;

/// `cargo xtask bench interlock` arguments.
#[derive(clap::Args, Debug)]
pub struct InterlockArgs {
    /// Replay this recorded timeline (Chrome trace or timeline JSON from `cuzk bench
    /// --timeline`) instead of running the sweep.
    #[arg(long, value_name = "FILE.json")]
    replay: Option<PathBuf>,
    /// The policy the recorded run used: single, two or budget.
    #[arg(long, default_value = "budget", requires = "replay")]
    policy: String,
    /// Device memory the recorded run's partitions shared, in GiB: the card's less what
    /// resident parameters took (the GPU backend leaves half the card to partitions by
    /// default: 70 on a 141 GiB H200, 39 on an 80 GB H100).
    #[arg(long, default_value_t = 70, requires = "replay")]
    vram_gib: u64,
    /// Also write the comparison (Markdown) here.
    #[arg(long, value_name = "FILE.md", requires = "replay")]
    out: Option<PathBuf>,
    /// Also write the simulated run's waterfall here, to set beside the recorded one.
    #[arg(long, value_name = "FILE.svg", requires = "replay")]
    waterfall: Option<PathBuf>,
}

pub fn run(args: &InterlockArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.replay {
        return run_replay(path, args);
    }
    let config = SweepConfig::default();
    let report = write_docs(&project_root().join("docs"), &config)?;
    println!("{}", report.to_markdown());
    println!("wrote docs/interlock.md, docs/interlock-points.csv and docs/interlock*.svg");
    Ok(())
}

fn policy(name: &str) -> anyhow::Result<PolicyKind> {
    Ok(match name {
        "single" => PolicyKind::SingleLock,
        "two" => PolicyKind::TwoLock,
        "budget" => PolicyKind::VramBudget,
        other => anyhow::bail!("--policy {other}: expected single, two or budget"),
    })
}

fn run_replay(path: &Path, args: &InterlockArgs) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let timeline = Timeline::from_json(&text)
        .with_context(|| format!("{} is not a cuzk timeline", path.display()))?;
    let config = ReplayConfig {
        policy: policy(&args.policy)?,
        device: DeviceSpec {
            vram_bytes: args.vram_gib * GIB,
            margin_bytes: 0,
            release: Release::StreamOrdered,
            sync_overhead_ns: 0,
        },
        stage_copy_ns: 0,
    };
    let report =
        replay(&timeline, &config).with_context(|| format!("replaying {}", path.display()))?;
    let table = report.to_markdown();
    println!("{table}");
    if let Some(out) = &args.out {
        std::fs::write(out, &table).with_context(|| format!("writing {}", out.display()))?;
    }
    if let Some(svg) = &args.waterfall {
        std::fs::write(svg, report.simulation.timeline.to_svg_waterfall())
            .with_context(|| format!("writing {}", svg.display()))?;
    }
    Ok(())
}

/// Runs the sweep and writes `interlock.md`, every point into `interlock-points.csv`,
/// `interlock.svg` and two waterfalls into `dir`: the seeds' two-lock run
/// (`interlock-seeds-twolock.svg`) and three proofs under `VramBudget` on a 141 GiB card
/// (`interlock-vrambudget-141gib.svg`).
fn write_docs(dir: &Path, config: &SweepConfig) -> anyhow::Result<SweepReport> {
    let report = sweep::run(config);
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("interlock.md"), report.to_markdown())?;
    std::fs::write(dir.join("interlock-points.csv"), report.to_csv())?;
    std::fs::write(dir.join("interlock.svg"), report.to_svg())?;
    let seeds = SimConfig {
        profile: config.profile.clone(),
        ..SimConfig::seeds(PolicyKind::TwoLock)
    };
    let overlap = SimConfig {
        policy: PolicyKind::VramBudget,
        workers: 3,
        proofs: 3,
        partitions_per_proof: config.partitions_per_proof,
        device: DeviceSpec::gib(141, Release::StreamOrdered),
        profile: config.profile.clone(),
    };
    for (name, sim) in [
        ("interlock-seeds-twolock.svg", seeds),
        ("interlock-vrambudget-141gib.svg", overlap),
    ] {
        let waterfall = simulate(&sim)?.timeline.to_svg_waterfall();
        std::fs::write(dir.join(name), waterfall)?;
    }
    Ok(report)
}
