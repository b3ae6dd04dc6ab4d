//! The HTTP status listener: `/metrics` (Prometheus text: the engine's families and the
//! daemon's, [`crate::metrics`]), `/status` (JSON) and `/`, a page that refreshes itself with
//! the queue, the parameters by tier, the workers and the waterfall of the recent proofs.

use std::fmt::Write;
use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use cuzk_engine::Engine;

type Shared = Arc<OnceLock<Arc<Engine>>>;

/// The router.
pub fn router(engine: Shared) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .with_state(engine)
}

fn starting() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "the engine is starting\n").into_response()
}

async fn metrics(State(engine): State<Shared>) -> Response {
    match engine.get() {
        Some(e) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            crate::metrics::text(e),
        )
            .into_response(),
        None => starting(),
    }
}

async fn status(State(engine): State<Shared>) -> Response {
    match engine.get() {
        Some(e) => match serde_json::to_string_pretty(&e.status()) {
            Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
            Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
        },
        None => starting(),
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

async fn page(State(engine): State<Shared>) -> Response {
    let Some(e) = engine.get() else {
        return starting();
    };
    let s = e.status();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"5\">\
         <title>cuzk daemon</title><style>body{{font-family:sans-serif;margin:1.5em}}\
         table{{border-collapse:collapse;margin-bottom:1.5em}}td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:right}}\
         th{{background:#f4f4f4}}td:first-child{{text-align:left}}</style></head><body>\
         <h1>cuzk daemon</h1><p>up {} s &middot; {} proofs completed &middot; {} failed &middot; \
         <a href=\"/metrics\">metrics</a> &middot; <a href=\"/status\">status JSON</a></p>",
        s.uptime_seconds, s.completed, s.failed
    );
    h.push_str("<h2>Queue</h2><table><tr><th>kind</th><th>pending</th><th>running</th></tr>");
    for q in &s.queues {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            q.kind, q.pending, q.in_progress
        );
    }
    h.push_str("</table><table><tr><th>priority</th><th>pending</th></tr>");
    for (p, n) in &s.pending_by_priority {
        let _ = write!(h, "<tr><td>{p}</td><td>{n}</td></tr>");
    }
    h.push_str("</table><h2>Workers</h2><table><tr><th>worker</th><th>device</th><th>job</th><th>kind</th><th>busy</th></tr>");
    for w in &s.workers {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td></tr>",
            w.index,
            escape(&w.device),
            escape(w.current_job_id.as_deref().unwrap_or("-")),
            w.current_kind.as_deref().unwrap_or("-"),
            100.0 * w.busy_fraction
        );
    }
    h.push_str("</table><h2>Parameters</h2><table><tr><th>circuit</th><th>tier</th><th>size</th><th>in use</th></tr>");
    for p in &s.params {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.circuit_id),
            p.tier.name(),
            mib(p.size_bytes),
            p.ref_count
        );
    }
    h.push_str("</table><h2>Mean stage times (completed jobs)</h2><table><tr><th>stage</th><th>ms</th></tr>");
    for (stage, ms) in &s.mean_stage_ms {
        let _ = write!(h, "<tr><td>{stage}</td><td>{ms:.1}</td></tr>");
    }
    h.push_str("</table><h2>Recent proofs</h2>");
    match e.waterfall_svg() {
        Some(svg) => h.push_str(&svg),
        None => h.push_str("<p>No proof yet.</p>"),
    }
    h.push_str("</body></html>");
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], h).into_response()
}
