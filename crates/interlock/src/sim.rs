//! A discrete-event simulator of one GPU shared by several workers.
//!
//! The device has a copy engine (host-to-device copies, one at a time, in order), a compute engine
//! (kernels, one partition at a time, in order) and a VRAM capacity, modelled by a real
//! [`Arena`] on a [`HostBacking`]. Workers take partitions from one queue (all proofs submitted at
//! the start) and run them: host stages, staging (a copy), compute (the GPU stages), host stages.
//! They ask the real policy types ([`SingleLock`](crate::SingleLock), ...) through the
//! non-blocking calls, so the simulator and the pipeline share one implementation of each policy.
//!
//! Freeing is modelled two ways ([`Release`]):
//! - stream-ordered (cuzk's arena): a partition's memory returns when its kernels finish;
//! - sync on free (the incumbent's pool): freed memory returns only at a device-global
//!   synchronisation, which a worker that cannot get memory issues; it waits until every piece of
//!   work already enqueued on the device has finished (`cudaDeviceSynchronize` followed by
//!   `cudaMemPoolTrimTo`).
//!
//! Staging copies are recorded in the timeline as part of `ntt_h` (they carry the NTT's inputs),
//! so the recorded timeline uses only the stage names of the telemetry conventions.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use cuzk_telemetry::{SpanKind, SpanRecord, Stage, Timeline};
use cuzk_vram::{Arena, ArenaConfig, HostBacking, SimFence};
use serde::{Deserialize, Serialize};

use crate::policy::{
    Compute, Demand, Policy, PolicyKind, Staged, Staging, TryCompute, TryStage, WaitReason,
};
use crate::InterlockError;

/// One GiB.
pub const GIB: u64 = 1 << 30;
const MS: u64 = 1_000_000;

/// One stage of a partition and how long it takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageSpec {
    /// The stage's name, as the telemetry names it.
    pub name: String,
    /// Whether it runs on the GPU's compute engine (else on the worker's host thread).
    pub on_gpu: bool,
    /// Its duration in nanoseconds.
    pub ns: u64,
}

/// What one partition costs: stage durations and memory.
///
/// Host stages before the first GPU stage run before staging; host stages after the last GPU
/// stage run after compute; everything in between runs while the partition holds compute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// The stages in order.
    pub stages: Vec<StageSpec>,
    /// The host-to-device copy of the partition's inputs, on the copy engine.
    pub stage_copy_ns: u64,
    /// The partition's memory.
    pub demand: Demand,
    /// The SRS's size: resident in VRAM when it leaves room for two partitions, else streamed.
    pub srs_bytes: u64,
}

impl Profile {
    /// The profile of the seeds: a 32 GiB-sector partition on the incumbent, `split_vectors`
    /// 0.6 s and `prep_msm` 1.8 s on the CPU, 3.8 s on the GPU (0.4 s of input copies and 3.4 s of
    /// kernels), 8 GiB of staged inputs plus 4 GiB of scratch, a 44 GiB SRS.
    pub fn seeds() -> Self {
        let stage = |stage: Stage, on_gpu: bool, ms: u64| StageSpec {
            name: stage.name().to_owned(),
            on_gpu,
            ns: ms * MS,
        };
        Self {
            stages: vec![
                stage(Stage::SplitVectors, false, 600),
                stage(Stage::PrepMsm, false, 1800),
                stage(Stage::BatchAdd, true, 300),
                stage(Stage::TailMsm, true, 1300),
                stage(Stage::NttH, true, 600),
                stage(Stage::MsmH, true, 1200),
                StageSpec {
                    name: Stage::Epilogue.name().into(),
                    on_gpu: false,
                    ns: 50_000,
                },
            ],
            stage_copy_ns: 400 * MS,
            demand: Demand {
                stage_bytes: 8 * GIB,
                compute_bytes: 4 * GIB,
            },
            srs_bytes: 44 * GIB,
        }
    }

