//! The pending-event set: a binary heap while few events are pending, a
//! radix heap when many are, both ordered by (time, sequence number), plus
//! first-in-first-out lanes for fixed delays.
//!
//! Events scheduled for the same instant come out in the order they were
//! scheduled, so a run is reproducible whatever the events are.

use super::binheap::BinHeap;
use super::clock::Nanos;
use super::lane::Lane;
use super::radix::{Entry, RadixHeap};

/// Random-delay events pending above which they move to the radix heap.
pub const TO_RADIX: usize = 4096;
/// Random-delay events pending below which they move back to the binary heap.
pub const TO_BINARY: usize = 1024;

/// Where the earliest pending event is.
#[derive(Clone, Copy)]
enum Source {
    Heap,
    Lane(usize),
}

/// A deterministic future-event list with its clock.
///
/// Events after a random delay go to a binary min-heap while at most a
/// few thousand are pending, and to a radix heap on their integer
/// nanosecond times beyond (see [`super::radix`]): O(log n) with a few
/// comparisons for a small heap, O(1) amortised and cache-friendly for a
/// large one. They move between the two with hysteresis (up above
/// [`TO_RADIX`] events, down below [`TO_BINARY`]). Besides the heap it keeps one FIFO lane per fixed
/// delay: events scheduled with [`EventQueue::schedule_fixed`] with the
/// same delay become due in the order they were scheduled, so they need no
/// heap operation (per-try timeouts of one length, constant latencies).
/// The order of events is exactly (time, sequence) either way.
#[derive(Clone)]
pub struct EventQueue<E> {
    heap: BinHeap<E>,
    radix: RadixHeap<E>,
    /// The random-delay events are in `radix` (else in `heap`).
    big: bool,
    lanes: Vec<Lane<E>>,
    next_seq: u64,
    now: Nanos,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        Self {
            heap: BinHeap::new(),
            radix: RadixHeap::new(),
            big: false,
            lanes: Vec::new(),
            next_seq: 0,
            now: 0,
            popped: 0,
        }
    }

    /// The current simulated time: the time of the last event popped.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at absolute time `time` (never before now).
    #[inline(always)]
    pub fn schedule_at(&mut self, time: Nanos, event: E) {
        let time = time.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Entry { time, seq, event };
        if self.big {
            self.radix.push(entry);
        } else {
            self.heap.push(entry);
            if self.heap.len() > TO_RADIX {
                self.grow();
            }
        }
    }

    /// Schedules `event` after `delay` from now (saturating).
    #[inline]
    pub fn schedule_in(&mut self, delay: Nanos, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Schedules `event` after the fixed `delay`: events with the same delay
    /// keep a FIFO lane instead of going through the heap.
    #[inline(always)]
    pub fn schedule_fixed(&mut self, delay: Nanos, event: E) {
        const MAX_LANES: usize = 8;
        let time = self.now.saturating_add(delay);
        let lane = match self.lanes.iter().position(|l| l.delay() == delay) {
            Some(i) => i,
            None if self.lanes.len() < MAX_LANES => {
                self.lanes.push(Lane::new(delay));
                self.lanes.len() - 1
            }
            None => return self.schedule_at(time, event),
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.lanes[lane].push_back(Entry { time, seq, event });
    }

    /// Where the earliest pending event is, and its time.
    #[inline(always)]
    fn earliest(&mut self) -> Option<(Source, Nanos)> {
        let heap = if self.big { self.radix.peek() } else { self.heap.peek() };
        // No event has sequence number u64::MAX, so (MAX, MAX) stands for
        // "none yet" and every real event comes before it.
        let (mut time, mut seq) = heap.unwrap_or((Nanos::MAX, u64::MAX));
        let mut source = Source::Heap;
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some(e) = lane.front()
                && (e.time < time || (e.time == time && e.seq < seq))
            {
                (time, seq, source) = (e.time, e.seq, Source::Lane(i));
            }
        }
        (seq != u64::MAX).then_some((source, time))
    }

    /// Removes the earliest event and advances the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.pop_if(|_| true)
    }

    /// Removes the earliest event and advances the clock to its time, if
    /// `due(time)` holds for its time; otherwise leaves the queue as it is.
    #[inline]
    pub fn pop_if(&mut self, due: impl FnOnce(Nanos) -> bool) -> Option<(Nanos, E)> {
        let (source, time) = self.earliest()?;
        if !due(time) {
            return None;
        }
        let entry = match source {
            Source::Heap if self.big => {
                let e = self.radix.pop();
                if self.radix.len() < TO_BINARY {
                    self.shrink();
                }
                e
            }
            Source::Heap => self.heap.pop(),
            Source::Lane(i) => self.lanes[i].pop_front().expect("non-empty lane"),
        };
        self.now = entry.time;
        self.popped += 1;
        Some((entry.time, entry.event))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&mut self) -> Option<Nanos> {
        self.earliest().map(|(_, t)| t)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() + self.radix.len() + self.lanes.iter().map(Lane::len).sum::<usize>()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// Moves the random-delay events from the binary heap to the radix heap.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        self.radix.rebase(self.now);
        // In sequence order: those at the current time must enter the
        // radix heap's list for its base time in that order.
        let mut all: Vec<Entry<E>> = self.heap.drain().collect();
        all.sort_unstable_by_key(|e| e.seq);
        for e in all {
            self.radix.push(e);
        }
        self.big = true;
    }

    /// Moves the random-delay events from the radix heap to the binary heap.
    #[cold]
    #[inline(never)]
    fn shrink(&mut self) {
        for e in self.radix.take_all() {
            self.heap.push(e);
        }
        self.big = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order_and_ties_in_schedule_order() {
        let mut q = EventQueue::new();
        q.schedule_at(30, 'c');
        q.schedule_at(10, 'a');
        q.schedule_at(30, 'd');
        q.schedule_at(20, 'b');
        q.schedule_at(10, 'x');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'x', 'b', 'c', 'd']);
        assert_eq!(q.now(), 30);
        assert_eq!(q.events_processed(), 5);
    }

    #[test]
    fn fixed_delay_lanes_keep_the_global_order() {
        // The same events through lanes and through the heap alone come out
        // in the same order.
        let mut a = EventQueue::new();
        let mut b = EventQueue::new();
        let mut rng = crate::engine::Stream::from_state(5);
        let mut out_a = Vec::new();
        let mut out_b = Vec::new();
        for i in 0..2000u32 {
            let d = [10u64, 25, 10, 7][(rng.next_word() % 4) as usize];
            let extra = rng.next_word() % 30;
            if i % 3 == 0 {
                a.schedule_fixed(d, i);
                b.schedule_in(d, i);
            } else {
                a.schedule_in(extra, i);
                b.schedule_in(extra, i);
            }
            if i % 2 == 0 {
                out_a.push(a.pop());
                out_b.push(b.pop());
            }
        }
        while let Some(x) = b.pop() {
            out_b.push(Some(x));
        }
        while let Some(x) = a.pop() {
            out_a.push(Some(x));
        }
        assert_eq!(out_a, out_b);
        assert!(a.is_empty());
    }

    #[test]
    fn heap_matches_a_sorted_reference() {
        // Random interleavings of pushes and pops, with many equal times,
        // against a list kept sorted by (time, sequence).
        let mut rng = crate::engine::Stream::from_state(11);
        let mut q = EventQueue::new();
        let mut reference: Vec<(Nanos, u64)> = Vec::new();
        let mut seq = 0u64;
        for _ in 0..20_000 {
            if rng.next_word() % 5 < 3 {
                let t = q.now() + rng.next_word() % 50;
                q.schedule_at(t, seq);
                reference.push((t, seq));
                seq += 1;
            } else {
                reference.sort();
                let expected = (!reference.is_empty()).then(|| reference.remove(0));
                assert_eq!(q.pop(), expected);
            }
        }
        reference.sort();
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, reference);
    }

    #[test]
    fn moving_between_binary_and_radix_heaps_keeps_the_order() {
        // Fill past TO_RADIX, drain below TO_BINARY, fill again: the order
        // is the sorted (time, sequence) order throughout, ties included.
        let mut rng = crate::engine::Stream::from_state(17);
        let mut q = EventQueue::new();
        let mut reference: std::collections::BTreeSet<(Nanos, u64)> = Default::default();
        let mut seq = 0u64;
        for round in 0..3 {
            for _ in 0..(TO_RADIX + 1500) {
                let t = q.now() + rng.next_word() % [1_000_000, 40, 1 << 35][round];
                q.schedule_at(t, seq);
                reference.insert((t, seq));
                seq += 1;
                if rng.next_word().is_multiple_of(4) {
                    let want = reference.pop_first();
                    assert_eq!(q.pop(), want);
                }
            }
            assert!(q.big, "round {round}: moved to the radix heap");
            while q.len() > TO_BINARY / 2 {
                let want = reference.pop_first();
                assert_eq!(q.pop(), want);
            }
            assert!(!q.big, "round {round}: moved back to the binary heap");
        }
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, reference.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn pop_if_leaves_events_that_are_not_due() {
        let mut q = EventQueue::new();
        q.schedule_at(10, 'a');
        q.schedule_fixed(20, 'b');
        assert_eq!(q.pop_if(|t| t < 10), None);
        assert_eq!((q.now(), q.len()), (0, 2));
        assert_eq!(q.pop_if(|t| t <= 10), Some((10, 'a')));
        assert_eq!(q.pop_if(|t| t < 20), None);
        assert_eq!(q.pop_if(|t| t <= 30), Some((20, 'b')));
        assert!(q.is_empty());
    }

    #[test]
    fn never_schedules_in_the_past() {
        let mut q = EventQueue::new();
        q.schedule_at(100, 1u8);
        q.pop();
        q.schedule_at(50, 2u8);
        assert_eq!(q.pop(), Some((100, 2u8)));
    }
}
