//! `split_vectors` and `prep_msm`: sort a query's scalars into zero, one and other.
//!
//! A Groth16 query pairs each base with the value of one variable. Zeros contribute nothing; ones
//! contribute their base, so they become a plain sum of points (batch addition, far cheaper than
//! an MSM term); only the rest go to the MSM. In a PoRep partition most scalars are zero or one.
//!
//! This is the host path ([`crate::host_query_sums`]); the GPU backend splits a query whose bases
//! are resident on the device instead (cuzk-msm's `GpuMsm::split_in`, the same outputs).

use cuzk_field::{Bitmap, Scalar};
use ff::Field;
use rayon::prelude::*;

/// Variables per parallel block.
const BLOCK: usize = 1 << 14;

/// One run of variables of a query: their values and, unless every variable of the run is in
/// the query, the density saying which are.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    /// The variables' values.
    pub values: &'a [Scalar],
    /// Which variables occur in the query; `None` for all of them.
    pub density: Option<&'a Bitmap>,
}

/// A query's scalars, split by kind. Indices are into the query's base vector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitQuery {
    /// Bases whose scalar is one.
    pub ones: Vec<u32>,
    /// Bases whose scalar is neither zero nor one.
    pub other_bases: Vec<u32>,
    /// The scalars of `other_bases`, in the same order.
    pub other_scalars: Vec<Scalar>,
    /// How many scalars were zero.
    pub zeros: usize,
    /// How many bases the query has (the number of variables in it).
    pub n_bases: usize,
}

impl SplitQuery {
    fn append(&mut self, other: SplitQuery) {
        self.ones.extend(other.ones);
        self.other_bases.extend(other.other_bases);
        self.other_scalars.extend(other.other_scalars);
        self.zeros += other.zeros;
        self.n_bases += other.n_bases;
    }
}

/// Splits a query made of consecutive segments. Base indices count only the variables in the
/// query (density set), in order.
pub fn split_query(segments: &[Segment<'_>]) -> SplitQuery {
    // Lay out blocks with the index of their first base, so blocks can run in parallel.
    let mut blocks = Vec::new();
    let mut base = 0usize;
    for seg in segments {
        for start in (0..seg.values.len()).step_by(BLOCK) {
            let end = (start + BLOCK).min(seg.values.len());
            blocks.push((*seg, start, end, base));
            base += match seg.density {
                Some(d) => (start..end).filter(|&i| d.get(i)).count(),
                None => end - start,
            };
        }
    }
    blocks
        .into_par_iter()
        .map(|(seg, start, end, first_base)| {
            let mut out = SplitQuery::default();
            let mut b = first_base as u32;
            for i in start..end {
                if let Some(d) = seg.density {
                    if !d.get(i) {
                        continue;
                    }
                }
                let v = seg.values[i];
                if bool::from(v.is_zero()) {
                    out.zeros += 1;
                } else if v == Scalar::ONE {
                    out.ones.push(b);
                } else {
                    out.other_bases.push(b);
                    out.other_scalars.push(v);
                }
                b += 1;
                out.n_bases += 1;
            }
            out
        })
        .collect::<Vec<_>>()
        .into_iter()
        .fold(SplitQuery::default(), |mut acc, part| {
            acc.append(part);
            acc
        })
}

/// `prep_msm`: the bases at `indices`, gathered into one contiguous vector.
pub fn gather<P: Copy + Send + Sync>(bases: &[P], indices: &[u32]) -> Vec<P> {
    indices.par_iter().map(|&i| bases[i as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_with_density_across_segments() {
        let v = |x: u64| Scalar::from(x);
        let inputs = [v(1), v(5)];
        let aux = [v(0), v(1), v(7), v(1), v(0)];
        let density = Bitmap::from_bools([true, false, true, true, true]);
        let split = split_query(&[
            Segment {
                values: &inputs,
                density: None,
            },
            Segment {
                values: &aux,
                density: Some(&density),
            },
        ]);
        // Bases: input0 (1), input1 (5), aux0 (0), aux2 (7), aux3 (1), aux4 (0).
        assert_eq!(split.ones, vec![0, 4]);
        assert_eq!(split.other_bases, vec![1, 3]);
        assert_eq!(split.other_scalars, vec![v(5), v(7)]);
        assert_eq!(split.zeros, 2);
        assert_eq!(split.n_bases, 6);
    }

    #[test]
    fn parallel_blocks_keep_order() {
        let values: Vec<Scalar> = (0..(3 * BLOCK + 17) as u64)
            .map(|i| Scalar::from(i % 3))
            .collect();
        let density = Bitmap::from_bools((0..values.len()).map(|i| i % 5 != 0));
        let split = split_query(&[Segment {
            values: &values,
            density: Some(&density),
        }]);
        let mut expected = SplitQuery::default();
        let mut b = 0u32;
        for (i, v) in values.iter().enumerate() {
            if i % 5 == 0 {
                continue;
            }
            match i % 3 {
                0 => expected.zeros += 1,
                1 => expected.ones.push(b),
                _ => {
                    expected.other_bases.push(b);
                    expected.other_scalars.push(*v);
                }
            }
            b += 1;
        }
        expected.n_bases = b as usize;
        assert_eq!(split, expected);
    }
}
