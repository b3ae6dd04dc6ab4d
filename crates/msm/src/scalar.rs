//! Scalars as the algorithms read them: canonical integers in four little-endian `u64` limbs.
//!
//! blstrs keeps a [`Scalar`] in Montgomery form; its canonical value comes out of
//! [`Scalar::to_bytes_le`]. Callers that already hold canonical bytes pass them as `[u8; 32]`,
//! which must be below the group order `r`.

use cuzk_field::layout::FR_MODULUS;
use cuzk_field::Scalar;
use rayon::prelude::*;

use crate::MsmError;

/// The group order `r` as little-endian `u64` limbs.
pub(crate) const R_LIMBS: [u64; 4] = {
    let mut out = [0u64; 4];
    let mut i = 0;
    while i < 4 {
        out[i] = FR_MODULUS[2 * i] as u64 | ((FR_MODULUS[2 * i + 1] as u64) << 32);
        i += 1;
    }
    out
};

/// Number of bits of a canonical scalar (`r < 2^255`).
pub(crate) const SCALAR_BITS: u32 = 255;

/// Little-endian bytes as little-endian `u64` limbs.
pub(crate) fn limbs_from_le_bytes(bytes: &[u8; 32]) -> [u64; 4] {
    let mut limbs = [0u64; 4];
    for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        *limb = u64::from_le_bytes(word);
    }
    limbs
}

/// Whether little-endian limbs are below `r`.
pub(crate) fn is_canonical(limbs: &[u64; 4]) -> bool {
    for (a, r) in limbs.iter().rev().zip(R_LIMBS.iter().rev()) {
        if a != r {
            return a < r;
        }
    }
    false
}

/// The index of the first scalar that is not below `r`, if any (in parallel for long inputs).
pub(crate) fn first_non_canonical(scalars: &[[u8; 32]]) -> Option<usize> {
    const PARALLEL_FROM: usize = 1 << 12;
    let bad = |bytes: &[u8; 32]| !is_canonical(&limbs_from_le_bytes(bytes));
    if scalars.len() < PARALLEL_FROM {
        scalars.iter().position(bad)
    } else {
        scalars.par_iter().position_first(bad)
    }
}

/// Scalars in either of the forms callers hold.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scalars<'a> {
    /// blstrs scalars (Montgomery form inside), always canonical.
    Montgomery(&'a [Scalar]),
    /// Canonical little-endian bytes, to be checked against `r`.
    Canonical(&'a [[u8; 32]]),
}

impl Scalars<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Scalars::Montgomery(s) => s.len(),
            Scalars::Canonical(s) => s.len(),
        }
    }

    /// Fails on the first non-canonical scalar.
    pub(crate) fn check_canonical(&self) -> Result<(), MsmError> {
        match self {
            Scalars::Montgomery(_) => Ok(()),
            Scalars::Canonical(s) => match first_non_canonical(s) {
                Some(index) => Err(MsmError::NonCanonicalScalar { index }),
                None => Ok(()),
            },
        }
    }

    /// The canonical limbs of scalar `i`; call [`check_canonical`](Self::check_canonical) first.
    pub(crate) fn limbs(&self, i: usize) -> [u64; 4] {
        match self {
            Scalars::Montgomery(s) => limbs_from_le_bytes(&s[i].to_bytes_le()),
            Scalars::Canonical(s) => limbs_from_le_bytes(&s[i]),
        }
    }
}

/// Bits `[offset, offset + bits)` of a little-endian multi-limb integer, zero past its end.
/// `bits` is at most 32.
pub(crate) fn bits_at(limbs: &[u64], offset: usize, bits: u32) -> u64 {
    debug_assert!((1..=32).contains(&bits));
    let (word, shift) = (offset / 64, offset % 64);
    let Some(&low) = limbs.get(word) else {
        return 0;
    };
    let mut value = low >> shift;
    if shift + bits as usize > 64 {
        if let Some(&high) = limbs.get(word + 1) {
            value |= high << (64 - shift);
        }
    }
    value & ((1u64 << bits) - 1)
}
