//! The byte encodings bellperson uses: big-endian `u32` counts and uncompressed affine points
//! (96 bytes in G1, 192 in G2) in parameter files and verifying keys, compressed points in proofs.

use std::io::{self, Read, Write};

use cuzk_field::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use crate::error::{Groth16Error, Section};

pub(crate) const G1_UNCOMPRESSED: usize = 96;
pub(crate) const G2_UNCOMPRESSED: usize = 192;

/// Points encoded per parallel batch when writing a long vector.
const BATCH_POINTS: usize = 1 << 16;

/// Bytes of encoded points (256 KiB) read and decoded per parallel batch when reading from a stream: big
/// enough to keep every thread busy, small enough that the transient buffers stay far below the
/// parameters themselves.
const READ_BATCH_BYTES: usize = 1 << 18;

/// What is checked of each point as it is decoded. Points at infinity are refused either way:
/// no query, verifying-key vector or proof element of a valid setup holds one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    /// The encoding and the curve equation (what blst's deserialisation checks), skipping the
    /// costly subgroup check: for parameter files from a trusted source. bellperson's
    /// `checked = false`.
    Curve,
    /// Also membership of the prime-order subgroup. bellperson's `checked = true`.
    Subgroup,
}

impl Check {
    /// The check bellperson's `checked` flag asks for.
    pub fn from_checked(checked: bool) -> Self {
        if checked {
            Check::Subgroup
        } else {
            Check::Curve
        }
    }
}

/// A point type with a fixed-size uncompressed encoding.
pub(crate) trait Uncompressed: Sized + Send + Copy + PrimeCurveAffine {
    const SIZE: usize;
    fn decode(bytes: &[u8], check: Check) -> Option<Self>;
    fn encode(&self, out: &mut Vec<u8>);
}

impl Uncompressed for G1Affine {
    const SIZE: usize = G1_UNCOMPRESSED;
    fn decode(bytes: &[u8], check: Check) -> Option<Self> {
        let bytes: &[u8; G1_UNCOMPRESSED] = bytes.try_into().ok()?;
        let p = match check {
            Check::Subgroup => G1Affine::from_uncompressed(bytes),
            Check::Curve => G1Affine::from_uncompressed_unchecked(bytes),
        };
        Option::from(p)
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_uncompressed());
    }
}

impl Uncompressed for G2Affine {
    const SIZE: usize = G2_UNCOMPRESSED;
    fn decode(bytes: &[u8], check: Check) -> Option<Self> {
        let bytes: &[u8; G2_UNCOMPRESSED] = bytes.try_into().ok()?;
        let p = match check {
            Check::Subgroup => G2Affine::from_uncompressed(bytes),
            Check::Curve => G2Affine::from_uncompressed_unchecked(bytes),
        };
        Option::from(p)
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_uncompressed());
    }
}

/// Decodes `bytes` (a whole number of encodings) in parallel; `first_index` numbers the points
/// in errors.
pub(crate) fn decode_points<P: Uncompressed>(
    bytes: &[u8],
    section: Section,
    first_index: usize,
    check: Check,
) -> Result<Vec<P>, Groth16Error> {
    let mut out = Vec::with_capacity(bytes.len() / P::SIZE);
    decode_points_into(bytes, section, first_index, check, &mut out)?;
    Ok(out)
}

/// Decodes points in parallel and appends them to `out`, written in place (no intermediate
/// vectors: collecting `Result`s would gather them in pieces and copy them once more). No query
/// holds the point at infinity, so a point that does not decode is written as the identity and
/// told apart from a real one afterwards. On error, `out` may hold part of the points.
pub(crate) fn decode_points_into<P: Uncompressed>(
    bytes: &[u8],
    section: Section,
    first_index: usize,
    check: Check,
    out: &mut Vec<P>,
) -> Result<(), Groth16Error> {
    let start = out.len();
    out.par_extend(
        bytes
            .par_chunks_exact(P::SIZE)
            .map(|chunk| P::decode(chunk, check).unwrap_or_else(P::identity)),
    );
    let bad = out[start..]
        .par_iter()
        .position_first(|p| bool::from(p.is_identity()));
    match bad {
        Some(i) => {
            let index = first_index + i;
            let chunk = &bytes[i * P::SIZE..(i + 1) * P::SIZE];
            Err(match P::decode(chunk, check) {
                Some(_) => Groth16Error::PointAtInfinity { section, index },
                None => Groth16Error::InvalidPoint { section, index },
            })
        }
        None if bytes.len() % P::SIZE != 0 => Err(Groth16Error::InvalidPoint {
            section,
            index: first_index + bytes.len() / P::SIZE,
        }),
        None => Ok(()),
    }
}

