//! `cargo xtask bench interlock`: the interlock simulator over policies × workers × proofs in
//! flight × VRAM sizes, written to `docs/interlock.md` and the SVG plots beside it.

use crate::project_root;

pub fn run() -> anyhow::Result<()> {
    let config = cuzk_interlock::sweep::SweepConfig::default();
    let report = cuzk_interlock::sweep::write_docs(&project_root().join("docs"), &config)?;
    println!("{}", report.to_markdown());
    println!("wrote docs/interlock.md and docs/interlock*.svg");
    Ok(())
}
