//! Branch-free Fr addition and subtraction, inlined into the butterflies.
//!
//! blstrs adds and subtracts through calls into blst's assembly; in a butterfly those calls (and
//! the round trips of their operands through memory) cost about as much as the multiplication.
//! These versions work on the same Montgomery limbs (blst keeps every element fully reduced,
//! below `r`, so the representation is unique) and produce the same bits, without a call or a
//! branch. Multiplication stays with blst.

use crate::Scalar;

/// Fr's modulus `r`, little-endian 64-bit limbs.
const MODULUS: [u64; 4] = [
    0xffff_ffff_0000_0001,
    0x53bd_a402_fffe_5bfe,
    0x3339_d808_09a1_d805,
    0x73ed_a753_299d_7d48,
];

#[inline(always)]
fn limbs(s: Scalar) -> [u64; 4] {
    blst::blst_fr::from(s).l
}

#[inline(always)]
fn scalar(l: [u64; 4]) -> Scalar {
    Scalar::from(blst::blst_fr { l })
}

/// `a + b + carry`, returning the sum and the carry out (0 or 1).
#[inline(always)]
fn adc(a: u64, b: u64, carry: u64) -> (u64, u64) {
    let t = u128::from(a) + u128::from(b) + u128::from(carry);
    (t as u64, (t >> 64) as u64)
}

/// `a - b - borrow` (borrow 0 or 1), returning the difference and the borrow out (0 or 1).
#[inline(always)]
fn sbb(a: u64, b: u64, borrow: u64) -> (u64, u64) {
    let t = u128::from(a).wrapping_sub(u128::from(b) + u128::from(borrow));
    (t as u64, (t >> 127) as u64)
}

/// `a - b` for `a, b < 2^256`, plus `r` when that underflows: `(a - b) mod r` when
/// `a - b` lies in `(-r, r)`.
#[inline(always)]
fn sub_then_fix(a: [u64; 4], b: [u64; 4]) -> [u64; 4] {
    let (d0, borrow) = sbb(a[0], b[0], 0);
    let (d1, borrow) = sbb(a[1], b[1], borrow);
    let (d2, borrow) = sbb(a[2], b[2], borrow);
    let (d3, borrow) = sbb(a[3], b[3], borrow);
    // All ones when the subtraction underflowed.
    let mask = borrow.wrapping_neg();
    let (d0, carry) = adc(d0, MODULUS[0] & mask, 0);
    let (d1, carry) = adc(d1, MODULUS[1] & mask, carry);
    let (d2, carry) = adc(d2, MODULUS[2] & mask, carry);
    let (d3, _) = adc(d3, MODULUS[3] & mask, carry);
    [d0, d1, d2, d3]
}

/// `a + b` in Fr.
#[inline(always)]
pub(crate) fn add(a: Scalar, b: Scalar) -> Scalar {
    let (a, b) = (limbs(a), limbs(b));
    // r < 2^255, so the sum of two reduced elements fits in 256 bits; one conditional
    // subtraction of r reduces it.
    let (s0, carry) = adc(a[0], b[0], 0);
    let (s1, carry) = adc(a[1], b[1], carry);
    let (s2, carry) = adc(a[2], b[2], carry);
    let (s3, _) = adc(a[3], b[3], carry);
    scalar(sub_then_fix([s0, s1, s2, s3], MODULUS))
}

/// `a - b` in Fr.
#[inline(always)]
pub(crate) fn sub(a: Scalar, b: Scalar) -> Scalar {
    scalar(sub_then_fix(limbs(a), limbs(b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::{Field, PrimeField};
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn check(a: Scalar, b: Scalar) {
        assert_eq!(add(a, b), a + b, "{a:?} + {b:?}");
        assert_eq!(sub(a, b), a - b, "{a:?} - {b:?}");
    }

    #[test]
    fn modulus_is_frs() {
        let bytes: Vec<u8> = MODULUS.iter().flat_map(|l| l.to_le_bytes()).collect();
        assert_eq!(bytes, Scalar::char().as_ref());
    }

    #[test]
    fn matches_blst_on_edges_and_random_values() {
        let edges = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            -Scalar::from(2u64),
            Scalar::TWO_INV,
        ];
        for a in edges {
            for b in edges {
                check(a, b);
            }
        }
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        for _ in 0..1000 {
            check(Scalar::random(&mut rng), Scalar::random(&mut rng));
        }
    }
}