    /// A profile with the stage durations of a recorded run (the median over its partitions of
    /// each stage's time; a stage is on the GPU when most of its spans report device time, or,
    /// in a timeline where none does, ran off the CPU), and the copy time and memory of `base`. Stages the run did not record keep `base`'s values.
    ///
    /// Input copies are recorded as part of `ntt_h` (by the pipeline and by this simulator), so
    /// `base.stage_copy_ns` is taken out of the recorded `ntt_h`: a simulated timeline reads back
    /// into the profile that produced it.
    pub fn from_timeline(timeline: &Timeline, base: &Profile) -> Result<Self, InterlockError> {
        let summaries = timeline.partition_summaries();
        if summaries.is_empty() {
            return Err(InterlockError::EmptyTimeline);
        }
        let timed = timeline.spans.iter().any(|s| s.gpu_ns.is_some());
        let mut stages = Vec::new();
        for stage in Stage::ALL {
            let name = stage.name();
            let mut values: Vec<u64> = summaries
                .iter()
                .map(|p| p.stage_ns[stage.index()])
                .filter(|&v| v > 0)
                .collect();
            let base_stage = base.stages.iter().find(|s| s.name == name);
            if values.is_empty() {
                if let Some(s) = base_stage {
                    stages.push(s.clone());
                }
                continue;
            }
            values.sort_unstable();
            let spans: Vec<&SpanRecord> =
                timeline.spans.iter().filter(|s| s.name == name).collect();
            // A GPU backend names its device on every stage of a partition, host stages too,
            // and reports the device's own time on those that ran there; older recordings
            // (and timelines without any GPU time) tell them apart by device only.
            let off_cpu = spans
                .iter()
                .filter(|s| {
                    if timed {
                        s.gpu_ns.is_some()
                    } else {
                        s.device.as_deref().is_some_and(|d| d != "cpu")
                    }
                })
                .count();
            let median = values[(values.len() - 1) / 2];
            let ns = if stage == Stage::NttH {
                median.saturating_sub(base.stage_copy_ns)
            } else {
                median
            };
            stages.push(StageSpec {
                name: name.to_owned(),
                on_gpu: off_cpu * 2 > spans.len(),
                ns,
            });
        }
        Ok(Self {
            stages,
            ..base.clone()
        })
    }

    /// Time on the GPU per partition: the input copies and the GPU stages.
    pub fn gpu_ns(&self) -> u64 {
        self.stage_copy_ns
            + self
                .stages
                .iter()
                .filter(|s| s.on_gpu)
                .map(|s| s.ns)
                .sum::<u64>()
    }

    /// Time on the host per partition.
    pub fn host_ns(&self) -> u64 {
        self.stages.iter().filter(|s| !s.on_gpu).map(|s| s.ns).sum()
    }

    /// (leading host stages, the middle, trailing host stages)
    fn split(&self) -> (&[StageSpec], &[StageSpec], &[StageSpec]) {
        let first = self.stages.iter().position(|s| s.on_gpu);
        let last = self.stages.iter().rposition(|s| s.on_gpu);
        match (first, last) {
            (Some(f), Some(l)) => (
                &self.stages[..f],
                &self.stages[f..=l],
                &self.stages[l + 1..],
            ),
            _ => (&self.stages[..], &[], &[]),
        }
    }
}

/// The simulated GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// The card's memory.
    pub vram_bytes: u64,
    /// What the arena leaves to the driver and others.
    pub margin_bytes: u64,
    /// How freed memory comes back.
    pub release: Release,
    /// The cost of one device-global synchronisation and pool trim beyond waiting for the device
    /// to drain.
    pub sync_overhead_ns: u64,
}

/// How a device's freed memory comes back to the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Release {
    /// When the freeing partition's kernels finish (cuzk's arena: stream-ordered release).
    StreamOrdered,
    /// Only at a device-global synchronisation, which a worker that cannot get memory issues
    /// (the incumbent's pool: `cudaDeviceSynchronize` and `cudaMemPoolTrimTo`).
    SyncOnFree,
}

impl Release {
    /// Both modes, the incumbent's first.
    pub const ALL: [Release; 2] = [Release::SyncOnFree, Release::StreamOrdered];

    /// The mode's name in tables and plots.
    pub fn label(self) -> &'static str {
        match self {
            Release::SyncOnFree => "sync on free",
            Release::StreamOrdered => "stream-ordered",
        }
    }
}

impl DeviceSpec {
    /// A card of `gib` GiB with a 1 GiB margin and a 10 ms sync-and-trim overhead.
    pub fn gib(gib: u64, release: Release) -> Self {
        Self {
            vram_bytes: gib * GIB,
            margin_bytes: GIB,
            release,
            sync_overhead_ns: 10 * MS,
        }
    }
}

