//! Synthesising a proof's partitions ahead of their proving: several partitions at once, each on
//! a thread of its own (a circuit's synthesis is one thread's work; a PoRep's partitions are
//! independent), handed to the prover as they are done, with a bound on how many exist at once
//! (each holds its vectors: about 4 GiB of witness at 2^27, 17 GiB with a, b, c).
//!
//! ```text
//! threads:   [make 0][make 2]...         a thread takes the next index when fewer than `limit`
//!            [make 1][make 3]...         partitions are being made or wait to be taken
//! caller:         take 0, take 1, ...    (parameters load here meanwhile; proving follows)
//! ```

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{Scope, ScopedJoinHandle};

/// How far synthesis runs ahead of the prover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ahead {
    threads: usize,
    limit: usize,
}

impl Ahead {
    /// One partition at a time: it is synthesised while the one before is proven.
    pub const ONE: Ahead = Ahead {
        threads: 1,
        limit: 1,
    };

    /// `threads` partitions synthesised at once, and at most `limit` partitions being
    /// synthesised or done and not yet taken by the prover (the bound on their host memory).
    /// Both are at least 1; there are never more threads than the limit.
    pub fn new(threads: usize, limit: usize) -> Self {
        let limit = limit.max(1);
        Self {
            threads: threads.clamp(1, limit),
            limit,
        }
    }

    /// Threads synthesising at once.
    pub fn threads(self) -> usize {
        self.threads
    }

    /// Partitions being synthesised or waiting to be taken, at most.
    pub fn limit(self) -> usize {
        self.limit
    }

    /// Starts making partitions `0..count` with `make` on this plan's threads (spawned in
    /// `scope`); take them from the [`Made`] returned, in the order they are done. Dropping it
    /// stops the threads after the partitions they are making (synthesis cannot be interrupted).
    pub fn start<'scope, 'env, T, F>(
        self,
        scope: &'scope Scope<'scope, 'env>,
        count: usize,
        make: &'env F,
    ) -> Made<'scope, T>
    where
        T: Send + 'scope,
        F: Fn(usize) -> T + Sync,
    {
        let gate = Arc::new(Gate::default());
        let (send, done) = channel();
        let threads = (0..self.threads.min(count))
            .map(|_| {
                let (gate, send) = (Arc::clone(&gate), send.clone());
                let limit = self.limit;
                scope.spawn(move || produce(&gate, limit, count, make, send))
            })
            .collect();
        Made {
            gate,
            done,
            threads,
            left: count,
        }
    }
}

/// Where the threads and the taker meet: the next index to make, how many are made or being
/// made and not taken, and whether the taker left.
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    room: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    next: usize,
    outstanding: usize,
    stopped: bool,
}

impl Gate {
    fn state(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A thread's loop: take the next index when there is room, make it, hand it over.
fn produce<T>(
    gate: &Gate,
    limit: usize,
    count: usize,
    make: &(impl Fn(usize) -> T + Sync),
    send: Sender<(usize, T)>,
) {
    loop {
        let k = {
            let mut state = gate.state();
            while !state.stopped && state.next < count && state.outstanding >= limit {
                state = gate
                    .room
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.stopped || state.next >= count {
                return;
            }
            state.outstanding += 1;
            state.next += 1;
            state.next - 1
        };
        if send.send((k, make(k))).is_err() {
            return;
        }
    }
}

/// Partitions being made by [`Ahead::start`]'s threads.
#[derive(Debug)]
pub struct Made<'scope, T> {
    gate: Arc<Gate>,
    done: Receiver<(usize, T)>,
    threads: Vec<ScopedJoinHandle<'scope, ()>>,
    left: usize,
}

/// The partitions as they are done (their index and what `make` returned); the iteration
/// ends once every partition was taken. Taking one makes room for another to start.
///
/// # Panics
/// Resumes a panic of `make`.
impl<T> Iterator for Made<'_, T> {
    type Item = (usize, T);

    fn next(&mut self) -> Option<(usize, T)> {
        if self.left == 0 {
            return None;
        }
        match self.done.recv() {
            Ok(made) => {
                self.left -= 1;
                self.gate.state().outstanding -= 1;
                self.gate.room.notify_one();
                Some(made)
            }
            // Every thread ended with partitions left: one panicked.
            Err(_) => {
                for thread in std::mem::take(&mut self.threads) {
                    if let Err(panic) = thread.join() {
                        std::panic::resume_unwind(panic);
                    }
                }
                unreachable!("the synthesis threads ended with partitions left to make")
            }
        }
    }
}

impl<T> Drop for Made<'_, T> {
    fn drop(&mut self) {
        self.gate.state().stopped = true;
        self.gate.room.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::AssertUnwindSafe;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn every_partition_is_made_once_within_the_limit() {
        for (threads, limit, count) in [(1, 1, 5), (3, 4, 20), (4, 2, 9), (8, 16, 3)] {
            let plan = Ahead::new(threads, limit);
            let alive = AtomicUsize::new(0);
            let most = AtomicUsize::new(0);
            let make = |k: usize| {
                let now = alive.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1 + (k % 3) as u64));
                k * 10
            };
            let mut seen = vec![false; count];
            std::thread::scope(|scope| {
                for (k, v) in plan.start(scope, count, &make) {
                    assert_eq!(v, k * 10);
                    assert!(!std::mem::replace(&mut seen[k], true), "{k} twice");
                    // Taken: its memory is the prover's now.
                    alive.fetch_sub(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
            assert!(seen.iter().all(|s| *s), "{threads} {limit} {count}");
            // `next` makes room before the taker's own count drops: the partition just taken
            // may still be counted when the next one starts.
            let most = most.load(Ordering::SeqCst);
            assert!(
                most <= plan.limit() + 1,
                "{most} alive with a limit of {limit}"
            );
            assert_eq!(plan.threads(), threads.min(limit));
        }
    }

    #[test]
    fn dropping_the_taker_stops_the_threads() {
        let started = AtomicUsize::new(0);
        let make = |_k: usize| {
            started.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
        };
        std::thread::scope(|scope| {
            let mut made = Ahead::new(2, 3).start(scope, 1000, &make);
            made.next();
        });
        // The one taken, room for one more, and the limit's worth that were under way.
        assert!(started.load(Ordering::SeqCst) <= 4, "{started:?}");
    }

    #[test]
    fn a_panic_in_make_reaches_the_taker() {
        let make = |k: usize| {
            assert!(k != 2, "partition two");
            k
        };
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            std::thread::scope(|scope| {
                Ahead::new(1, 1).start(scope, 5, &make).for_each(drop);
            })
        }));
        assert!(result.is_err());
    }

    #[test]
    fn the_plan_is_at_least_one_thread_within_its_limit() {
        assert_eq!(Ahead::new(0, 0), Ahead::ONE);
        assert_eq!(Ahead::new(8, 3).threads(), 3);
        assert_eq!(Ahead::new(2, 5).limit(), 5);
    }
}
