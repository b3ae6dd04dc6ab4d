//! The pending queue: one FIFO per priority, taken highest priority first. Within the highest
//! non-empty priority, a worker may take a job a little behind the head whose circuit's
//! parameters are already hot (grouping same-circuit work to avoid parameter swaps); the head
//! is passed over at most `group_window` times, so it cannot starve. A `group_window` of 0
//! gives strict FIFO within a priority.

use std::collections::VecDeque;

use crate::job::Priority;

/// A queued job: its id, sequence number and circuit id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    /// The job.
    pub job_id: String,
    /// Submission order.
    pub seq: u64,
    /// The circuit it proves, when known before decoding its input.
    pub circuit_id: Option<String>,
    /// How often a later job was taken before it.
    skipped: u32,
}

impl Queued {
    /// A queue entry.
    pub fn new(job_id: String, seq: u64, circuit_id: Option<String>) -> Self {
        Self {
            job_id,
            seq,
            circuit_id,
            skipped: 0,
        }
    }
}

/// The queues, indexed like [`Priority::ALL`] (critical first).
#[derive(Debug, Default)]
pub struct JobQueue {
    queues: [VecDeque<Queued>; 4],
}

fn index(p: Priority) -> usize {
    Priority::ALL
        .iter()
        .position(|q| *q == p)
        .expect("every priority is in ALL")
}

impl JobQueue {
    /// Appends a job at the back of its priority (entries keep `seq` order: restart reloads
    /// them in order, new ones get larger numbers).
    pub fn push(&mut self, priority: Priority, entry: Queued) {
        let q = &mut self.queues[index(priority)];
        let at = q.partition_point(|e| e.seq < entry.seq);
        q.insert(at, entry);
    }

    /// Takes the next job; `is_hot` says whether a circuit's parameters are resident.
    pub fn pop(&mut self, group_window: usize, is_hot: impl Fn(&str) -> bool) -> Option<Queued> {
        let q = self.queues.iter_mut().find(|q| !q.is_empty())?;
        let head_hot = q[0].circuit_id.as_deref().is_some_and(&is_hot);
        if !head_hot && (q[0].skipped as usize) < group_window {
            let pick = q
                .iter()
                .take(group_window + 1)
                .position(|e| e.circuit_id.as_deref().is_some_and(&is_hot));
            if let Some(pick) = pick {
                for e in q.iter_mut().take(pick) {
                    e.skipped += 1;
                }
                return q.remove(pick);
            }
        }
        q.pop_front()
    }

    /// Removes a pending job; whether it was queued.
    pub fn remove(&mut self, job_id: &str) -> bool {
        for q in &mut self.queues {
            if let Some(at) = q.iter().position(|e| e.job_id == job_id) {
                q.remove(at);
                return true;
            }
        }
        false
    }

    /// How many jobs start before `job_id` (None: not queued), assuming no grouping.
    pub fn position(&self, job_id: &str) -> Option<u32> {
        let mut ahead = 0;
        for q in &self.queues {
            if let Some(at) = q.iter().position(|e| e.job_id == job_id) {
                return Some((ahead + at) as u32);
            }
            ahead += q.len();
        }
        None
    }

    /// Pending jobs per priority, critical first.
    pub fn depths(&self) -> [(Priority, usize); 4] {
        std::array::from_fn(|i| (Priority::ALL[i], self.queues[i].len()))
    }

    /// Every queued job.
    pub fn iter(&self) -> impl Iterator<Item = &Queued> {
        self.queues.iter().flatten()
    }

    /// Pending jobs in all.
    pub fn len(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, circuit: &str) -> Queued {
        Queued::new(format!("j{seq}"), seq, Some(circuit.into()))
    }

    fn drain(q: &mut JobQueue, window: usize, hot: &str) -> Vec<u64> {
        std::iter::from_fn(|| q.pop(window, |c| c == hot))
            .map(|e| e.seq)
            .collect()
    }

    #[test]
    fn priorities_then_fifo() {
        let mut q = JobQueue::default();
        for seq in 0..20 {
            q.push(Priority::Normal, entry(seq, "a"));
        }
        q.push(Priority::Low, entry(20, "a"));
        q.push(Priority::Critical, entry(21, "a"));
        q.push(Priority::High, entry(22, "a"));
        assert_eq!(q.position("j21"), Some(0));
        assert_eq!(q.position("j20"), Some(22));
        let order = drain(&mut q, 0, "");
        let mut expected = vec![21, 22];
        expected.extend(0..20);
        expected.push(20);
        assert_eq!(order, expected);
    }

    #[test]
    fn grouping_prefers_hot_within_the_window_without_starving_the_head() {
        let mut q = JobQueue::default();
        q.push(Priority::Normal, entry(0, "cold"));
        for seq in 1..6 {
            q.push(Priority::Normal, entry(seq, "hot"));
        }
        // Window 2: the head is passed over twice, then taken.
        assert_eq!(drain(&mut q, 2, "hot"), vec![1, 2, 0, 3, 4, 5]);
        // Window 0: strict FIFO.
        q.push(Priority::Normal, entry(0, "cold"));
        q.push(Priority::Normal, entry(1, "hot"));
        assert_eq!(drain(&mut q, 0, "hot"), vec![0, 1]);
    }

    #[test]
    fn remove_and_reinsert_in_order() {
        let mut q = JobQueue::default();
        q.push(Priority::Normal, entry(5, "a"));
        q.push(Priority::Normal, entry(2, "a"));
        assert!(q.remove("j5"));
        assert!(!q.remove("j5"));
        assert_eq!(q.len(), 1);
        assert_eq!(q.depths()[2], (Priority::Normal, 1));
    }
}
