//! The pre-compiled circuit file: a fixed header, then the coefficient table, the three
//! matrices and the densities, every section 8-byte aligned, all integers little-endian.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "CUZKPCE\0"
//!      8     4  format version (VERSION)
//!     12     4  header length (HEADER_LEN)
//!     16     8  public inputs (including the constant one)
//!     24     8  private variables
//!     32     8  rows (constraints, then one per public input)
//!     40     8  shape fingerprint (see record::shape_step)
//!     48     8  coefficients in the table
//!     56    24  non-zero entries of A, B, C
//!     80     8  body length
//!     88    32  topology: SHA-256 of bytes 16..88 and the body; names the topology
//!    120    32  header checksum: SHA-256 of bytes 0..120
//!    152     8  zero
//!    160        body:
//!               coefficients, 32 bytes each (canonical little-endian scalars)
//!               for A, B, C: row pointers (rows + 1 × u32), columns (nnz × u32),
//!                            coefficient indices (nnz × u32), each padded to 8 bytes
//!               densities: A aux, B input, B aux, as u64 words (bit i of word i / 64)
//! ```
//!
//! The topology hash doubles as the body's checksum: a file is used only once both hashes match
//! and every column and coefficient index is in range, so a damaged file is an error, never a
//! wrong proof.

use std::io::{Seek, SeekFrom, Write};
use std::ops::Range;

use cuzk_field::Scalar;
use sha2::{Digest, Sha256};

use crate::error::PceError;
use crate::record::{Csr, Recording};

/// The file's first eight bytes.
pub const MAGIC: [u8; 8] = *b"CUZKPCE\0";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// The header's length in bytes.
pub const HEADER_LEN: usize = 160;

const COUNTS: Range<usize> = 16..88;
const TOPOLOGY: Range<usize> = 88..120;
const CHECKSUM: Range<usize> = 120..152;

/// The sizes a header states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub num_inputs: u64,
    pub num_aux: u64,
    pub num_rows: u64,
    pub shape_hash: u64,
    pub num_coeffs: u64,
    pub nnz: [u64; 3],
    pub body_len: u64,
}

/// Where each section of the body lies, in bytes from the file's start.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub coeffs: Range<usize>,
    /// Per matrix: row pointers, columns, coefficient indices.
    pub matrices: [[Range<usize>; 3]; 3],
    pub a_aux_density: Range<usize>,
    pub b_input_density: Range<usize>,
    pub b_aux_density: Range<usize>,
    pub end: usize,
}

fn pad8(n: u64) -> Option<u64> {
    n.checked_add(7).map(|n| n & !7)
}

impl Header {
    fn of(rec: &Recording, body_len: u64) -> Self {
        Self {
            num_inputs: rec.num_inputs as u64,
            num_aux: rec.num_aux as u64,
            num_rows: rec.num_constraints as u64,
            shape_hash: rec.shape_hash,
            num_coeffs: rec.coeffs.len() as u64,
            nnz: [rec.a.nnz() as u64, rec.b.nnz() as u64, rec.c.nnz() as u64],
            body_len,
        }
    }

    fn counts_bytes(&self) -> [u8; 72] {
        let mut out = [0u8; 72];
        let fields = [
            self.num_inputs,
            self.num_aux,
            self.num_rows,
            self.shape_hash,
            self.num_coeffs,
            self.nnz[0],
            self.nnz[1],
            self.nnz[2],
            self.body_len,
        ];
        for (chunk, v) in out.chunks_exact_mut(8).zip(fields) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    fn parse(bytes: &[u8]) -> Self {
        let u = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[COUNTS.start + 8 * i..COUNTS.start + 8 * i + 8]);
            u64::from_le_bytes(b)
        };
        Self {
            num_inputs: u(0),
            num_aux: u(1),
            num_rows: u(2),
            shape_hash: u(3),
            num_coeffs: u(4),
            nnz: [u(5), u(6), u(7)],
            body_len: u(8),
        }
    }

    /// The body's sections, or `None` where the sizes overflow.
    pub fn layout(&self) -> Option<Layout> {
        let mut at = HEADER_LEN as u64;
        let mut take = |len: u64| -> Option<Range<usize>> {
            let start = at;
            let end = start.checked_add(len)?;
            at = pad8(end)?;
            Some(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
        };
        let coeffs = take(self.num_coeffs.checked_mul(32)?)?;
        let rows = self.num_rows.checked_add(1)?.checked_mul(4)?;
        let mut matrix = |nnz: u64| -> Option<[Range<usize>; 3]> {
            let entries = nnz.checked_mul(4)?;
            Some([take(rows)?, take(entries)?, take(entries)?])
        };
        let matrices = [
            matrix(self.nnz[0])?,
            matrix(self.nnz[1])?,
            matrix(self.nnz[2])?,
        ];
        let words = |n: u64| n.div_ceil(64).checked_mul(8);
        let a_aux_density = take(words(self.num_aux)?)?;
        let b_input_density = take(words(self.num_inputs)?)?;
        let b_aux_density = take(words(self.num_aux)?)?;
        Some(Layout {
            coeffs,
            matrices,
            a_aux_density,
            b_input_density,
            b_aux_density,
            end: usize::try_from(at).ok()?,
        })
    }
}

/// A writer that hashes the body as it goes and tracks padding.
struct BodyWriter<'w, W: Write> {
    out: &'w mut W,
    hash: Sha256,
    written: u64,
}

