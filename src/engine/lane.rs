//! A first-in-first-out lane of events that all wait the same fixed
//! delay, so they fall due in the order they were scheduled.
//!
//! A vector read from a moving head rather than a ring buffer: looking at
//! the front is one comparison and one load, with no wrap-around to
//! compute, which matters because the event queue looks at the front of
//! every lane for every event it pops. Taken entries are dropped in one
//! move once they make up half of the vector (and all at once when the
//! lane empties), so memory stays within twice the entries pending and
//! each entry is moved at most once on average.

use super::clock::Nanos;
use super::radix::Entry;

/// Entries taken above which the vector may be compacted.
const COMPACT_ABOVE: usize = 1024;

/// The events of one fixed delay, earliest first.
#[derive(Clone)]
pub(super) struct Lane<E> {
    delay: Nanos,
    buf: Vec<Entry<E>>,
    /// Index of the front entry; those before it were taken.
    head: usize,
}

impl<E: Copy> Lane<E> {
    /// An empty lane for events `delay` after they are scheduled.
    pub(super) fn new(delay: Nanos) -> Self {
        Self { delay, buf: Vec::with_capacity(256), head: 0 }
    }

    /// The delay of its events.
    #[inline(always)]
    pub(super) fn delay(&self) -> Nanos {
        self.delay
    }

    /// The entry due first.
    #[inline(always)]
    pub(super) fn front(&self) -> Option<&Entry<E>> {
        self.buf.get(self.head)
    }

    /// Adds an entry due after every entry already in the lane.
    #[inline(always)]
    pub(super) fn push_back(&mut self, entry: Entry<E>) {
        self.buf.push(entry);
    }

    /// Takes the front entry.
    #[inline(always)]
    pub(super) fn pop_front(&mut self) -> Option<Entry<E>> {
        let e = *self.buf.get(self.head)?;
        self.head += 1;
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        } else if self.head > COMPACT_ABOVE && 2 * self.head >= self.buf.len() {
            self.compact();
        }
        Some(e)
    }

    /// Drops the entries already taken.
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        self.buf.drain(..self.head);
        self.head = 0;
    }

    /// Number of entries pending.
    pub(super) fn len(&self) -> usize {
        self.buf.len() - self.head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_in_first_out_across_compactions() {
        let mut lane = Lane::new(5);
        let mut next_out = 0u64;
        for i in 0..10_000u64 {
            lane.push_back(Entry { time: i, seq: i, event: i });
            if i % 3 != 0 {
                assert_eq!(lane.pop_front().map(|e| e.event), Some(next_out));
                next_out += 1;
            }
            assert_eq!(lane.len() as u64, i + 1 - next_out);
            assert!(lane.buf.len() <= 2 * lane.len() + COMPACT_ABOVE + 1);
        }
        while let Some(e) = lane.pop_front() {
            assert_eq!(e.event, next_out);
            next_out += 1;
        }
        assert_eq!((next_out, lane.len(), lane.head), (10_000, 0, 0));
        assert!(lane.front().is_none());
    }
}
