//! [`GpuNtt`]: the loaded kernels of one device, the twiddle and scaling tables it keeps (from
//! the [`Workspace`] it was given: the stream's pool by default, an arena's resident regions in
//! the prover), and the transforms, on vectors already on the device or copied in and out around
//! them.
#![allow(unsafe_code)] // kernel launches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cuzk_field::layout::{scalars_as_limbs, FrLimbs};
use cuzk_gpu::{
    alloc_in, Device, DeviceBuffer, GpuError, Kernel, KernelArgs, LaunchConfig, Module, Stream,
    StreamPool, Workspace,
};
use ff::Field;
use rayon::prelude::*;

use super::plan::{multiplications, NttPassParams};
use super::plan::{
    FLAG_FULL_TWIDDLE, FLAG_G_FAST, FLAG_POST_SCALE, FLAG_PRE_SCALE, FLAG_SCALE_BITREV,
    FLAG_TWIDDLE,
};
use super::{plan, GpuNttError, NttConfig, Pass, Plan, Transform, COARSE_LOG, NTT_FATBIN};
use crate::{check_len, Domain, NttError, Order, Scalar};

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
///
/// The tables are made on first use of each size and direction and kept until the instance
/// drops; they are behind a lock and every transform takes its stream, so one instance serves
/// several threads, each on its own stream (the prover's workers of one device share one).
pub struct GpuNtt {
    device: Device,
    _module: Module,
    dif: [Kernel; 3],
    dit: [Kernel; 3],
    bitrev_small: Kernel,
    bitrev_tiled: Kernel,
    twiddle_table: Kernel,
    h_pointwise: Kernel,
    config: NttConfig,
    tables: Mutex<Tables>,
    /// Where the tables' device memory comes from.
    table_memory: Arc<dyn Workspace>,
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

    /// Loads the NTT kernels on `device` with the given configuration; the tables come from the
    /// stream's pool ([`StreamPool`]).
    pub fn with_config(device: &Device, config: NttConfig) -> Result<Self, GpuNttError> {
        Self::with_table_memory(device, config, Arc::new(StreamPool))
    }

    /// Loads the NTT kernels on `device` with the given configuration, its twiddle and scaling
    /// tables allocated from `table_memory` (each kept until this instance drops). Where
    /// `table_memory` has no room for a full twiddle table, transforms of that size go without
    /// it (two lookups per twiddle); the other tables are needed, and a refusal is an error.
    pub fn with_table_memory(
        device: &Device,
        config: NttConfig,
        table_memory: Arc<dyn Workspace>,
    ) -> Result<Self, GpuNttError> {
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
        let h_pointwise = module.kernel("ntt_h_pointwise")?;
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
            h_pointwise,
            config,
            tables: Mutex::new(Tables::default()),
            table_memory,
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
        let t = Arc::new(self.upload_synced(stream, &powers(root, 1 << COARSE_LOG))?);
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
        let t = Arc::new(self.upload_synced(stream, &powers(root, len))?);
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
        let Ok(mut table) = alloc_in::<FrLimbs>(&*self.table_memory, stream, len) else {
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

    /// Device bytes of each table, one entry per buffer, that transforms of 2^log_n of the
    /// kinds in `transforms` need besides the optional full twiddle tables: the coarse and fine
    /// twiddle tables of each direction and the scaling tables of each transform. What a caller
    /// that supplies the table memory must leave room for.
    pub fn needed_table_bytes(log_n: u32, transforms: &[Transform]) -> Vec<usize> {
        let fr = size_of::<FrLimbs>();
        let mut tables = Vec::new();
        for inverse in [false, true] {
            if transforms.iter().any(|t| t.is_inverse() == inverse) {
                tables.push(fr << COARSE_LOG);
                if log_n > COARSE_LOG {
                    tables.push(fr << (log_n - COARSE_LOG));
                }
            }
        }
        let shift = log_n.div_ceil(2);
        for t in [
            Transform::Inverse,
            Transform::CosetForward,
            Transform::CosetInverse,
        ] {
            if !transforms.contains(&t) {
                continue;
            }
            match t {
                Transform::Inverse => tables.push(fr),
                _ => tables.extend([fr << shift, fr << (log_n - shift)]),
            }
        }
        tables
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
            a: self.upload_synced(stream, &a)?,
            b: b.map(|b| self.upload_synced(stream, &b)).transpose()?,
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

    /// Groth16's quotient step on the coset: `h[i] = (a[i]·b[i] − c[i]) / Z` for the three
    /// evaluation vectors `a`, `b`, `c` held back to back in `abc` (natural order, `3·n`
    /// elements), `Z` the vanishing polynomial's value on `domain`'s coset. Writes the `n`
    /// elements of `h` on `stream`.
    pub fn h_pointwise(
        &self,
        stream: &Stream,
        abc: &DeviceBuffer<FrLimbs>,
        h: &mut DeviceBuffer<FrLimbs>,
        domain: &Domain,
    ) -> Result<(), GpuNttError> {
        let n = domain.n();
        if abc.len() != 3 * n {
            return Err(NttError::LengthMismatch {
                expected: 3 * n,
                got: abc.len(),
            }
            .into());
        }
        check_len(domain, h.len())?;
        let z_inv = FrLimbs::from(domain.z_on_coset_inv());
        let mut args = KernelArgs::new();
        args.buffer_mut(h).buffer(abc).value(n as u64).value(z_inv);
        // SAFETY: `ntt_h_pointwise(uint4* h, const uint4* abc, uint64_t n, fr_t z_inv)`: `h`
        // holds n elements and `abc` 3·n (both checked above); threads at or past n return.
        unsafe {
            self.h_pointwise
                .launch(stream, LaunchConfig::linear(n as u32, 256), &args)?
        };
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

impl GpuNtt {
    /// `values` copied into a table of the table memory on `stream`, complete when it returns.
    fn upload_synced(
        &self,
        stream: &Stream,
        values: &[Scalar],
    ) -> Result<DeviceBuffer<FrLimbs>, GpuNttError> {
        let limbs = scalars_as_limbs(values);
        let mut buf = alloc_in::<FrLimbs>(&*self.table_memory, stream, limbs.len())?;
        stream.copy_to_device(limbs, &mut buf)?;
        // Tables are shared by every stream that later uses this `GpuNtt`: make them complete
        // first.
        stream.synchronize()?;
        Ok(buf)
    }
}
