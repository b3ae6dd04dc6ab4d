//! The fast CPU transforms: parallel (rayon), cache-blocked, bit-identical to [`crate::reference`].
//!
//! # Algorithm
//!
//! Small domains (up to 2^11 points) run one serial in-cache radix-2 kernel: decimation in
//! frequency for a natural-order input, decimation in time for a bit-reversed one, a bit-reversal
//! permutation when the asked output order is the other one.
//!
//! Larger domains use the four-step decomposition `n = R * C` (`R = 2^ceil(log_n / 2)`): with
//! `j = j1 * C + j2` and `k = k1 + R * k2`,
//!
//! ```text
//! y[k1 + R*k2] = sum_j2 (omega^R)^(j2*k2) * omega^(j2*k1) * sum_j1 (omega^C)^(j1*k1) * x[j1*C + j2]
//! ```
//!
//! - **pass A**: for every `j2`, a size-`R` transform over `j1` (root `omega^C`), then the
//!   inter-step twiddle `omega^(j2*k1)`. Tiles of a few adjacent `j2` are gathered from the input
//!   (a row of `R` scalars each when the input is bit-reversed, a column when it is natural),
//!   transformed in cache, and left in a scratch buffer, one contiguous lane per `j2`;
//! - **pass B**: for every `k1`, a size-`C` transform over `j2` (root `omega^R`), gathered from the
//!   scratch lanes and written to the output: to a contiguous row when the output is bit-reversed
//!   (the bit-reversal of `k1 + R*k2` is `bitrev(k1) * C + bitrev(k2)`), to a column when it is
//!   natural.
//!
//! Each pass reads and writes the vector once, so the whole transform makes two passes over
//! memory, and every input/output order combination costs the same: the permutations are folded
//! into the gathers and scatters. Both passes run in parallel over tiles. The scalings are fused:
//! the coset factor `g^j` is split into `(g^C)^j1`, applied while pass A gathers, and `g^j2`,
//! folded into the inter-step twiddle; `n^-1` and the inverse coset factor `g^-k1` go into the
//! inter-step twiddle too, and `(g^-R)^k2` is applied while pass B scatters. The inter-step
//! twiddles are generated per lane by one multiplication each; the kernels read their twiddles
//! from tables computed once per call.
//!
//! Pass A's output lives in a scratch buffer of `n` scalars, allocated per call (and shared by the
//! vectors of a `*_many` call), so the transform needs twice the vector's memory at its peak. The
//! `*_many` functions also share the tables across their vectors; on small domains they run the
//! vectors in parallel instead.

mod four_step;
mod kernel;

use ff::Field;
use rayon::prelude::*;

use crate::{bit_reverse_permute, bitrev, check_len, Domain, NttError, Order, Scalar};
use four_step::FourStep;
use kernel::Twiddles;

/// Domains of at most `2^SMALL_LOG_N_MAX` points run the serial single-kernel path.
const SMALL_LOG_N_MAX: u32 = 11;

/// Forward transform: `y_i = sum_j x_j * omega^(i*j)`.
pub fn forward(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    forward_many(&mut [values], domain, input, output)
}

/// Inverse transform: `x_i = n^-1 * sum_j y_j * omega^(-i*j)`.
pub fn inverse(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    inverse_many(&mut [values], domain, input, output)
}

/// Forward transform on the coset `g * <omega>`: `y_i = sum_j x_j * (g * omega^i)^j`.
pub fn coset_forward(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    coset_forward_many(&mut [values], domain, input, output)
}

/// Inverse of [`coset_forward`]: an inverse transform, then coefficient `i` times `g^-i`.
pub fn coset_inverse(
    values: &mut [Scalar],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    coset_inverse_many(&mut [values], domain, input, output)
}

/// [`forward`] on every vector; the twiddle tables are computed once for all of them. Every
/// length is checked before any vector is touched.
pub fn forward_many(
    vectors: &mut [&mut [Scalar]],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    run_many(vectors, domain, Spec::forward(domain), input, output)
}

/// [`inverse`] on every vector, sharing the twiddle tables.
pub fn inverse_many(
    vectors: &mut [&mut [Scalar]],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    run_many(vectors, domain, Spec::inverse(domain), input, output)
}

/// [`coset_forward`] on every vector, sharing the twiddle tables.
pub fn coset_forward_many(
    vectors: &mut [&mut [Scalar]],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    run_many(vectors, domain, Spec::coset_forward(domain), input, output)
}

/// [`coset_inverse`] on every vector, sharing the twiddle tables.
pub fn coset_inverse_many(
    vectors: &mut [&mut [Scalar]],
    domain: &Domain,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    run_many(vectors, domain, Spec::coset_inverse(domain), input, output)
}

