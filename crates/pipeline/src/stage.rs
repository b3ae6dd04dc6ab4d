//! How long the stages of one partition's proof took. The stages themselves ([`Stage`]) are
//! defined once, in cuzk-telemetry, and re-exported by this crate.

use std::fmt;
use std::time::Duration;

pub use cuzk_telemetry::Stage;

/// How long each stage of one partition took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionTiming {
    /// The partition's index in its batch.
    pub partition: usize,
    /// Duration of each stage, indexed like [`Stage::ALL`].
    pub stages: [Duration; Stage::ALL.len()],
}

impl PartitionTiming {
    /// The duration of one stage.
    pub fn get(&self, stage: Stage) -> Duration {
        self.stages[stage.index()]
    }

    pub(crate) fn add(&mut self, stage: Stage, d: Duration) {
        self.stages[stage.index()] += d;
    }

    /// The sum over all stages.
    pub fn total(&self) -> Duration {
        self.stages.iter().sum()
    }
}

impl fmt::Display for PartitionTiming {
    /// One line, `key=value`, every stage in milliseconds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "partition={}", self.partition)?;
        for stage in Stage::ALL {
            write!(
                f,
                " {}_ms={:.3}",
                stage.name(),
                self.get(stage).as_secs_f64() * 1e3
            )?;
        }
        write!(f, " total_ms={:.3}", self.total().as_secs_f64() * 1e3)
    }
}
