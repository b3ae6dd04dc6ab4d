//! Proving parameters (the SRS) in bellperson's `.params` format:
//! the verifying key, then `h`, `l`, `a`, `b_g1` (G1) and `b_g2` (G2), each a big-endian `u32`
//! count followed by that many uncompressed affine points. No query holds the point at infinity.
//!
//! Reads are checked (every point on the curve and in the prime-order subgroup) or unchecked (on
//! the curve only, much faster, for files whose integrity is known). Decoding runs in parallel.
//! [`MappedParameters`] memory-maps a file and decodes ranges on demand, for files too large to
//! hold decoded twice; its `to_parameters` decodes each section in blocks and releases a block's
//! mapped pages once decoded, so loading never holds the file and its decoded points both.

use std::fs::File;
use std::io::{Read, Write};
use std::marker::PhantomData;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cuzk_field::{G1Affine, G2Affine};

use crate::codec::{
    decode_points_into, write_points, Check, CountingReader, SliceReader, Uncompressed,
    G1_UNCOMPRESSED, G2_UNCOMPRESSED,
};
use crate::engine::{Bls12, Engine};
use crate::error::{Groth16Error, Section};
use crate::points::{PointSource, Points};
use crate::vk::VerifyingKey;

/// Groth16 proving parameters.
pub struct Parameters<E: Engine = Bls12> {
    /// The verifying key.
    pub vk: VerifyingKey<E>,
    /// `τ^i·Z(τ)/δ` for `i` in `0..n-1` (n the domain size).
    pub h: Points<G1Affine>,
    /// `(β·u_i(τ) + α·v_i(τ) + w_i(τ))/δ` for every auxiliary variable.
    pub l: Points<G1Affine>,
    /// `u_i(τ)` for every variable whose A polynomial is non-zero (inputs first).
    pub a: Points<G1Affine>,
    /// `v_i(τ)` in G1 for every variable whose B polynomial is non-zero (inputs first).
    pub b_g1: Points<G1Affine>,
    /// `v_i(τ)` in G2, same variables as `b_g1`.
    pub b_g2: Points<G2Affine>,
}

impl<E: Engine> Clone for Parameters<E> {
    fn clone(&self) -> Self {
        Self {
            vk: self.vk.clone(),
            h: self.h.clone(),
            l: self.l.clone(),
            a: self.a.clone(),
            b_g1: self.b_g1.clone(),
            b_g2: self.b_g2.clone(),
        }
    }
}

impl<E: Engine> PartialEq for Parameters<E> {
    fn eq(&self, other: &Self) -> bool {
        self.vk == other.vk
            && self.h == other.h
            && self.l == other.l
            && self.a == other.a
            && self.b_g1 == other.b_g1
            && self.b_g2 == other.b_g2
    }
}

impl<E: Engine> std::fmt::Debug for Parameters<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parameters")
            .field("vk", &self.vk)
            .field("h", &self.h.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b_g1", &self.b_g1.len())
            .field("b_g2", &self.b_g2.len())
            .finish()
    }
}

impl Parameters {
    /// The G1 queries, largest first as they usually are: H, L, A, B₁.
    pub fn g1_queries(&self) -> [&Points<G1Affine>; 4] {
        [&self.h, &self.l, &self.a, &self.b_g1]
    }

    /// Bytes of query points held in host memory now (a query read lazily or released holds
    /// none: see [`Points`]).
    pub fn host_bytes(&self) -> u64 {
        self.g1_queries()
            .iter()
            .map(|q| q.host_bytes())
            .sum::<u64>()
            + self.b_g2.host_bytes()
    }

    /// Reads every query into host memory (where the CPU prover reads them), decoding those
    /// that are not there yet.
    pub fn to_host(&self) -> Result<(), Groth16Error> {
        for q in self.g1_queries() {
            q.host()?;
        }
        self.b_g2.host()?;
        Ok(())
    }

    /// Size of the encoding in bytes.
    pub fn encoded_len(&self) -> u64 {
        let g1 = (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) as u64;
        self.vk.encoded_len() as u64
            + 5 * 4
            + g1 * G1_UNCOMPRESSED as u64
            + self.b_g2.len() as u64 * G2_UNCOMPRESSED as u64
    }

