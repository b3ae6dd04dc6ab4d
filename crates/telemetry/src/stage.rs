//! The stages of one partition's proof: their names, their order and their spans, defined once.
//!
//! The pipeline runs them, this crate records and summarises them, the interlock simulator
//! replays them and the waterfall colours them; all of them go through [`Stage`], so a stage
//! added here shows up everywhere (every `match` on it is exhaustive) and a name cannot drift.

use std::fmt;

use tracing::Span;

/// A stage of the partition prover.
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
    /// a, b, c from a pre-compiled circuit's witness (A·z, B·z, C·z, every row checked); empty
    /// when synthesis made them.
    Products,
    /// H = (a·b − c)/Z through inverse, coset and coset-inverse NTTs.
    NttH,
    /// Σ hᵢ·Hᵢ over the `h` query.
    MsmH,
    /// Assemble A, B, C.
    Epilogue,
}

impl Stage {
    /// Every stage, in the CPU prover's execution order: the queries over the assignment's
    /// values first, so that those values are freed before the NTTs need their scratch. Every
    /// summary lists the stages in this order, and arrays of per-stage values are indexed by
    /// [`Stage::index`].
    pub const ALL: [Stage; 9] = [
        Stage::Validate,
        Stage::SplitVectors,
        Stage::PrepMsm,
        Stage::BatchAdd,
        Stage::TailMsm,
        Stage::Products,
        Stage::NttH,
        Stage::MsmH,
        Stage::Epilogue,
    ];

    /// The stage's name in spans, summaries and traces.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Validate => "validate",
            Stage::SplitVectors => "split_vectors",
            Stage::PrepMsm => "prep_msm",
            Stage::BatchAdd => "batch_add",
            Stage::TailMsm => "tail_msm",
            Stage::Products => "products",
            Stage::NttH => "ntt_h",
            Stage::MsmH => "msm_h",
            Stage::Epilogue => "epilogue",
        }
    }

    /// The stage called `name`, if any.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The stage's position in [`Stage::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The stage's fill in the waterfall.
    pub const fn colour(self) -> &'static str {
        match self {
            Stage::Validate => "#9c755f",
            Stage::SplitVectors => "#4e79a7",
            Stage::PrepMsm => "#f28e2b",
            Stage::BatchAdd => "#59a14f",
            Stage::TailMsm => "#edc948",
            Stage::Products => "#bab0ac",
            Stage::NttH => "#e15759",
            Stage::MsmH => "#76b7b2",
            Stage::Epilogue => "#b07aa1",
        }
    }

    /// A new `info` span for this stage of one partition, with the fields the [`Recorder`]
    /// reads, `gpu_ns` empty for a GPU backend to record its CUDA-event time into (`tracing`
    /// needs each span's name as a literal, hence the `match`; a test checks that every span
    /// carries [`Stage::name`]).
    ///
    /// [`Recorder`]: crate::Recorder
    pub fn span(self, job: u64, partition: u64, worker: u64, device: &str) -> Span {
        use tracing::field::Empty;
        match self {
            Stage::Validate => {
                tracing::info_span!("validate", job, partition, worker, device, gpu_ns = Empty)
            }
            Stage::SplitVectors => {
                tracing::info_span!(
                    "split_vectors",
                    job,
                    partition,
                    worker,
                    device,
                    gpu_ns = Empty
                )
            }
            Stage::PrepMsm => {
                tracing::info_span!("prep_msm", job, partition, worker, device, gpu_ns = Empty)
            }
            Stage::BatchAdd => {
                tracing::info_span!("batch_add", job, partition, worker, device, gpu_ns = Empty)
            }
            Stage::TailMsm => {
                tracing::info_span!("tail_msm", job, partition, worker, device, gpu_ns = Empty)
            }
            Stage::Products => {
                tracing::info_span!("products", job, partition, worker, device, gpu_ns = Empty)
            }
            Stage::NttH => {
                tracing::info_span!("ntt_h", job, partition, worker, device, gpu_ns = Empty)
            }
            Stage::MsmH => {
                tracing::info_span!("msm_h", job, partition, worker, device, gpu_ns = Empty)
            }
            Stage::Epilogue => {
                tracing::info_span!("epilogue", job, partition, worker, device, gpu_ns = Empty)
            }
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_indexed_by_discriminant_and_names_round_trip() {
        for (i, stage) in Stage::ALL.into_iter().enumerate() {
            assert_eq!(stage.index(), i);
            assert_eq!(Stage::from_name(stage.name()), Some(stage));
        }
        assert_eq!(Stage::from_name("lock_wait"), None);
    }

    #[test]
    fn every_span_is_named_after_its_stage() {
        let (recorder, handle) = crate::Recorder::new();
        use tracing_subscriber::prelude::*;
        let subscriber = tracing_subscriber::registry().with(recorder);
        tracing::subscriber::with_default(subscriber, || {
            for stage in Stage::ALL {
                let _entered = stage.span(1, 0, 0, "cpu").entered();
            }
        });
        let names: Vec<String> = handle
            .snapshot()
            .spans
            .into_iter()
            .map(|s| s.name)
            .collect();
        let expected: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn colours_are_distinct() {
        let mut colours: Vec<&str> = Stage::ALL.iter().map(|s| s.colour()).collect();
        colours.sort_unstable();
        colours.dedup();
        assert_eq!(colours.len(), Stage::ALL.len());
    }
}