/// One simulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimConfig {
    /// The policy.
    pub policy: PolicyKind,
    /// Workers sharing the GPU.
    pub workers: usize,
    /// Proofs in flight (all submitted at the start).
    pub proofs: usize,
    /// Partitions per proof (10 for a 32 GiB sector).
    pub partitions_per_proof: usize,
    /// The GPU.
    pub device: DeviceSpec,
    /// The partition's costs.
    pub profile: Profile,
}

impl SimConfig {
    /// The seeds' scenario: 3 workers, one 10-partition proof, a 16 GiB card that syncs on free.
    pub fn seeds(policy: PolicyKind) -> Self {
        Self {
            policy,
            workers: 3,
            proofs: 1,
            partitions_per_proof: 10,
            device: DeviceSpec::gib(16, Release::SyncOnFree),
            profile: Profile::seeds(),
        }
    }
}

/// What one worker did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// The worker.
    pub worker: u64,
    /// Partitions it ran.
    pub partitions: usize,
    /// Time blocked on locks.
    pub lock_wait_ns: u64,
    /// Time blocked on memory (syncs included).
    pub vram_wait_ns: u64,
    /// Time queued behind the copy or compute engine.
    pub queue_wait_ns: u64,
}

/// What a simulation measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    /// The configuration simulated.
    pub config: SimConfig,
    /// Partitions run.
    pub partitions: usize,
    /// Whether the SRS was resident in VRAM (else streamed).
    pub srs_resident: bool,
    /// From the start to the last partition's end.
    pub makespan_ns: u64,
    /// Partitions per second.
    pub partitions_per_s: f64,
    /// Seconds of wall time per proof.
    pub seconds_per_proof: f64,
    /// Fraction of the makespan the compute engine ran kernels: "GPU busy".
    pub gpu_busy: f64,
    /// Fraction of the makespan the copy engine ran copies.
    pub copy_busy: f64,
    /// The most VRAM in use at once (SRS included when resident).
    pub peak_vram_bytes: u64,
    /// Device-global synchronisations issued.
    pub device_syncs: u64,
    /// Partitions whose inputs were staged before their compute was granted.
    pub prestaged: usize,
    /// The longest time one partition spent blocked on locks and memory.
    pub max_partition_wait_ns: u64,
    /// The mean time a partition spent blocked on locks and memory.
    pub mean_partition_wait_ns: u64,
    /// Per worker.
    pub workers: Vec<WorkerReport>,
    /// Every simulated span, in the telemetry's terms (device `cpu` and `gpu0`).
    pub timeline: Timeline,
}

enum Phase {
    Idle,
    Host { post: bool, idx: usize },
    Copying(Staging<HostBacking>),
    Computing(Compute<HostBacking>),
    Blocked(Blocked),
    Done,
}

enum Want {
    Stage,
    Compute(Staged<HostBacking>),
}

struct Blocked {
    want: Want,
    /// When the wait being recorded began (a change of reason starts a new one).
    since: u64,
    reason: WaitReason,
    /// When the worker first blocked for this want: its place in line.
    queued: u64,
}

struct Worker {
    id: u64,
    phase: Phase,
    job: u64,
    partition: u64,
    partition_start: u64,
    partition_wait: u64,
    report: WorkerReport,
}

enum Event {
    Worker(usize),
    SyncDone,
}

struct Sim<'a> {
    config: &'a SimConfig,
    policy: Box<dyn Policy<HostBacking>>,
    arena: Arena<HostBacking>,
    queue: VecDeque<(u64, u64)>,
    workers: Vec<Worker>,
    events: BinaryHeap<Reverse<(u64, u64, usize)>>,
    event_kinds: Vec<Event>,
    seq: u64,
    copy_free: u64,
    compute_free: u64,
    copy_busy: u64,
    compute_busy: u64,
    sync_fence: SimFence,
    sync_in_flight: bool,
    syncs: u64,
    prestaged: usize,
    partition_waits: Vec<u64>,
    spans: Vec<SpanRecord>,
    now: u64,
}