    /// Writes the parameters in bellperson's format (queries not in host memory are read in
    /// blocks, not kept).
    pub fn write<W: Write>(&self, mut writer: W) -> std::io::Result<()> {
        self.vk.write(&mut writer)?;
        fn section<P: Uncompressed + Send + Sync + 'static, W: Write>(
            w: &mut W,
            points: &Points<P>,
        ) -> std::io::Result<()> {
            w.write_all(&(points.len() as u32).to_be_bytes())?;
            if let Some(held) = points.in_host() {
                return write_points(w, &held);
            }
            let block = (RELEASE_BYTES / P::SIZE).max(1);
            for first in (0..points.len()).step_by(block) {
                write_points(w, &points.read(first..(first + block).min(points.len()))?)?;
            }
            Ok(())
        }
        section(&mut writer, &self.h)?;
        section(&mut writer, &self.l)?;
        section(&mut writer, &self.a)?;
        section(&mut writer, &self.b_g1)?;
        section(&mut writer, &self.b_g2)
    }

    /// Reads parameters from a stream. `checked` also checks subgroup membership of every query
    /// point (the verifying key is always checked). Bytes after the last section are an error.
    pub fn read<R: Read>(reader: R, checked: bool) -> Result<Self, Groth16Error> {
        let check = Check::from_checked(checked);
        let mut r = CountingReader::new(reader);
        let vk = VerifyingKey::read_from(&mut r)?;
        let g1 = |r: &mut CountingReader<R>, s| -> Result<Points<G1Affine>, Groth16Error> {
            let count = r.read_u32(s)? as usize;
            Ok(Points::new(r.read_points(count, s, check)?))
        };
        let h = g1(&mut r, Section::H)?;
        let l = g1(&mut r, Section::L)?;
        let a = g1(&mut r, Section::A)?;
        let b_g1 = g1(&mut r, Section::BG1)?;
        let count = r.read_u32(Section::BG2)? as usize;
        let b_g2 = Points::new(r.read_points(count, Section::BG2, check)?);
        let extra = r.trailing_bytes()?;
        if extra != 0 {
            return Err(Groth16Error::TrailingBytes { extra });
        }
        Ok(Self {
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// bellperson's name for [`MappedParameters::open`].
    pub fn build_mapped_parameters(
        path: PathBuf,
        checked: bool,
    ) -> Result<MappedParameters, Groth16Error> {
        MappedParameters::open(path, Check::from_checked(checked))
    }

    /// Reads a parameter file through a memory map, decoding every section in parallel.
    pub fn read_file(path: impl AsRef<Path>, checked: bool) -> Result<Self, Groth16Error> {
        MappedParameters::open(path, Check::from_checked(checked))?.to_parameters()
    }
}

/// One of a parameter file's query vectors, typed by the group of its points: the key of
/// [`MappedParameters::len`] and [`MappedParameters::points`].
pub struct Query<P> {
    index: usize,
    section: Section,
    _point: PhantomData<fn() -> P>,
}

// Manual impls: a derive would require `P: Clone` and so on.
impl<P> Clone for Query<P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P> Copy for Query<P> {}
impl<P> std::fmt::Debug for Query<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Query({})", self.section)
    }
}

impl<P> Query<P> {
    const fn new(index: usize, section: Section) -> Self {
        Self {
            index,
            section,
            _point: PhantomData,
        }
    }

    /// The section the query is read from, as errors name it.
    pub fn section(self) -> Section {
        self.section
    }
}

impl Query<G1Affine> {
    /// `h`: `τ^i·Z(τ)/δ`.
    pub const H: Self = Self::new(0, Section::H);
    /// `l`: the private variables' terms over δ.
    pub const L: Self = Self::new(1, Section::L);
    /// `a`: A's terms at τ, in G1.
    pub const A: Self = Self::new(2, Section::A);
    /// `b_g1`: B's terms at τ, in G1.
    pub const B_G1: Self = Self::new(3, Section::BG1);
}

impl Query<G2Affine> {
    /// `b_g2`: B's terms at τ, in G2.
    pub const B_G2: Self = Self::new(4, Section::BG2);
}

/// Bytes of a parameter file [`MappedParameters::to_parameters`] decodes between releases of
/// their mapped pages: enough to keep every core busy, small beside a section.
pub const RELEASE_BYTES: usize = 64 << 20;

/// A memory-mapped parameter file whose structure has been validated, decoded on demand.
///
/// Opening reads and checks the verifying key and every section's count against the file size;
/// query points are decoded (with the [`Check`] it was opened with) only when a range is asked
/// for.
pub struct MappedParameters<E: Engine = Bls12> {
    path: PathBuf,
    map: memmap2::Mmap,
    /// The verifying key, decoded and checked.
    pub vk: VerifyingKey<E>,
    check: Check,
    /// The byte range of each query's points, indexed by `Query::index`.
    sections: [Range<usize>; 5],
}

