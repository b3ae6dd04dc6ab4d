//! The simulator's checks: the shapes issue 5 asks for, asserted as shapes, not exact numbers.

use cuzk_interlock::sim::{
    simulate, DeviceSpec, Profile, Release, SimConfig, SimReport, StageSpec, GIB,
};
use cuzk_interlock::{Demand, InterlockError, PolicyKind};
use cuzk_telemetry::Stage;
use proptest::prelude::*;

fn run(policy: PolicyKind, workers: usize, proofs: usize, gib: u64, release: Release) -> SimReport {
    simulate(&SimConfig {
        policy,
        workers,
        proofs,
        partitions_per_proof: 10,
        device: DeviceSpec::gib(gib, release),
        profile: Profile::seeds(),
    })
    .expect("simulates")
}

#[test]
fn the_seeds_failure_is_reproduced() {
    let gpu_ns = Profile::seeds().gpu_ns() as f64;
    let single = simulate(&SimConfig::seeds(PolicyKind::SingleLock)).unwrap();
    let two = simulate(&SimConfig::seeds(PolicyKind::TwoLock)).unwrap();
    // The second lock buys nothing.
    assert!(
        two.partitions_per_s <= single.partitions_per_s * 1.001,
        "{two:?} vs {single:?}"
    );
    // Pre-staging never finds free VRAM once the first partition computes.
    assert!(two.prestaged <= 1, "pre-staged {}", two.prestaged);
    // Waits are about two other workers' GPU time.
    for r in [&single, &two] {
        let max = r.max_partition_wait_ns as f64 / gpu_ns;
        let mean = r.mean_partition_wait_ns as f64 / gpu_ns;
        assert!((1.8..=2.2).contains(&max), "max wait {max:.2} GPU times");
        assert!(mean >= 1.0, "mean wait {mean:.2} GPU times");
    }
    assert_eq!(single.partitions, 10);
    assert!(two.device_syncs > 0);
}

#[test]
fn vram_budget_keeps_the_gpu_busy_with_several_proofs_where_memory_allows() {
    for gib in [32, 48, 141] {
        let budget = run(PolicyKind::VramBudget, 3, 3, gib, Release::StreamOrdered);
        let single = run(PolicyKind::SingleLock, 3, 3, gib, Release::StreamOrdered);
        assert!(budget.gpu_busy > 0.95, "{gib} GiB: {}", budget.gpu_busy);
        assert!(
            single.gpu_busy < 0.90,
            "the single lock never overlaps copies and kernels"
        );
        assert!(budget.partitions_per_s > single.partitions_per_s * 1.05);
    }
    // One proof in flight: ramp-up and tail weigh more, so overlap is judged with several.
    let one = run(PolicyKind::VramBudget, 3, 1, 141, Release::StreamOrdered);
    let three = run(PolicyKind::VramBudget, 3, 3, 141, Release::StreamOrdered);
    assert!(one.gpu_busy < three.gpu_busy);
}

#[test]
fn where_memory_does_not_allow_no_policy_overlaps() {
    let single = run(PolicyKind::SingleLock, 3, 3, 16, Release::StreamOrdered);
    for policy in [PolicyKind::TwoLock, PolicyKind::VramBudget] {
        let r = run(policy, 3, 3, 16, Release::StreamOrdered);
        assert!((r.partitions_per_s / single.partitions_per_s - 1.0).abs() < 0.01);
    }
}

#[test]
fn sync_on_free_costs_overlap_when_memory_is_tight() {
    let synced = run(PolicyKind::VramBudget, 3, 3, 32, Release::SyncOnFree);
    let ordered = run(PolicyKind::VramBudget, 3, 3, 32, Release::StreamOrdered);
    assert!(synced.gpu_busy < ordered.gpu_busy - 0.02);
    assert!(synced.device_syncs > 0 && ordered.device_syncs == 0);
}

#[test]
fn two_locks_work_when_freeing_needs_no_device_sync_and_memory_allows() {
    let two = run(PolicyKind::TwoLock, 3, 3, 141, Release::StreamOrdered);
    let single = run(PolicyKind::SingleLock, 3, 3, 141, Release::StreamOrdered);
    assert!(two.partitions_per_s > single.partitions_per_s * 1.05);
    assert!(two.prestaged > two.partitions / 2);
}

