//! What the engine's test files share: an engine configuration on a temporary folder.

use std::path::Path;
use std::time::Duration;

use cuzk_engine::{EngineConfig, ParamConfig};

/// An engine's configuration under `dir`: synthetic jobs allowed and test parameters generated
/// (the synthetic circuits' on first use), strict FIFO, inputs over 64 KiB spooled to files,
/// queue and spool unbounded in practice.
pub fn config(dir: &Path) -> EngineConfig {
    EngineConfig {
        data_dir: dir.join("data"),
        params: ParamConfig {
            filecoin_dir: dir.join("filecoin"),
            synthetic_dir: dir.join("params"),
            generate_test_params: true,
            budget_bytes: u64::MAX,
        },
        group_window: 0,
        retention: Duration::from_secs(3600),
        max_attempts: 3,
        spool_threshold: 64 << 10,
        pce_dir: None,
        max_pending_jobs: 1000,
        max_spool_bytes: u64::MAX,
        allow_synthetic: true,
        synthesis_threads: 2,
    }
}
