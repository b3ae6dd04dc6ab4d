//! Verifying keys, in bellperson's format: six uncompressed points (α₁, β₁, β₂, γ₂, δ₁, δ₂),
//! then a big-endian `u32` count and that many uncompressed G1 points (IC).

use std::io::{Read, Write};
use std::marker::PhantomData;

use cuzk_field::{G1Affine, G2Affine};

use crate::codec::{
    decode_points, write_points, Check, CountingReader, SliceReader, Uncompressed, G1_UNCOMPRESSED,
    G2_UNCOMPRESSED,
};
use crate::engine::{Bls12, Engine};
use crate::error::{Groth16Error, Section};

/// A Groth16 verifying key.
pub struct VerifyingKey<E: Engine = Bls12> {
    /// α in G1. Never the point at infinity.
    pub alpha_g1: G1Affine,
    /// β in G1.
    pub beta_g1: G1Affine,
    /// β in G2.
    pub beta_g2: G2Affine,
    /// γ in G2.
    pub gamma_g2: G2Affine,
    /// δ in G1.
    pub delta_g1: G1Affine,
    /// δ in G2.
    pub delta_g2: G2Affine,
    /// `(β·u_i(τ) + α·v_i(τ) + w_i(τ)) / γ` for each public input, the constant one first.
    pub ic: Vec<G1Affine>,
    pub(crate) _engine: PhantomData<E>,
}

impl<E: Engine> Clone for VerifyingKey<E> {
    fn clone(&self) -> Self {
        Self {
            ic: self.ic.clone(),
            ..*self
        }
    }
}

impl<E: Engine> PartialEq for VerifyingKey<E> {
    fn eq(&self, other: &Self) -> bool {
        self.alpha_g1 == other.alpha_g1
            && self.beta_g1 == other.beta_g1
            && self.beta_g2 == other.beta_g2
            && self.gamma_g2 == other.gamma_g2
            && self.delta_g1 == other.delta_g1
            && self.delta_g2 == other.delta_g2
            && self.ic == other.ic
    }
}

impl<E: Engine> Eq for VerifyingKey<E> {}

impl<E: Engine> std::fmt::Debug for VerifyingKey<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("alpha_g1", &self.alpha_g1)
            .field("beta_g1", &self.beta_g1)
            .field("beta_g2", &self.beta_g2)
            .field("gamma_g2", &self.gamma_g2)
            .field("delta_g1", &self.delta_g1)
            .field("delta_g2", &self.delta_g2)
            .field("ic_len", &self.ic.len())
            .finish()
    }
}

/// The encodings of the six fixed points, G1 and G2 apart, in file order.
type FixedPoints = ([[u8; G1_UNCOMPRESSED]; 3], [[u8; G2_UNCOMPRESSED]; 3]);

/// Fills the six fixed points' encodings through `fill`, which reads the next `buf.len()` bytes
/// (or reports where the input ended), for a stream and for a mapped file alike.
fn read_fixed(
    mut fill: impl FnMut(&mut [u8], Section) -> Result<(), Groth16Error>,
) -> Result<FixedPoints, Groth16Error> {
    let mut g1 = [[0u8; G1_UNCOMPRESSED]; 3];
    let mut g2 = [[0u8; G2_UNCOMPRESSED]; 3];
    let (mut i1, mut i2) = (0, 0);
    for (name, is_g2) in VK_POINTS {
        if is_g2 {
            fill(&mut g2[i2], Section::VerifyingKey(name))?;
            i2 += 1;
        } else {
            fill(&mut g1[i1], Section::VerifyingKey(name))?;
            i1 += 1;
        }
    }
    Ok((g1, g2))
}

const VK_POINTS: [(&str, bool); 6] = [
    ("alpha_g1", false),
    ("beta_g1", false),
    ("beta_g2", true),
    ("gamma_g2", true),
    ("delta_g1", false),
    ("delta_g2", true),
];

impl VerifyingKey {
    /// A verifying key from its parts.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        alpha_g1: G1Affine,
        beta_g1: G1Affine,
        beta_g2: G2Affine,
        gamma_g2: G2Affine,
        delta_g1: G1Affine,
        delta_g2: G2Affine,
        ic: Vec<G1Affine>,
    ) -> Self {
        Self {
            alpha_g1,
            beta_g1,
            beta_g2,
            gamma_g2,
            delta_g1,
            delta_g2,
            ic,
            _engine: PhantomData,
        }
    }

    /// The number of public inputs it verifies (not counting the constant one).
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }

    /// Size of the encoding in bytes.
    pub fn encoded_len(&self) -> usize {
        3 * G1_UNCOMPRESSED + 3 * G2Affine::SIZE + 4 + self.ic.len() * G1_UNCOMPRESSED
    }

    /// Writes the key in bellperson's format.
    pub fn write<W: Write>(&self, mut writer: W) -> std::io::Result<()> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.alpha_g1.encode(&mut out);
        self.beta_g1.encode(&mut out);
        self.beta_g2.encode(&mut out);
        self.gamma_g2.encode(&mut out);
        self.delta_g1.encode(&mut out);
        self.delta_g2.encode(&mut out);
        out.extend_from_slice(&(self.ic.len() as u32).to_be_bytes());
        writer.write_all(&out)?;
        write_points(&mut writer, &self.ic)
    }

    /// Reads a key in bellperson's format. Every point is checked (on the curve, in the
    /// subgroup), as bellperson does; IC points may not be the point at infinity.
    pub fn read<R: Read>(reader: R) -> Result<Self, Groth16Error> {
        Self::read_from(&mut CountingReader::new(reader))
    }

    pub(crate) fn read_from<R: Read>(r: &mut CountingReader<R>) -> Result<Self, Groth16Error> {
        let (g1, g2) = read_fixed(|buf, section| r.read_exact(buf, section))?;
        let count = r.read_u32(Section::Ic)? as usize;
        let ic = r.read_points(count, Section::Ic, Check::Subgroup)?;
        Self::from_fixed(&g1, &g2, ic)
    }

    pub(crate) fn read_slice(r: &mut SliceReader<'_>) -> Result<Self, Groth16Error> {
        let (g1, g2) = read_fixed(|buf, section| {
            buf.copy_from_slice(r.take(buf.len(), section)?);
            Ok(())
        })?;
        let (_, bytes) = r.take_vector(G1_UNCOMPRESSED, Section::Ic)?;
        let ic = decode_points(bytes, Section::Ic, 0, Check::Subgroup)?;
        Self::from_fixed(&g1, &g2, ic)
    }

    fn from_fixed(
        g1: &[[u8; G1_UNCOMPRESSED]; 3],
        g2: &[[u8; G2_UNCOMPRESSED]; 3],
        ic: Vec<G1Affine>,
    ) -> Result<Self, Groth16Error> {
        fn one<P: Uncompressed>(bytes: &[u8], name: &'static str) -> Result<P, Groth16Error> {
            P::decode(bytes, Check::Subgroup).ok_or(Groth16Error::InvalidPoint {
                section: Section::VerifyingKey(name),
                index: 0,
            })
        }
        Ok(Self::new(
            one(&g1[0], "alpha_g1")?,
            one(&g1[1], "beta_g1")?,
            one(&g2[0], "beta_g2")?,
            one(&g2[1], "gamma_g2")?,
            one(&g1[2], "delta_g1")?,
            one(&g2[2], "delta_g2")?,
            ic,
        ))
    }
}
