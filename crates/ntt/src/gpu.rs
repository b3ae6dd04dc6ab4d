//! The NTT on the GPU (feature `cuda`): bit-identical to [`crate::reference`].
//!
//! The kernels are `kernels/ntt/ntt.cu`, whose header comment states the algorithm: a
//! decimation-in-frequency network (natural order in, bit-reversed out) or its transpose, the
//! decimation-in-time network (bit-reversed in, natural out), cut into passes of up to 9 radix-2
//! stages (by default; [`NttConfig`]) that each run in shared memory, a few elements per thread in
//! registers, so a 2^27 transform reads and writes global memory three times. Coset and `n^-1`
//! scalings are fused into the first and last passes; a natural-to-natural or reversed-to-reversed
//! transform adds one tiled bit-reversal pass.
//!
//! [`GpuNtt`] holds the loaded module and the twiddle tables (8 MiB per direction, uploaded once
//! per [`GpuNtt`] and kept on the device; above 2^18 points, per size, a small fine table and by
//! default the full table of the first pass's twiddles, 16·n bytes: [`twiddle_table_bytes`]).
//! Its `*_device` methods transform vectors already on the device on a given stream, several
//! vectors per call, and its host methods (same signatures as [`crate::cpu`]) copy in and out
//! around them. Speed on the H200: `docs/benchmarks.md`.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::mem::size_of;
use std::sync::{Arc, Mutex, OnceLock};

use cuzk_field::layout::{scalars_as_limbs, FrLimbs};
use cuzk_gpu::{
    Device, DeviceBuffer, DeviceCopy, GpuError, Kernel, KernelArgs, LaunchConfig, Module, Stream,
};
use ff::Field;
use rayon::prelude::*;

use crate::{check_len, Domain, NttError, Order, Scalar};

/// The fatbin of `kernels/ntt/*.cu`, compiled by this crate's build script.
pub static NTT_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ntt.fatbin"));

/// The largest transform the GPU path supports, as `log2(n)`.
pub const MAX_LOG_N: u32 = 28;

/// `log2` of the entries of the coarse twiddle table (powers of the 2^18-th root of unity).
const COARSE_LOG: u32 = 18;

/// Errors of the GPU transforms.
#[derive(Debug, thiserror::Error)]
pub enum GpuNttError {
    /// The device layer failed (no driver, no device, a failed call).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A length does not match the domain.
    #[error(transparent)]
    Ntt(#[from] NttError),
    /// The domain is outside what the GPU path supports.
    #[error("a domain of 2^{log_n} points is not supported on the GPU (at most 2^{max})")]
    Unsupported { log_n: u32, max: u32 },
    /// The configuration is invalid.
    #[error("invalid NTT configuration: {0}")]
    Config(String),
}

/// Which transform (see the crate's conventions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transform {
    /// `y_i = sum_j x_j omega^(ij)`.
    Forward,
    /// `x_i = n^-1 sum_j y_j omega^(-ij)`.
    Inverse,
    /// Forward on the coset `g<omega>`: coefficient `j` times `g^j`, then forward.
    CosetForward,
    /// Inverse, then coefficient `i` times `g^-i`.
    CosetInverse,
}

impl Transform {
    /// Every transform.
    pub const ALL: [Transform; 4] = [
        Transform::Forward,
        Transform::Inverse,
        Transform::CosetForward,
        Transform::CosetInverse,
    ];

    fn is_inverse(self) -> bool {
        matches!(self, Transform::Inverse | Transform::CosetInverse)
    }
}

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
    /// takes: 2 GiB per direction at a PoRep partition's 2^27, 4 GiB at 2^28 (H200: 2^27
    /// forward 43.6 -> 41.9 ms with the table, 2^28 91.2 -> 88.0 ms; docs/benchmarks.md).
    pub full_twiddle_max_log: u32,
}

impl NttConfig {
    /// The most threads a block of this configuration may have (the kernels' launch bounds).
    fn max_threads_log(&self) -> u32 {
        if self.high_occupancy && self.radix_log == 2 {
            8
        } else {
            9
        }
    }

