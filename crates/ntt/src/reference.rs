//! The reference transforms: serial, textbook, obviously correct.
//!
//! Every transform here brings its input to natural order, runs the iterative radix-2
//! Cooley-Tukey algorithm (bit-reversal permutation, then `log2(n)` stages of butterflies whose
//! twiddles come from repeated multiplication), applies any scaling as a separate loop over the
//! natural-order vector and permutes the output to the order asked for. It is written for clarity,
//! not speed: the faster paths are checked against it.

use ff::Field;

use crate::{bit_reverse_permute, check_len, Domain, NttError, Order, Scalar};

/// Forward transform: `y_i = sum_j x_j * omega^(i*j)`.
pub fn forward(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    check_len(domain, values.len())?;
    to_natural(values, input);
    transform(values, domain.omega());
    from_natural(values, output);
    Ok(())
}

/// Inverse transform: `x_i = n^-1 * sum_j y_j * omega^(-i*j)`.
pub fn inverse(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    check_len(domain, values.len())?;
    to_natural(values, input);
    transform(values, domain.omega_inv());
    scale(values, domain.n_inv());
    from_natural(values, output);
    Ok(())
}

/// Forward transform on the coset `g * <omega>`: coefficient `j` is multiplied by `g^j`, then
/// the vector is transformed forward.
pub fn coset_forward(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    check_len(domain, values.len())?;
    to_natural(values, input);
    distribute_powers(values, domain.coset_gen());
    transform(values, domain.omega());
    from_natural(values, output);
    Ok(())
}

/// Inverse of [`coset_forward`]: an inverse transform, then coefficient `i` multiplied by
/// `g^-i`.
pub fn coset_inverse(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    check_len(domain, values.len())?;
    to_natural(values, input);
    transform(values, domain.omega_inv());
    scale(values, domain.n_inv());
    distribute_powers(values, domain.coset_gen_inv());
    from_natural(values, output);
    Ok(())
}

fn to_natural(values: &mut [Scalar], input: Order) {
    if input == Order::BitReversed {
        bit_reverse_permute(values);
    }
}

fn from_natural(values: &mut [Scalar], output: Order) {
    if output == Order::BitReversed {
        bit_reverse_permute(values);
    }
}

/// Natural order in, natural order out: bit-reverse, then radix-2 decimation in time.
fn transform(a: &mut [Scalar], omega: Scalar) {
    let n = a.len();
    bit_reverse_permute(a);
    let mut half = 1;
    while half < n {
        // A primitive (2 * half)-th root of unity.
        let w_m = omega.pow_vartime([(n / (2 * half)) as u64]);
        for block in a.chunks_exact_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            let mut w = Scalar::ONE;
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let t = *y * w;
                *y = *x - t;
                *x += t;
                w *= w_m;
            }
        }
        half *= 2;
    }
}

fn scale(values: &mut [Scalar], factor: Scalar) {
    for v in values.iter_mut() {
        *v *= factor;
    }
}

/// Multiplies element `i` by `g^i`.
fn distribute_powers(values: &mut [Scalar], g: Scalar) {
    let mut power = Scalar::ONE;
    for v in values.iter_mut() {
        *v *= power;
        power *= g;
    }
}
