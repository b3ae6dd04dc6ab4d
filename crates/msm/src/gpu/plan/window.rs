//! The window width: how many bits of each scalar one bucket pass takes.
//!
//! Pippenger's method with signed digits cuts each scalar into `W` windows; window `w`'s digit
//! picks one of its `2^(c_w − 1)` buckets (and a sign), so wider windows mean fewer passes over
//! the points but more buckets to reduce. [`MsmPlan::for_chunks`] picks the width from a cost
//! model over the buckets the windows use, whose per-bucket weights, once and per chunk
//! ([`Group::bucket_weights`]), are fitted to window sweeps on the H200 and held by a test
//! (`bench_msm --window-sweep`; docs/benchmarks.md, "Window choice"). More chunks make every
//! bucket cost more, so a chunked plan never takes a wider window.
//!
//! **Invariant:** the `W` windows share the 255 bits a signed-digit scalar needs (254 bits and
//! the carry of its digits) evenly: the first [`MsmPlan::wide_windows`] of them `c` bits wide
//! and the rest `c − 1` ([`MsmPlan::window_width`]), the widths adding up to exactly 255 so that
//! the top window absorbs the last carry, and `c` the narrowest width for that `W`
//! ([`balanced_window_bits`]). Every window keeps `2^(c−1)` keys, a narrow one using the lower
//! half: the single-pass scatter's parts are sized for those denser windows
//! ([`MsmPlan::narrow_density`]), the two-pass sort's bins per window, and the host's window
//! combination doubles by each window's own width.

use super::{Group, MsmPlan};

/// The number of windows of `c` bits that hold a scalar of at most 254 bits plus the carry of
/// its signed digits (the kernels negate scalars above (r − 1)/2): `⌈255/c⌉`.
pub const fn num_windows(window_bits: u32) -> u32 {
    255u32.div_ceil(window_bits)
}

/// The narrowest widest window of the windows of `c` bits (`c` from 1 to
/// [`MAX_WINDOW_BITS`](crate::reference::MAX_WINDOW_BITS)): `⌈255/W⌉` for `W = ⌈255/c⌉`. The
/// 255 bits are shared out among the `W` windows as evenly as they go (widths `c` and `c − 1`,
/// [`MsmPlan::window_width`]), so a wider `c` for the same `W` would only add empty buckets.
pub const fn balanced_window_bits(window_bits: u32) -> u32 {
    255u32.div_ceil(num_windows(window_bits))
}

/// Of `n_windows` windows of at most `c` bits, those `c` bits wide (the lowest ones), so that
/// with the rest `c − 1` bits wide they hold 255 bits; none for a width wider than balanced,
/// whose windows of `c − 1` bits already cover the 255 bits.
const fn wide_window_count(window_bits: u32, n_windows: u32) -> u32 {
    let narrow_bits = n_windows * window_bits.saturating_sub(1);
    let wide = 255u32.saturating_sub(narrow_bits);
    if wide < n_windows {
        wide
    } else {
        n_windows
    }
}

/// Buckets that windows of at most `c` bits use, `Σ_w 2^(c_w − 1)` over the balanced widths
/// (`c` normalised by [`balanced_window_bits`]).
pub const fn used_buckets(window_bits: u32) -> u64 {
    let c = balanced_window_bits(window_bits);
    let w = num_windows(c);
    let wide = wide_window_count(c, w);
    let narrow = w - wide;
    let wide_buckets = (wide as u64) << (c - 1);
    if c >= 2 {
        wide_buckets + ((narrow as u64) << (c - 2))
    } else {
        wide_buckets
    }
}

