//! The stages of one partition's proof, and their timings.

use std::fmt;
use std::time::Duration;

/// A stage of the partition prover, named as in the telemetry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// Check the assignment against the parameters and that every constraint holds.
    Validate,
    /// Sort each query's scalars into zero / one / other.
    SplitVectors,
    /// Gather bases and scalars for the tail MSMs.
    PrepMsm,
    /// Sums of the points whose scalar is one.
    BatchAdd,
    /// MSMs of L, A, B₁ (G1) and B₂ (G2) over the other scalars.
    TailMsm,
    /// H = (a·b − c)/Z through inverse, coset and coset-inverse NTTs.
    NttH,
    /// Σ hᵢ·Hᵢ over the `h` query.
    MsmH,
    /// Assemble A, B, C.
    Epilogue,
}

impl Stage {
    /// Every stage, in the CPU prover's execution order: the queries over the assignment's
    /// values first, so that those values are freed before the NTTs need their scratch.
    pub const ALL: [Stage; 8] = [
        Stage::Validate,
        Stage::SplitVectors,
        Stage::PrepMsm,
        Stage::BatchAdd,
        Stage::TailMsm,
        Stage::NttH,
        Stage::MsmH,
        Stage::Epilogue,
    ];

    /// The stage's name in spans and summaries.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Validate => "validate",
            Stage::SplitVectors => "split_vectors",
            Stage::PrepMsm => "prep_msm",
            Stage::NttH => "ntt_h",
            Stage::MsmH => "msm_h",
            Stage::BatchAdd => "batch_add",
            Stage::TailMsm => "tail_msm",
            Stage::Epilogue => "epilogue",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How long each stage of one partition took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionTiming {
    /// The partition's index in its batch.
    pub partition: usize,
    /// Duration of each stage, indexed like [`Stage::ALL`].
    pub stages: [Duration; 8],
}

impl PartitionTiming {
    /// The duration of one stage.
    pub fn get(&self, stage: Stage) -> Duration {
        self.stages[stage as usize]
    }

    pub(crate) fn add(&mut self, stage: Stage, d: Duration) {
        self.stages[stage as usize] += d;
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
