//! The typed errors of cuzk-pce.

use std::io;

use bellpepper_core::SynthesisError;

/// Errors of cuzk-pce: a file that cannot be trusted, a circuit of another topology, a witness
/// that does not satisfy the constraints, or the circuit's own synthesis failing.
#[derive(Debug, thiserror::Error)]
pub enum PceError {
    /// An I/O error while reading or writing a pre-compiled file.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The file is shorter than its header says (or shorter than a header).
    #[error("truncated pre-compiled file: {expected} bytes expected, {got} present")]
    Truncated { expected: u64, got: u64 },
    /// The file is longer than its header says.
    #[error("pre-compiled file has {extra} unexpected bytes after its last section")]
    TrailingBytes { extra: u64 },
    /// The file does not start with the pre-compiled circuit magic.
    #[error("not a cuzk pre-compiled circuit (bad magic)")]
    BadMagic,
    /// The file is of a format version this build does not read.
    #[error("pre-compiled file format version {found}; this build reads version {supported}")]
    UnsupportedVersion { found: u32, supported: u32 },
    /// A checksum does not match: the file is damaged.
    #[error("pre-compiled file damaged: the {what} checksum does not match")]
    ChecksumMismatch { what: &'static str },
    /// The file's checksums match but its content is inconsistent (a bug in its writer).
    #[error("malformed pre-compiled file: {0}")]
    Malformed(String),
    /// The circuit being proved is not the topology the file was recorded from.
    #[error("the circuit does not match the pre-compiled topology: {what} is {got}, the recording has {expected}")]
    TopologyMismatch {
        what: &'static str,
        expected: u64,
        got: u64,
    },
    /// The witness does not satisfy constraint `index` (`a·b ≠ c`; input constraints last).
    #[error("the circuit is not satisfied: constraint {index} fails (a·b ≠ c)")]
    Unsatisfied { index: usize },
    /// A linear combination names a variable that was never allocated (while recording).
    #[error("constraint {constraint} refers to unallocated variable {variable}")]
    UnknownVariable { constraint: usize, variable: String },
    /// The circuit exceeds a limit of the file format.
    #[error("the circuit is too large to pre-compile: {what} exceeds {limit}")]
    TooLarge { what: &'static str, limit: u64 },
    /// The circuit's own synthesis (an `alloc` closure) failed.
    #[error("synthesis failed: {0}")]
    Synthesis(#[from] SynthesisError),
}
