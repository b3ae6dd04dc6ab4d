//! How long the stages of one partition's proof took. The stages themselves ([`Stage`]) are
//! defined once, in cuzk-telemetry, and re-exported by this crate.

use std::cell::Cell;
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
    /// The device's own time for the partition's work, measured with CUDA events around each
    /// device stage (zero on the CPU): what the device was busy with, where the stages' wall
    /// times include the host's waits.
    pub device: Duration,
}

thread_local! {
    /// Device time recorded on this thread since it was last taken ([`take_device_time`]).
    static DEVICE_TIME: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// Adds `d` of device time to the partition the calling thread proves (a GPU backend's event
/// time; its stages run on the prover's thread).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn record_device_time(d: Duration) {
    DEVICE_TIME.with(|t| t.set(t.get() + d));
}

/// The device time recorded on this thread since the last call, reset to zero.
pub(crate) fn take_device_time() -> Duration {
    DEVICE_TIME.with(|t| t.replace(Duration::ZERO))
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
        write!(f, " total_ms={:.3}", self.total().as_secs_f64() * 1e3)?;
        if !self.device.is_zero() {
            write!(f, " device_ms={:.3}", self.device.as_secs_f64() * 1e3)?;
        }
        Ok(())
    }
}
