//! The recorder end to end through `tracing`, on a manual clock so every number is exact, and
//! the summaries and exports of what it recorded.

use cuzk_telemetry::{ManualClock, Recorder, SpanKind, Stage, Timeline};
use tracing::Span;
use tracing_subscriber::prelude::*;

/// One partition of a scripted run: who ran it, when, and its stages and waits as
/// `(name, device override, start_ms, end_ms)`.
struct Script {
    job: u64,
    partition: u64,
    worker: u64,
    spans: Vec<(&'static str, Option<&'static str>, u64, u64)>,
}

/// A partition as the seeds describe it: CPU stages, a lock wait, GPU stages, the epilogue.
fn seeds_partition(job: u64, partition: u64, worker: u64, start: u64, wait: u64) -> Script {
    let gpu = start + 2400 + wait;
    Script {
        job,
        partition,
        worker,
        spans: vec![
            ("split_vectors", Some("cpu"), start, start + 600),
            ("prep_msm", Some("cpu"), start + 600, start + 2400),
            ("lock_wait", None, start + 2400, gpu),
            ("ntt_h", None, gpu, gpu + 900),
            ("msm_h", None, gpu + 900, gpu + 2100),
            ("batch_add", None, gpu + 2100, gpu + 2400),
            ("tail_msm", None, gpu + 2400, gpu + 3800),
            ("epilogue", Some("cpu"), gpu + 3800, gpu + 3801),
        ],
    }
}

/// Three workers, four partitions, one GPU: the second and third worker wait for the first.
fn scripts() -> Vec<Script> {
    vec![
        seeds_partition(0, 0, 0, 0, 0),
        seeds_partition(0, 1, 1, 0, 3800),
        seeds_partition(0, 2, 2, 0, 7600),
        seeds_partition(0, 3, 0, 6201, 5199),
    ]
}

/// Plays the scripts through a real `tracing` subscriber with a recorder on a manual clock.
fn record(scripts: &[Script]) -> Timeline {
    let clock = ManualClock::new();
    let (recorder, handle) = Recorder::with_clock(clock.clone());
    let subscriber = tracing_subscriber::registry().with(recorder);
    tracing::subscriber::with_default(subscriber, || {
        // (time, order at that instant, is_open, partition index, span index or None for the
        // partition span). At one instant: spans that started earlier close first, then
        // partitions open, then their children, then zero-length children close, then
        // partitions close.
        let mut events: Vec<(u64, u8, bool, usize, Option<usize>)> = Vec::new();
        for (p, script) in scripts.iter().enumerate() {
            let start = script.spans.iter().map(|s| s.2).min().unwrap();
            let end = script.spans.iter().map(|s| s.3).max().unwrap();
            events.push((start, 1, true, p, None));
            events.push((end, 4, false, p, None));
            for (i, span) in script.spans.iter().enumerate() {
                events.push((span.2, 2, true, p, Some(i)));
                events.push((
                    span.3,
                    if span.2 == span.3 { 3 } else { 0 },
                    false,
                    p,
                    Some(i),
                ));
            }
        }
        events.sort_by_key(|&(t, order, ..)| (t, order));
        let mut parents: Vec<Option<Span>> = scripts.iter().map(|_| None).collect();
        let mut children: Vec<Vec<Option<Span>>> = scripts
            .iter()
            .map(|s| s.spans.iter().map(|_| None).collect())
            .collect();
        let mut now = 0;
        for (t, _, open, p, child) in events {
            clock.advance_ms(t - now);
            now = t;
            let script = &scripts[p];
            match (open, child) {
                (true, None) => {
                    let span = tracing::info_span!(
                        "partition",
                        job = script.job,
                        partition = script.partition,
                        worker = script.worker,
                        device = "gpu0"
                    );
                    span.in_scope(|| {});
                    parents[p] = Some(span);
                }
                (true, Some(i)) => {
                    let (name, device, _, _) = script.spans[i];
                    let parent = parents[p].as_ref().unwrap();
                    let span = match (name, device) {
                        ("split_vectors", _) => {
                            tracing::info_span!(parent: parent, "split_vectors", device = device)
                        }
                        ("prep_msm", _) => {
                            tracing::info_span!(parent: parent, "prep_msm", device = device)
                        }
                        ("lock_wait", _) => tracing::info_span!(parent: parent, "lock_wait"),
                        ("ntt_h", _) => tracing::info_span!(parent: parent, "ntt_h"),
                        ("msm_h", _) => tracing::info_span!(parent: parent, "msm_h"),
                        ("batch_add", _) => tracing::info_span!(parent: parent, "batch_add"),
                        ("tail_msm", _) => tracing::info_span!(parent: parent, "tail_msm"),
                        ("epilogue", _) => {
                            tracing::info_span!(parent: parent, "epilogue", device = device)
                        }
                        _ => unreachable!(),
                    };
                    span.in_scope(|| {});
                    children[p][i] = Some(span);
                }
                (false, None) => parents[p] = None,
                (false, Some(i)) => children[p][i] = None,
            }
        }
    });
    handle.snapshot()
}

#[test]
fn recorder_keeps_fields_and_children_inherit_them() {
    let timeline = record(&scripts());
    assert_eq!(timeline.spans.len(), 4 * 9);
    let ntt = timeline
        .spans
        .iter()
        .find(|s| s.name == "ntt_h" && s.partition == Some(2))
        .unwrap();
    assert_eq!(
        (ntt.job, ntt.worker, ntt.device.as_deref()),
        (Some(0), Some(2), Some("gpu0"))
    );
    assert_eq!((ntt.start_ns, ntt.end_ns), (10_000_000_000, 10_900_000_000));
    assert_eq!(ntt.kind, SpanKind::Stage);
    let split = timeline
        .spans
        .iter()
        .find(|s| s.name == "split_vectors")
        .unwrap();
    assert_eq!(
        split.device.as_deref(),
        Some("cpu"),
        "a child's own field wins"
    );
    assert_eq!(timeline.workers(), vec![0, 1, 2]);
    assert_eq!(
        timeline.devices(),
        vec!["cpu".to_owned(), "gpu0".to_owned()]
    );
}

