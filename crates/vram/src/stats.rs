//! What an arena reports: its counters ([`Stats`]), its resident regions ([`ResidentInfo`]) and
//! every range it tracks ([`Snapshot`]), with the check that they tile the arena.

use std::ops::Range;
use std::time::Duration;

/// Counters and gauges of one arena, all in bytes unless named otherwise.
///
/// At every moment `free + reserved + arena-level buffers + arena-level pending = capacity`;
/// [`Snapshot::check`] verifies that range by range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// The size of the region.
    pub capacity: u64,
    /// Bytes of live buffers, inside reservations or not (resident regions included).
    pub in_use: u64,
    /// Bytes of live named resident regions (a part of `in_use`).
    pub resident: u64,
    /// Bytes held by reservations (the buffers allocated inside them included).
    pub reserved: u64,
    /// Bytes released but waiting for their fence before they can be reused.
    pub pending_release: u64,
    /// Bytes of the arena not held by anything.
    pub free: u64,
    /// The largest contiguous free range of the arena: the largest reservation that fits now.
    pub largest_free_block: u64,
    /// The highest `in_use` seen.
    pub peak_in_use: u64,
    /// The highest `capacity - free` seen (in use, reserved or pending together).
    pub peak_committed: u64,
    /// Reservations granted.
    pub reservations: u64,
    /// Buffers allocated.
    pub allocations: u64,
    /// Buffers and reservations released with a fence (stream-ordered).
    pub fenced_releases: u64,
    /// Reservations refused because they could never fit.
    pub refused: u64,
    /// Non-blocking reservations that answered "not now".
    pub would_wait: u64,
    /// Blocking reservations that had to wait.
    pub waits: u64,
    /// Total time blocking reservations waited.
    pub wait_total: Duration,
    /// Longest time one blocking reservation waited.
    pub wait_max: Duration,
}

/// A named resident region as the arena lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResidentInfo {
    /// The region's name, unique in its arena.
    pub name: String,
    /// Its byte range in the arena.
    pub range: Range<u64>,
}

/// Every range the arena tracks, for checking and for display.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The size of the region.
    pub capacity: u64,
    /// Free ranges of the arena.
    pub free: Vec<Range<u64>>,
    /// Live buffers: range (rounded to the granule), the reservation that holds it if any
    /// (as an index into `reservations`), and the resident name if any.
    pub buffers: Vec<(Range<u64>, Option<usize>, Option<String>)>,
    /// Reservation blocks, with the free ranges inside each.
    pub reservations: Vec<(Range<u64>, Vec<Range<u64>>)>,
    /// Released ranges waiting for fences, with the reservation that holds them if any.
    pub pending: Vec<(Range<u64>, Option<usize>)>,
}

impl Snapshot {
    /// Checks that the ranges tile the arena exactly: free ranges, arena-level buffers, reservation
    /// blocks and arena-level pending ranges cover `[0, capacity)` once, and inside each
    /// reservation its free ranges, buffers and pending ranges cover the block once. So no two
    /// live ranges overlap, nothing lies outside the budget, and every byte is accounted for.
    pub fn check(&self) -> Result<(), String> {
        let mut top: Vec<(Range<u64>, &str)> = Vec::new();
        let mut inner: Vec<Vec<(Range<u64>, &str)>> = vec![Vec::new(); self.reservations.len()];
        top.extend(self.free.iter().map(|r| (r.clone(), "free")));
        for (i, (r, block_free)) in self.reservations.iter().enumerate() {
            top.push((r.clone(), "reservation"));
            inner[i].extend(block_free.iter().map(|r| (r.clone(), "free")));
        }
        for (r, owner, _) in &self.buffers {
            match owner {
                Some(i) => inner[*i].push((r.clone(), "buffer")),
                None => top.push((r.clone(), "buffer")),
            }
        }
        for (r, owner) in &self.pending {
            match owner {
                Some(i) => inner[*i].push((r.clone(), "pending")),
                None => top.push((r.clone(), "pending")),
            }
        }
        tiles(&mut top, 0..self.capacity)?;
        for (i, (block, _)) in self.reservations.iter().enumerate() {
            tiles(&mut inner[i], block.clone())?;
        }
        Ok(())
    }
}

fn tiles(parts: &mut [(Range<u64>, &str)], whole: Range<u64>) -> Result<(), String> {
    parts.sort_by_key(|(r, _)| (r.start, r.end));
    let mut at = whole.start;
    for (r, what) in parts.iter() {
        if r.start != at {
            return Err(format!(
                "{what} {r:?} does not start where the previous range ended ({at}) in {whole:?}"
            ));
        }
        if r.end <= r.start {
            return Err(format!("{what} {r:?} is empty"));
        }
        at = r.end;
    }
    if at != whole.end {
        return Err(format!("ranges end at {at}, not at {}", whole.end));
    }
    Ok(())
}
