//! The free ranges of one address space, best fit with coalescing.
//!
//! Used twice: for the arena itself and inside each reservation. A linear scan over the free
//! ranges is enough: an engine holds a handful of reservations and resident regions, not
//! thousands of small blocks.

use std::collections::BTreeMap;

/// Which end of the chosen free range an allocation is carved from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The lowest aligned address: transient data.
    Low,
    /// The highest aligned address: long-lived resident data, kept away from the churn.
    High,
}

/// Free ranges keyed by start, never adjacent (neighbours are merged on insert).
#[derive(Debug, Clone, Default)]
pub(crate) struct FreeList {
    ranges: BTreeMap<u64, u64>,
    total: u64,
}

pub(crate) fn align_up(x: u64, align: u64) -> u64 {
    debug_assert!(align.is_power_of_two());
    (x + align - 1) & !(align - 1)
}

fn align_down(x: u64, align: u64) -> u64 {
    debug_assert!(align.is_power_of_two());
    x & !(align - 1)
}

/// Where `len` bytes aligned to `align` would go inside the free range `[start, start + size)`.
fn placement(start: u64, size: u64, len: u64, align: u64, end: End) -> Option<u64> {
    let stop = start.checked_add(size)?;
    match end {
        End::Low => {
            let at = align_up(start, align);
            (at.checked_add(len)? <= stop).then_some(at)
        }
        End::High => {
            let at = align_down(stop.checked_sub(len)?, align);
            (at >= start).then_some(at)
        }
    }
}

impl FreeList {
    /// A free list covering `[start, start + len)`.
    pub(crate) fn with_range(start: u64, len: u64) -> Self {
        let mut list = Self::default();
        list.insert(start, len);
        list
    }

    /// Total free bytes.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Size of the largest free range.
    pub(crate) fn largest(&self) -> u64 {
        self.ranges.values().copied().max().unwrap_or(0)
    }

    /// The free ranges in address order, as `(start, len)`.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&s, &l)| (s, l))
    }

    /// Best fit: the smallest free range that can hold `len` bytes at alignment `align`; among
    /// equal sizes, the lowest (for [`End::Low`]) or highest (for [`End::High`]) one. Returns the
    /// aligned start without changing the list.
    pub(crate) fn find(&self, len: u64, align: u64, end: End) -> Option<u64> {
        let mut best: Option<(u64, u64)> = None; // (range size, placement)
        for (&start, &size) in &self.ranges {
            let Some(at) = placement(start, size, len, align, end) else {
                continue;
            };
            let better = match best {
                None => true,
                Some((best_size, _)) => match end {
                    End::Low => size < best_size,
                    End::High => size <= best_size,
                },
            };
            if better {
                best = Some((size, at));
            }
        }
        best.map(|(_, at)| at)
    }

    /// Carves `len` bytes at alignment `align` by best fit and returns their start.
    pub(crate) fn take(&mut self, len: u64, align: u64, end: End) -> Option<u64> {
        let at = self.find(len, align, end)?;
        self.remove(at, len);
        Some(at)
    }

    /// Removes `[at, at + len)`, which must lie inside one free range.
    fn remove(&mut self, at: u64, len: u64) {
        let (&start, &size) = self
            .ranges
            .range(..=at)
            .next_back()
            .expect("removed bytes lie in a free range");
        debug_assert!(
            at + len <= start + size,
            "removed bytes lie in one free range"
        );
        self.ranges.remove(&start);
        if at > start {
            self.ranges.insert(start, at - start);
        }
        let tail = start + size - (at + len);
        if tail > 0 {
            self.ranges.insert(at + len, tail);
        }
        self.total -= len;
    }

    /// Returns `[start, start + len)` to the list, merging it with free neighbours.
    pub(crate) fn insert(&mut self, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.total += len;
        let mut lo = start;
        let mut hi = start + len;
        if let Some((&prev, &prev_len)) = self.ranges.range(..start).next_back() {
            debug_assert!(prev + prev_len <= start, "freed bytes were not free");
            if prev + prev_len == start {
                lo = prev;
                self.ranges.remove(&prev);
            }
        }
        if let Some(&next_len) = self.ranges.get(&hi) {
            self.ranges.remove(&hi);
            hi += next_len;
        }
        debug_assert!(
            self.ranges.range(start..hi).next().is_none(),
            "freed bytes were not free"
        );
        self.ranges.insert(lo, hi - lo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(list: &FreeList) -> Vec<(u64, u64)> {
        list.iter().collect()
    }

    #[test]
    fn neighbours_coalesce_in_any_order() {
        let mut list = FreeList::default();
        list.insert(200, 100);
        list.insert(0, 100);
        list.insert(100, 100);
        assert_eq!(ranges(&list), vec![(0, 300)]);
        assert_eq!(list.total(), 300);
    }

    #[test]
    fn best_fit_picks_the_smallest_range_that_fits() {
        let mut list = FreeList::default();
        list.insert(0, 1000);
        list.insert(2000, 300);
        list.insert(3000, 500);
        assert_eq!(list.take(256, 1, End::Low), Some(2000));
        assert_eq!(list.take(400, 1, End::Low), Some(3000));
        assert_eq!(list.take(900, 1, End::Low), Some(0));
        assert_eq!(list.take(200, 1, End::Low), None);
    }

    #[test]
    fn alignment_leaves_the_padding_free() {
        let mut list = FreeList::with_range(100, 1000);
        assert_eq!(list.take(256, 256, End::Low), Some(256));
        assert_eq!(ranges(&list), vec![(100, 156), (512, 588)]);
    }

    #[test]
    fn high_end_placement_carves_from_the_top() {
        let mut list = FreeList::with_range(0, 4096);
        assert_eq!(list.take(1000, 256, End::High), Some(3072));
        assert_eq!(ranges(&list), vec![(0, 3072), (4072, 24)]);
    }
}