impl MsmPlan {
    /// The plan for `n_points` points in chunks of at most `max_chunk`, its window width chosen
    /// for that many chunks.
    ///
    /// The window width minimises `max(n·W, fill) + (a + b·chunks)·B(c)` over `c`: `n·W`
    /// mixed additions into buckets, `B(c)` the buckets the balanced windows use
    /// (`used_buckets`), `(a, b)` the group's [`Group::bucket_weights`] (the
    /// reduction once, the sort's counters and the merge of partial sums once per chunk), and
    /// `fill = 2048·sm_count`, below which more windows cost no time because the device has
    /// idle threads anyway. The device's size also sets the first level's segment length
    /// (`accumulate_seg_for`), so that it runs at least about a thousand threads per
    /// multiprocessor.
    pub fn for_chunks(n_points: usize, group: Group, sm_count: u32, max_chunk: usize) -> Self {
        let fill = 2048.0 * f64::from(sm_count.max(1));
        let chunks = n_points.div_ceil(max_chunk.max(1)).max(1) as f64;
        let (once, per_chunk) = group.bucket_weights();
        let weight = once + per_chunk * chunks;
        let cost = |c: u32| {
            let w = f64::from(num_windows(c));
            (n_points as f64 * w).max(fill) + weight * used_buckets(c) as f64
        };
        let window_bits =
            (4..=group.max_window_bits())
                .fold(4, |best, c| if cost(c) < cost(best) { c } else { best });
        Self::with_window_bits(n_points, group, sm_count, window_bits, max_chunk)
    }

    /// Buckets per window, `2^(c−1)`: a window of `c − 1` bits uses the lower half of its own.
    pub fn buckets_per_window(&self) -> usize {
        1 << (self.window_bits - 1)
    }

    /// How much denser than a window of `c` bits the narrowest window fills its buckets'
    /// range: 2 when some windows are `c − 1` bits wide (their entries all in the lower half of
    /// the range), else 1. The single-pass scatter's parts are sized for the denser windows;
    /// the two-pass sort's bins are sized per window instead ([`SortBins`](super::SortBins)).
    pub fn narrow_density(&self) -> usize {
        if self.wide_windows() < self.n_windows {
            2
        } else {
            1
        }
    }

    /// Windows of `c` bits, the lowest ones; the rest take `c − 1`, so that the widths add up
    /// to 255 (see kernels/msm/msm.cu, `msm_digits`).
    pub fn wide_windows(&self) -> u32 {
        wide_window_count(self.window_bits, self.n_windows)
    }

    /// The width of window `w` in bits (window `w` holds the scalars' bits from
    /// `Σ_{v<w} window_width(v)` up).
    pub fn window_width(&self, w: u32) -> u32 {
        if w < self.wide_windows() {
            self.window_bits
        } else {
            self.window_bits - 1
        }
    }

