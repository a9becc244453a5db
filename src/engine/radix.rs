//! A radix heap of events on integer nanosecond times, ties broken by
//! sequence number.
//!
//! A radix heap is a monotone priority queue: every key pushed is at least
//! the last key popped, which is what a discrete-event simulation does
//! (nothing is scheduled in the past). Times are read as 16 hexadecimal
//! digits. An entry lives in the bucket of (the highest digit in which its
//! time differs from the last time popped, the `base`; its own value of
//! that digit), and the entries at the base time itself in a list of
//! their own. Popping takes that list's front; when it is empty, the
//! lowest non-empty bucket is redistributed around its earliest time,
//! which becomes the new base, and each of its entries moves to a lower
//! digit. An entry so moves at most 16 times, and for the delays of a
//! simulation (microseconds to seconds, events nanoseconds apart) about
//! five: O(1) amortised per event, with sequential memory access instead
//! of a binary heap's jumps across a large array.
//!
//! Ties: the entries at the base time are kept in sequence order. They
//! come from a redistribution (then sorted by sequence, usually one or
//! two) or are pushed at exactly the base time, with a sequence number
//! higher than any already there; so events of one instant come out in
//! the order they were scheduled, exactly as from a binary heap on
//! (time, sequence).

use super::clock::Nanos;

/// One pending event.
#[derive(Clone, Copy)]
pub(super) struct Entry<E> {
    pub(super) time: Nanos,
    pub(super) seq: u64,
    pub(super) event: E,
}

impl<E> Entry<E> {
    /// Whether `self` comes out before `other`.
    #[inline(always)]
    pub(super) fn before(&self, other: &Self) -> bool {
        (self.time, self.seq) < (other.time, other.seq)
    }
}

/// Bits per digit, digits per key, buckets per digit.
const DIGIT: u32 = 4;
const LEVELS: usize = (u64::BITS / DIGIT) as usize;
const RADIX: usize = 1 << DIGIT;

/// A monotone min-queue of entries ordered by (time, sequence).
#[derive(Clone)]
pub(super) struct RadixHeap<E> {
    /// The entries at the base time, in sequence order, read from `head`.
    zero: Vec<Entry<E>>,
    head: usize,
    /// Bucket `level * RADIX + digit`: the entries whose highest digit
    /// differing from the base's is digit `level`, and is `digit` there.
    /// Unordered; in time order by index.
    buckets: Vec<Vec<Entry<E>>>,
    /// Bit `digit` of `occupied[level]` set when that bucket is not empty;
    /// bit `level` of `levels` set when `occupied[level]` is not zero.
    occupied: [u16; LEVELS],
    levels: u16,
    /// The time of the last entry popped: no key is ever below it.
    base: Nanos,
    len: usize,
    /// (time, sequence) of the earliest entry when known.
    min: Option<(Nanos, u64)>,
}

impl<E: Copy> RadixHeap<E> {
    /// An empty heap with base time 0.
    pub(super) fn new() -> Self {
        Self {
            zero: Vec::with_capacity(64),
            head: 0,
            buckets: (0..LEVELS * RADIX).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
            levels: 0,
            base: 0,
            len: 0,
            min: None,
        }
    }

    /// Number of entries.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Moves the base to `base`, which must not be after any entry's time
    /// nor before the current base (an empty heap may take any base).
    pub(super) fn rebase(&mut self, base: Nanos) {
        debug_assert!(self.len == 0, "rebase an empty heap only");
        self.base = base;
        self.min = None;
    }

    /// Takes every entry out, in no particular order.
    pub(super) fn take_all(&mut self) -> Vec<Entry<E>> {
        let mut all: Vec<Entry<E>> = self.zero.drain(self.head..).collect();
        self.zero.clear();
        self.head = 0;
        for b in &mut self.buckets {
            all.append(b);
        }
        self.occupied = [0; LEVELS];
        self.levels = 0;
        self.len = 0;
        self.min = None;
        all
    }

    /// Files `entry` (not at the base time) in its bucket.
    #[inline(always)]
    fn file(&mut self, entry: Entry<E>) {
        let diff = entry.time ^ self.base;
        let level = ((u64::BITS - 1 - diff.leading_zeros()) / DIGIT) as usize;
        let digit = ((entry.time >> (level as u32 * DIGIT)) as usize) & (RADIX - 1);
        self.occupied[level] |= 1 << digit;
        self.levels |= 1 << level;
        self.buckets[level * RADIX + digit].push(entry);
    }