/// What a transform computes: `y_k = scale * beta^k * sum_j (root^(j*k)) * alpha^j * x_j`, where
/// `None` stands for one (and skips the multiplication).
#[derive(Clone, Copy, Debug)]
struct Spec {
    /// A primitive n-th root of unity: omega forward, omega^-1 inverse.
    root: Scalar,
    /// Input scaling base (the coset generator of a coset forward transform).
    alpha: Option<Scalar>,
    /// Output scaling base (g^-1 for a coset inverse transform).
    beta: Option<Scalar>,
    /// Constant output factor (n^-1 for inverse transforms).
    scale: Option<Scalar>,
}

impl Spec {
    fn forward(domain: &Domain) -> Self {
        Self {
            root: domain.omega(),
            alpha: None,
            beta: None,
            scale: None,
        }
    }

    fn inverse(domain: &Domain) -> Self {
        Self {
            root: domain.omega_inv(),
            alpha: None,
            beta: None,
            scale: Some(domain.n_inv()),
        }
    }

    fn coset_forward(domain: &Domain) -> Self {
        Self {
            alpha: Some(domain.coset_gen()),
            ..Self::forward(domain)
        }
    }

    fn coset_inverse(domain: &Domain) -> Self {
        Self {
            beta: Some(domain.coset_gen_inv()),
            ..Self::inverse(domain)
        }
    }
}

fn run_many(
    vectors: &mut [&mut [Scalar]],
    domain: &Domain,
    spec: Spec,
    input: Order,
    output: Order,
) -> Result<(), NttError> {
    for v in vectors.iter() {
        check_len(domain, v.len())?;
    }
    if vectors.is_empty() {
        return Ok(());
    }
    if domain.log_n() <= SMALL_LOG_N_MAX {
        let plan = Small::new(domain, spec, input, output);
        if vectors.len() == 1 {
            plan.run(vectors[0]);
        } else {
            vectors.par_iter_mut().for_each(|v| plan.run(v));
        }
    } else {
        let plan = FourStep::new(domain, spec, input, output);
        let mut scratch = Vec::new();
        for v in vectors.iter_mut() {
            plan.run(v, &mut scratch);
        }
    }
    Ok(())
}

/// The serial path for small domains: one in-cache kernel over the whole vector.
#[derive(Debug)]
struct Small {
    twiddles: Twiddles,
    /// Decimation in frequency (natural input) or in time (bit-reversed input).
    use_dif: bool,
    /// Input scaling by storage index.
    pre: Option<Vec<Scalar>>,
    /// Output scaling by storage index of the kernel's output.
    post: Option<Vec<Scalar>>,
    /// Whether the kernel's output order differs from the asked one.
    permute: bool,
}

impl Small {
    fn new(domain: &Domain, spec: Spec, input: Order, output: Order) -> Self {
        let n = domain.n();
        let log_n = domain.log_n();
        let use_dif = input == Order::Natural;
        // Coefficient j is stored at j (natural) or bitrev(j).
        let in_index = |p: usize| if use_dif { p } else { bitrev(p, log_n) };
        // The kernel leaves output k at bitrev(k) (dif) or k (dit).
        let out_index = |p: usize| if use_dif { bitrev(p, log_n) } else { p };
        let pre = spec.alpha.map(|alpha| {
            let powers = Domain::powers(alpha, n);
            (0..n).map(|p| powers[in_index(p)]).collect()
        });
        let post = (spec.beta.is_some() || spec.scale.is_some()).then(|| {
            let mut powers = Domain::powers(spec.beta.unwrap_or(Scalar::ONE), n);
            if let Some(scale) = spec.scale {
                powers.iter_mut().for_each(|p| *p *= scale);
            }
            (0..n).map(|p| powers[out_index(p)]).collect()
        });
        let kernel_output = if use_dif {
            Order::BitReversed
        } else {
            Order::Natural
        };
        Self {
            twiddles: Twiddles::new(n, spec.root),
            use_dif,
            pre,
            post,
            permute: kernel_output != output,
        }
    }

    fn run(&self, values: &mut [Scalar]) {
        if let Some(pre) = &self.pre {
            values.iter_mut().zip(pre).for_each(|(v, s)| *v *= s);
        }
        if self.use_dif {
            kernel::dif(values, &self.twiddles);
        } else {
            kernel::dit(values, &self.twiddles);
        }
        if let Some(post) = &self.post {
            values.iter_mut().zip(post).for_each(|(v, s)| *v *= s);
        }
        if self.permute {
            bit_reverse_permute(values);
        }
    }
}
