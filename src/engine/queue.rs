//! The pending-event set: a binary heap ordered by (time, sequence number).
//!
//! Events scheduled for the same instant come out in the order they were
//! scheduled, so a run is reproducible whatever the events are.

use super::clock::Nanos;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

struct Entry<E> {
    time: Nanos,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: the heap is a max-heap and the earliest event must win.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic future-event list with its clock.
///
/// Besides the heap it keeps one FIFO lane per fixed delay: events
/// scheduled with [`EventQueue::schedule_fixed`] with the same delay become
/// due in the order they were scheduled, so they need no heap operation
/// (per-try timeouts of one length, constant latencies). The order of
/// events is exactly (time, sequence) either way.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    lanes: Vec<(Nanos, VecDeque<Entry<E>>)>,
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
        Self { heap: BinaryHeap::with_capacity(1024), lanes: Vec::new(), next_seq: 0, now: 0, popped: 0 }
    }

    /// The current simulated time: the time of the last event popped.
    #[inline]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at absolute time `time` (never before now).
    #[inline]
    pub fn schedule_at(&mut self, time: Nanos, event: E) {
        let time = time.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time, seq, event });
    }

    /// Schedules `event` after `delay` from now (saturating).
    #[inline]
    pub fn schedule_in(&mut self, delay: Nanos, event: E) {
        self.schedule_at(self.now.saturating_add(delay), event);
    }

    /// Schedules `event` after the fixed `delay`: events with the same delay
    /// keep a FIFO lane instead of going through the heap.
    #[inline]
    pub fn schedule_fixed(&mut self, delay: Nanos, event: E) {
        const MAX_LANES: usize = 8;
        let time = self.now.saturating_add(delay);
        let seq = self.next_seq;
        let lane = match self.lanes.iter().position(|(d, _)| *d == delay) {
            Some(i) => i,
            None if self.lanes.len() < MAX_LANES => {
                self.lanes.push((delay, VecDeque::new()));
                self.lanes.len() - 1
            }
            None => return self.schedule_at(time, event),
        };
        self.next_seq += 1;
        self.lanes[lane].1.push_back(Entry { time, seq, event });
    }

    /// The lane whose head is due before the heap's top, if any.
    #[inline]
    fn earliest_lane(&self) -> Option<usize> {
        let mut best: Option<(usize, (Nanos, u64))> = self.heap.peek().map(|e| (usize::MAX, (e.time, e.seq)));
        for (i, (_, lane)) in self.lanes.iter().enumerate() {
            if let Some(e) = lane.front()
                && best.is_none_or(|(_, k)| (e.time, e.seq) < k)
            {
                best = Some((i, (e.time, e.seq)));
            }
        }
        best.and_then(|(i, _)| (i != usize::MAX).then_some(i))
    }

    /// Removes the earliest event and advances the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let entry = match self.earliest_lane() {
            Some(i) => self.lanes[i].1.pop_front().expect("non-empty lane"),
            None => self.heap.pop()?,
        };
        self.now = entry.time;
        self.popped += 1;
        Some((entry.time, entry.event))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Nanos> {
        let lanes = self.lanes.iter().filter_map(|(_, l)| l.front().map(|e| e.time)).min();
        match (self.heap.peek().map(|e| e.time), lanes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(|(_, l)| l.len()).sum::<usize>()
    }

    /// Whether no event is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
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
    fn never_schedules_in_the_past() {
        let mut q = EventQueue::new();
        q.schedule_at(100, 1u8);
        q.pop();
        q.schedule_at(50, 2u8);
        assert_eq!(q.pop(), Some((100, 2u8)));
    }
}
