//! `cuzk.v1`, the proving daemon's gRPC contract (Curio's, `docs/wire.md` of the project, with
//! additions under new numbers only: the `SYNTHETIC = 100` kind and `AwaitProofResponse`'s
//! `started_unix_ms = 20` and `finished_unix_ms = 21`), compiled from
//! `proto/cuzk/v1/proving.proto`: the prost messages, the tonic client and server traits, the
//! file descriptor set for server reflection, and [`client`], a connection to a daemon.
//!
//! A Rust program talks to the daemon with this crate alone: it links neither the engine nor
//! SQLite nor filecoin-proofs.

#![allow(missing_docs, clippy::all, missing_debug_implementations)]

tonic::include_proto!("cuzk.v1");

/// The encoded file descriptor set of `cuzk.v1`, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/cuzk_v1_descriptor.bin"));

pub mod client;