/// Encodes points in parallel and writes them.
pub(crate) fn write_points<P: Uncompressed + Sync, W: Write>(
    writer: &mut W,
    points: &[P],
) -> io::Result<()> {
    for batch in points.chunks(BATCH_POINTS) {
        let bytes: Vec<u8> = batch
            .par_chunks(1024)
            .flat_map_iter(|chunk| {
                let mut out = Vec::with_capacity(chunk.len() * P::SIZE);
                for p in chunk {
                    p.encode(&mut out);
                }
                out
            })
            .collect();
        writer.write_all(&bytes)?;
    }
    Ok(())
}

/// A reader that knows its offset, so truncation errors say where the input ended.
pub(crate) struct CountingReader<R> {
    inner: R,
    offset: u64,
}

impl<R: Read> CountingReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self { inner, offset: 0 }
    }

    pub(crate) fn read_exact(
        &mut self,
        buf: &mut [u8],
        section: Section,
    ) -> Result<(), Groth16Error> {
        match self.inner.read_exact(buf) {
            Ok(()) => {
                self.offset += buf.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(Groth16Error::Truncated {
                section,
                offset: self.offset,
                needed: buf.len() as u64,
            }),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn read_u32(&mut self, section: Section) -> Result<u32, Groth16Error> {
        let mut buf = [0u8; 4];
        self.read_exact(&mut buf, section)?;
        Ok(u32::from_be_bytes(buf))
    }

    /// Reads `count` points, decoding each batch in parallel. Memory grows with the data actually
    /// read, so a corrupted count cannot make it allocate more than the input holds.
    pub(crate) fn read_points<P: Uncompressed>(
        &mut self,
        count: usize,
        section: Section,
        check: Check,
    ) -> Result<Vec<P>, Groth16Error> {
        // Reserve the whole vector up front so it is never copied while growing. The reservation
        // is only address space until points arrive, so a corrupted count costs nothing: the
        // read fails as truncated first. Where even the address space is refused, grow instead.
        let mut out = Vec::new();
        if out.try_reserve_exact(count).is_err() {
            out.reserve(count.min(READ_BATCH_BYTES / P::SIZE));
        }
        let batch_points = READ_BATCH_BYTES / P::SIZE;
        let mut buf = Vec::new();
        while out.len() < count {
            let batch = (count - out.len()).min(batch_points);
            buf.resize(batch * P::SIZE, 0);
            self.read_exact(&mut buf, section)?;
            decode_points_into::<P>(&buf, section, out.len(), check, &mut out)?;
        }
        Ok(out)
    }

    /// How many bytes are left in the input (zero when it is exhausted). Consumes them without
    /// holding them in memory.
    pub(crate) fn trailing_bytes(&mut self) -> Result<u64, Groth16Error> {
        Ok(io::copy(&mut self.inner, &mut io::sink())?)
    }
}

/// A cursor over an in-memory (or memory-mapped) byte slice, with the same errors.
pub(crate) struct SliceReader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> SliceReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0 }
    }

    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    pub(crate) fn take(&mut self, len: usize, section: Section) -> Result<&'a [u8], Groth16Error> {
        if self.remaining() < len {
            return Err(Groth16Error::Truncated {
                section,
                offset: self.offset as u64,
                needed: len as u64,
            });
        }
        let out = &self.bytes[self.offset..self.offset + len];
        self.offset += len;
        Ok(out)
    }

    pub(crate) fn read_u32(&mut self, section: Section) -> Result<u32, Groth16Error> {
        let b = self.take(4, section)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a count and checks that the input holds that many points before touching them.
    pub(crate) fn take_vector(
        &mut self,
        size: usize,
        section: Section,
    ) -> Result<(usize, &'a [u8]), Groth16Error> {
        let count = self.read_u32(section)? as usize;
        Ok((count, self.take(count * size, section)?))
    }
}