    /// Buckets of all windows.
    pub fn total_buckets(&self) -> usize {
        self.n_windows as usize * self.buckets_per_window()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::MAX_WINDOW_BITS;

    #[test]
    fn windows_hold_254_bits_and_a_carry() {
        for c in 1..=24 {
            let w = num_windows(c);
            assert!(w * c >= 255 && (w - 1) * c < 255, "c = {c}");
        }
    }

    /// (group, log n, [(window bits, ms)]).
    type Sweep = (Group, u32, &'static [(u32, f64)]);
    const G1: Group = Group::G1;
    const G2: Group = Group::G2;

    /// Resident MSM times (ms) on the H200 by window width (balanced windows), from
    /// `bench_msm --window-sweep` (docs/benchmarks.md, "Window choice").
    #[rustfmt::skip]
    const H200_WINDOW_SWEEP: &[Sweep] = &[
        (G1, 20, &[(14, 10.69), (15, 9.93), (16, 9.81), (17, 10.55)]),
        (G1, 21, &[(15, 16.58), (16, 16.27), (17, 16.61), (19, 19.82)]),
        (G1, 22, &[(15, 29.65), (16, 27.67), (17, 28.29), (19, 29.79)]),
        (G1, 23, &[(15, 53.47), (16, 50.87), (17, 49.18), (19, 50.87)]),
        (G1, 24, &[(16, 97.59), (17, 92.90), (19, 92.44), (20, 96.10), (22, 119.21)]),
        (G1, 25, &[(17, 181.91), (19, 177.08), (20, 175.91), (22, 201.40)]),
        // 2^26 from two single runs (`--window-bits 17` and the default, 20).
        (G1, 26, &[(17, 360.96), (20, 343.25)]),
        (G2, 20, &[(13, 25.88), (14, 24.80), (15, 23.97), (16, 23.31)]),
        (G2, 21, &[(14, 43.25), (15, 40.12), (16, 39.41), (17, 40.56)]),
        (G2, 22, &[(15, 72.07), (16, 68.57), (17, 68.86), (19, 74.23)]),
        (G2, 23, &[(15, 133.73), (16, 128.23), (17, 125.07), (19, 128.61)]),
        (G2, 24, &[(15, 264.98), (16, 250.73), (17, 238.54), (19, 235.55)]),
        (G2, 25, &[(17, 467.37), (19, 449.37), (20, 443.88)]),
    ];

    #[test]
    fn window_choice_is_near_the_measured_best() {
        for &(group, log_n, sweep) in H200_WINDOW_SWEEP {
            let c = MsmPlan::new(1 << log_n, group, 132).window_bits;
            let best = sweep.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
            let Some(&(_, ms)) = sweep.iter().find(|s| s.0 == c) else {
                panic!("{group:?} 2^{log_n}: the planner picks {c} bits, outside the sweep");
            };
            assert!(
                ms <= 1.03 * best,
                "{group:?} 2^{log_n}: {c} bits take {ms} ms, the best {best} ms"
            );
        }
    }

    #[test]
    fn windows_share_the_bits_evenly() {
        for c in 1..=MAX_WINDOW_BITS {
            let plan = MsmPlan::with_window_bits(1 << 10, Group::G1, 8, c, 1 << 20);
            let widths: Vec<u32> = (0..plan.n_windows).map(|w| plan.window_width(w)).collect();
            assert_eq!(widths.iter().sum::<u32>(), 255, "c = {c}: {widths:?}");
            assert_eq!(plan.n_windows, num_windows(c), "c = {c}");
            assert_eq!(plan.window_bits, balanced_window_bits(c));
            assert!(
                plan.window_bits <= c && widths[0] == plan.window_bits,
                "c = {c}"
            );
            // The wide windows first, then those one bit narrower, none of zero bits.
            assert!(
                widths.windows(2).all(|p| p[0] >= p[1] && p[0] - p[1] <= 1),
                "c = {c}"
            );
            assert!(widths.iter().all(|&b| b >= 1 && b + 1 >= plan.window_bits));
            let used: u64 = widths.iter().map(|&b| 1u64 << (b - 1)).sum();
            assert_eq!(used_buckets(c), used, "c = {c}");
            assert!(used <= plan.total_buckets() as u64);
        }
        // G1 2^26: thirteen windows, eight of 20 bits and five of 19.
        let plan = MsmPlan::new(1 << 26, Group::G1, 132);
        assert_eq!(
            (plan.window_bits, plan.n_windows, plan.wide_windows()),
            (20, 13, 8)
        );
        // 21 bits make no fewer windows than 20: the same plan.
        assert_eq!(
            MsmPlan::with_window_bits(1 << 24, Group::G1, 132, 21, 1 << 25).window_bits,
            20
        );
    }

    #[test]
    fn window_choice_grows_with_size_and_shrinks_with_chunks() {
        for group in [Group::G1, Group::G2] {
            let mut last = 0;
            for log_n in 0..=27 {
                let c = MsmPlan::new(1 << log_n, group, 132).window_bits;
                assert!(c >= last, "{group:?} 2^{log_n}: {c} after {last}");
                assert!(c <= group.max_window_bits());
                last = c;
                // More chunks make every bucket cost more: never a wider window.
                let chunked = MsmPlan::for_chunks(1 << log_n, group, 132, 1 << 20);
                assert!(chunked.window_bits <= c, "{group:?} 2^{log_n}");
            }
        }
        // Two chunks of 2^25 at 2^26: 20 bits (22 measured 13% slower, 21 25%).
        assert_eq!(MsmPlan::new(1 << 26, Group::G1, 132).window_bits, 20);
    }
}