/// Runs one simulation.
///
/// Fails if a partition's footprint can never fit the card, or if the policy deadlocks (every
/// worker blocked with nothing left to happen): the latter is a bug the tests look for.
pub fn simulate(config: &SimConfig) -> Result<SimReport, InterlockError> {
    if config.workers == 0 {
        return Err(InterlockError::Config("at least one worker".into()));
    }
    let capacity = config
        .device
        .vram_bytes
        .saturating_sub(config.device.margin_bytes);
    let arena = Arena::new(
        HostBacking::new(config.device.vram_bytes),
        ArenaConfig::with_bytes(capacity),
    )?;
    let footprint = config.profile.demand.footprint();
    if !arena.fits_when_idle(footprint) {
        return Err(InterlockError::DoesNotFit {
            footprint,
            capacity,
        });
    }
    let srs_resident = capacity >= config.profile.srs_bytes + 2 * footprint;
    let _srs = if srs_resident && config.profile.srs_bytes > 0 {
        Some(arena.alloc_resident("srs", config.profile.srs_bytes)?)
    } else {
        None
    };
    let policy = config.policy.build(arena.clone());
    let queue = (0..config.proofs as u64)
        .flat_map(|job| (0..config.partitions_per_proof as u64).map(move |p| (job, p)))
        .collect();
    let workers = (0..config.workers as u64)
        .map(|id| Worker {
            id,
            phase: Phase::Idle,
            job: 0,
            partition: 0,
            partition_start: 0,
            partition_wait: 0,
            report: WorkerReport {
                worker: id,
                partitions: 0,
                lock_wait_ns: 0,
                vram_wait_ns: 0,
                queue_wait_ns: 0,
            },
        })
        .collect();
    let mut sim = Sim {
        config,
        policy,
        arena,
        queue,
        workers,
        events: BinaryHeap::new(),
        event_kinds: Vec::new(),
        seq: 0,
        copy_free: 0,
        compute_free: 0,
        copy_busy: 0,
        compute_busy: 0,
        sync_fence: SimFence::pending(),
        sync_in_flight: false,
        syncs: 0,
        prestaged: 0,
        partition_waits: Vec::new(),
        spans: Vec::new(),
        now: 0,
    };
    for w in 0..config.workers {
        sim.advance(w)?;
    }
    sim.after_change()?;
    while let Some(Reverse((t, _, kind))) = sim.events.pop() {
        sim.now = t;
        match sim.event_kinds[kind] {
            Event::Worker(w) => sim.advance(w)?,
            Event::SyncDone => {
                sim.sync_in_flight = false;
                sim.sync_fence.signal();
                sim.sync_fence = SimFence::pending();
                sim.arena.poll();
            }
        }
        sim.after_change()?;
    }
    if let Some(stuck) = sim.workers.iter().find(|w| !matches!(w.phase, Phase::Done)) {
        return Err(InterlockError::Deadlock {
            policy: config.policy.name(),
            worker: stuck.id,
            at_ns: sim.now,
        });
    }
    Ok(sim.report(srs_resident))
}

