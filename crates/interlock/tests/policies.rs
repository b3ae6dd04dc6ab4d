//! The policies under threads (blocking calls) and under random interleavings of the
//! non-blocking calls: exclusion holds and nobody deadlocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use cuzk_interlock::{Compute, Demand, Policy, PolicyKind, Staged, Staging, TryCompute, TryStage};
use cuzk_vram::{Arena, ArenaConfig, HostBacking, SimFence};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;
const DEMAND: Demand = Demand {
    stage_bytes: 6 * MIB,
    compute_bytes: 4 * MIB,
};

fn arena(footprints_x2: u64) -> Arena<HostBacking> {
    let bytes = footprints_x2 * DEMAND.footprint() / 2;
    Arena::new(HostBacking::new(bytes), ArenaConfig::with_bytes(bytes)).unwrap()
}

/// Several worker threads run partitions through one policy with the blocking calls, allocating
/// their buffers from the permits' reservations; all finish, at most one computes at a time, and
/// under the single lock at most one is between staging and the end of compute.
#[test]
fn worker_threads_share_each_policy_without_deadlock() {
    for policy in PolicyKind::ALL {
        for footprints_x2 in [2, 3, 5] {
            let policy: Arc<dyn Policy<HostBacking>> =
                Arc::from(policy.build(arena(footprints_x2)));
            let computing = Arc::new(AtomicUsize::new(0));
            let holding_gpu = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let (policy, computing, holding_gpu) = (
                        Arc::clone(&policy),
                        Arc::clone(&computing),
                        Arc::clone(&holding_gpu),
                    );
                    thread::spawn(move || {
                        for _ in 0..40 {
                            let staging = policy.stage(DEMAND).unwrap();
                            let single = policy.name() == "SingleLock";
                            if single {
                                assert_eq!(holding_gpu.fetch_add(1, Ordering::SeqCst), 0);
                            }
                            let inputs = staging
                                .reservation()
                                .map(|r| r.alloc(DEMAND.stage_bytes).unwrap());
                            let compute = policy.compute(staging.finish()).unwrap();
                            assert_eq!(
                                computing.fetch_add(1, Ordering::SeqCst),
                                0,
                                "one computes at a time"
                            );
                            let inputs = inputs.unwrap_or_else(|| {
                                assert!(compute.stage_inputs_now());
                                compute.reservation().alloc(DEMAND.stage_bytes).unwrap()
                            });
                            let scratch =
                                compute.reservation().alloc(DEMAND.compute_bytes).unwrap();
                            let kernels = SimFence::completed();
                            inputs.release_after(kernels.clone());
                            scratch.release_after(kernels.clone());
                            computing.fetch_sub(1, Ordering::SeqCst);
                            if single {
                                holding_gpu.fetch_sub(1, Ordering::SeqCst);
                            }
                            compute.finish(Some(kernels));
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            let stats = policy.arena().stats();
            assert_eq!(
                stats.free,
                stats.capacity,
                "{}: every byte came back",
                policy.name()
            );
        }
    }
}

/// Where one partition is in its passage through a policy.
enum Slot {
    Idle,
    Staging(Staging<HostBacking>),
    Staged(Staged<HostBacking>),
    Computing(Compute<HostBacking>),
}

/// Worker `w` tries its next step; returns whether it moved. `fences` collects the fences of
/// finished computes, which "the device" completes later.
fn step(
    policy: &dyn Policy<HostBacking>,
    slot: &mut Slot,
    fences: &mut Vec<SimFence>,
    done: &mut usize,
) -> bool {
    match std::mem::replace(slot, Slot::Idle) {
        Slot::Idle => match policy.try_stage(DEMAND).unwrap() {
            TryStage::Granted(s) => {
                *slot = Slot::Staging(s);
                true
            }
            TryStage::Wait(_) => false,
        },
        Slot::Staging(s) => {
            *slot = Slot::Staged(s.finish());
            true
        }
        Slot::Staged(s) => match policy.try_compute(s).unwrap() {
            TryCompute::Granted(c) => {
                *slot = Slot::Computing(c);
                true
            }
            TryCompute::Wait(s, _) => {
                *slot = Slot::Staged(s);
                false
            }
        },
        Slot::Computing(c) => {
            let fence = SimFence::pending();
            fences.push(fence.clone());
            c.finish(Some(fence));
            *done += 1;
            true
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any interleaving of workers' non-blocking steps and fence completions keeps at most one
    /// partition computing; and from any state reached, letting every worker go on (with the
    /// device completing its fences) finishes every partition in flight: no deadlock.
    #[test]
    fn any_interleaving_can_always_finish(
        policy in prop::sample::select(PolicyKind::ALL.to_vec()),
        footprints_x2 in 2u64..6,
        ops in prop::collection::vec((0usize..4, any::<bool>()), 0..80),
    ) {
        let policy = policy.build(arena(footprints_x2));
        let mut slots: Vec<Slot> = (0..4).map(|_| Slot::Idle).collect();
        let mut fences: Vec<SimFence> = Vec::new();
        let mut done = 0;
        for (w, complete_a_fence) in ops {
            if complete_a_fence && !fences.is_empty() {
                fences.remove(0).signal();
            } else {
                step(policy.as_ref(), &mut slots[w], &mut fences, &mut done);
            }
            let computing = slots.iter().filter(|s| matches!(s, Slot::Computing(_))).count();
            prop_assert!(computing <= 1);
            let stats = policy.arena().stats();
            prop_assert!(stats.reserved <= stats.capacity);
        }
        // Drain: the device completes its work, every worker in flight goes on until idle.
        for _ in 0..1000 {
            for f in fences.drain(..) {
                f.signal();
            }
            let mut moved = false;
            for slot in slots.iter_mut() {
                if !matches!(slot, Slot::Idle) {
                    moved |= step(policy.as_ref(), slot, &mut fences, &mut done);
                }
            }
            if slots.iter().all(|s| matches!(s, Slot::Idle)) {
                break;
            }
            prop_assert!(moved || !fences.is_empty(), "no worker can move: deadlock");
        }
        prop_assert!(slots.iter().all(|s| matches!(s, Slot::Idle)));
        for f in fences.drain(..) {
            f.signal();
        }
        let stats = policy.arena().stats();
        prop_assert_eq!(stats.free, stats.capacity);
    }
}