    /// Whether the first pass of a 2^log_n transform reads the full twiddle table.
    fn full_twiddles(&self, log_n: u32) -> bool {
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

/// Pass parameters, mirrored from `struct NttPassParams` in `kernels/ntt/ntt.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct NttPassParams {
    vector_stride: u64,
    log_n: u32,
    s0: u32,
    k: u32,
    m: u32,
    flags: u32,
    scale_shift: u32,
    scale_mask: u32,
    pad: u32,
}

const _: () = assert!(size_of::<NttPassParams>() == 40);

// SAFETY: `repr(C)` of integers laid out without padding (a u64 then eight u32, 40 bytes,
// asserted above), valid for every bit pattern.
unsafe impl DeviceCopy for NttPassParams {}

const FLAG_G_FAST: u32 = 1;
const FLAG_PRE_SCALE: u32 = 2;
const FLAG_POST_SCALE: u32 = 4;
const FLAG_SCALE_BITREV: u32 = 8;
const FLAG_TWIDDLE: u32 = 16;
const FLAG_FULL_TWIDDLE: u32 = 32;

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
    fn lo_bits(&self, log_n: u32) -> u32 {
        log_n - self.s0 - self.k
    }

    fn rounds(&self) -> u32 {
        self.k.div_ceil(self.radix_log)
    }

    fn threads(&self) -> u32 {
        1 << (self.k + self.m - self.radix_log)
    }

    fn shared_bytes(&self) -> u32 {
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
fn multiplications(log_n: u32, passes: &[Pass], transform: Transform, config: &NttConfig) -> u64 {
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
fn inner_multiplications(k: u32) -> u64 {
    // Stage c has 2^(k-1) butterflies, of which 2^(k-1-c) have twiddle one.
    (0..k)
        .map(|c| (1u64 << (k - 1)) - (1u64 << (k - 1 - c)))
        .sum()
}

struct ScaleTables {
    a: DeviceBuffer<FrLimbs>,
    b: Option<DeviceBuffer<FrLimbs>>,
    mask: u32,
    shift: u32,
}

#[derive(Default)]
struct Tables {
    coarse: [Option<Arc<DeviceBuffer<FrLimbs>>>; 2],
    fine: HashMap<(u32, bool), Arc<DeviceBuffer<FrLimbs>>>,
    full: HashMap<(u32, bool), Arc<DeviceBuffer<FrLimbs>>>,
    scale: HashMap<(u32, Transform), Arc<ScaleTables>>,
}

/// The loaded NTT kernels of one device, with their twiddle tables.
pub struct GpuNtt {
    device: Device,
    _module: Module,
    dif: [Kernel; 3],
    dit: [Kernel; 3],
    bitrev_small: Kernel,
    bitrev_tiled: Kernel,
    twiddle_table: Kernel,
    config: NttConfig,
    tables: Mutex<Tables>,
}

impl std::fmt::Debug for GpuNtt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuNtt")
            .field("device", &self.device.info().name)
            .field("config", &self.config)
            .finish()
    }
}

/// Powers `base^0 .. base^(count-1)`, computed in parallel chunks.
fn powers(base: Scalar, count: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![Scalar::ZERO; count];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut acc = base.pow_vartime([(i * CHUNK) as u64]);
            for v in chunk.iter_mut() {
                *v = acc;
                acc *= base;
            }
        });
    out
}

impl GpuNtt {
    /// Loads the NTT kernels on `device` with the default configuration.
    pub fn new(device: &Device) -> Result<Self, GpuNttError> {
        Self::with_config(device, NttConfig::default())
    }

