//! `cargo xtask bench interlock`: the interlock simulator over policies × workers × proofs in
//! flight × VRAM sizes, written to `docs/interlock.md` and the SVG plots beside it.

use std::path::Path;

use cuzk_interlock::sim::{simulate, DeviceSpec, Release, SimConfig};
use cuzk_interlock::sweep::{self, SweepConfig, SweepReport};
use cuzk_interlock::PolicyKind;

use crate::project_root;

pub fn run() -> anyhow::Result<()> {
    let config = SweepConfig::default();
    let report = write_docs(&project_root().join("docs"), &config)?;
    println!("{}", report.to_markdown());
    println!("wrote docs/interlock.md and docs/interlock*.svg");
    Ok(())
}

/// Runs the sweep and writes `interlock.md`, `interlock.svg` and two waterfalls into `dir`: the
/// seeds' two-lock run (`interlock-seeds-twolock.svg`) and three proofs under `VramBudget` on a
/// 141 GiB card (`interlock-vrambudget-141gib.svg`).
fn write_docs(dir: &Path, config: &SweepConfig) -> anyhow::Result<SweepReport> {
    let report = sweep::run(config);
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("interlock.md"), report.to_markdown())?;
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
