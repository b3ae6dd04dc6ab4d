//! The typed errors of cuzk-groth16.

use std::io;

use bellpepper_core::SynthesisError;

/// Which vector of a parameter file or verifying key a point belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// A single point of the verifying key (`alpha_g1`, `beta_g1`, ...).
    VerifyingKey(&'static str),
    /// The verifying key's `ic` vector.
    Ic,
    /// The `h` query.
    H,
    /// The `l` query.
    L,
    /// The `a` query.
    A,
    /// The `b_g1` query.
    BG1,
    /// The `b_g2` query.
    BG2,
    /// A proof element (`a`, `b` or `c`).
    Proof(&'static str),
}

impl std::fmt::Display for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Section::VerifyingKey(name) => write!(f, "vk.{name}"),
            Section::Ic => f.write_str("vk.ic"),
            Section::H => f.write_str("h"),
            Section::L => f.write_str("l"),
            Section::A => f.write_str("a"),
            Section::BG1 => f.write_str("b_g1"),
            Section::BG2 => f.write_str("b_g2"),
            Section::Proof(name) => write!(f, "proof.{name}"),
        }
    }
}

/// Errors of cuzk-groth16.
#[derive(Debug, thiserror::Error)]
pub enum Groth16Error {
    /// An I/O error while reading or writing.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The input ended inside `section`.
    #[error(
        "truncated input: it ends inside {section} (needed {needed} more bytes at offset {offset})"
    )]
    Truncated {
        section: Section,
        offset: u64,
        needed: u64,
    },
    /// Bytes after the last section of a parameter file.
    #[error("{extra} unexpected bytes after the end of the parameter file")]
    TrailingBytes { extra: u64 },
    /// A point that does not decode, is off the curve, or (checked reads) outside the subgroup.
    #[error("invalid point {section}[{index}]: not a valid encoding of a curve point in the prime-order subgroup")]
    InvalidPoint { section: Section, index: usize },
    /// A point at infinity where the format forbids one.
    #[error("point at infinity at {section}[{index}], which the format forbids")]
    PointAtInfinity { section: Section, index: usize },
    /// The wrong number of public inputs for a verifying key.
    #[error("wrong number of public inputs: the verifying key expects {expected}, got {got}")]
    WrongInputCount { expected: usize, got: usize },
    /// A circuit whose constraint `index` does not hold for its assignment.
    #[error("the circuit is not satisfied: constraint {index} fails (a·b ≠ c)")]
    Unsatisfied { index: usize },
    /// A linear combination names a variable that was never allocated.
    #[error("constraint {constraint} refers to unallocated variable {variable}")]
    UnknownVariable { constraint: usize, variable: String },
    /// Two things whose lengths must agree do not.
    #[error("length mismatch in {what}: expected {expected}, got {got}")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// The parameters do not belong to this circuit.
    #[error("the parameters do not match the circuit: {0}")]
    ParameterMismatch(String),
    /// The circuit is too large for Fr's 2-adicity.
    #[error("the circuit needs a domain of 2^{log_n} points; at most 2^32 are supported")]
    DomainTooLarge { log_n: u32 },
    /// The circuit's own synthesis failed.
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
    /// `delta` is the identity: the parameters are malformed (or a subversion attempt).
    #[error("delta is the point at infinity: malformed parameters")]
    UnexpectedIdentity,
    /// An auxiliary variable occurs in no constraint, so setup cannot bind it.
    #[error("auxiliary variable {index} is unconstrained")]
    UnconstrainedVariable { index: usize },
    /// Batch verification was given no proofs.
    #[error("no proofs to verify")]
    NoProofs,
}

impl From<Groth16Error> for io::Error {
    fn from(e: Groth16Error) -> Self {
        match e {
            Groth16Error::Io(e) => e,
            Groth16Error::Truncated { .. } => io::Error::new(io::ErrorKind::UnexpectedEof, e),
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

impl From<Groth16Error> for SynthesisError {
    fn from(e: Groth16Error) -> Self {
        match e {
            Groth16Error::Synthesis(e) => e,
            Groth16Error::Io(e) => SynthesisError::IoError(e),
            Groth16Error::Unsatisfied { .. } => SynthesisError::Unsatisfiable,
            Groth16Error::UnexpectedIdentity => SynthesisError::UnexpectedIdentity,
            Groth16Error::UnconstrainedVariable { .. } => SynthesisError::UnconstrainedVariable,
            Groth16Error::WrongInputCount { .. } => SynthesisError::MalformedVerifyingKey,
            Groth16Error::DomainTooLarge { .. } => SynthesisError::PolynomialDegreeTooLarge,
            other => SynthesisError::IoError(io::Error::new(io::ErrorKind::InvalidData, other)),
        }
    }
}
