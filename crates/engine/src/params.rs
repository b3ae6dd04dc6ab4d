//! The parameter manager: every circuit's Groth16 parameters, keyed by circuit id (`porep-2k`,
//! `porep-32g`, `winning-2k`, `wpost-2k`, `snap-2k`, `synthetic-10`), in one of three tiers.
//!
//! - **hot**: leased to the backends, their queries decoded as a backend needs them: a CPU
//!   decodes every query (at `PreloadSRS` or the first partition), a GPU copies the queries it
//!   keeps straight from the file to its memory and decodes only those it reads from host
//!   memory; counted against the memory budget at their whole decoded size.
//! - **warm**: the file memory-mapped with its structure validated (the page cache holds it);
//!   becoming hot needs only the decode.
//! - **cold**: on disk only.
//!
//! A job leases its circuit's parameters for as long as it proves ([`ParamLease`]); the first
//! lease loads them (the job reports that time), later ones find them hot and report zero.
//! When hot parameters exceed the budget the least recently used ones that no job holds are
//! demoted to warm; parameters in use are never demoted, even over budget. Filecoin files are
//! read from the configured parameter cache under filecoin-proofs' names; test sector sizes
//! (2 KiB, 8 MiB) and synthetic circuits are generated there on first use when allowed.
//!
//! Backends that keep copies of hot parameters elsewhere (a GPU's memory) key them by the hot
//! tier's `Arc`, are told when a client preloads them, and when they leave the hot tier
//! ([`ParamManager::attach`]), so a device never holds parameters the manager has dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cuzk_filecoin::params::MAX_TEST_SECTOR_SIZE;
use cuzk_filecoin::{FilecoinCircuit, ParamFiles};
use cuzk_groth16::{Check, MappedParameters, Parameters};

use crate::backend::{engine_error, ProofBackend};
use crate::job::ProofKind;
use crate::synthetic::SyntheticInput;
use crate::EngineError;

/// The seed of generated test parameters (the same as `cuzk params` and `cuzk prove`, so they
/// share the cache folder).
pub use cuzk_filecoin::params::TEST_PARAMS_SEED;

/// A circuit whose parameters the manager holds: a Filecoin circuit, or the synthetic circuit
/// of 2^n constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitId {
    /// A Filecoin kind at a sector size.
    Filecoin(FilecoinCircuit),
    /// The synthetic circuit of 2^n constraints.
    Synthetic(u32),
}

impl CircuitId {
    /// The Filecoin circuit a job of `kind` proves at `sector_size`; the synthetic kind's is
    /// named by its log size instead ([`CircuitId::Synthetic`]).
    pub fn of(kind: ProofKind, sector_size: u64) -> Result<Self, EngineError> {
        let kind = kind.circuit_kind().ok_or_else(|| {
            EngineError::Internal("a synthetic job's circuit is named by its log size".into())
        })?;
        Ok(CircuitId::Filecoin(FilecoinCircuit::new(
            kind,
            sector_size,
        )?))
    }

    /// The circuit id: `porep-32g`, `winning-2k`, `wpost-2k`, `snap-2k`, `synthetic-10`.
    pub fn id(self) -> String {
        match self {
            CircuitId::Filecoin(c) => c.id(),
            CircuitId::Synthetic(n) => format!("synthetic-{n}"),
        }
    }

    /// The circuit of an id.
    pub fn parse(id: &str) -> Result<Self, EngineError> {
        let unknown = || EngineError::UnknownCircuit(id.to_string());
        if let Some(n) = id.strip_prefix("synthetic-") {
            let n: u32 = n.parse().map_err(|_| unknown())?;
            if !crate::synthetic::LOG_SIZES.contains(&n) {
                return Err(unknown());
            }
            return Ok(CircuitId::Synthetic(n));
        }
        FilecoinCircuit::parse(id)
            .map(CircuitId::Filecoin)
            .map_err(|_| unknown())
    }

