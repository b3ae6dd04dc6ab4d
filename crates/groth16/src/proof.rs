//! Proofs: A (G1), B (G2), C (G1), written as 192 bytes of compressed points, as bellperson does.

use std::io::{Read, Write};
use std::marker::PhantomData;

use cuzk_field::{G1Affine, G2Affine};

use crate::engine::{Bls12, Engine};
use crate::error::{Groth16Error, Section};

/// A Groth16 proof.
pub struct Proof<E: Engine = Bls12> {
    /// A, in G1.
    pub a: G1Affine,
    /// B, in G2.
    pub b: G2Affine,
    /// C, in G1.
    pub c: G1Affine,
    pub(crate) _engine: PhantomData<E>,
}

impl<E: Engine> Clone for Proof<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E: Engine> Copy for Proof<E> {}

impl<E: Engine> PartialEq for Proof<E> {
    fn eq(&self, other: &Self) -> bool {
        self.a == other.a && self.b == other.b && self.c == other.c
    }
}

impl<E: Engine> Eq for Proof<E> {}

impl<E: Engine> std::fmt::Debug for Proof<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proof")
            .field("a", &self.a)
            .field("b", &self.b)
            .field("c", &self.c)
            .finish()
    }
}

impl Proof {
    /// The encoded size: 48 + 96 + 48 bytes.
    pub const SIZE: usize = 192;

    /// A proof from its three points.
    pub fn new(a: G1Affine, b: G2Affine, c: G1Affine) -> Self {
        Self {
            a,
            b,
            c,
            _engine: PhantomData,
        }
    }

    /// The encoded size (bellperson's `Proof::size()`).
    pub fn size() -> usize {
        Self::SIZE
    }

    /// The 192-byte encoding.
    pub fn to_bytes(&self) -> [u8; 192] {
        let mut out = [0u8; 192];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decodes 192 bytes; every point is checked (on the curve, in the subgroup).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Groth16Error> {
        if bytes.len() != Self::SIZE {
            return Err(Groth16Error::LengthMismatch {
                what: "proof bytes",
                expected: Self::SIZE,
                got: bytes.len(),
            });
        }
        let invalid = |name| Groth16Error::InvalidPoint {
            section: Section::Proof(name),
            index: 0,
        };
        let a = Option::from(G1Affine::from_compressed(
            bytes[..48].try_into().expect("48 bytes"),
        ))
        .ok_or(invalid("a"))?;
        let b = Option::from(G2Affine::from_compressed(
            bytes[48..144].try_into().expect("96 bytes"),
        ))
        .ok_or(invalid("b"))?;
        let c = Option::from(G1Affine::from_compressed(
            bytes[144..].try_into().expect("48 bytes"),
        ))
        .ok_or(invalid("c"))?;
        Ok(Self::new(a, b, c))
    }

    /// Writes the 192-byte encoding.
    pub fn write<W: Write>(&self, mut writer: W) -> std::io::Result<()> {
        writer.write_all(&self.to_bytes())
    }

    /// Reads a 192-byte encoding.
    pub fn read<R: Read>(mut reader: R) -> Result<Self, Groth16Error> {
        let mut bytes = [0u8; 192];
        reader.read_exact(&mut bytes).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Groth16Error::Truncated {
                section: Section::Proof("bytes"),
                offset: 0,
                needed: 192,
            },
            _ => e.into(),
        })?;
        Self::from_bytes(&bytes)
    }

    /// Decodes `num_proofs` consecutive proofs.
    pub fn read_many(bytes: &[u8], num_proofs: usize) -> Result<Vec<Self>, Groth16Error> {
        if bytes.len() != num_proofs * Self::SIZE {
            return Err(Groth16Error::LengthMismatch {
                what: "proof bytes",
                expected: num_proofs * Self::SIZE,
                got: bytes.len(),
            });
        }
        use rayon::prelude::*;
        bytes.par_chunks(Self::SIZE).map(Self::from_bytes).collect()
    }
}
