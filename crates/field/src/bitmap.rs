//! Density bitmaps.
//!
//! A Groth16 query omits the variables that never occur in its polynomial; the prover keeps one
//! bit per variable saying whether it does. The bits are packed little-endian into `u64` words
//! (bit `i` is bit `i % 64` of word `i / 64`), the layout the GPU batch-addition kernel reads.

/// A growable bitmap of `len` bits.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl std::fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bitmap")
            .field("len", &self.len)
            .field("ones", &self.count_ones())
            .finish()
    }
}

impl Bitmap {
    /// An empty bitmap.
    pub fn new() -> Self {
        Self::default()
    }

    /// `len` bits, all clear.
    pub fn zeros(len: usize) -> Self {
        Self {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// `len` bits, all set.
    pub fn ones(len: usize) -> Self {
        let mut bitmap = Self {
            words: vec![u64::MAX; len.div_ceil(64)],
            len,
        };
        bitmap.clear_tail();
        bitmap
    }

    /// A bitmap from booleans.
    pub fn from_bools(bits: impl IntoIterator<Item = bool>) -> Self {
        let mut bitmap = Self::new();
        for bit in bits {
            bitmap.push(bit);
        }
        bitmap
    }

    fn clear_tail(&mut self) {
        let tail = self.len % 64;
        if tail != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << tail) - 1;
            }
        }
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bits at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends one bit.
    pub fn push(&mut self, bit: bool) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        if bit {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    /// Bit `i`. Panics when `i >= len`, like slice indexing.
    pub fn get(&self, i: usize) -> bool {
        assert!(
            i < self.len,
            "bit {i} out of range for a bitmap of {} bits",
            self.len
        );
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i`. Panics when `i >= len`.
    pub fn set(&mut self, i: usize) {
        assert!(
            i < self.len,
            "bit {i} out of range for a bitmap of {} bits",
            self.len
        );
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Indices of the set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut word = word;
            std::iter::from_fn(move || {
                if word == 0 {
                    return None;
                }
                let bit = word.trailing_zeros() as usize;
                word &= word - 1;
                Some(w * 64 + bit)
            })
        })
    }

    /// The bits as booleans.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// The packed words (bit `i` in word `i / 64`); bits past `len` are zero.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Appends all bits of `other`, a word at a time (the prover concatenates densities of
    /// millions of bits).
    pub fn extend_from(&mut self, other: &Bitmap) {
        let shift = self.len % 64;
        if shift == 0 {
            self.words.extend_from_slice(&other.words);
        } else {
            for &word in &other.words {
                *self.words.last_mut().expect("a partial last word") |= word << shift;
                self.words.push(word >> (64 - shift));
            }
        }
        self.len += other.len;
        // The last pushed word may lie past the end (bits past `len` are zero in both).
        self.words.truncate(self.len.div_ceil(64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn bitmap_matches_bools(bits in proptest::collection::vec(any::<bool>(), 0..300)) {
            let bitmap = Bitmap::from_bools(bits.iter().copied());
            prop_assert_eq!(bitmap.len(), bits.len());
            prop_assert_eq!(bitmap.count_ones(), bits.iter().filter(|b| **b).count());
            let ones: Vec<usize> = bitmap.iter_ones().collect();
            let expected: Vec<usize> =
                bits.iter().enumerate().filter(|(_, b)| **b).map(|(i, _)| i).collect();
            prop_assert_eq!(ones, expected);
            prop_assert_eq!(bitmap.iter().collect::<Vec<_>>(), bits);
        }

        #[test]
        fn extend_from_concatenates(
            a in proptest::collection::vec(any::<bool>(), 0..200),
            b in proptest::collection::vec(any::<bool>(), 0..200),
        ) {
            let mut joined = Bitmap::from_bools(a.iter().copied());
            joined.extend_from(&Bitmap::from_bools(b.iter().copied()));
            let expected = Bitmap::from_bools(a.iter().chain(&b).copied());
            prop_assert_eq!(joined.len(), expected.len());
            prop_assert_eq!(joined.words(), expected.words());
        }
    }

    #[test]
    fn ones_clears_the_tail() {
        let bitmap = Bitmap::ones(70);
        assert_eq!(bitmap.count_ones(), 70);
        assert_eq!(bitmap.words()[1], (1 << 6) - 1);
        assert_eq!(Bitmap::zeros(70).count_ones(), 0);
    }
}
