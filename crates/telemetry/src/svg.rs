//! An SVG waterfall: one lane per worker, stages as coloured bars, waits hatched, partitions as a
//! thin bar under their stages; then one lane per GPU with every worker's stages on it (light
//! where one worker ran, darker where several overlapped, and the device's own CUDA-event time
//! as a dark band at the end of each bar); a time axis and a legend. Plain SVG 1.1, no scripts, so any
//! browser shows it and hovering a bar shows its `<title>`.

use std::fmt::Write as _;

use crate::timeline::{SpanKind, SpanRecord, Timeline, WAITS};
use crate::Stage;

const WIDTH: f64 = 1200.0;
const LEFT: f64 = 96.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 44.0;
const LANE: f64 = 30.0;
const BAR: f64 = 20.0;

/// The fill of a stage or wait (waits are drawn as hatching in this colour).
pub fn colour(name: &str) -> &'static str {
    if let Some(stage) = Stage::from_name(name) {
        return stage.colour();
    }
    match name {
        "lock_wait" => "#d62728",
        "vram_wait" => "#9467bd",
        "queue_wait" => "#7f7f7f",
        _ => "#bab0ac",
    }
}

/// Escapes text for XML content and attribute values.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick step of 1, 2 or 5 times a power of ten giving at most about ten ticks over `span_ns`.
fn tick_step_ns(span_ns: u64) -> u64 {
    let mut step = 1_000; // 1 µs
    loop {
        for m in [1, 2, 5] {
            if span_ns / (step * m) <= 10 {
                return step * m;
            }
        }
        step *= 10;
    }
}

fn time_label(ns: u64, step_ns: u64) -> String {
    if step_ns >= 1_000_000_000 {
        format!("{} s", ns / 1_000_000_000)
    } else if step_ns >= 100_000_000 {
        format!("{:.1} s", ns as f64 / 1e9)
    } else if step_ns >= 1_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{} µs", ns / 1_000)
    }
}

fn tooltip(span: &SpanRecord) -> String {
    let mut t = format!("{} {:.1} ms", span.name, span.duration_ns() as f64 / 1e6);
    if let Some(gpu_ns) = span.gpu_ns {
        let _ = write!(t, " (device {:.1} ms)", gpu_ns as f64 / 1e6);
    }
    if let (Some(job), Some(p)) = (span.job, span.partition) {
        let _ = write!(t, " job={job} partition={p}");
    }
    if let Some(device) = &span.device {
        let _ = write!(t, " device={device}");
    }
    escape(&t)
}

impl Timeline {
    /// The timeline as an SVG waterfall: one lane (`<g class="lane" data-worker="N">`) per
    /// worker, in worker order, then one (`<g class="device-lane" data-device="gpu0">`) per
    /// device other than the host (`cpu`, whose work the worker lanes already show). Spans that
    /// name no worker are not drawn in worker lanes.
    pub fn to_svg_waterfall(&self) -> String {
        let workers = self.workers();
        let gpus: Vec<String> = self.devices().into_iter().filter(|d| d != "cpu").collect();
        let (t0, t1) = self.bounds_ns();
        let span_ns = (t1 - t0).max(1);
        let plot_w = WIDTH - LEFT - RIGHT;
        let x = |t: u64| LEFT + (t - t0) as f64 / span_ns as f64 * plot_w;
        let lanes_h = LANE * (workers.len() + gpus.len()) as f64;
        let axis_y = TOP + lanes_h + 4.0;
        let legend_y = axis_y + 36.0;
        let height = legend_y + 2.0 * 22.0 + 12.0;

        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
        );
        s.push_str("<defs>\n");
        for wait in WAITS {
            let _ = writeln!(
                s,
                r#"<pattern id="hatch-{wait}" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)"><rect width="6" height="6" fill="white"/><line x1="0" y1="0" x2="0" y2="6" stroke="{}" stroke-width="3"/></pattern>"#,
                colour(wait)
            );
        }
        s.push_str("</defs>\n");
        let _ = writeln!(
            s,
            r#"<rect width="{WIDTH}" height="{height}" fill="white"/>"#
        );
        let summary = self.run_summary();
        let _ = writeln!(
            s,
            r#"<text x="{LEFT}" y="24" font-size="15">cuzk waterfall: {} partitions, {:.1} s wall, {:.3} partitions/s</text>"#,
            summary.partitions,
            summary.wall_ns as f64 / 1e9,
            summary.partitions_per_s
        );