impl<E: Engine> std::fmt::Debug for MappedParameters<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedParameters")
            .field("path", &self.path)
            .field("check", &self.check)
            .field("section_bytes", &self.sections.each_ref().map(Range::len))
            .finish()
    }
}

impl MappedParameters {
    /// Maps `path` and validates its structure.
    pub fn open(path: impl AsRef<Path>, check: Check) -> Result<Self, Groth16Error> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path)?;
        #[allow(unsafe_code)]
        // SAFETY: the map is read-only and private to this value. Like every reader of a file, we
        // rely on no other process truncating or rewriting the parameter file while it is mapped
        // (a truncation would fault on access); parameter files are immutable by convention.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let mut r = SliceReader::new(&map);
        let vk = VerifyingKey::read_slice(&mut r)?;
        let mut section = |size, s| -> Result<Range<usize>, Groth16Error> {
            let (count, _) = r.take_vector(size, s)?;
            let end = r.offset();
            Ok(end - count * size..end)
        };
        let sections = [
            section(G1_UNCOMPRESSED, Section::H)?,
            section(G1_UNCOMPRESSED, Section::L)?,
            section(G1_UNCOMPRESSED, Section::A)?,
            section(G1_UNCOMPRESSED, Section::BG1)?,
            section(G2_UNCOMPRESSED, Section::BG2)?,
        ];
        if r.remaining() != 0 {
            return Err(Groth16Error::TrailingBytes {
                extra: r.remaining() as u64,
            });
        }
        Ok(Self {
            path,
            map,
            vk,
            check,
            sections,
        })
    }

    /// The mapped file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of points in `query`.
    #[allow(private_bounds)]
    pub fn len<P: Uncompressed>(&self, query: Query<P>) -> usize {
        self.sections[query.index].len() / P::SIZE
    }

    /// Decodes `query[range]`.
    #[allow(private_bounds)]
    pub fn points<P: Uncompressed>(
        &self,
        query: Query<P>,
        range: Range<usize>,
    ) -> Result<Vec<P>, Groth16Error> {
        // Bounded by the section, so a range past its end is an error, not a huge allocation.
        let mut out =
            Vec::with_capacity(range.end.min(self.len(query)).saturating_sub(range.start));
        self.points_into(query, range, &mut out)?;
        Ok(out)
    }

    /// Decodes `query[range]` onto the end of `out`, and returns the byte range of the map it
    /// read.
    fn points_into<P: Uncompressed>(
        &self,
        query: Query<P>,
        range: Range<usize>,
        out: &mut Vec<P>,
    ) -> Result<Range<usize>, Groth16Error> {
        let bytes = &self.sections[query.index];
        let len = bytes.len() / P::SIZE;
        if range.start > range.end || range.end > len {
            return Err(Groth16Error::LengthMismatch {
                what: "range into a parameter section",
                expected: len,
                got: range.end,
            });
        }
        let read = bytes.start + range.start * P::SIZE..bytes.start + range.end * P::SIZE;
        decode_points_into(
            &self.map[read.clone()],
            query.section,
            range.start,
            self.check,
            out,
        )?;
        Ok(read)
    }

    /// Decodes all of `query`.
    #[allow(private_bounds)]
    pub fn all<P: Uncompressed>(&self, query: Query<P>) -> Result<Vec<P>, Groth16Error> {
        self.points(query, 0..self.len(query))
    }

    /// Decodes everything into in-memory [`Parameters`].
    ///
    /// Each section is decoded in blocks of [`RELEASE_BYTES`], and a block's mapped pages are
    /// handed back to the kernel once it is decoded, so the process holds the decoded points and
    /// one block of the file rather than both whole (the file stays in the page cache for the
    /// next reader).
    pub fn to_parameters(&self) -> Result<Parameters, Groth16Error> {
        self.to_parameters_in_blocks(RELEASE_BYTES)
    }

    /// [`to_parameters`](Self::to_parameters) with blocks of `block_bytes` (whole points, at
    /// least one).
    pub fn to_parameters_in_blocks(&self, block_bytes: usize) -> Result<Parameters, Groth16Error> {
        Ok(Parameters {
            vk: self.vk.clone(),
            h: Points::new(self.all_released(Query::H, block_bytes)?),
            l: Points::new(self.all_released(Query::L, block_bytes)?),
            a: Points::new(self.all_released(Query::A, block_bytes)?),
            b_g1: Points::new(self.all_released(Query::B_G1, block_bytes)?),
            b_g2: Points::new(self.all_released(Query::B_G2, block_bytes)?),
        })
    }

    /// Parameters whose queries are decoded from this file only when a host path needs them
    /// ([`Points::host`], kept from then on) or a range is read ([`Points::read`], not kept):
    /// nothing is decoded here. A device copies the queries it keeps straight from the file,
    /// so no decoded copy of them stays in host memory; each decoded block's mapped pages are
    /// released, as [`to_parameters`](Self::to_parameters) does.
    pub fn lazy_parameters(self: &Arc<Self>) -> Parameters {
        fn lazy<P: Uncompressed + Send + Sync + 'static>(
            map: &Arc<MappedParameters>,
            query: Query<P>,
        ) -> Points<P> {
            let source = Arc::new(MappedQuery {
                map: Arc::clone(map),
                query,
            });
            Points::lazy(map.len(query), source)
        }
        Parameters {
            vk: self.vk.clone(),
            h: lazy(self, Query::H),
            l: lazy(self, Query::L),
            a: lazy(self, Query::A),
            b_g1: lazy(self, Query::B_G1),
            b_g2: lazy(self, Query::B_G2),
        }
    }

    /// [`all`](Self::all), releasing the mapped pages of each block once it is decoded.
    fn all_released<P: Uncompressed>(
        &self,
        query: Query<P>,
        block_bytes: usize,
    ) -> Result<Vec<P>, Groth16Error> {
        self.range_released(query, 0..self.len(query), block_bytes)
    }

    /// [`points`](Self::points), releasing the mapped pages of each block once it is decoded.
    fn range_released<P: Uncompressed>(
        &self,
        query: Query<P>,
        range: Range<usize>,
        block_bytes: usize,
    ) -> Result<Vec<P>, Groth16Error> {
        let block = (block_bytes / P::SIZE).max(1);
        let mut out =
            Vec::with_capacity(range.end.min(self.len(query)).saturating_sub(range.start));
        for first in range.clone().step_by(block) {
            let read = self.points_into(query, first..(first + block).min(range.end), &mut out)?;
            self.release(read);
        }
        Ok(out)
    }

    /// Drops the mapped pages of `range` from this process's memory; a later read maps them
    /// again from the file (or the page cache). Only a hint: a failure changes nothing.
    fn release(&self, range: Range<usize>) {
        #[cfg(unix)]
        {
            #[allow(unsafe_code)]
            // SAFETY: the map is a read-only shared mapping of the parameter file, which is
            // never written while mapped (see `open`). MADV_DONTNEED on such a mapping only drops
            // the pages from this process: the next access faults them in again with the file's
            // same bytes, so no slice of the map, borrowed now or later, sees its contents change.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    range.start,
                    range.len(),
                )
            };
        }
        #[cfg(not(unix))]
        let _ = range;
    }
}