    /// Adds `entry`; its time must not be below the last time popped.
    #[inline]
    pub(super) fn push(&mut self, entry: Entry<E>) {
        debug_assert!(entry.time >= self.base, "a radix heap is monotone");
        self.len += 1;
        if let Some(m) = self.min
            && (entry.time, entry.seq) < m
        {
            self.min = Some((entry.time, entry.seq));
        }
        if entry.time == self.base {
            self.zero.push(entry);
        } else {
            self.file(entry);
        }
    }

    /// The lowest non-empty bucket, if any.
    #[inline]
    fn lowest(&self) -> Option<usize> {
        if self.levels == 0 {
            return None;
        }
        let level = self.levels.trailing_zeros() as usize;
        Some(level * RADIX + self.occupied[level].trailing_zeros() as usize)
    }

    /// (time, sequence) of the earliest entry, if any. Between two pops it
    /// is computed once: a scan of the lowest non-empty bucket when no
    /// entry is at the base time.
    #[inline]
    pub(super) fn peek(&mut self) -> Option<(Nanos, u64)> {
        if self.min.is_none() {
            self.min = self.find_min();
        }
        self.min
    }

    fn find_min(&self) -> Option<(Nanos, u64)> {
        if let Some(e) = self.zero.get(self.head) {
            return Some((e.time, e.seq));
        }
        let b = self.lowest()?;
        self.buckets[b].iter().map(|e| (e.time, e.seq)).min()
    }

    /// Removes the earliest entry (the heap must not be empty).
    #[inline]
    pub(super) fn pop(&mut self) -> Entry<E> {
        if self.head == self.zero.len() {
            self.redistribute();
        }
        let e = self.zero[self.head];
        self.head += 1;
        if self.head == self.zero.len() {
            self.zero.clear();
            self.head = 0;
        }
        self.len -= 1;
        self.min = None;
        e
    }

    /// No entry is at the base time: spreads the lowest non-empty bucket
    /// around its earliest time, which becomes the base. Its entries all
    /// go to lower levels (or to the base time).
    #[inline(never)]
    fn redistribute(&mut self) {
        let b = self.lowest().expect("pop from an empty radix heap");
        let (level, digit) = (b / RADIX, b % RADIX);
        self.occupied[level] &= !(1 << digit);
        if self.occupied[level] == 0 {
            self.levels &= !(1 << level);
        }
        let mut bucket = std::mem::take(&mut self.buckets[b]);
        self.base = match self.min {
            Some((t, _)) => t,
            None => bucket.iter().map(|e| e.time).min().expect("a non-empty bucket"),
        };
        for e in bucket.drain(..) {
            if e.time == self.base {
                self.zero.push(e);
            } else {
                self.file(e);
            }
        }
        // Give the bucket its buffer back.
        self.buckets[b] = bucket;
        if self.zero.len() > 1 {
            self.zero.sort_unstable_by_key(|e| e.seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_sequence() {
        let mut rng = crate::engine::Stream::from_state(3);
        let mut h = RadixHeap::new();
        let mut reference: Vec<(Nanos, u64)> = Vec::new();
        let (mut seq, mut now) = (0u64, 0u64);
        for _ in 0..50_000 {
            if rng.next_word() % 3 < 2 {
                // Many equal times, and some far ones.
                let t = now + [0, 1, 7, 1000, 1 << 40][(rng.next_word() % 5) as usize] + rng.next_word() % 4;
                h.push(Entry { time: t, seq, event: () });
                reference.push((t, seq));
                seq += 1;
            } else if !reference.is_empty() {
                reference.sort();
                let want = reference.remove(0);
                assert_eq!(h.peek(), Some(want));
                let e = h.pop();
                assert_eq!((e.time, e.seq), want);
                now = e.time;
            }
            assert_eq!(h.len(), reference.len());
        }
        reference.sort();
        for want in reference {
            let e = h.pop();
            assert_eq!((e.time, e.seq), want);
        }
        assert_eq!((h.len(), h.peek()), (0, None));
    }
}