    /// Loads the NTT kernels on `device` with the given configuration.
    pub fn with_config(device: &Device, config: NttConfig) -> Result<Self, GpuNttError> {
        plan(20, &config, device.info().max_shared_per_block)?;
        let module = device.load_module(NTT_FATBIN)?;
        // Launch wrappers: `ntt_pass` below picks the kernel of a pass's radix from these.
        let (dif, dit) = if config.high_occupancy {
            (
                [
                    "ntt_pass_dif_r1_o2",
                    "ntt_pass_dif_r2_o3",
                    "ntt_pass_dif_r3",
                ],
                [
                    "ntt_pass_dit_r1_o2",
                    "ntt_pass_dit_r2_o3",
                    "ntt_pass_dit_r3",
                ],
            )
        } else {
            (
                ["ntt_pass_dif_r1", "ntt_pass_dif_r2", "ntt_pass_dif_r3"],
                ["ntt_pass_dit_r1", "ntt_pass_dit_r2", "ntt_pass_dit_r3"],
            )
        };
        let load = |names: [&'static str; 3]| -> Result<[Kernel; 3], GpuError> {
            Ok([
                module.kernel(names[0])?,
                module.kernel(names[1])?,
                module.kernel(names[2])?,
            ])
        };
        let (dif, dit) = (load(dif)?, load(dit)?);
        let bitrev_small = module.kernel("ntt_bitrev_small")?;
        let bitrev_tiled = module.kernel("ntt_bitrev_tiled")?;
        let twiddle_table = module.kernel("ntt_twiddle_table")?;
        // Shared memory beyond the 48 KiB default needs opting in, per kernel.
        let max_shared = device.info().max_shared_per_block.min(32 << 12) as u32;
        for kernel in dif.iter().chain(dit.iter()) {
            kernel.set_max_dynamic_shared_bytes(max_shared)?;
        }
        bitrev_tiled.set_max_dynamic_shared_bytes(BITREV_TILED_SHARED)?;
        Ok(Self {
            device: device.clone(),
            _module: module,
            dif,
            dit,
            bitrev_small,
            bitrev_tiled,
            twiddle_table,
            config,
            tables: Mutex::new(Tables::default()),
        })
    }

    /// The device the kernels run on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The configuration in use.
    pub fn config(&self) -> NttConfig {
        self.config
    }

    /// What a transform of `domain` with these orders does on the device.
    pub fn plan(
        &self,
        domain: &Domain,
        transform: Transform,
        input: Order,
        output: Order,
    ) -> Result<Plan, GpuNttError> {
        let log_n = domain.log_n();
        let passes = plan(log_n, &self.config, self.device.info().max_shared_per_block)?;
        let dit = input == Order::BitReversed;
        let natural_out = dit;
        let permute = natural_out != (output == Order::Natural);
        let n = 1u64 << log_n;
        let muls = multiplications(log_n, &passes, transform, &self.config);
        let sweeps = passes.len() as u64 + u64::from(permute);
        Ok(Plan {
            log_n,
            passes,
            dit,
            permute,
            multiplications: muls,
            bytes_moved: sweeps * 2 * 32 * n,
        })
    }

    fn coarse(
        &self,
        stream: &Stream,
        inverse: bool,
    ) -> Result<Arc<DeviceBuffer<FrLimbs>>, GpuNttError> {
        let mut tables = self.tables.lock().expect("table cache poisoned");
        if let Some(t) = &tables.coarse[usize::from(inverse)] {
            return Ok(t.clone());
        }
        let d = Domain::new(COARSE_LOG).expect("2^18 is a valid domain");
        let root = if inverse { d.omega_inv() } else { d.omega() };
        let t = Arc::new(upload_synced(stream, &powers(root, 1 << COARSE_LOG))?);
        tables.coarse[usize::from(inverse)] = Some(t.clone());
        Ok(t)
    }

    fn fine(
        &self,
        stream: &Stream,
        domain: &Domain,
        inverse: bool,
    ) -> Result<Arc<DeviceBuffer<FrLimbs>>, GpuNttError> {
        let log_n = domain.log_n();
        let mut tables = self.tables.lock().expect("table cache poisoned");
        if let Some(t) = tables.fine.get(&(log_n, inverse)) {
            return Ok(t.clone());
        }
        let root = if inverse {
            domain.omega_inv()
        } else {
            domain.omega()
        };
        let len = 1usize << log_n.saturating_sub(COARSE_LOG);
        let t = Arc::new(upload_synced(stream, &powers(root, len))?);
        tables.fine.insert((log_n, inverse), t.clone());
        Ok(t)
    }

