//! The query sums over a partition's values (`split_vectors` to `tail_msm`), and their host path.
//!
//! Three queries read the values (input ‖ aux): L over aux, A over input ‖ aux (the aux that
//! `a_aux_density` says occur in A), B over the inputs and aux its densities say (B₁ in G1 and
//! B₂ in G2 share B's split). Each query's sum is its ones' bases batch-added plus the tail MSM
//! over its other scalars. A backend computes them in [`Backend::query_sums`](crate::Backend):
//! [`host_query_sums`](crate::host_query_sums), beside the trait, is the host path (the split
//! and the gathering on the host, the sums through the backend's `batch_add_*` and `msm_*`); the
//! GPU backend splits and gathers on the device where the query's bases are resident there.
//! This module holds the types the trait speaks in and depends on no backend.

use std::time::Instant;

use cuzk_field::{Bitmap, G1Affine, G1Projective, G2Projective, Scalar};
use cuzk_groth16::{Parameters, Points};
use group::Group;

use crate::split::Segment;
use crate::stage::{PartitionTiming, Stage};
use crate::{JobContext, PipelineError};

/// A partition's values and the densities that say which of them each query has.
#[derive(Clone, Copy, Debug)]
pub struct Witness<'a> {
    /// The public inputs' values (the first is one).
    pub input: &'a [Scalar],
    /// The private variables' values.
    pub aux: &'a [Scalar],
    /// Which aux variables occur in A.
    pub a_aux_density: &'a Bitmap,
    /// Which inputs occur in B.
    pub b_input_density: &'a Bitmap,
    /// Which aux variables occur in B.
    pub b_aux_density: &'a Bitmap,
}

/// A query over the values, by its bases: L, A, or B (B₁ and B₂ share its split).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// `params.l`, over aux.
    L,
    /// `params.a`, over input ‖ aux by `a_aux_density`.
    A,
    /// `params.b_g1` and `params.b_g2`, over input and aux by their densities.
    B,
}

impl Query {
    /// Every query, in the order the prover sums them.
    pub const ALL: [Query; 3] = [Query::L, Query::A, Query::B];

    /// The query's runs of values for the host split.
    pub(crate) fn segments<'a>(self, w: &Witness<'a>) -> [Segment<'a>; 2] {
        let (inputs, input_density, aux_density) = match self {
            // L has no inputs: an empty run.
            Query::L => (&w.input[..0], None, None),
            Query::A => (w.input, None, Some(w.a_aux_density)),
            Query::B => (w.input, Some(w.b_input_density), Some(w.b_aux_density)),
        };
        [
            Segment {
                values: inputs,
                density: input_density,
            },
            Segment {
                values: w.aux,
                density: aux_density,
            },
        ]
    }

    /// The query's membership over the values input ‖ aux: a bit per value, set for the
    /// variables the query has (its bases are those, in order).
    pub fn members(self, w: &Witness<'_>) -> Bitmap {
        let mut members = match self {
            Query::L => Bitmap::zeros(w.input.len()),
            Query::A => Bitmap::ones(w.input.len()),
            Query::B => w.b_input_density.clone(),
        };
        match self {
            Query::L => members.extend_from(&Bitmap::ones(w.aux.len())),
            Query::A => members.extend_from(w.a_aux_density),
            Query::B => members.extend_from(w.b_aux_density),
        }
        members
    }

    /// How many bases the query has in `params`: the most its split can find of each kind.
    pub fn n_bases(self, params: &Parameters) -> usize {
        self.points(params).len()
    }

    /// The query's G1 bases in `params` (for B, B₁; B₂ is `params.b_g2`).
    pub fn points(self, params: &Parameters) -> &Points<G1Affine> {
        match self {
            Query::L => &params.l,
            Query::A => &params.a,
            Query::B => &params.b_g1,
        }
    }
}

/// The sums of the queries a proof is assembled from (each: ones batch-added + tail MSM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuerySums {
    /// Σ over L.
    pub l: G1Projective,
    /// Σ over A.
    pub a: G1Projective,
    /// Σ over B in G1.
    pub b1: G1Projective,
    /// Σ over B in G2.
    pub b2: G2Projective,
}

impl Default for QuerySums {
    fn default() -> Self {
        Self {
            l: G1Projective::identity(),
            a: G1Projective::identity(),
            b1: G1Projective::identity(),
            b2: G2Projective::identity(),
        }
    }
}

/// Runs a backend's steps as the partition's stages: each inside its span (named after the
/// stage, with the partition's fields) and timed into the partition's [`PartitionTiming`]. A
/// stage may run several times (once per query); its durations add up.
#[derive(Debug)]
pub struct Stages<'a> {
    ctx: JobContext,
    device: &'a str,
    timing: &'a mut PartitionTiming,
}

impl<'a> Stages<'a> {
    pub(crate) fn new(ctx: JobContext, device: &'a str, timing: &'a mut PartitionTiming) -> Self {
        Self {
            ctx,
            device,
            timing,
        }
    }

    /// Runs `f` as (a part of) `stage`.
    pub fn run<T>(
        &mut self,
        stage: Stage,
        f: impl FnOnce() -> Result<T, PipelineError>,
    ) -> Result<T, PipelineError> {
        let span = stage.span(
            self.ctx.job,
            self.timing.partition as u64,
            self.ctx.worker,
            self.device,
        );
        let _entered = span.enter();
        let start = Instant::now();
        let out = f();
        self.timing.add(stage, start.elapsed());
        out
    }
}