    /// The circuit's files in `filecoin_dir` (Filecoin kinds, filecoin-proofs' names) or
    /// `synthetic_dir`.
    pub fn files(
        self,
        filecoin_dir: &Path,
        synthetic_dir: &Path,
    ) -> Result<ParamFiles, EngineError> {
        let n = match self {
            CircuitId::Filecoin(c) => return Ok(c.param_files(filecoin_dir)?),
            CircuitId::Synthetic(n) => n,
        };
        let id = format!("cuzk-synthetic-{n}-seed{TEST_PARAMS_SEED}");
        let file = |ext: &str| synthetic_dir.join(format!("{id}.{ext}"));
        Ok(ParamFiles {
            params: file("params"),
            vk: file("vk"),
            meta: file("meta"),
            sector_size: 0,
            id,
        })
    }

    /// Makes the circuit's parameters with cuzk's setup (test sizes and synthetic only).
    fn generate(self, filecoin_dir: &Path, files: &ParamFiles) -> Result<(), EngineError> {
        let seed = TEST_PARAMS_SEED;
        match self {
            CircuitId::Filecoin(c) if c.sector_size() > MAX_TEST_SECTOR_SIZE => {
                return Err(EngineError::MissingParameters {
                    path: files.params.clone(),
                })
            }
            CircuitId::Filecoin(c) => {
                c.generate_params(filecoin_dir, seed)?;
            }
            CircuitId::Synthetic(n) => {
                let input = SyntheticInput {
                    log_size: n,
                    seed: 0,
                    partitions: 1,
                };
                cuzk_filecoin::params::generate(files, input.circuit(), seed)?;
            }
        }
        Ok(())
    }
}

/// A parameter tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Decoded in memory.
    Hot,
    /// Memory-mapped, structure validated.
    Warm,
    /// On disk.
    Cold,
}

impl Tier {
    /// The tier's name in metrics.
    pub const fn name(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
        }
    }
}

/// One circuit's parameters as `GetStatus` reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamStatus {
    /// The circuit id.
    pub circuit_id: String,
    /// Where they are.
    pub tier: Tier,
    /// Bytes they take in their tier (the file size when warm or cold).
    pub size_bytes: u64,
    /// Jobs holding them now.
    pub ref_count: u32,
}

/// How the manager finds and keeps parameters.
#[derive(Clone, Debug)]
pub struct ParamConfig {
    /// filecoin-proofs' parameter folder.
    pub filecoin_dir: PathBuf,
    /// Where synthetic circuits' parameters are made and kept.
    pub synthetic_dir: PathBuf,
    /// Generate missing parameters of test sector sizes (2 KiB, 8 MiB) and of synthetic
    /// circuits with cuzk's setup; otherwise a missing file is
    /// [`EngineError::MissingParameters`].
    pub generate_test_params: bool,
    /// Hot-tier budget in bytes.
    pub budget_bytes: u64,
}

#[derive(Debug)]
struct Slot {
    files: ParamFiles,
    hot: Option<Arc<Parameters>>,
    mapped: Option<Arc<MappedParameters>>,
    hot_bytes: u64,
    file_bytes: u64,
    refs: u32,
    last_used: u64,
}

impl Slot {
    fn tier(&self) -> Tier {
        if self.hot.is_some() {
            Tier::Hot
        } else if self.mapped.is_some() {
            Tier::Warm
        } else {
            Tier::Cold
        }
    }
}

#[derive(Debug)]
struct Inner {
    config: ParamConfig,
    slots: Mutex<HashMap<String, Slot>>,
    /// One gate per circuit: two jobs of a cold circuit load it once, while another
    /// circuit's load goes on beside it.
    loading: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    clock: std::sync::atomic::AtomicU64,
    /// Told when parameters are preloaded and when they leave the hot tier.
    backends: Mutex<Vec<Arc<dyn ProofBackend>>>,
}