    /// The full twiddle table of 2^log_n (the first 2^(log_n - 1) powers of omega or omega^-1),
    /// made on the device from the coarse and fine tables, or `None` when the configuration
    /// leaves it out or the device has no room for it (the first pass then multiplies the two
    /// lookups as without it: the same values, one more multiplication per element).
    fn full(
        &self,
        stream: &Stream,
        domain: &Domain,
        inverse: bool,
        coarse: &DeviceBuffer<FrLimbs>,
        fine: &DeviceBuffer<FrLimbs>,
    ) -> Result<Option<Arc<DeviceBuffer<FrLimbs>>>, GpuNttError> {
        let log_n = domain.log_n();
        if !self.config.full_twiddles(log_n) {
            return Ok(None);
        }
        let mut tables = self.tables.lock().expect("table cache poisoned");
        if let Some(t) = tables.full.get(&(log_n, inverse)) {
            return Ok(Some(t.clone()));
        }
        let len = 1usize << (log_n - 1);
        let Ok(mut table) = stream.alloc::<FrLimbs>(len) else {
            return Ok(None);
        };
        self.ntt_twiddle_table(stream, &mut table, coarse, fine, log_n)?;
        // Shared by every stream that later uses this `GpuNtt`, as upload_synced's tables.
        stream.synchronize()?;
        let t = Arc::new(table);
        tables.full.insert((log_n, inverse), t.clone());
        Ok(Some(t))
    }

    /// Device bytes of the twiddle and scaling tables this instance holds (every size and
    /// direction it has transformed so far; they stay until it is dropped).
    pub fn table_bytes(&self) -> usize {
        let tables = self.tables.lock().expect("table cache poisoned");
        let bytes = |b: &DeviceBuffer<FrLimbs>| b.len() * size_of::<FrLimbs>();
        tables
            .coarse
            .iter()
            .flatten()
            .map(|b| bytes(b))
            .sum::<usize>()
            + tables.fine.values().map(|b| bytes(b)).sum::<usize>()
            + tables.full.values().map(|b| bytes(b)).sum::<usize>()
            + tables
                .scale
                .values()
                .map(|s| bytes(&s.a) + s.b.as_ref().map_or(0, bytes))
                .sum::<usize>()
    }

    fn scale(
        &self,
        stream: &Stream,
        domain: &Domain,
        transform: Transform,
    ) -> Result<Option<Arc<ScaleTables>>, GpuNttError> {
        if transform == Transform::Forward {
            return Ok(None);
        }
        let log_n = domain.log_n();
        let mut tables = self.tables.lock().expect("table cache poisoned");
        if let Some(t) = tables.scale.get(&(log_n, transform)) {
            return Ok(Some(t.clone()));
        }
        // factor(j) = a[j & mask] * b[j >> shift], with a and b about sqrt(n) entries.
        let shift = log_n.div_ceil(2);
        let (a, b) = match transform {
            Transform::Forward => unreachable!(),
            Transform::Inverse => (vec![domain.n_inv()], None),
            Transform::CosetForward => {
                let g = domain.coset_gen();
                let a = powers(g, 1 << shift);
                let b = powers(g.pow_vartime([1u64 << shift]), 1 << (log_n - shift));
                (a, Some(b))
            }
            Transform::CosetInverse => {
                let g_inv = domain.coset_gen_inv();
                let n_inv = domain.n_inv();
                let a: Vec<Scalar> = powers(g_inv, 1 << shift)
                    .into_iter()
                    .map(|x| x * n_inv)
                    .collect();
                let b = powers(g_inv.pow_vartime([1u64 << shift]), 1 << (log_n - shift));
                (a, Some(b))
            }
        };
        let mask = if b.is_some() { (1u32 << shift) - 1 } else { 0 };
        let t = Arc::new(ScaleTables {
            a: upload_synced(stream, &a)?,
            b: b.map(|b| upload_synced(stream, &b)).transpose()?,
            mask,
            shift,
        });
        tables.scale.insert((log_n, transform), t.clone());
        Ok(Some(t))
    }