/// One query of a mapped file, as a [`PointSource`].
struct MappedQuery<P> {
    map: Arc<MappedParameters>,
    query: Query<P>,
}

impl<P: Uncompressed + Send + Sync> PointSource<P> for MappedQuery<P> {
    fn read(&self, range: Range<usize>) -> Result<Vec<P>, Groth16Error> {
        self.map.range_released(self.query, range, RELEASE_BYTES)
    }
}

/// Where the prover gets its parameters: decoded in memory, or a mapped file decoded on use
/// (bellperson's `ParameterSource`, for the two kinds it has).
pub trait ParameterSource {
    /// The parameters, borrowed when they are already decoded.
    fn parameters(&self) -> Result<std::borrow::Cow<'_, Parameters>, Groth16Error>;
}

impl ParameterSource for Parameters {
    fn parameters(&self) -> Result<std::borrow::Cow<'_, Parameters>, Groth16Error> {
        Ok(std::borrow::Cow::Borrowed(self))
    }
}

impl ParameterSource for MappedParameters {
    fn parameters(&self) -> Result<std::borrow::Cow<'_, Parameters>, Groth16Error> {
        Ok(std::borrow::Cow::Owned(self.to_parameters()?))
    }
}

impl<T: ParameterSource + ?Sized> ParameterSource for &T {
    fn parameters(&self) -> Result<std::borrow::Cow<'_, Parameters>, Groth16Error> {
        (**self).parameters()
    }
}
