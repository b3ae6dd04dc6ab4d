//! Proptest state machine over the arena: random reservations, allocations, resident regions and
//! releases (immediate, fenced, fenced-and-later-signalled), checking after every step that no two
//! live ranges overlap, the budget is never exceeded, the books tile the arena, and — after a
//! drain — that every byte came back and that every reservation that was told to wait now fits
//! (so waiting for transient holders can never deadlock).

use std::ops::Range;

use cuzk_vram::{Arena, ArenaConfig, Buffer, HostBacking, Reservation, SimFence, VramError};
use proptest::prelude::*;
use proptest_state_machine::{prop_state_machine, ReferenceStateMachine, StateMachineTest};

const GRANULE: u64 = 256;

#[derive(Debug, Clone, Copy)]
enum Release {
    Now,
    AfterCompletedFence,
    AfterPendingFence,
}

#[derive(Debug, Clone)]
enum Step {
    Reserve(u64),
    Alloc {
        bytes: u64,
        align_log2: u32,
    },
    Resident {
        name: u8,
        bytes: u64,
    },
    AllocIn {
        res: usize,
        bytes: u64,
        align_log2: u32,
    },
    ReleaseBuffer {
        idx: usize,
        how: Release,
    },
    ReleaseReservation {
        idx: usize,
        how: Release,
    },
    Signal(usize),
    Drain,
}

struct Model;

impl ReferenceStateMachine for Model {
    /// The arena's capacity in bytes.
    type State = u64;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<u64> {
        (8u64..64).prop_map(|granules| granules * GRANULE).boxed()
    }

    fn transitions(capacity: &u64) -> BoxedStrategy<Step> {
        let cap = *capacity;
        let size = (1..=cap + GRANULE).boxed();
        let small = 1..=cap / 2;
        let how = prop_oneof![
            Just(Release::Now),
            Just(Release::AfterCompletedFence),
            Just(Release::AfterPendingFence)
        ];
        prop_oneof![
            4 => size.clone().prop_map(Step::Reserve),
            2 => (small.clone(), 0u32..11).prop_map(|(bytes, align_log2)| Step::Alloc { bytes, align_log2 }),
            1 => (0u8..3, small.clone()).prop_map(|(name, bytes)| Step::Resident { name, bytes }),
            4 => (any::<usize>(), small, 0u32..11)
                .prop_map(|(res, bytes, align_log2)| Step::AllocIn { res, bytes, align_log2 }),
            4 => (any::<usize>(), how.clone()).prop_map(|(idx, how)| Step::ReleaseBuffer { idx, how }),
            3 => (any::<usize>(), how).prop_map(|(idx, how)| Step::ReleaseReservation { idx, how }),
            3 => any::<usize>().prop_map(Step::Signal),
            1 => Just(Step::Drain),
        ]
        .boxed()
    }

    fn apply(state: u64, _: &Step) -> u64 {
        state
    }
}

struct Sut {
    arena: Arena<HostBacking>,
    /// Live buffers with the reservation range they were carved from, if any.
    buffers: Vec<(Buffer<HostBacking>, Option<Range<u64>>)>,
    reservations: Vec<Reservation<HostBacking>>,
    fences: Vec<SimFence>,
    /// Sizes `try_reserve` told to wait: each must fit once everything transient is gone.
    waited: Vec<u64>,
}

fn rounded(r: &Range<u64>) -> Range<u64> {
    r.start..r.start + (r.end - r.start).div_ceil(GRANULE) * GRANULE
}

/// The largest granule-aligned gap between resident regions: the most any reservation can get.
fn largest_possible(arena: &Arena<HostBacking>) -> u64 {
    let mut residents: Vec<Range<u64>> = arena.residents().into_iter().map(|r| r.range).collect();
    residents.sort_by_key(|r| r.start);
    let mut best = 0;
    let mut at = 0;
    for r in residents
        .into_iter()
        .chain(std::iter::once(arena.capacity()..arena.capacity()))
    {
        best = best.max(r.start - at);
        at = r.end;
    }
    best
}

impl Sut {
    fn fence(&mut self, how: Release) -> Option<SimFence> {
        match how {
            Release::Now => None,
            Release::AfterCompletedFence => Some(SimFence::completed()),
            Release::AfterPendingFence => {
                let fence = SimFence::pending();
                self.fences.push(fence.clone());
                Some(fence)
            }
        }
    }

    fn drain(&mut self) {
        self.buffers.clear();
        self.reservations.clear();
        for fence in self.fences.drain(..) {
            fence.signal();
        }
        self.arena.poll();
        let stats = self.arena.stats();
        assert_eq!(stats.free, stats.capacity - stats.resident, "{stats:?}");
        assert_eq!(stats.in_use, stats.resident);
        assert_eq!(stats.reserved, 0);
        assert_eq!(stats.pending_release, 0);
        if stats.resident == 0 {
            assert_eq!(
                stats.largest_free_block, stats.capacity,
                "every byte came back"
            );
        }
        for bytes in std::mem::take(&mut self.waited) {
            let granted = self.arena.try_reserve(bytes);
            assert!(
                matches!(granted, Ok(Some(_))),
                "a reservation told to wait for {bytes} bytes still does not fit with every \
                 transient holder gone: {granted:?}"
            );
        }
    }
}

struct ArenaTest;

impl StateMachineTest for ArenaTest {
    type SystemUnderTest = Sut;
    type Reference = Model;

