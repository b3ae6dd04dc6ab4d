//! Pre-compiled circuits: a topology's R1CS recorded once, then proofs from the witness alone.
//!
//! Circuit synthesis re-runs every `enforce` closure and rebuilds the same linear combinations
//! for every proof, although the constraints of a circuit topology never change: only the
//! witness does. This crate removes that work:
//!
//! - [`record`] runs a circuit once and keeps its matrices A, B, C in compressed sparse rows,
//!   with the counts and the density bitmaps, exactly as `cuzk_groth16::synthesize` computes
//!   them ([`Recording`]);
//! - [`format`](mod@format) stores them as a checked file (magic, version, sizes, topology hash, checksum),
//!   which [`PreCompiled::open`] memory-maps;
//! - [`PreCompiled::synthesize`] runs only the circuit's `alloc` closures, then computes
//!   `A·z`, `B·z`, `C·z` by parallel sparse products and checks `a·b = c` row by row in the same
//!   pass, giving the [`ProvingAssignment`](cuzk_groth16::ProvingAssignment) full synthesis
//!   would give, which the prover consumes unchanged;
//! - [`PceCache`] keeps one file per topology key in a folder, recorded on first use;
//! - [`PreCompiled::witness`] runs the allocations alone, and [`PartitionInput::Witness`] hands
//!   the witness to the prover, whose backend makes a, b, c: on the host
//!   ([`PreCompiled::products`]) or, with the `cuda` feature, on the device ([`gpu`]: the
//!   matrices uploaded once as a [`DeviceImage`], 5 bytes a non-zero, and every row's
//!   `a·b = c` checked there), so that a GPU host computes nothing but the witness.
//!
//! **Invariant:** a pre-compiled circuit never changes a proof's bytes. It is used only for
//! its topology: a circuit whose counts of inputs, private variables or constraints differ, or
//! whose order of allocations and constraints differs (the shape fingerprint), a file that is
//! truncated, damaged, or of another version, and a witness that does not satisfy the
//! constraints are each a typed [`PceError`], never a wrong proof.
//!
//! **Limit:** the shape fingerprint sees when variables and constraints are created, not which
//! variables a constraint names: a circuit that keeps its shape but wires a constraint to other
//! variables than the recording is evaluated with the recorded wiring (and fails the `a·b = c`
//! check unless its witness happens to satisfy that wiring too, in which case the proof is one
//! of the recorded circuit, which does not verify against another circuit's parameters).
//! Topology keys must therefore name everything that decides the wiring.
//!
//! **Speed.** The witness pass costs what the circuit's own value computations cost; `enforce` is
//! a counter. The products skip zero values, sum small-integer coefficients of one-valued
//! variables as integers (one field addition per row), add, subtract or double for coefficients
//! ±1 and ±2, and multiply only for other coefficients of other values; `c` is computed first,
//! then `a` and `b` with each row's `a·b = c` check while they are in registers.
//!
//! **Memory.** The file (about 44 bytes per constraint for PoRep-shaped circuits: 4-byte row
//! pointers and 8-byte entries in three matrices) is memory-mapped, and the products release
//! each block of it once read, so a proving process holds its vectors rather than its vectors
//! plus the file (the file stays in the page cache, shared by every process that maps it). The
//! witness and product vectors ask for transparent huge pages.
//!
//! This crate produces assignments and never depends on `cuzk-pipeline`.

// The workspace denies `unsafe_code`; the exceptions (the memory map, its release, and huge-page
// advice) are in `mapped`, each with its `SAFETY` argument.

mod cache;
mod compiled;
mod error;
pub mod format;
#[cfg(feature = "cuda")]
pub mod gpu;
mod image;
mod input;
mod mapped;
mod record;
mod spmv;
mod witness;

pub use cache::{default_dir, write_file, Origin, PceCache};
pub use compiled::{to_bytes, Abc, PreCompiled, Witness};
pub use error::PceError;
pub use image::{DeviceImage, ImageLayout};
pub use input::PartitionInput;
pub use record::{record, shape_step, Csr, Recording, INPUT_FLAG};
