//! How a transform is cut into passes that each run in shared memory, the parameters a pass's
//! launch takes (mirrored from `kernels/ntt/ntt.cu`), and what a plan costs.
#![allow(unsafe_code)] // DeviceCopy for the kernel's parameter struct.

use std::mem::size_of;

use cuzk_gpu::DeviceCopy;

use super::{GpuNttError, NttConfig, Transform, COARSE_LOG, MAX_LOG_N};

/// Pass parameters, mirrored from `struct NttPassParams` in `kernels/ntt/ntt.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NttPassParams {
    pub(crate) vector_stride: u64,
    pub(crate) log_n: u32,
    pub(crate) s0: u32,
    pub(crate) k: u32,
    pub(crate) m: u32,
    pub(crate) flags: u32,
    pub(crate) scale_shift: u32,
    pub(crate) scale_mask: u32,
    pub(crate) pad: u32,
}

const _: () = assert!(size_of::<NttPassParams>() == 40);

// SAFETY: `repr(C)` of integers laid out without padding (a u64 then eight u32, 40 bytes,
// asserted above), valid for every bit pattern.
unsafe impl DeviceCopy for NttPassParams {}

pub(crate) const FLAG_G_FAST: u32 = 1;
pub(crate) const FLAG_PRE_SCALE: u32 = 2;
pub(crate) const FLAG_POST_SCALE: u32 = 4;
pub(crate) const FLAG_SCALE_BITREV: u32 = 8;
pub(crate) const FLAG_TWIDDLE: u32 = 16;
pub(crate) const FLAG_FULL_TWIDDLE: u32 = 32;

/// One pass of the decimation-in-frequency network: stages `s0 .. s0 + k`, `2^m` groups per
/// block, `2^radix_log` elements per thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub s0: u32,
    pub k: u32,
    pub m: u32,
    pub radix_log: u32,
}

impl Pass {
    pub(crate) fn lo_bits(&self, log_n: u32) -> u32 {
        log_n - self.s0 - self.k
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.k.div_ceil(self.radix_log)
    }

    pub(crate) fn threads(&self) -> u32 {
        1 << (self.k + self.m - self.radix_log)
    }

    pub(crate) fn shared_bytes(&self) -> u32 {
        if self.rounds() > 1 {
            (1u32 << (self.k + self.m)) * 32
        } else {
            0
        }
    }
}

/// What one transform does on the device: its passes (in DIF order) and their cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `log2(n)`.
    pub log_n: u32,
    /// The passes, in decimation-in-frequency order (a DIT transform runs them reversed).
    pub passes: Vec<Pass>,
    /// Whether the transform runs as DIT (bit-reversed input).
    pub dit: bool,
    /// Whether a bit-reversal pass follows.
    pub permute: bool,
    /// Field multiplications per vector.
    pub multiplications: u64,
    /// Bytes read and written in device memory per vector (data only, not twiddles).
    pub bytes_moved: u64,
}

/// Splits `log_n` stages into passes of at most `max_pass_log` stages, the larger ones first. The
/// first pass gets at least `log_n - 18` stages, so that every later pass's twiddles come from
/// the 2^18-entry table in one lookup.
pub fn plan(log_n: u32, config: &NttConfig, max_shared: usize) -> Result<Vec<Pass>, GpuNttError> {
    if !(1..=3).contains(&config.radix_log) || config.tile_log > 12 || config.max_pass_log == 0 {
        return Err(GpuNttError::Config(format!("{config:?}")));
    }
    if log_n == 0 || log_n > MAX_LOG_N {
        return Err(GpuNttError::Unsupported {
            log_n,
            max: MAX_LOG_N,
        });
    }
    // The tile must fit in shared memory.
    let max_tile_log = (1..=12)
        .rev()
        .find(|&t| (32usize << t) <= max_shared)
        .unwrap_or(1);
    let tile_log = config.tile_log.min(max_tile_log);
    // At most 2^max_threads_log threads per block: 2^(k + m - radix_log).
    let max_threads_log = config.max_threads_log();
    let max_pass = config
        .max_pass_log
        .min(tile_log)
        .min(max_threads_log + config.radix_log)
        .max(1);
    let split = |stages: u32| -> Vec<u32> {
        let count = stages.div_ceil(max_pass);
        let (base, extra) = (stages / count, stages % count);
        (0..count).map(|i| base + u32::from(i < extra)).collect()
    };
    let mut ks = split(log_n);
    if log_n > COARSE_LOG && ks[0] < log_n - COARSE_LOG {
        // The first pass takes the stages whose twiddles have order above 2^18 (it may then
        // exceed the configured tile: its block holds one group), the rest split as usual.
        let first = log_n - COARSE_LOG;
        if first > max_tile_log.min(max_threads_log + config.radix_log) {
            return Err(GpuNttError::Config(format!(
                "{config:?} cannot run a first pass of {first} stages"
            )));
        }
        ks = std::iter::once(first).chain(split(log_n - first)).collect();
    }
    let mut passes = Vec::with_capacity(ks.len());
    let mut s0 = 0;
    for k in ks {
        let radix_log = config.radix_log.min(k);
        // Groups per block: fill the tile, within the vector and the thread limit.
        let m = (log_n - k)
            .min(tile_log.saturating_sub(k))
            .min(max_threads_log + radix_log - k);
        passes.push(Pass {
            s0,
            k,
            m,
            radix_log,
        });
        s0 += k;
    }
    Ok(passes)
}