impl Sim<'_> {
    fn schedule(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.event_kinds.push(event);
        self.events
            .push(Reverse((at, self.seq, self.event_kinds.len() - 1)));
    }

    fn span(&mut self, w: usize, name: &str, on_gpu: bool, start: u64, end: u64) {
        let worker = &self.workers[w];
        if let Some(mut span) = SpanRecord::new(name, start, end) {
            // As the GPU backend records them: a device stage's own time, and a wait's demand.
            match span.kind {
                SpanKind::Stage if on_gpu => span.gpu_ns = Some(end - start),
                SpanKind::Wait if name != "queue_wait" => {
                    let d = self.config.profile.demand;
                    span.demand = Some(cuzk_telemetry::Demand {
                        stage_bytes: d.stage_bytes,
                        compute_bytes: d.compute_bytes,
                    });
                }
                _ => {}
            }
            self.spans.push(
                span.for_partition(worker.job, worker.partition)
                    .on(worker.id, if on_gpu { "gpu0" } else { "cpu" }),
            );
        }
    }

    /// Moves worker `w` on from the end of its current phase, at `self.now`.
    fn advance(&mut self, w: usize) -> Result<(), InterlockError> {
        let now = self.now;
        let phase = std::mem::replace(&mut self.workers[w].phase, Phase::Idle);
        match phase {
            Phase::Idle => {
                let Some((job, partition)) = self.queue.pop_front() else {
                    self.workers[w].phase = Phase::Done;
                    return Ok(());
                };
                let worker = &mut self.workers[w];
                (worker.job, worker.partition) = (job, partition);
                worker.partition_start = now;
                worker.partition_wait = 0;
                self.host(w, false, 0)
            }
            Phase::Host { post, idx } => self.host(w, post, idx + 1),
            Phase::Copying(staging) => self.want(w, Want::Compute(staging.finish()), None),
            Phase::Computing(compute) => {
                let fence = (self.config.device.release == Release::SyncOnFree)
                    .then(|| self.sync_fence.clone());
                compute.finish(fence);
                self.host(w, true, 0)
            }
            Phase::Blocked(_) | Phase::Done => unreachable!("no event is scheduled for these"),
        }
    }

    /// Runs host stage `idx` of the leading (`post == false`) or trailing host stages, or moves
    /// on when they are done.
    fn host(&mut self, w: usize, post: bool, idx: usize) -> Result<(), InterlockError> {
        let now = self.now;
        let (pre, _, tail) = self.config.profile.split();
        let stages = if post { tail } else { pre };
        if let Some(stage) = stages.get(idx) {
            let (name, ns) = (stage.name.clone(), stage.ns);
            self.span(w, &name, false, now, now + ns);
            self.workers[w].phase = Phase::Host { post, idx };
            self.schedule(now + ns, Event::Worker(w));
            return Ok(());
        }
        if !post {
            return self.want(w, Want::Stage, None);
        }
        // The partition is done.
        let worker = &mut self.workers[w];
        worker.report.partitions += 1;
        let (start, wait) = (worker.partition_start, worker.partition_wait);
        self.partition_waits.push(wait);
        self.span(w, "partition", false, start, now);
        if let Some(last) = self.spans.last_mut() {
            last.device = Some("gpu0".into());
        }
        self.workers[w].phase = Phase::Idle;
        self.advance(w)
    }

    /// Asks the policy for what worker `w` wants next. `waiting` is `(since, reason, queued)`
    /// when the worker was already blocked.
    fn want(
        &mut self,
        w: usize,
        want: Want,
        waiting: Option<(u64, WaitReason, u64)>,
    ) -> Result<(), InterlockError> {
        let now = self.now;
        let demand = self.config.profile.demand;
        let outcome = match want {
            Want::Stage => match self.policy.try_stage(demand)? {
                TryStage::Granted(staging) => Ok(Granted::Stage(staging)),
                TryStage::Wait(reason) => Err((Want::Stage, reason)),
            },
            Want::Compute(staged) => match self.policy.try_compute(staged)? {
                TryCompute::Granted(compute) => Ok(Granted::Compute(compute)),
                TryCompute::Wait(staged, reason) => Err((Want::Compute(staged), reason)),
            },
        };
        match outcome {
            Ok(granted) => {
                if let Some((since, reason, _)) = waiting {
                    self.end_wait(w, since, now, reason);
                }
                match granted {
                    Granted::Stage(staging) => self.start_staging(w, staging),
                    Granted::Compute(compute) => self.start_compute(w, compute),
                }
            }
            Err((want, reason)) => {
                let (since, queued) = match waiting {
                    Some((since, before, queued)) if before != reason => {
                        // Still waiting, now for something else: close the first wait's span.
                        self.end_wait(w, since, now, before);
                        (now, queued)
                    }
                    Some((since, _, queued)) => (since, queued),
                    None => (now, now),
                };
                self.workers[w].phase = Phase::Blocked(Blocked {
                    want,
                    since,
                    reason,
                    queued,
                });
                Ok(())
            }
        }
    }

    /// Records that worker `w` waited from `since` to `now` for `reason`.
    fn end_wait(&mut self, w: usize, since: u64, now: u64, reason: WaitReason) {
        if now <= since {
            return;
        }
        let worker = &mut self.workers[w];
        worker.partition_wait += now - since;
        let name = match reason {
            WaitReason::Lock => {
                worker.report.lock_wait_ns += now - since;
                "lock_wait"
            }
            WaitReason::Memory => {
                worker.report.vram_wait_ns += now - since;
                "vram_wait"
            }
        };
        // Waits are for the GPU: they sit with the partition's device.
        self.span(w, name, true, since, now);
    }

    fn start_staging(
        &mut self,
        w: usize,
        staging: Staging<HostBacking>,
    ) -> Result<(), InterlockError> {
        let now = self.now;
        if !staging.is_prestaged() {
            // Fallback: nothing to copy now.
            return self.want(w, Want::Compute(staging.finish()), None);
        }
        self.prestaged += 1;
        let start = now.max(self.copy_free);
        let end = start + self.config.profile.stage_copy_ns;
        self.queue_wait(w, now, start);
        self.span(w, Stage::NttH.name(), true, start, end);
        self.copy_free = end;
        self.copy_busy += end - start;
        self.workers[w].phase = Phase::Copying(staging);
        self.schedule(end, Event::Worker(w));
        Ok(())
    }

    fn start_compute(
        &mut self,
        w: usize,
        compute: Compute<HostBacking>,
    ) -> Result<(), InterlockError> {
        let now = self.now;
        let mut ready = now;
        if compute.stage_inputs_now() {
            let start = now.max(self.copy_free);
            let end = start + self.config.profile.stage_copy_ns;
            self.queue_wait(w, now, start);
            self.span(w, Stage::NttH.name(), true, start, end);
            self.copy_free = end;
            self.copy_busy += end - start;
            ready = end;
        }
        let start = ready.max(self.compute_free);
        self.queue_wait(w, ready, start);
        let mut t = start;
        let (_, middle, _) = self.config.profile.split();
        let middle: Vec<StageSpec> = middle.to_vec();
        for stage in &middle {
            self.span(w, &stage.name, stage.on_gpu, t, t + stage.ns);
            t += stage.ns;
        }
        self.compute_busy += t - start;
        self.compute_free = t;
        self.workers[w].phase = Phase::Computing(compute);
        self.schedule(t, Event::Worker(w));
        Ok(())
    }

    fn queue_wait(&mut self, w: usize, from: u64, to: u64) {
        if to > from {
            self.workers[w].report.queue_wait_ns += to - from;
            self.span(w, "queue_wait", true, from, to);
        }
    }

    /// After anything that may have freed a lock or memory: offers blocked workers another
    /// chance, longest-waiting first, and issues a device sync if one is needed.
    fn after_change(&mut self) -> Result<(), InterlockError> {
        let now = self.now;
        let mut order: Vec<(u64, usize)> = self
            .workers
            .iter()
            .enumerate()
            .filter_map(|(i, w)| match &w.phase {
                Phase::Blocked(b) => Some((b.queued, i)),
                _ => None,
            })
            .collect();
        order.sort_unstable();
        for (_, w) in order {
            let Phase::Blocked(blocked) =
                std::mem::replace(&mut self.workers[w].phase, Phase::Idle)
            else {
                unreachable!("collected as blocked")
            };
            let Blocked {
                want,
                since,
                reason,
                queued,
            } = blocked;
            self.want(w, want, Some((since, reason, queued)))?;
        }
        let wants_memory = self
            .workers
            .iter()
            .any(|w| matches!(&w.phase, Phase::Blocked(b) if b.reason == WaitReason::Memory));
        if self.config.device.release == Release::SyncOnFree
            && wants_memory
            && !self.sync_in_flight
            && self.arena.stats().pending_release > 0
        {
            // cudaDeviceSynchronize: wait for everything enqueued so far, then trim the pool.
            let drained = now.max(self.copy_free).max(self.compute_free);
            self.sync_in_flight = true;
            self.syncs += 1;
            self.schedule(
                drained + self.config.device.sync_overhead_ns,
                Event::SyncDone,
            );
        }
        Ok(())
    }

    fn report(self, srs_resident: bool) -> SimReport {
        let makespan_ns = self.spans.iter().map(|s| s.end_ns).max().unwrap_or(0);
        let partitions = self.partition_waits.len();
        let secs = makespan_ns as f64 / 1e9;
        let fraction = |ns: u64| {
            if makespan_ns == 0 {
                0.0
            } else {
                ns as f64 / makespan_ns as f64
            }
        };
        let stats = self.arena.stats();
        SimReport {
            config: self.config.clone(),
            partitions,
            srs_resident,
            makespan_ns,
            partitions_per_s: if secs > 0.0 {
                partitions as f64 / secs
            } else {
                0.0
            },
            seconds_per_proof: secs / self.config.proofs.max(1) as f64,
            gpu_busy: fraction(self.compute_busy),
            copy_busy: fraction(self.copy_busy),
            peak_vram_bytes: stats.peak_committed,
            device_syncs: self.syncs,
            prestaged: self.prestaged,
            max_partition_wait_ns: self.partition_waits.iter().copied().max().unwrap_or(0),
            mean_partition_wait_ns: if partitions == 0 {
                0
            } else {
                self.partition_waits.iter().sum::<u64>() / partitions as u64
            },
            workers: self.workers.iter().map(|w| w.report.clone()).collect(),
            timeline: Timeline::new(self.spans),
        }
    }
}

enum Granted {
    Stage(Staging<HostBacking>),
    Compute(Compute<HostBacking>),
}