    fn init_test(capacity: &u64) -> Sut {
        let mut config = ArenaConfig::with_bytes(*capacity);
        config.granule = GRANULE;
        Sut {
            arena: Arena::new(HostBacking::new(*capacity), config).expect("arena"),
            buffers: Vec::new(),
            reservations: Vec::new(),
            fences: Vec::new(),
            waited: Vec::new(),
        }
    }

    fn apply(mut sut: Sut, _: &u64, step: Step) -> Sut {
        match step {
            Step::Reserve(bytes) => {
                let possible = largest_possible(&sut.arena);
                match sut.arena.try_reserve(bytes) {
                    Ok(Some(r)) => {
                        assert!(r.bytes() >= bytes && r.bytes() <= possible);
                        sut.reservations.push(r);
                    }
                    Ok(None) => {
                        assert!(bytes <= possible, "told to wait for what can never fit");
                        sut.waited.push(bytes);
                    }
                    Err(VramError::Unsatisfiable {
                        largest_possible, ..
                    }) => {
                        assert!(bytes.div_ceil(GRANULE) * GRANULE > possible);
                        assert_eq!(largest_possible, possible);
                    }
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            Step::Alloc { bytes, align_log2 } => {
                match sut.arena.try_alloc(bytes, 1 << align_log2) {
                    Ok(b) => {
                        assert_eq!(b.offset() % (1 << align_log2), 0);
                        sut.buffers.push((b, None));
                    }
                    Err(VramError::OutOfMemory { .. }) => {}
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            Step::Resident { name, bytes } => {
                let name = format!("srs{name}");
                let existed = sut.arena.resident(&name).is_some();
                match sut.arena.alloc_resident(&name, bytes) {
                    Ok(b) => {
                        assert!(!existed);
                        assert_eq!(
                            sut.arena.resident(&name).map(|r| r.range),
                            Some(rounded(&b.range()))
                        );
                        sut.buffers.push((b, None));
                    }
                    Err(VramError::DuplicateName(_)) => assert!(existed),
                    Err(VramError::OutOfMemory { .. }) => {}
                    Err(e) => panic!("unexpected {e}"),
                }
            }
            Step::AllocIn {
                res,
                bytes,
                align_log2,
            } => {
                if !sut.reservations.is_empty() {
                    let r = &sut.reservations[res % sut.reservations.len()];
                    match r.alloc_aligned(bytes, 1 << align_log2) {
                        Ok(b) => {
                            assert_eq!(b.offset() % (1 << align_log2), 0);
                            let block = r.range();
                            sut.buffers.push((b, Some(block)));
                        }
                        Err(VramError::ReservationExhausted { .. }) => {}
                        Err(e) => panic!("unexpected {e}"),
                    }
                }
            }
            Step::ReleaseBuffer { idx, how } => {
                if !sut.buffers.is_empty() {
                    let (b, _) = sut.buffers.swap_remove(idx % sut.buffers.len());
                    match sut.fence(how) {
                        Some(f) => b.release_after(f),
                        None => drop(b),
                    }
                }
            }
            Step::ReleaseReservation { idx, how } => {
                if !sut.reservations.is_empty() {
                    let r = sut.reservations.swap_remove(idx % sut.reservations.len());
                    match sut.fence(how) {
                        Some(f) => r.release_after(f),
                        None => drop(r),
                    }
                }
            }
            Step::Signal(idx) => {
                if !sut.fences.is_empty() {
                    sut.fences.swap_remove(idx % sut.fences.len()).signal();
                    sut.arena.poll();
                }
            }
            Step::Drain => sut.drain(),
        }
        sut
    }

    fn check_invariants(sut: &Sut, capacity: &u64) {
        let snapshot = sut.arena.snapshot();
        snapshot.check().expect("the books tile the arena");
        let stats = sut.arena.stats();
        assert_eq!(stats.capacity, *capacity);
        assert!(
            stats.peak_committed <= stats.capacity,
            "budget exceeded: {stats:?}"
        );
        assert!(stats.in_use + stats.free <= stats.capacity);
        // The ranges the handles hold, independently of the arena's books: pairwise disjoint,
        // inside the budget, and inside their reservation.
        let mut held: Vec<Range<u64>> = sut
            .buffers
            .iter()
            .map(|(b, _)| rounded(&b.range()))
            .collect();
        for (b, block) in &sut.buffers {
            assert!(b.range().end <= *capacity);
            if let Some(block) = block {
                assert!(block.start <= b.offset() && rounded(&b.range()).end <= block.end);
            }
        }
        held.sort_by_key(|r| r.start);
        for pair in held.windows(2) {
            assert!(pair[0].end <= pair[1].start, "overlap: {pair:?}");
        }
        let mut blocks: Vec<Range<u64>> = sut.reservations.iter().map(|r| r.range()).collect();
        blocks.sort_by_key(|r| r.start);
        for pair in blocks.windows(2) {
            assert!(
                pair[0].end <= pair[1].start,
                "reservations overlap: {pair:?}"
            );
        }
        let in_use: u64 = held.iter().map(|r| r.end - r.start).sum();
        assert_eq!(stats.in_use, in_use);
    }

    fn teardown(mut sut: Sut) {
        sut.drain();
    }
}

prop_state_machine! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn arena_state_machine(sequential 1..60 => ArenaTest);
}