    /// Transforms `data`, `data.len() / domain.n()` vectors back to back, in place on `stream`.
    pub fn transform_device(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        domain: &Domain,
        transform: Transform,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        let n = domain.n();
        if data.len() % n != 0 {
            return Err(NttError::LengthMismatch {
                expected: n,
                got: data.len(),
            }
            .into());
        }
        let vectors = data.len() / n;
        if n == 1 {
            // One point: every transform is the identity (n^-1 = g^0 = 1).
            return Ok(());
        }
        let plan = self.plan(domain, transform, input, output)?;
        if vectors == 0 {
            return Ok(());
        }
        let log_n = plan.log_n;
        let inverse = transform.is_inverse();
        let coarse = self.coarse(stream, inverse)?;
        let fine = if log_n > COARSE_LOG {
            Some(self.fine(stream, domain, inverse)?)
        } else {
            None
        };
        let full = match &fine {
            Some(fine) => self.full(stream, domain, inverse, &coarse, fine)?,
            None => None,
        };
        let scale = self.scale(stream, domain, transform)?;

        let order: Vec<Pass> = if plan.dit {
            plan.passes.iter().rev().copied().collect()
        } else {
            plan.passes.clone()
        };
        let last = order.len() - 1;
        for (i, pass) in order.iter().enumerate() {
            let mut flags = 0;
            if pass.lo_bits(log_n) > 0 {
                flags |= FLAG_G_FAST | FLAG_TWIDDLE;
            }
            // The pass whose twiddles have order above 2^18 (the first in DIF order) reads the
            // full table where there is one.
            let first_order = log_n - pass.s0 > COARSE_LOG;
            let twiddles = match &full {
                Some(t) if first_order => {
                    flags |= FLAG_FULL_TWIDDLE;
                    Some(&**t)
                }
                _ => fine.as_deref(),
            };
            // The first pass reads the input, in input order; the last writes the result, in DIT
            // (natural) or DIF (bit-reversed) order.
            if i == 0 && transform == Transform::CosetForward {
                flags |= FLAG_PRE_SCALE | if plan.dit { FLAG_SCALE_BITREV } else { 0 };
            }
            if i == last && inverse {
                flags |= FLAG_POST_SCALE | if plan.dit { 0 } else { FLAG_SCALE_BITREV };
            }
            let (mask, shift) = scale.as_ref().map_or((0, 0), |s| (s.mask, s.shift));
            let params = NttPassParams {
                vector_stride: n as u64,
                log_n,
                s0: pass.s0,
                k: pass.k,
                m: pass.m,
                flags,
                scale_shift: shift,
                scale_mask: mask,
                pad: 0,
            };
            let scale_a = scale.as_ref().map(|s| &s.a);
            let scale_b = scale.as_ref().and_then(|s| s.b.as_ref());
            self.ntt_pass(
                stream, data, vectors, plan.dit, pass, &params, &coarse, twiddles, scale_a, scale_b,
            )?;
        }
        if plan.permute {
            if log_n >= 10 {
                self.ntt_bitrev_tiled(stream, data, vectors, log_n)?;
            } else {
                self.ntt_bitrev_small(stream, data, vectors, log_n)?;
            }
        }
        Ok(())
    }

    /// Launches `ntt_pass_{dif,dit}_r{radix_log}` over every vector (grid.y, in chunks of 65535).
    #[allow(clippy::too_many_arguments)]
    fn ntt_pass(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        vectors: usize,
        dit: bool,
        pass: &Pass,
        params: &NttPassParams,
        coarse: &DeviceBuffer<FrLimbs>,
        fine: Option<&DeviceBuffer<FrLimbs>>,
        scale_a: Option<&DeviceBuffer<FrLimbs>>,
        scale_b: Option<&DeviceBuffer<FrLimbs>>,
    ) -> Result<(), GpuNttError> {
        let kernel = if dit { &self.dit } else { &self.dif }[pass.radix_log as usize - 1].clone();
        let blocks = 1u32 << (params.log_n - pass.k - pass.m);
        let n = params.vector_stride as usize;
        for first in (0..vectors).step_by(MAX_GRID_Y) {
            let count = (vectors - first).min(MAX_GRID_Y);
            // Later chunks start further into the buffer; the kernel indexes vectors by blockIdx.y.
            let config = LaunchConfig {
                grid: (blocks, count as u32, 1),
                block: (pass.threads(), 1, 1),
                shared_bytes: pass.shared_bytes(),
            };
            let mut args = KernelArgs::new();
            args.buffer_at_mut(data, first * n)?
                .buffer(coarse)
                .optional_buffer(fine)
                .optional_buffer(scale_a)
                .optional_buffer(scale_b)
                .value(*params);
            // SAFETY: the arguments match `ntt_pass_*(uint4* data, const uint4* coarse,
            // const uint4* fine, const uint4* scale_a, const uint4* scale_b, NttPassParams p)`.
            // The grid covers exactly the 2^(L-k-m) blocks of 2^m groups of 2^k elements of each
            // of `count` vectors starting at `first`, all inside `data` (its length is
            // vectors · n, checked by the caller); twiddle indices are below 2^18 = coarse.len(),
            // fine indices below 2^(L-18) = fine.len() (present whenever L > 18), or with
            // FLAG_FULL_TWIDDLE below 2^(L-1) = fine.len() (the full table), scale indices
            // below the tables' sizes by construction of mask and shift.
            unsafe { kernel.launch(stream, config, &args)? };
        }
        Ok(())
    }