impl Inner {
    fn slots(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn tick(&self) -> u64 {
        self.clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// The parameter manager (cheap to clone; clones share the tiers).
#[derive(Clone, Debug)]
pub struct ParamManager {
    inner: Arc<Inner>,
}

/// A job's hold on its circuit's parameters: they stay hot until every lease is dropped.
#[derive(Debug)]
pub struct ParamLease {
    inner: Arc<Inner>,
    circuit_id: String,
    params: Arc<Parameters>,
}

impl ParamLease {
    /// The parameters.
    pub fn params(&self) -> &Arc<Parameters> {
        &self.params
    }
}

impl Drop for ParamLease {
    fn drop(&mut self) {
        if let Some(slot) = self.inner.slots().get_mut(&self.circuit_id) {
            slot.refs = slot.refs.saturating_sub(1);
        }
    }
}

fn decoded_bytes(p: &Parameters) -> u64 {
    use std::mem::size_of;
    let g1 = size_of::<blstrs::G1Affine>();
    let g2 = size_of::<blstrs::G2Affine>();
    ((p.h.len() + p.l.len() + p.a.len() + p.b_g1.len()) * g1 + p.b_g2.len() * g2) as u64
}

impl ParamManager {
    /// A manager with nothing loaded.
    pub fn new(config: ParamConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                slots: Mutex::new(HashMap::new()),
                loading: Mutex::new(HashMap::new()),
                clock: std::sync::atomic::AtomicU64::new(1),
                backends: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Tells `backends` when parameters are preloaded ([`ProofBackend::preload`]: a GPU makes
    /// them resident) and whenever they leave the hot tier, demoted by the budget or evicted
    /// ([`ProofBackend::release`]).
    pub fn attach(&self, backends: &[Arc<dyn ProofBackend>]) {
        self.backends().extend(backends.iter().cloned());
    }

    fn backends(&self) -> MutexGuard<'_, Vec<Arc<dyn ProofBackend>>> {
        self.inner
            .backends
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the backends that `dropped` left the hot tier (called without the slots' lock).
    fn released(&self, dropped: Vec<Arc<Parameters>>) {
        if dropped.is_empty() {
            return;
        }
        let backends = self.backends().clone();
        for params in &dropped {
            for b in &backends {
                b.release(params);
            }
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ParamConfig {
        &self.inner.config
    }

    /// The files of `circuit`.
    pub fn files(&self, circuit: CircuitId) -> Result<ParamFiles, EngineError> {
        let c = &self.inner.config;
        circuit.files(&c.filecoin_dir, &c.synthetic_dir)
    }

    /// Whether `circuit_id` is hot now.
    pub fn is_hot(&self, circuit_id: &str) -> bool {
        self.inner
            .slots()
            .get(circuit_id)
            .is_some_and(|s| s.hot.is_some())
    }

    /// The budget left beside the hot parameters and `circuit`'s (counted by its file's size
    /// when they are not hot yet): the host memory a job of `circuit` may give to partitions in
    /// flight.
    pub fn room_beside(&self, circuit: CircuitId) -> u64 {
        let (hot, cold) = {
            let slots = self.inner.slots();
            let hot: u64 = slots
                .values()
                .filter(|s| s.hot.is_some())
                .map(|s| s.hot_bytes)
                .sum();
            let cold = slots.get(&circuit.id()).is_none_or(|s| s.hot.is_none());
            (hot, cold)
        };
        // The file is read outside the slots' lock.
        let coming = if cold {
            self.files(circuit)
                .ok()
                .and_then(|f| std::fs::metadata(&f.params).ok())
                .map_or(0, |m| m.len())
        } else {
            0
        };
        self.inner
            .config
            .budget_bytes
            .saturating_sub(hot)
            .saturating_sub(coming)
    }

    /// Leases `circuit`'s parameters, loading them into the hot tier if needed; returns the
    /// lease and the time spent loading (zero when they were hot).
    pub fn acquire(&self, circuit: CircuitId) -> Result<(ParamLease, Duration), EngineError> {
        let id = circuit.id();
        if let Some(lease) = self.lease_hot(&id) {
            return Ok((lease, Duration::ZERO));
        }
        let start = Instant::now();
        let gate = Arc::clone(
            self.inner
                .loading
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(id.clone())
                .or_default(),
        );
        let _loading = gate.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lease) = self.lease_hot(&id) {
            // Another job loaded them while this one waited: this job waited for the load.
            return Ok((lease, start.elapsed()));
        }
        let files = self.files(circuit)?;
        let mapped = self.map(circuit, &id, &files)?;
        // Nothing is decoded here: each backend takes what it needs from the file (a CPU
        // decodes every query; a GPU copies those it keeps straight to the device and decodes
        // only those it reads from host memory), so no query is held in host memory twice.
        let params = Arc::new(mapped.lazy_parameters());
        let hot_bytes = decoded_bytes(&params);
        {
            let mut slots = self.inner.slots();
            let slot = slots.get_mut(&id).expect("mapped above");
            slot.hot = Some(params);
            slot.hot_bytes = hot_bytes;
        }
        let lease = self.lease_hot(&id).expect("just made hot");
        self.enforce_budget(&id);
        tracing::info!(circuit = %id, bytes = hot_bytes, ms = start.elapsed().as_millis() as u64, "parameters loaded");
        Ok((lease, start.elapsed()))
    }

    fn lease_hot(&self, id: &str) -> Option<ParamLease> {
        let tick = self.inner.tick();
        let mut slots = self.inner.slots();
        let slot = slots.get_mut(id)?;
        let params = slot.hot.clone()?;
        slot.refs += 1;
        slot.last_used = tick;
        Some(ParamLease {
            inner: Arc::clone(&self.inner),
            circuit_id: id.to_string(),
            params,
        })
    }

    /// The circuit's mapped file, generating the files first where allowed.
    fn map(
        &self,
        circuit: CircuitId,
        id: &str,
        files: &ParamFiles,
    ) -> Result<Arc<MappedParameters>, EngineError> {
        if let Some(mapped) = self.inner.slots().get(id).and_then(|s| s.mapped.clone()) {
            return Ok(mapped);
        }
        // Synthetic circuits too: no client may start hours of setup unless the operator
        // asked for generation.
        if !files.params.is_file() || !files.vk.is_file() {
            if self.inner.config.generate_test_params {
                tracing::info!(circuit = %id, path = %files.params.display(), "generating test parameters");
                circuit.generate(&self.inner.config.filecoin_dir, files)?;
            } else {
                return Err(EngineError::MissingParameters {
                    path: files.params.clone(),
                });
            }
        }
        let mapped = Arc::new(MappedParameters::open(&files.params, Check::Curve)?);
        let vk = files.read_vk()?;
        if vk != mapped.vk {
            return Err(EngineError::Filecoin(
                cuzk_filecoin::FilecoinError::ParameterMismatch {
                    path: files.vk.clone(),
                    detail: "the verifying key is not the parameter file's".into(),
                },
            ));
        }
        let file_bytes = std::fs::metadata(&files.params)
            .map(|m| m.len())
            .unwrap_or(0);
        let mut slots = self.inner.slots();
        let slot = slots.entry(id.to_string()).or_insert_with(|| Slot {
            files: files.clone(),
            hot: None,
            mapped: None,
            hot_bytes: 0,
            file_bytes,
            refs: 0,
            last_used: 0,
        });
        slot.mapped = Some(Arc::clone(&mapped));
        slot.file_bytes = file_bytes;
        Ok(mapped)
    }

    /// Demotes least recently used, unleased hot parameters (never `keep`) to warm until the
    /// hot tier fits the budget, or nothing more can go.
    fn enforce_budget(&self, keep: &str) {
        let dropped = self.demote_over_budget(keep);
        self.released(dropped);
    }

    fn demote_over_budget(&self, keep: &str) -> Vec<Arc<Parameters>> {
        let budget = self.inner.config.budget_bytes;
        let mut slots = self.inner.slots();
        let mut dropped = Vec::new();
        loop {
            let hot: u64 = slots
                .values()
                .filter(|s| s.hot.is_some())
                .map(|s| s.hot_bytes)
                .sum();
            if hot <= budget {
                return dropped;
            }
            let victim = slots
                .iter()
                .filter(|(id, s)| s.hot.is_some() && s.refs == 0 && id.as_str() != keep)
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| id.clone());
            let Some(victim) = victim else {
                tracing::warn!(
                    hot,
                    budget,
                    "hot parameters exceed the budget; all are in use"
                );
                return dropped;
            };
            let slot = slots.get_mut(&victim).expect("found above");
            dropped.extend(slot.hot.take());
            tracing::info!(circuit = %victim, bytes = slot.hot_bytes, "parameters demoted to warm (budget)");
            slot.hot_bytes = 0;
        }
    }

    /// `PreloadSRS`: makes `circuit_id` hot, and ready on every attached backend (resident on
    /// each GPU); returns whether it already was hot and the time both took.
    pub fn preload(&self, circuit_id: &str) -> Result<(bool, Duration), EngineError> {
        let circuit = CircuitId::parse(circuit_id)?;
        let already = self.is_hot(circuit_id);
        let start = Instant::now();
        let (lease, _) = self.acquire(circuit)?;
        let backends = self.backends().clone();
        for b in &backends {
            b.preload(lease.params()).map_err(engine_error)?;
        }
        drop(lease);
        Ok((already, start.elapsed()))
    }

    /// `EvictSRS`: drops `circuit_id` from memory (hot and warm) unless a job holds it;
    /// returns whether it was hot and the bytes freed.
    pub fn evict(&self, circuit_id: &str) -> Result<(bool, u64), EngineError> {
        CircuitId::parse(circuit_id)?;
        let mut slots = self.inner.slots();
        let Some(slot) = slots.get_mut(circuit_id) else {
            return Ok((false, 0));
        };
        if slot.refs > 0 {
            return Err(EngineError::InUse(circuit_id.to_string()));
        }
        let was_hot = slot.hot.is_some();
        let freed = if was_hot { slot.hot_bytes } else { 0 };
        let dropped: Vec<_> = slot.hot.take().into_iter().collect();
        slot.hot_bytes = 0;
        slot.mapped = None;
        drop(slots);
        self.released(dropped);
        Ok((was_hot, freed))
    }

    /// Every circuit the manager has seen, by id.
    pub fn status(&self) -> Vec<ParamStatus> {
        let slots = self.inner.slots();
        let mut out: Vec<ParamStatus> = slots
            .iter()
            .map(|(id, s)| ParamStatus {
                circuit_id: id.clone(),
                tier: s.tier(),
                size_bytes: if s.hot.is_some() {
                    s.hot_bytes
                } else {
                    s.file_bytes
                },
                ref_count: s.refs,
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }

    /// Bytes in each tier: hot, warm, cold.
    pub fn bytes_by_tier(&self) -> [(Tier, u64); 3] {
        let mut out = [(Tier::Hot, 0), (Tier::Warm, 0), (Tier::Cold, 0)];
        for s in self.status() {
            let i = s.tier as usize;
            out[i].1 += s.size_bytes;
        }
        out
    }

    /// The files a lease was made from, for error messages.
    pub fn files_of(&self, circuit_id: &str) -> Option<ParamFiles> {
        self.inner.slots().get(circuit_id).map(|s| s.files.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_filecoin::CircuitKind;

    fn manager(dir: &Path, budget_bytes: u64, generate_test_params: bool) -> ParamManager {
        ParamManager::new(ParamConfig {
            filecoin_dir: dir.join("filecoin"),
            synthetic_dir: dir.join("synthetic"),
            generate_test_params,
            budget_bytes,
        })
    }

    #[test]
    fn circuit_ids_round_trip() {
        let filecoin = |kind, size| CircuitId::Filecoin(FilecoinCircuit::new(kind, size).unwrap());
        for c in [
            filecoin(CircuitKind::Porep, 2048),
            filecoin(CircuitKind::Porep, 32 << 30),
            filecoin(CircuitKind::Winning, 2048),
            filecoin(CircuitKind::Window, 64 << 30),
            filecoin(CircuitKind::Snap, 8 << 20),
            CircuitId::Synthetic(10),
        ] {
            assert_eq!(CircuitId::parse(&c.id()).unwrap(), c, "{}", c.id());
        }
        assert_eq!(filecoin(CircuitKind::Porep, 32 << 30).id(), "porep-32g");
        for bad in [
            "porep",
            "porep-3k",
            "nope-2k",
            "synthetic-99",
            "winning-2q",
            "",
        ] {
            assert!(CircuitId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn second_lease_is_free_and_lru_never_evicts_in_use() {
        let dir = tempfile::tempdir().unwrap();
        // A budget that holds one synthetic-6 circuit but not two.
        let m = manager(dir.path(), 1, true);
        let (a, load) = m.acquire(CircuitId::Synthetic(6)).unwrap();
        assert!(load > Duration::ZERO);
        let (a2, load) = m.acquire(CircuitId::Synthetic(6)).unwrap();
        assert_eq!(load, Duration::ZERO);
        assert!(Arc::ptr_eq(a.params(), a2.params()));
        // Over budget, but synthetic-6 is leased: both stay hot.
        let (b, _) = m.acquire(CircuitId::Synthetic(5)).unwrap();
        assert!(m.is_hot("synthetic-6") && m.is_hot("synthetic-5"));
        assert!(matches!(m.evict("synthetic-6"), Err(EngineError::InUse(_))));
        drop((a, a2, b));
        // Loading a third demotes the least recently used unleased ones to warm.
        let (_c, _) = m.acquire(CircuitId::Synthetic(4)).unwrap();
        let tiers: Vec<_> = m
            .status()
            .into_iter()
            .map(|s| (s.circuit_id, s.tier))
            .collect();
        assert_eq!(
            tiers,
            vec![
                ("synthetic-4".to_string(), Tier::Hot),
                ("synthetic-5".to_string(), Tier::Warm),
                ("synthetic-6".to_string(), Tier::Warm),
            ]
        );
        let (was_hot, _) = m.evict("synthetic-5").unwrap();
        assert!(!was_hot);
        assert_eq!(m.status()[1].tier, Tier::Cold);
        let (already, _) = m.preload("synthetic-5").unwrap();
        assert!(!already);
        assert!(m.preload("synthetic-5").unwrap().0);
    }

    /// Without `generate_test_params` a missing file is an error naming it, for a synthetic
    /// circuit as for a test sector size: nothing is generated.
    #[test]
    fn missing_parameters_are_named_not_generated() {
        let dir = tempfile::tempdir().unwrap();
        let m = manager(dir.path(), u64::MAX, false);
        let porep = CircuitId::Filecoin(FilecoinCircuit::new(CircuitKind::Porep, 2048).unwrap());
        for circuit in [porep, CircuitId::Synthetic(4)] {
            let err = m.acquire(circuit).unwrap_err();
            assert!(
                matches!(err, EngineError::MissingParameters { .. }),
                "{err}"
            );
            assert!(err.to_string().contains("generate_test_params"), "{err}");
            let err = m.preload(&circuit.id()).unwrap_err();
            assert!(
                matches!(err, EngineError::MissingParameters { .. }),
                "{err}"
            );
        }
        let made = std::fs::read_dir(dir.path()).map_or(0, |d| d.count());
        assert_eq!(made, 0, "nothing was generated");
    }
}
