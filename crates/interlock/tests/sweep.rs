//! The sweep's outputs: Markdown tables, every point as CSV, and an SVG plot that parses.

use cuzk_interlock::sim::Release;
use cuzk_interlock::sweep::{run, SweepConfig};
use cuzk_interlock::PolicyKind;

fn small() -> SweepConfig {
    SweepConfig {
        workers: vec![2, 3],
        proofs: vec![1, 3],
        vram_gib: vec![8, 16, 141],
        ..SweepConfig::default()
    }
}

#[test]
fn markdown_has_the_seeds_table_and_the_csv_every_point() {
    let config = small();
    let report = run(&config);
    assert_eq!(report.rows.len(), 3 * 2 * 2 * 3 * 2);
    let md = report.to_markdown();
    assert!(md.contains("## The seeds' failure, reproduced"));
    let policy_rows = md
        .lines()
        .filter(|l| {
            l.starts_with("| SingleLock |")
                || l.starts_with("| TwoLock |")
                || l.starts_with("| VramBudget |")
        })
        .count();
    assert_eq!(
        policy_rows, 6,
        "the seeds' table: three policies, two release modes"
    );
    let csv = report.to_csv();
    let mut lines = csv.lines();
    let columns = lines.next().unwrap().split(',').count();
    let points: Vec<&str> = lines.collect();
    assert_eq!(points.len(), report.rows.len(), "one line per point");
    for line in &points {
        let fields = line.split(',').count();
        assert!(
            fields == columns || line.contains('"'),
            "{line}: {fields} fields, the header has {columns}"
        );
    }
    assert!(
        csv.contains("does not fit"),
        "an 8 GiB card cannot hold a partition"
    );
    assert_eq!(run(&config), report, "deterministic");
    let seeds = report
        .row(PolicyKind::TwoLock, 3, 1, 16, Release::SyncOnFree)
        .unwrap()
        .result
        .as_ref()
        .unwrap();
    assert!(seeds.prestaged <= 1);
}

#[test]
fn svg_parses_with_one_series_per_policy_per_panel() {
    let svg = run(&small()).to_svg();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let panels: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("panel"))
        .collect();
    assert_eq!(panels.len(), 2);
    for panel in panels {
        let series = panel
            .descendants()
            .filter(|n| n.attribute("class") == Some("series"))
            .count();
        assert_eq!(series, 3);
    }
}
