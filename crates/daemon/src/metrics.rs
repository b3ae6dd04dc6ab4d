//! The daemon's metrics, written after the engine's ([`Engine::metrics_text`]) on `/metrics`
//! and in `GetMetrics`: the requests it answered with an error, counted by [`crate::guard`]
//! (which sees every gRPC answer), `cuzk_build_info` and `process_start_time_seconds`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use cuzk_engine::Engine;
use tonic::Code;

/// gRPC's names of its status codes, by number.
const CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// gRPC requests answered with an error status, by code.
#[derive(Debug)]
pub struct Refused {
    by_code: [AtomicU64; CODE_NAMES.len()],
}

/// The process's count of refused requests. One per process, like the `process_*` families:
/// a daemon is one process, and so the guard of each listener and both metrics endpoints reach
/// it without being handed it.
pub static REFUSED: Refused = Refused {
    by_code: [const { AtomicU64::new(0) }; CODE_NAMES.len()],
};

impl Refused {
    /// Counts one answer with `code` (OK is not a refusal and is not counted).
    pub fn count(&self, code: Code) {
        if let Some(n) = self.by_code.get(code as usize).filter(|_| code != Code::Ok) {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Answers with `code` so far.
    pub fn get(&self, code: Code) -> u64 {
        self.by_code
            .get(code as usize)
            .map_or(0, |n| n.load(Ordering::Relaxed))
    }
}

/// The daemon's version, and the commit it was built from where the build saw one (`build.rs`).
const VERSION: &str = env!("CARGO_PKG_VERSION");
const GIT_COMMIT: Option<&str> = option_env!("CUZK_GIT_COMMIT");

/// The engine's metrics and the daemon's, in Prometheus text format.
pub fn text(engine: &Engine) -> String {
    let mut out = engine.metrics_text();
    write(&mut out);
    out
}

/// Appends the daemon's families to `out`.
pub fn write(out: &mut String) {
    let name = "cuzk_requests_refused_total";
    let _ = writeln!(
        out,
        "# HELP {name} gRPC requests answered with an error status, by code: refused by the \
         guard (UNAUTHENTICATED, RESOURCE_EXHAUSTED for an oversized message) or by the service \
         (INVALID_ARGUMENT, RESOURCE_EXHAUSTED for a full queue or spool, UNAVAILABLE while \
         starting or stopping, NOT_FOUND, ...).\n# TYPE {name} counter"
    );
    for (i, code) in CODE_NAMES.iter().enumerate().skip(1) {
        let n = REFUSED.by_code[i].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}{{code=\"{code}\"}} {n}");
    }
    let git = GIT_COMMIT
        .map(|c| format!(",git=\"{c}\""))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "# HELP cuzk_build_info The daemon's version, and the git commit it was built from where \
         the build saw one; always 1.\n# TYPE cuzk_build_info gauge\n\
         cuzk_build_info{{version=\"{VERSION}\"{git}}} 1"
    );
    if let Some(start) = process_start_time() {
        let _ = writeln!(
            out,
            "# HELP process_start_time_seconds Start time of the process since the Unix epoch, \
             in seconds.\n# TYPE process_start_time_seconds gauge\n\
             process_start_time_seconds {start:.2}"
        );
    }
}

/// When this process started (seconds since the Unix epoch), where the kernel tells (Linux's
/// `/proc`); read once.
fn process_start_time() -> Option<f64> {
    static START: OnceLock<Option<f64>> = OnceLock::new();
    *START.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let boot = std::fs::read_to_string("/proc/stat").ok()?;
        start_time(&stat, &boot)
    })
}

/// A process's start time from its `/proc/<pid>/stat` and the system's `/proc/stat`: the boot
/// time (`btime`) plus the process's `starttime` (field 22, in clock ticks of 1/100 s, as
/// Prometheus's own procfs reader takes them; Linux's USER_HZ is 100 on every platform).
fn start_time(stat: &str, boot: &str) -> Option<f64> {
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after_name.split_whitespace().nth(22 - 3)?.parse().ok()?;
    let btime: u64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(btime as f64 + ticks as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_boot_time_plus_ticks() {
        let stat = "4242 (cuzk (x) y) S 1 4242 4242 0 -1 4194304 100 0 0 0 5 6 0 0 20 0 8 0 \
                    123456 1000 10 18446744073709551615";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n";
        let start = start_time(stat, boot).unwrap();
        assert!((start - 1_700_001_234.56).abs() < 1e-3, "{start}");
        assert_eq!(start_time("4242 (cuzk) S 1", boot), None, "a short stat");
        assert_eq!(start_time(stat, "cpu 1\n"), None, "no btime");
        if cfg!(target_os = "linux") {
            let start = process_start_time().expect("Linux has /proc");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs_f64();
            assert!(
                start <= now + 1.0 && start > now - 3600.0,
                "{start} vs {now}"
            );
        }
    }
}