/// Fr multiplications per vector of a transform of 2^log_n points run as `passes`: the
/// butterflies with a twiddle other than one, each pass's inter-pass twiddles (one per element;
/// two in the pass whose twiddles have order above 2^18 when it has no full table), and the
/// scalings (n^-1, the coset's powers: one or two per element).
pub(crate) fn multiplications(
    log_n: u32,
    passes: &[Pass],
    transform: Transform,
    config: &NttConfig,
) -> u64 {
    let n = 1u64 << log_n;
    let mut muls = 0;
    for p in passes {
        muls += (n >> p.k) * inner_multiplications(p.k);
        if p.lo_bits(log_n) > 0 {
            muls += n;
            if log_n - p.s0 > COARSE_LOG && !config.full_twiddles(log_n) {
                muls += n;
            }
        }
    }
    muls + match transform {
        Transform::Forward => 0,
        Transform::Inverse => n,
        Transform::CosetForward | Transform::CosetInverse => 2 * n,
    }
}

/// Multiplications of the inner butterflies of a size-2^k transform, per 2^k elements.
pub(crate) fn inner_multiplications(k: u32) -> u64 {
    // Stage c has 2^(k-1) butterflies, of which 2^(k-1-c) have twiddle one.
    (0..k)
        .map(|c| (1u64 << (k - 1)) - (1u64 << (k - 1 - c)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{twiddle_table_bytes, SWEEP_CONFIGS};

    const H200_SHARED: usize = 232_448;

    #[test]
    fn plans_split_evenly_with_the_large_passes_first() {
        let c = NttConfig::default();
        let ks = |log_n| {
            plan(log_n, &c, H200_SHARED)
                .unwrap()
                .iter()
                .map(|p| p.k)
                .collect::<Vec<_>>()
        };
        assert_eq!(ks(27), [9, 9, 9]);
        assert_eq!(ks(28), [10, 9, 9]);
        assert_eq!(ks(24), [8, 8, 8]);
        assert_eq!(ks(20), [7, 7, 6]);
        assert_eq!(ks(10), [5, 5]);
        assert_eq!(ks(9), [9]);
        assert_eq!(ks(1), [1]);
    }

    #[test]
    fn every_plan_covers_the_stages_within_the_limits() {
        let c = |radix_log, tile_log, max_pass_log, high_occupancy| NttConfig {
            radix_log,
            tile_log,
            max_pass_log,
            high_occupancy,
            ..NttConfig::default()
        };
        let extra = [c(2, 12, 12, false), c(1, 4, 3, false), c(3, 12, 12, false)];
        for config in SWEEP_CONFIGS.into_iter().chain(extra) {
            for log_n in 1..=MAX_LOG_N {
                let passes = plan(log_n, &config, H200_SHARED).unwrap();
                let mut s0 = 0;
                for p in &passes {
                    assert_eq!(p.s0, s0);
                    assert!(p.k >= p.radix_log && p.k + p.m <= config.tile_log.max(p.k));
                    assert!(
                        p.threads() <= 1 << config.max_threads_log(),
                        "{config:?} {log_n} {p:?}"
                    );
                    assert!(p.m <= log_n - p.k);
                    assert!(32usize << (p.k + p.m) <= H200_SHARED);
                    s0 += p.k;
                }
                assert_eq!(s0, log_n);
                assert!(log_n <= COARSE_LOG || passes[0].k >= log_n - COARSE_LOG);
            }
        }
    }

    #[test]
    fn inner_multiplications_skip_the_unit_twiddles() {
        assert_eq!(inner_multiplications(1), 0);
        assert_eq!(inner_multiplications(2), 1);
        // 9 stages of 256 butterflies, minus 511 with twiddle one.
        assert_eq!(inner_multiplications(9), 9 * 256 - 511);
    }

    #[test]
    fn the_full_twiddle_table_saves_one_multiplication_per_element() {
        let with = NttConfig::default();
        let without = NttConfig {
            full_twiddle_max_log: 0,
            ..with
        };
        // The default's table reaches 2^28; one that stops at 2^27 saves nothing above it.
        let to_27 = NttConfig {
            full_twiddle_max_log: 27,
            ..with
        };
        for cfg in [with, to_27] {
            for log_n in [19, 24, 27, 28] {
                let passes = plan(log_n, &cfg, H200_SHARED).unwrap();
                let n = 1u64 << log_n;
                let saved = |t| {
                    multiplications(log_n, &passes, t, &without)
                        - multiplications(log_n, &passes, t, &cfg)
                };
                let want = if log_n <= cfg.full_twiddle_max_log {
                    n
                } else {
                    0
                };
                for t in Transform::ALL {
                    assert_eq!(saved(t), want, "{cfg:?} 2^{log_n} {t:?}");
                }
            }
        }
        // At 2^24 (8 + 8 + 8): 3 · 2^16 · (8 · 128 − 255) butterflies, 2 · 2^24 inter-pass twiddles.
        let passes = plan(24, &with, H200_SHARED).unwrap();
        let n = 1u64 << 24;
        assert_eq!(
            multiplications(24, &passes, Transform::Forward, &with),
            3 * (1 << 16) * (8 * 128 - 255) + 2 * n
        );
        // Up to 2^18 every twiddle is one lookup in the coarse table: nothing to save.
        for log_n in 1..=COARSE_LOG {
            let passes = plan(log_n, &with, H200_SHARED).unwrap();
            assert_eq!(
                multiplications(log_n, &passes, Transform::Forward, &with),
                multiplications(log_n, &passes, Transform::Forward, &without)
            );
        }
    }

    #[test]
    fn twiddle_tables_are_sized_per_direction() {
        let with = NttConfig::default();
        let without = NttConfig {
            full_twiddle_max_log: 0,
            ..with
        };
        let coarse = 32usize << 18;
        assert_eq!(twiddle_table_bytes(18, &with), coarse);
        assert_eq!(twiddle_table_bytes(10, &with), coarse);
        assert_eq!(twiddle_table_bytes(24, &without), coarse + (32 << 6));
        assert_eq!(
            twiddle_table_bytes(24, &with),
            coarse + (32 << 6) + (16 << 24)
        );
        // 2 GiB at a PoRep partition's 2^27 by default, 4 GiB at 2^28.
        assert_eq!(
            twiddle_table_bytes(27, &with) - twiddle_table_bytes(27, &without),
            2 << 30
        );
        assert_eq!(
            twiddle_table_bytes(28, &with),
            coarse + (32 << 10) + (16 << 28)
        );
        // Above full_twiddle_max_log, the fine table only.
        let to_27 = NttConfig {
            full_twiddle_max_log: 27,
            ..with
        };
        assert_eq!(twiddle_table_bytes(28, &to_27), coarse + (32 << 10));
        assert_eq!(
            twiddle_table_bytes(27, &to_27),
            twiddle_table_bytes(27, &with)
        );
    }

    #[test]
    fn oversized_domains_are_refused() {
        assert!(matches!(
            plan(29, &NttConfig::default(), H200_SHARED),
            Err(GpuNttError::Unsupported { log_n: 29, .. })
        ));
    }
}