#[test]
fn peak_vram_stays_within_the_card_and_resident_srs_counts() {
    for policy in PolicyKind::ALL {
        let r = run(policy, 4, 2, 141, Release::StreamOrdered);
        assert!(r.srs_resident);
        assert!(r.peak_vram_bytes <= 140 * GIB);
        assert!(r.peak_vram_bytes >= 44 * GIB + 12 * GIB);
        let small = run(policy, 4, 2, 16, Release::StreamOrdered);
        assert!(!small.srs_resident);
        assert_eq!(
            small.peak_vram_bytes,
            12 * GIB,
            "one partition at a time on 16 GiB"
        );
    }
}

#[test]
fn a_footprint_larger_than_the_card_is_an_error() {
    let mut config = SimConfig::seeds(PolicyKind::VramBudget);
    config.device = DeviceSpec::gib(8, Release::StreamOrdered);
    assert!(matches!(
        simulate(&config),
        Err(InterlockError::DoesNotFit { .. })
    ));
    config.workers = 0;
    assert!(matches!(simulate(&config), Err(InterlockError::Config(_))));
}

#[test]
fn the_simulated_timeline_summarises_and_reads_back_into_the_profile() {
    let r = simulate(&SimConfig::seeds(PolicyKind::SingleLock)).unwrap();
    let summary = r.timeline.run_summary();
    assert_eq!(summary.partitions, 10);
    assert_eq!(r.timeline.workers(), vec![0, 1, 2]);
    let lines = r.timeline.partition_summaries();
    assert!(lines
        .iter()
        .all(|p| p.worker.is_some() && p.device.as_deref() == Some("gpu0")));
    let profile = Profile::from_timeline(&r.timeline, &Profile::seeds()).unwrap();
    assert_eq!(profile, Profile::seeds());
    // A profile from a recorded run drives the simulator like a synthetic one.
    let replay = simulate(&SimConfig {
        profile,
        ..SimConfig::seeds(PolicyKind::SingleLock)
    })
    .unwrap();
    assert_eq!(replay.makespan_ns, r.makespan_ns);
    let empty = Profile::from_timeline(&Default::default(), &Profile::seeds());
    assert!(matches!(empty, Err(InterlockError::EmptyTimeline)));
}

fn profile_strategy() -> impl Strategy<Value = Profile> {
    (
        prop::collection::vec((any::<bool>(), 0u64..3_000), 1..8),
        0u64..1_000,
        1u64..12,
        0u64..8,
        0u64..60,
    )
        .prop_map(
            |(stages, copy_ms, stage_gib, compute_gib, srs_gib)| Profile {
                stages: stages
                    .into_iter()
                    .enumerate()
                    .map(|(i, (on_gpu, ms))| StageSpec {
                        name: Stage::ALL[i % Stage::ALL.len()].name().to_owned(),
                        on_gpu,
                        ns: ms * 1_000_000,
                    })
                    .collect(),
                stage_copy_ns: copy_ms * 1_000_000,
                demand: Demand {
                    stage_bytes: stage_gib * GIB,
                    compute_bytes: compute_gib * GIB,
                },
                srs_bytes: srs_gib * GIB,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever the profile, card, release mode and worker count, every policy runs every
    /// partition (no deadlock), never keeps the GPU more than busy, and never exceeds the card.
    #[test]
    fn no_policy_deadlocks(
        profile in profile_strategy(),
        workers in 1usize..6,
        proofs in 1usize..4,
        gib in 20u64..100,
        release in prop::sample::select(Release::ALL.to_vec()),
    ) {
        for policy in PolicyKind::ALL {
            let config = SimConfig {
                policy,
                workers,
                proofs,
                partitions_per_proof: 4,
                device: DeviceSpec::gib(gib, release),
                profile: profile.clone(),
            };
            let r = simulate(&config).unwrap();
            prop_assert_eq!(r.partitions, proofs * 4);
            prop_assert!(r.gpu_busy <= 1.0 + 1e-9 && r.copy_busy <= 1.0 + 1e-9);
            prop_assert!(r.peak_vram_bytes <= (gib - 1) * GIB);
            let kernels: u64 = profile.stages.iter().filter(|s| s.on_gpu).map(|s| s.ns).sum();
            prop_assert!(r.makespan_ns >= kernels * r.partitions as u64);
        }
    }
}