#[test]
fn spans_with_other_names_are_ignored_and_any_field_syntax_is_read() {
    let clock = ManualClock::new();
    let (recorder, handle) = Recorder::with_clock(clock.clone());
    let subscriber = tracing_subscriber::registry().with(recorder);
    tracing::subscriber::with_default(subscriber, || {
        let device = String::from("gpu1");
        let _outer = tracing::info_span!("request", id = 7).entered();
        let span = tracing::info_span!("msm_h", job = 5i64, partition = tracing::field::Empty, worker = ?3u64, device = %device);
        span.record("partition", 9u64);
        let _entered = span.enter();
        clock.advance_ms(2);
    });
    let timeline = handle.snapshot();
    assert_eq!(timeline.spans.len(), 1);
    let s = &timeline.spans[0];
    assert_eq!((s.job, s.partition, s.worker), (Some(5), Some(9), Some(3)));
    assert_eq!(s.device.as_deref(), Some("gpu1"));
    assert_eq!(s.duration_ns(), 2_000_000);
}

#[test]
fn partition_lines_and_run_summary() {
    let timeline = record(&scripts());
    let mut text = String::new();
    for line in timeline.partition_summaries() {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text.push('\n');
    text.push_str(&timeline.run_summary().to_string());
    insta::assert_snapshot!(text);
}

#[test]
fn run_summary_numbers() {
    let summary = record(&scripts()).run_summary();
    assert_eq!(summary.partitions, 4);
    assert_eq!(summary.wall_ns, 17_601_000_000);
    let gpu = summary.devices.iter().find(|d| d.device == "gpu0").unwrap();
    assert_eq!(
        gpu.busy_ns,
        4 * 3_800_000_000,
        "the GPU stages never overlap here"
    );
    let lock = summary
        .stages
        .iter()
        .find(|s| s.name == "lock_wait")
        .unwrap();
    assert_eq!(
        (lock.count, lock.p50_ns, lock.p95_ns),
        (3, 5_199_000_000, 7_600_000_000)
    );
}

#[test]
fn chrome_trace_with_times_redacted() {
    let trace = record(&scripts()[..2]).to_chrome_trace();
    insta::assert_json_snapshot!(trace, {
        ".traceEvents[].ts" => "[ts]",
        ".traceEvents[].dur" => "[dur]",
    });
}

#[test]
fn chrome_trace_and_json_read_back_to_the_same_timeline() {
    let timeline = record(&scripts());
    assert_eq!(
        Timeline::from_json(&timeline.to_chrome_trace_string()).unwrap(),
        timeline
    );
    assert_eq!(Timeline::from_json(&timeline.to_json()).unwrap(), timeline);
    assert!(Timeline::from_json("{\"traceEvents\": 3}").is_err());
    assert!(Timeline::from_json("not json").is_err());
}

#[test]
fn chrome_events_are_complete_events_in_microseconds() {
    let trace = record(&scripts()).to_chrome_trace();
    let events = trace["traceEvents"].as_array().unwrap();
    let ntt = events
        .iter()
        .find(|e| e["name"] == "ntt_h" && e["args"]["partition"] == 1)
        .unwrap();
    assert_eq!(ntt["ph"], "X");
    assert_eq!(ntt["ts"].as_f64(), Some(6_200_000.0));
    assert_eq!(ntt["dur"].as_f64(), Some(900_000.0));
    assert_eq!(ntt["tid"], 1);
    let gpu_pid = events
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "gpu0")
        .unwrap()["pid"]
        .clone();
    assert_eq!(ntt["pid"], gpu_pid);
}

#[test]
fn svg_waterfall_parses_and_has_one_lane_per_worker() {
    let timeline = record(&scripts());
    let svg = timeline.to_svg_waterfall();
    let doc = roxmltree::Document::parse(&svg).expect("the waterfall is well-formed XML");
    let lanes: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("lane"))
        .collect();
    let workers: Vec<&str> = lanes
        .iter()
        .map(|n| n.attribute("data-worker").unwrap())
        .collect();
    assert_eq!(workers, ["0", "1", "2"]);
    for lane in &lanes {
        let stages = lane
            .descendants()
            .filter(|n| n.attribute("class") == Some("stage"))
            .count();
        assert!(stages >= 7);
    }
    let hatched = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("wait"))
        .all(|n| {
            n.attribute("fill")
                .is_some_and(|f| f.starts_with("url(#hatch-"))
        });
    assert!(hatched);
    let patterns = doc
        .descendants()
        .filter(|n| n.has_tag_name("pattern"))
        .count();
    assert_eq!(patterns, 3);
    let legend: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("legend"))
        .flat_map(|g| g.descendants().filter_map(|n| n.text()))
        .collect();
    for stage in Stage::ALL {
        assert!(legend.contains(&stage.name()), "{stage} in the legend");
    }
    let axis_labels = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("axis"))
        .flat_map(|g| g.descendants().filter(|n| n.has_tag_name("text")))
        .count();
    assert!(axis_labels >= 5);
}

#[test]
fn an_empty_timeline_still_exports() {
    let timeline = Timeline::default();
    assert!(roxmltree::Document::parse(&timeline.to_svg_waterfall()).is_ok());
    assert_eq!(timeline.run_summary().partitions, 0);
    assert_eq!(
        timeline.to_chrome_trace()["traceEvents"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
}