    /// Launches `ntt_twiddle_table`: the full twiddle table of 2^log_n into `out`, one thread
    /// per entry.
    fn ntt_twiddle_table(
        &self,
        stream: &Stream,
        out: &mut DeviceBuffer<FrLimbs>,
        coarse: &DeviceBuffer<FrLimbs>,
        fine: &DeviceBuffer<FrLimbs>,
        log_n: u32,
    ) -> Result<(), GpuNttError> {
        let len = 1usize << (log_n - 1);
        if log_n <= COARSE_LOG
            || out.len() != len
            || coarse.len() != 1 << COARSE_LOG
            || fine.len() != 1 << (log_n - COARSE_LOG)
        {
            return Err(GpuError::InvalidArgument(format!(
                "twiddle table of 2^{log_n}: {} entries out, {} coarse, {} fine",
                out.len(),
                coarse.len(),
                fine.len()
            ))
            .into());
        }
        let config = LaunchConfig::linear(len as u32, 256);
        let mut args = KernelArgs::new();
        args.buffer_mut(out)
            .buffer(coarse)
            .buffer(fine)
            .value(log_n);
        // SAFETY: the arguments match `ntt_twiddle_table(uint4* out, const uint4* coarse,
        // const uint4* fine, uint32_t order)`; the kernel writes out[e] for e < 2^(log_n - 1) =
        // out.len() and reads coarse and fine below their lengths, all checked above.
        unsafe { self.twiddle_table.launch(stream, config, &args)? };
        Ok(())
    }

    /// Launches `ntt_bitrev_small`: the in-place bit reversal, one thread per element.
    fn ntt_bitrev_small(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        vectors: usize,
        log_n: u32,
    ) -> Result<(), GpuNttError> {
        let n = 1usize << log_n;
        for first in (0..vectors).step_by(MAX_GRID_Y) {
            let count = (vectors - first).min(MAX_GRID_Y);
            let mut config = LaunchConfig::linear(n as u32, 256);
            config.grid.1 = count as u32;
            let mut args = KernelArgs::new();
            args.buffer_at_mut(data, first * n)?
                .value(n as u64)
                .value(log_n);
            // SAFETY: `ntt_bitrev_small(uint4* data, uint64_t vector_stride, uint32_t log_n)`;
            // threads at or past n return, so every access is inside the `count` vectors.
            unsafe { self.bitrev_small.launch(stream, config, &args)? };
        }
        Ok(())
    }

    /// Launches `ntt_bitrev_tiled`: the in-place bit reversal by 32x32 tiles (log_n >= 10).
    fn ntt_bitrev_tiled(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        vectors: usize,
        log_n: u32,
    ) -> Result<(), GpuNttError> {
        debug_assert!(log_n >= 10);
        let n = 1usize << log_n;
        for first in (0..vectors).step_by(MAX_GRID_Y) {
            let count = (vectors - first).min(MAX_GRID_Y);
            let config = LaunchConfig {
                grid: (1 << (log_n - 10), count as u32, 1),
                block: (256, 1, 1),
                shared_bytes: BITREV_TILED_SHARED,
            };
            let mut args = KernelArgs::new();
            args.buffer_at_mut(data, first * n)?
                .value(n as u64)
                .value(log_n);
            // SAFETY: `ntt_bitrev_tiled(uint4* data, uint64_t vector_stride, uint32_t log_n)`
            // with 2^(log_n-10) blocks per vector, each touching indices below 2^log_n of its
            // vector only, and 64 KiB of shared memory as the kernel expects.
            unsafe { self.bitrev_tiled.launch(stream, config, &args)? };
        }
        Ok(())
    }

    /// [`Transform::Forward`] of vectors on the device.
    pub fn forward_device(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_device(stream, data, domain, Transform::Forward, input, output)
    }

    /// [`Transform::Inverse`] of vectors on the device.
    pub fn inverse_device(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_device(stream, data, domain, Transform::Inverse, input, output)
    }