impl<W: Write> BodyWriter<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.hash.update(bytes);
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn put_u32s(&mut self, values: &[u32]) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(64 * 1024);
        for chunk in values.chunks(16 * 1024) {
            buf.clear();
            for v in chunk {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            self.put(&buf)?;
        }
        self.pad()
    }

    fn put_u64s(&mut self, values: &[u64]) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(values.len() * 8);
        for v in values {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        self.put(&buf)
    }

    fn pad(&mut self) -> std::io::Result<()> {
        let zeros = [0u8; 8];
        let rem = (self.written % 8) as usize;
        if rem != 0 {
            self.put(&zeros[..8 - rem])?;
        }
        Ok(())
    }
}

/// Writes `rec` in the file format to `out` (a file or a cursor); returns the topology hash.
pub fn write<W: Write + Seek>(rec: &Recording, out: &mut W) -> Result<[u8; 32], PceError> {
    let start = out.stream_position()?;
    out.write_all(&[0u8; HEADER_LEN])?;
    let mut body = BodyWriter {
        out,
        hash: Sha256::new(),
        written: 0,
    };
    for c in &rec.coeffs {
        body.put(&c.to_bytes_le())?;
    }
    for m in [&rec.a, &rec.b, &rec.c] {
        let Csr {
            row_ptr,
            cols,
            coeffs,
        } = m;
        body.put_u32s(row_ptr)?;
        body.put_u32s(cols)?;
        body.put_u32s(coeffs)?;
    }
    for d in [&rec.a_aux_density, &rec.b_input_density, &rec.b_aux_density] {
        body.put_u64s(d.words())?;
    }
    let body_hash = body.hash;
    let header = Header::of(rec, body.written);
    let counts = header.counts_bytes();
    let mut topology = Sha256::new();
    topology.update(counts);
    // The topology covers the counts and the body: hash the body's digest rather than the body
    // twice (the body digest is itself collision resistant).
    topology.update(body_hash.finalize());
    let topology: [u8; 32] = topology.finalize().into();

    let mut head = [0u8; HEADER_LEN];
    head[0..8].copy_from_slice(&MAGIC);
    head[8..12].copy_from_slice(&VERSION.to_le_bytes());
    head[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    head[COUNTS].copy_from_slice(&counts);
    head[TOPOLOGY].copy_from_slice(&topology);
    let checksum: [u8; 32] = Sha256::digest(&head[..CHECKSUM.start]).into();
    head[CHECKSUM].copy_from_slice(&checksum);
    let end = out.stream_position()?;
    out.seek(SeekFrom::Start(start))?;
    out.write_all(&head)?;
    out.seek(SeekFrom::Start(end))?;
    Ok(topology)
}

/// Checks the header and checksums of `bytes` (a whole file) and returns its header, layout
/// and topology hash.
pub(crate) fn check(bytes: &[u8]) -> Result<(Header, Layout, [u8; 32]), PceError> {
    let got = bytes.len() as u64;
    if bytes.len() < 8 || bytes[0..8] != MAGIC {
        return if bytes.len() < 8 && MAGIC.starts_with(bytes) {
            Err(PceError::Truncated {
                expected: HEADER_LEN as u64,
                got,
            })
        } else {
            Err(PceError::BadMagic)
        };
    }
    if bytes.len() < 12 {
        return Err(PceError::Truncated {
            expected: HEADER_LEN as u64,
            got,
        });
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != VERSION {
        return Err(PceError::UnsupportedVersion {
            found: version,
            supported: VERSION,
        });
    }
    if bytes.len() < HEADER_LEN {
        return Err(PceError::Truncated {
            expected: HEADER_LEN as u64,
            got,
        });
    }
    let checksum: [u8; 32] = Sha256::digest(&bytes[..CHECKSUM.start]).into();
    if bytes[CHECKSUM] != checksum {
        return Err(PceError::ChecksumMismatch { what: "header" });
    }
    let header_len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if header_len as usize != HEADER_LEN {
        return Err(PceError::Malformed(format!(
            "header length {header_len}, expected {HEADER_LEN}"
        )));
    }
    let header = Header::parse(bytes);
    let layout = header
        .layout()
        .ok_or_else(|| PceError::Malformed("section sizes overflow".into()))?;
    if (layout.end - HEADER_LEN) as u64 != header.body_len {
        return Err(PceError::Malformed(format!(
            "body length {} disagrees with its sections ({})",
            header.body_len,
            layout.end - HEADER_LEN
        )));
    }
    let expected = layout.end as u64;
    if got < expected {
        return Err(PceError::Truncated { expected, got });
    }
    if got > expected {
        return Err(PceError::TrailingBytes {
            extra: got - expected,
        });
    }
    let body: [u8; 32] =
        Sha256::digest(&bytes[HEADER_LEN..header.body_len as usize + HEADER_LEN]).into();
    let mut topology = Sha256::new();
    topology.update(&bytes[COUNTS]);
    topology.update(body);
    let topology: [u8; 32] = topology.finalize().into();
    if bytes[TOPOLOGY] != topology {
        return Err(PceError::ChecksumMismatch { what: "body" });
    }
    Ok((header, layout, topology))
}

/// Decodes the coefficient table.
pub(crate) fn coefficients(bytes: &[u8]) -> Result<Vec<Scalar>, PceError> {
    bytes
        .chunks_exact(32)
        .map(|chunk| {
            let mut b = [0u8; 32];
            b.copy_from_slice(chunk);
            Option::from(Scalar::from_bytes_le(&b))
                .ok_or_else(|| PceError::Malformed("non-canonical coefficient".into()))
        })
        .collect()
}
