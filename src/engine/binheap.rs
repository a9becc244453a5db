//! A binary min-heap of events ordered by (time, sequence number): the
//! event queue's store while few events are pending.

use super::radix::Entry;

/// A plain binary min-heap that moves a hole instead of swapping entries.
#[derive(Clone)]
pub(super) struct BinHeap<E> {
    h: Vec<Entry<E>>,
}

impl<E: Copy> BinHeap<E> {
    /// An empty heap.
    pub(super) fn new() -> Self {
        Self { h: Vec::with_capacity(1024) }
    }

    /// Number of entries.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.h.len()
    }

    /// (time, sequence) of the earliest entry, if any.
    #[inline]
    pub(super) fn peek(&self) -> Option<(u64, u64)> {
        self.h.first().map(|e| (e.time, e.seq))
    }

    /// Takes every entry out, in no particular order.
    pub(super) fn drain(&mut self) -> std::vec::Drain<'_, Entry<E>> {
        self.h.drain(..)
    }

    /// Adds `entry`: a hole moves up from the end until the parent comes first.
    #[inline]
    pub(super) fn push(&mut self, entry: Entry<E>) {
        let h = &mut self.h;
        let mut hole = h.len();
        h.push(entry);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if !entry.before(&h[parent]) {
                break;
            }
            h[hole] = h[parent];
            hole = parent;
        }
        h[hole] = entry;
    }

    /// Removes the root (the heap must not be empty). The hole the root
    /// leaves moves down along the earlier child to the bottom, then the
    /// last entry fills it and moves up to its place: one comparison per
    /// level on the way down, and the last entry usually belongs near the
    /// bottom.
    #[inline]
    pub(super) fn pop(&mut self) -> Entry<E> {
        let h = &mut self.h;
        let last = h.pop().expect("non-empty heap");
        let Some(&root) = h.first() else {
            return last;
        };
        let n = h.len();
        let mut hole = 0;
        let mut child = 1;
        while child + 1 < n {
            if h[child + 1].before(&h[child]) {
                child += 1;
            }
            h[hole] = h[child];
            hole = child;
            child = 2 * hole + 1;
        }
        if child < n {
            h[hole] = h[child];
            hole = child;
        }
        // The upward pass of `push`, written out: a shared helper measured
        // 6% slower on the whole peer scenario.
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if !last.before(&h[parent]) {
                break;
            }
            h[hole] = h[parent];
            hole = parent;
        }
        h[hole] = last;
        root
    }
}