    /// [`Transform::CosetForward`] of vectors on the device.
    pub fn coset_forward_device(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_device(stream, data, domain, Transform::CosetForward, input, output)
    }

    /// [`Transform::CosetInverse`] of vectors on the device.
    pub fn coset_inverse_device(
        &self,
        stream: &Stream,
        data: &mut DeviceBuffer<FrLimbs>,
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_device(stream, data, domain, Transform::CosetInverse, input, output)
    }

    /// Transforms host vectors: copies them to the device (one buffer), transforms them on the
    /// device's default stream, and copies them back. Every length is checked first.
    pub fn transform_many(
        &self,
        vectors: &mut [&mut [Scalar]],
        domain: &Domain,
        transform: Transform,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        for v in vectors.iter() {
            check_len(domain, v.len())?;
        }
        if vectors.is_empty() {
            return Ok(());
        }
        let n = domain.n();
        let stream = self.device.default_stream();
        let mut data = stream.alloc::<FrLimbs>(n * vectors.len())?;
        for (i, v) in vectors.iter().enumerate() {
            stream.copy_to_device_at(&v[..], &mut data, i * n)?;
        }
        self.transform_device(&stream, &mut data, domain, transform, input, output)?;
        for (i, v) in vectors.iter_mut().enumerate() {
            stream.copy_to_host_at(&data, i * n, &mut v[..])?;
        }
        Ok(())
    }

    /// Forward transform of a host vector (copied in and out).
    pub fn forward(
        &self,
        values: &mut [Scalar],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(&mut [values], domain, Transform::Forward, input, output)
    }

    /// Inverse transform of a host vector (copied in and out).
    pub fn inverse(
        &self,
        values: &mut [Scalar],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(&mut [values], domain, Transform::Inverse, input, output)
    }

    /// Coset forward transform of a host vector (copied in and out).
    pub fn coset_forward(
        &self,
        values: &mut [Scalar],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(
            &mut [values],
            domain,
            Transform::CosetForward,
            input,
            output,
        )
    }

    /// Coset inverse transform of a host vector (copied in and out).
    pub fn coset_inverse(
        &self,
        values: &mut [Scalar],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(
            &mut [values],
            domain,
            Transform::CosetInverse,
            input,
            output,
        )
    }

    /// [`GpuNtt::forward`] on several host vectors in one batch.
    pub fn forward_many(
        &self,
        vectors: &mut [&mut [Scalar]],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(vectors, domain, Transform::Forward, input, output)
    }

    /// [`GpuNtt::inverse`] on several host vectors in one batch.
    pub fn inverse_many(
        &self,
        vectors: &mut [&mut [Scalar]],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(vectors, domain, Transform::Inverse, input, output)
    }

    /// [`GpuNtt::coset_forward`] on several host vectors in one batch.
    pub fn coset_forward_many(
        &self,
        vectors: &mut [&mut [Scalar]],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(vectors, domain, Transform::CosetForward, input, output)
    }

    /// [`GpuNtt::coset_inverse`] on several host vectors in one batch.
    pub fn coset_inverse_many(
        &self,
        vectors: &mut [&mut [Scalar]],
        domain: &Domain,
        input: Order,
        output: Order,
    ) -> Result<(), GpuNttError> {
        self.transform_many(vectors, domain, Transform::CosetInverse, input, output)
    }
}

/// The largest grid.y of a launch.
const MAX_GRID_Y: usize = 65535;

/// Dynamic shared memory of `ntt_bitrev_tiled`: two 32x32 tiles of 32-byte elements.
const BITREV_TILED_SHARED: u32 = 2 * 1024 * 32;

fn upload_synced(stream: &Stream, values: &[Scalar]) -> Result<DeviceBuffer<FrLimbs>, GpuNttError> {
    let buf = stream.upload(scalars_as_limbs(values))?;
    // Tables are shared by every stream that later uses this `GpuNtt`: make them complete first.
    stream.synchronize()?;
    Ok(buf)
}

/// A process-wide [`GpuNtt`] on device 0, for tests and tools; `None` (with the reason on
/// stderr) when there is no usable GPU.
pub fn shared_for_tests() -> Option<&'static GpuNtt> {
    static SHARED: OnceLock<Option<GpuNtt>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let device = cuzk_gpu::device_for_tests()?;
            Some(GpuNtt::new(&device).expect("the NTT module loads"))
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

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