        for (lane, worker) in workers.iter().enumerate() {
            let y = TOP + LANE * lane as f64;
            let _ = writeln!(s, r#"<g class="lane" data-worker="{worker}">"#);
            let fill = if lane % 2 == 0 { "#f4f4f4" } else { "#ffffff" };
            let _ = writeln!(
                s,
                r#"<rect x="{LEFT}" y="{y}" width="{plot_w}" height="{LANE}" fill="{fill}"/>"#
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">worker {worker}</text>"#,
                LEFT - 8.0,
                y + LANE / 2.0 + 4.0
            );
            let lane_spans = self.spans.iter().filter(|sp| sp.worker == Some(*worker));
            // Partitions first, so stages and waits draw over them.
            let mut ordered: Vec<&SpanRecord> = lane_spans.collect();
            ordered.sort_by_key(|sp| (sp.kind != SpanKind::Partition, sp.start_ns));
            for sp in ordered {
                let x0 = x(sp.start_ns);
                let w = (x(sp.end_ns) - x0).max(0.5);
                let top = y + (LANE - BAR) / 2.0;
                match sp.kind {
                    SpanKind::Partition => {
                        let _ = writeln!(
                            s,
                            r##"<rect class="partition" x="{x0:.2}" y="{:.2}" width="{w:.2}" height="3" fill="#555555"><title>{}</title></rect>"##,
                            top + BAR + 1.0,
                            tooltip(sp)
                        );
                    }
                    SpanKind::Stage => {
                        let _ = writeln!(
                            s,
                            r#"<rect class="stage" data-name="{}" x="{x0:.2}" y="{top:.2}" width="{w:.2}" height="{BAR}" fill="{}"><title>{}</title></rect>"#,
                            sp.name,
                            colour(&sp.name),
                            tooltip(sp)
                        );
                    }
                    SpanKind::Wait => {
                        let _ = writeln!(
                            s,
                            r#"<rect class="wait" data-name="{}" x="{x0:.2}" y="{top:.2}" width="{w:.2}" height="{BAR}" fill="url(#hatch-{})" stroke="{}" stroke-width="0.5"><title>{}</title></rect>"#,
                            sp.name,
                            sp.name,
                            colour(&sp.name),
                            tooltip(sp)
                        );
                    }
                }
            }
            s.push_str("</g>\n");
        }
        let busy = summary.devices;
        for (i, device) in gpus.iter().enumerate() {
            let lane = workers.len() + i;
            let y = TOP + LANE * lane as f64;
            let top = y + (LANE - BAR) / 2.0;
            let fraction = busy
                .iter()
                .find(|d| &d.device == device)
                .map_or(0.0, |d| d.busy_fraction);
            let _ = writeln!(
                s,
                r##"<g class="device-lane" data-device="{}"><rect x="{LEFT}" y="{y}" width="{plot_w}" height="{LANE}" fill="#e8eef4"/>"##,
                escape(device)
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{} {:.0}%</text>"#,
                LEFT - 8.0,
                y + LANE / 2.0 + 4.0,
                escape(device),
                fraction * 100.0
            );
            let stages = self
                .spans
                .iter()
                .filter(|sp| sp.kind == SpanKind::Stage && sp.device.as_deref() == Some(device));
            for sp in stages {
                let x0 = x(sp.start_ns);
                let w = (x(sp.end_ns) - x0).max(0.5);
                let _ = writeln!(
                    s,
                    r#"<rect class="stage" data-name="{}" x="{x0:.2}" y="{top:.2}" width="{w:.2}" height="{BAR}" fill="{}" fill-opacity="0.45"><title>{}</title></rect>"#,
                    sp.name,
                    colour(&sp.name),
                    tooltip(sp)
                );
                if let Some(gpu_ns) = sp.gpu_ns.filter(|&g| g > 0) {
                    let g0 = x(sp.end_ns.saturating_sub(gpu_ns).max(sp.start_ns));
                    let gw = (x(sp.end_ns) - g0).max(0.5);
                    let _ = writeln!(
                        s,
                        r#"<rect class="gpu-time" x="{g0:.2}" y="{:.2}" width="{gw:.2}" height="4" fill="{}"/>"#,
                        top + BAR - 4.0,
                        colour(&sp.name)
                    );
                }
            }
            s.push_str("</g>\n");
        }

        // Time axis.
        let _ = writeln!(
            s,
            r#"<g class="axis"><line x1="{LEFT}" y1="{axis_y}" x2="{}" y2="{axis_y}" stroke="black"/>"#,
            LEFT + plot_w
        );
        let step = tick_step_ns(span_ns);
        let mut t = 0;
        while t <= span_ns {
            let tx = x(t0 + t);
            let _ = writeln!(
                s,
                r#"<line x1="{tx:.2}" y1="{axis_y}" x2="{tx:.2}" y2="{}" stroke="black"/><text x="{tx:.2}" y="{}" text-anchor="middle">{}</text>"#,
                axis_y + 5.0,
                axis_y + 18.0,
                time_label(t, step)
            );
            t += step;
        }
        s.push_str("</g>\n");

        // Legend: stages on one row, waits on the next.
        s.push_str("<g class=\"legend\">\n");
        let stage_names = Stage::ALL.map(Stage::name);
        for (row, names) in [&stage_names[..], &WAITS[..]].into_iter().enumerate() {
            let y = legend_y + 22.0 * row as f64;
            for (i, name) in names.iter().enumerate() {
                // Eight stages at 130 px fit the 1200 px width after the lane labels.
                let lx = LEFT + 130.0 * i as f64;
                let fill = if row == 0 {
                    colour(name).to_owned()
                } else {
                    format!("url(#hatch-{name})")
                };
                let _ = writeln!(
                    s,
                    r#"<rect x="{lx}" y="{}" width="14" height="14" fill="{fill}" stroke="{}"/><text x="{}" y="{}">{name}</text>"#,
                    y - 11.0,
                    colour(name),
                    lx + 20.0,
                    y
                );
            }
        }
        s.push_str("</g>\n</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_one_two_five() {
        assert_eq!(tick_step_ns(9_000), 1_000);
        assert_eq!(tick_step_ns(15_000_000_000), 2_000_000_000);
        assert_eq!(tick_step_ns(40_000_000_000), 5_000_000_000);
        assert_eq!(time_label(2_000_000_000, 1_000_000_000), "2 s");
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
