//! The rolling window of a `failure_ratio` or `slow_call` breaker.

use super::BUCKETS;

/// The rolling window: ten buckets of `window / 10`, the newest being
/// bucket `head` (times since the origin divided by the bucket's width);
/// bucket `i` of the last ten is kept at `buckets[i % 10]`. Times never go
/// back: an outcome at an earlier time than the newest counts in the newest
/// bucket.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window<C> {
    head: u64,
    buckets: [C; BUCKETS],
}

/// The counts of one bucket: successes, failures and (wide only) slow calls.
pub(super) trait Counts: Copy + Default {
    /// Counts one call; false (and nothing counted) if a count would not fit.
    fn add(&mut self, failed: bool, slow: bool) -> bool;
    /// (successes, failures, slow calls).
    fn get(&self) -> (u64, u64, u64);
}

impl Counts for [u16; 2] {
    #[inline]
    fn add(&mut self, failed: bool, slow: bool) -> bool {
        let c = &mut self[usize::from(failed)];
        if *c == u16::MAX || slow {
            return false;
        }
        *c += 1;
        true
    }

    #[inline]
    fn get(&self) -> (u64, u64, u64) {
        (u64::from(self[0]), u64::from(self[1]), 0)
    }
}

impl Counts for [u32; 3] {
    #[inline]
    fn add(&mut self, failed: bool, slow: bool) -> bool {
        if failed {
            self[1] += 1;
        } else {
            self[0] += 1;
        }
        if slow {
            self[2] += 1;
        }
        true
    }

    #[inline]
    fn get(&self) -> (u64, u64, u64) {
        (u64::from(self[0]), u64::from(self[1]), u64::from(self[2]))
    }
}

impl<C: Counts> Window<C> {
    pub(super) fn new() -> Self {
        Self { head: 0, buckets: [C::default(); BUCKETS] }
    }

    /// Makes bucket `b` the newest (emptying those it passes).
    #[inline]
    pub(super) fn advance(&mut self, b: u64) {
        if b <= self.head {
            return;
        }
        if b - self.head >= BUCKETS as u64 {
            self.buckets = [C::default(); BUCKETS];
        } else {
            for i in self.head + 1..=b {
                self.buckets[(i % BUCKETS as u64) as usize] = C::default();
            }
        }
        self.head = b;
    }

    /// Counts a call in the newest bucket; false (nothing counted) if it
    /// does not fit.
    #[inline]
    pub(super) fn add(&mut self, failed: bool, slow: bool) -> bool {
        self.buckets[(self.head % BUCKETS as u64) as usize].add(failed, slow)
    }

    /// (successes, failures, slow calls) over the window.
    #[inline]
    pub(super) fn totals(&self) -> (u64, u64, u64) {
        self.buckets.iter().fold((0, 0, 0), |(o, f, s), c| {
            let (co, cf, cs) = c.get();
            (o + co, f + cf, s + cs)
        })
    }
}

impl Window<[u16; 2]> {
    pub(super) fn widen(&self) -> Window<[u32; 3]> {
        Window { head: self.head, buckets: self.buckets.map(|[ok, failed]| [u32::from(ok), u32::from(failed), 0]) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_counts_the_last_ten_buckets_only() {
        let mut w = Window::<[u16; 2]>::new();
        for b in 0..25u64 {
            w.advance(b);
            assert!(w.add(b % 3 == 0, false));
        }
        // Buckets 15..=24 are left: five of them (15, 18, 21, 24) failures.
        assert_eq!(w.totals(), (6, 4, 0));
        // Three buckets on, three more have left; a jump of ten or more empties it.
        w.advance(27);
        assert_eq!(w.totals(), (4, 3, 0));
        w.advance(40);
        assert_eq!(w.totals(), (0, 0, 0));
        // An earlier bucket counts in the newest.
        w.advance(39);
        assert!(w.add(true, false));
        assert_eq!(w.head, 40);
        assert_eq!(w.totals(), (0, 1, 0));
    }

    #[test]
    fn a_narrow_bucket_refuses_past_16_bits_and_widens_unchanged() {
        let mut w = Window::<[u16; 2]>::new();
        w.advance(7);
        for _ in 0..u16::MAX {
            assert!(w.add(false, false));
        }
        assert!(!w.add(false, false), "65 536th success does not fit");
        assert!(w.add(true, false), "the failures have room");
        assert!(!w.add(false, true), "no room for slow calls");
        let mut wide = w.widen();
        assert_eq!(wide.totals(), (65_535, 1, 0));
        assert!(wide.add(false, true));
        assert_eq!(wide.totals(), (65_536, 1, 1));
        assert_eq!(wide.head, 7);
    }
}
