//! Pre-compiled circuits: a topology's R1CS recorded once, then proofs from the witness alone.
//!
//! Circuit synthesis re-runs every `enforce` closure and rebuilds the same linear combinations
//! for every proof, although the constraints of a circuit topology never change: only the
//! witness does. This crate removes that work:
//!
//! - [`record`] runs a circuit once and keeps its matrices A, B, C in compressed sparse rows,
//!   with the counts and the density bitmaps, exactly as `cuzk_groth16::synthesize` computes
//!   them ([`Recording`]);
//! - [`format`] stores them as a checked file (magic, version, sizes, topology hash, checksum),
//!   which [`PreCompiled::open`] memory-maps;
//! - [`PreCompiled::synthesize`] runs only the circuit's `alloc` closures, then computes
//!   `A·z`, `B·z`, `C·z` by parallel sparse products and checks `a·b = c` row by row in the same
//!   pass, giving the [`ProvingAssignment`](cuzk_groth16::ProvingAssignment) full synthesis
//!   would give, which the prover consumes unchanged;
//! - [`PceCache`] keeps one file per topology key in a folder, recorded on first use.
//!
//! **Invariant:** a pre-compiled circuit never changes a proof's bytes. It is used only for
//! its topology: a circuit whose counts of inputs, private variables or constraints differ, or
//! whose order of allocations and constraints differs (the shape fingerprint), a file that is
//! truncated, damaged, or of another version, and a witness that does not satisfy the
//! constraints are each a typed [`PceError`], never a wrong proof.
//!
//! **Limit:** the shape fingerprint sees when variables and constraints are created, not which
//! variables a constraint names: a circuit that keeps its shape but wires a constraint to other
//! variables than the recording would be proved against the recorded wiring (and then fails the
//! `a·b = c` check unless its witness happens to satisfy it). Topology keys must therefore name
//! everything that decides the wiring.
//!
//! This crate produces assignments and never depends on `cuzk-pipeline`.

// The workspace denies `unsafe_code`; the exceptions are the memory map and its release, in `mapped`.

mod cache;
mod compiled;
mod error;
pub mod format;
mod mapped;
mod record;
mod spmv;
mod witness;

pub use cache::{default_dir, write_file, Origin, PceCache};
pub use compiled::{to_bytes, PreCompiled, Witness};
pub use error::PceError;
pub use record::{record, shape_step, Csr, Recording, INPUT_FLAG};
