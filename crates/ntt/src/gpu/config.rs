//! The tuning knobs of the pass decomposition, their tuned default, and the twiddle tables'
//! memory.

use std::mem::size_of;

use cuzk_field::layout::FrLimbs;

use super::COARSE_LOG;

/// Tuning knobs of the pass decomposition; [`NttConfig::default`] is the tuned choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NttConfig {
    /// log2 of the elements each thread keeps in registers (1 to 3): the radix of a round.
    pub radix_log: u32,
    /// log2 of the elements a block holds in shared memory (32 bytes each), at most 12.
    pub tile_log: u32,
    /// The most radix-2 stages one pass runs (at most `tile_log`): passes = ceil(log_n / this).
    pub max_pass_log: u32,
    /// Use the kernels compiled for more resident warps (fewer registers per thread) where they
    /// exist (`radix_log` 1 and 2).
    pub high_occupancy: bool,
    /// The largest `log2(n)` whose first pass reads its twiddles (of order n) from a table of
    /// the n/2 powers of omega: 16·n bytes per direction, made on the device at the first
    /// transform of that size and kept ([`twiddle_table_bytes`]). Larger transforms (and every
    /// one when this is at most 18) multiply a coarse and a fine lookup instead, one more Fr
    /// multiplication per element in that pass. The default, 28, covers every size the crate
    /// takes: 2 GiB per direction at a PoRep partition's 2^27, 4 GiB at 2^28. The table makes
    /// those sizes faster (docs/benchmarks.md, GPU NTT).
    pub full_twiddle_max_log: u32,
}

impl NttConfig {
    /// The most threads a block of this configuration may have (the kernels' launch bounds).
    pub(crate) fn max_threads_log(&self) -> u32 {
        if self.high_occupancy && self.radix_log == 2 {
            8
        } else {
            9
        }
    }

    /// Whether the first pass of a 2^log_n transform reads the full twiddle table.
    pub(crate) fn full_twiddles(&self, log_n: u32) -> bool {
        log_n > COARSE_LOG && log_n <= self.full_twiddle_max_log
    }
}

/// The configuration [`NttConfig::default`] returns.
const DEFAULT_CONFIG: NttConfig = NttConfig {
    radix_log: 2,
    tile_log: 9,
    max_pass_log: 9,
    high_occupancy: true,
    full_twiddle_max_log: 28,
};

impl Default for NttConfig {
    /// The fastest of [`SWEEP_CONFIGS`] on the H200 (docs/benchmarks.md): radix 4 per round,
    /// 2^9-element tiles, 256 threads and at most 80 registers per thread (24 warps per SM), and
    /// the full twiddle table up to 2^28.
    fn default() -> Self {
        DEFAULT_CONFIG
    }
}

/// Device bytes of the twiddle tables a transform of 2^log_n points needs, per direction
/// (forward, inverse), under `config`: the coarse table (8 MiB, shared by every size), and above
/// 2^18 the fine table and, where [`NttConfig::full_twiddle_max_log`] allows, the full one.
/// [`GpuNtt`] makes each once and keeps it; [`GpuNtt::table_bytes`] says what it holds.
pub fn twiddle_table_bytes(log_n: u32, config: &NttConfig) -> usize {
    let fr = size_of::<FrLimbs>();
    let mut bytes = fr << COARSE_LOG;
    if log_n > COARSE_LOG {
        bytes += fr << (log_n - COARSE_LOG);
        if config.full_twiddles(log_n) {
            bytes += fr << (log_n - 1);
        }
    }
    bytes
}

/// The configurations the benchmark sweeps (the default first); every one is tested against the
/// reference (`tests/gpu.rs`).
pub const SWEEP_CONFIGS: [NttConfig; 10] = [
    DEFAULT_CONFIG,
    // The default without the full twiddle table: what the table saves.
    NttConfig {
        full_twiddle_max_log: 0,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 3,
        tile_log: 11,
        max_pass_log: 10,
        high_occupancy: false,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 3,
        tile_log: 10,
        max_pass_log: 10,
        high_occupancy: false,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 3,
        tile_log: 12,
        max_pass_log: 12,
        high_occupancy: false,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 2,
        tile_log: 11,
        max_pass_log: 10,
        high_occupancy: false,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 2,
        tile_log: 10,
        max_pass_log: 10,
        high_occupancy: true,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 1,
        tile_log: 10,
        max_pass_log: 10,
        high_occupancy: true,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 1,
        tile_log: 11,
        max_pass_log: 10,
        high_occupancy: true,
        ..DEFAULT_CONFIG
    },
    NttConfig {
        radix_log: 1,
        tile_log: 9,
        max_pass_log: 9,
        high_occupancy: true,
        ..DEFAULT_CONFIG
    },
];
