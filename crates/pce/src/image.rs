//! A pre-compiled circuit's matrices as a device reads them: one image of 32-bit words, uploaded
//! once per topology and kept resident, from which `kernels/pce/products.cu` computes a, b, c.
//!
//! ```text
//! words (each section starts on a 32-byte boundary)
//!   coefficients        8 words each (Montgomery limbs, the device's Fr layout)
//!   for A, B, C:
//!     row pointers      rows + 1 words
//!     columns           nnz words (tagged as in the file: INPUT_FLAG marks a public input)
//!     coefficient ids   nnz × id_bytes bytes, id_bytes the narrowest of 1, 2, 4 that holds
//!                       every id of the table
//! ```
//!
//! The file keeps a 4-byte coefficient index per entry (8 bytes a non-zero with its column); the
//! image narrows it to one byte where the table has at most 256 entries, as PoRep's does (±1, ±2
//! and small powers of two), so a non-zero costs 5 bytes on the device and each row 12 bytes of
//! row pointers over the three matrices ([`ImageLayout::bytes`]).

use std::ops::Range;

use cuzk_field::Scalar;

use crate::compiled::PreCompiled;
use crate::error::PceError;

/// Words per section alignment (32 bytes).
const ALIGN_WORDS: usize = 8;

/// Words of one coefficient.
const COEFF_WORDS: usize = 8;

/// Where each section of a [`DeviceImage`] lies, in words from its start, and the counts the
/// products kernel needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageLayout {
    /// The topology the image was made from.
    pub topology: [u8; 32],
    /// Public inputs, including the constant one (the values' first `num_inputs` entries).
    pub num_inputs: usize,
    /// Private variables (the values after the inputs).
    pub num_aux: usize,
    /// Rows: constraints, then one per public input.
    pub rows: usize,
    /// Non-zero entries of A, B, C.
    pub nnz: [u64; 3],
    /// Bytes of each coefficient id: 1, 2 or 4.
    pub id_bytes: u32,
    /// The coefficient table.
    pub coeffs: Range<usize>,
    /// Per matrix (A, B, C): row pointers, columns, coefficient ids.
    pub matrices: [[Range<usize>; 3]; 3],
    /// The image's length in words.
    pub words: usize,
}

impl ImageLayout {
    /// The image's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.words as u64 * 4
    }

    /// The image's bytes per non-zero entry, row pointers and coefficients included.
    pub fn bytes_per_nonzero(&self) -> f64 {
        let nnz: u64 = self.nnz.iter().sum();
        self.bytes() as f64 / nnz.max(1) as f64
    }
}

/// The image itself: words to upload, and where its sections lie.
#[derive(Clone, Debug)]
pub struct DeviceImage {
    words: Vec<u32>,
    layout: ImageLayout,
}

impl DeviceImage {
    /// The words to upload.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Where its sections lie.
    pub fn layout(&self) -> &ImageLayout {
        &self.layout
    }
}

/// The narrowest id width for a table of `len` coefficients.
fn id_bytes(len: usize) -> u32 {
    if len <= 1 << 8 {
        1
    } else if len <= 1 << 16 {
        2
    } else {
        4
    }
}

/// A scalar's Montgomery limbs as the device's eight little-endian words.
fn coeff_words(c: &Scalar) -> [u32; COEFF_WORDS] {
    let limbs = blst::blst_fr::from(*c).l;
    let mut out = [0u32; COEFF_WORDS];
    for (i, l) in limbs.iter().enumerate() {
        out[2 * i] = *l as u32;
        out[2 * i + 1] = (*l >> 32) as u32;
    }
    out
}

impl PreCompiled {
    /// The layout of this circuit's [`DeviceImage`], without making it: what it will take on a
    /// device.
    pub fn image_layout(&self) -> ImageLayout {
        let rows = self.num_constraints();
        let nnz = self.nnz();
        let id_bytes = id_bytes(self.coefficients().len());
        let mut at = 0usize;
        let mut take = |words: usize| {
            let range = at..at + words;
            at = (at + words).next_multiple_of(ALIGN_WORDS);
            range
        };
        let coeffs = take(self.coefficients().len() * COEFF_WORDS);
        let mut matrix = |nnz: u64| {
            let nnz = nnz as usize;
            [
                take(rows + 1),
                take(nnz),
                take((nnz * id_bytes as usize).div_ceil(4)),
            ]
        };
        let matrices = [matrix(nnz[0]), matrix(nnz[1]), matrix(nnz[2])];
        ImageLayout {
            topology: self.topology(),
            num_inputs: self.num_inputs(),
            num_aux: self.num_aux(),
            rows,
            nnz,
            id_bytes,
            coeffs,
            matrices,
            words: at,
        }
    }

    /// The matrices and coefficient table in the device's layout (see the module docs).
    pub fn device_image(&self) -> Result<DeviceImage, PceError> {
        let layout = self.image_layout();
        let mut words = vec![0u32; layout.words];
        for (k, c) in self.coefficients().iter().enumerate() {
            let at = layout.coeffs.start + k * COEFF_WORDS;
            words[at..at + COEFF_WORDS].copy_from_slice(&coeff_words(c));
        }
        for (m, [rp, cols, ids]) in self.matrices()?.iter().zip(&layout.matrices) {
            words[rp.clone()].copy_from_slice(m.row_ptr);
            words[cols.clone()].copy_from_slice(m.cols);
            let out: &mut [u8] = bytemuck::cast_slice_mut(&mut words[ids.clone()]);
            match layout.id_bytes {
                1 => {
                    for (o, &k) in out.iter_mut().zip(m.coeffs) {
                        *o = k as u8;
                    }
                }
                2 => {
                    for (o, &k) in out.chunks_exact_mut(2).zip(m.coeffs) {
                        o.copy_from_slice(&(k as u16).to_le_bytes());
                    }
                }
                _ => {
                    for (o, &k) in out.chunks_exact_mut(4).zip(m.coeffs) {
                        o.copy_from_slice(&k.to_le_bytes());
                    }
                }
            }
        }
        // The copy read the mapped file again: let its pages go (they stay in the page cache).
        self.release(crate::format::HEADER_LEN..self.file_len());
        Ok(DeviceImage { words, layout })
    }
}

#[cfg(test)]
mod tests {
    use ff::Field;

    use super::*;

    #[test]
    fn ids_take_the_narrowest_width() {
        assert_eq!(id_bytes(2), 1);
        assert_eq!(id_bytes(256), 1);
        assert_eq!(id_bytes(257), 2);
        assert_eq!(id_bytes(1 << 16), 2);
        assert_eq!(id_bytes((1 << 16) + 1), 4);
    }

    #[test]
    fn coefficients_are_montgomery_limbs() {
        let words = coeff_words(&Scalar::ONE);
        let limbs = blst::blst_fr::from(Scalar::ONE).l;
        assert_eq!(u64::from(words[0]) | u64::from(words[1]) << 32, limbs[0]);
        assert_eq!(u64::from(words[6]) | u64::from(words[7]) << 32, limbs[3]);
    }
}
