//! The copies of a hedged call that are out: numbered in the order they
//! were sent, each with the moment it went and whether its per-try timeout
//! has passed (it stays in the race until it is given up). The simulator
//! and [`super::HedgedState`] keep their copies here, so that both take
//! them out, expire and give them up by the same rules.

use crate::time::Nanos;

/// One copy in flight, with what its owner keeps beside it (`T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveCopy<T> {
    /// Its number: 0 for the first copy, then 1, 2, … in the order sent.
    pub copy: u32,
    /// When it was sent.
    pub sent: Nanos,
    /// Its per-try timeout has passed (it may still win).
    pub expired: bool,
    /// The owner's data (the simulator: its request and what sent it).
    pub with: T,
}

/// The copies of one hedged call still out, oldest first, and how many
/// were sent in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveCopies<T> {
    live: Vec<LiveCopy<T>>,
    sent: u32,
}

impl<T> Default for LiveCopies<T> {
    fn default() -> Self {
        Self { live: Vec::new(), sent: 0 }
    }
}

impl<T> LiveCopies<T> {
    /// No copy sent yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Copies sent so far, which is also the number the next one gets.
    pub fn sent(&self) -> u32 {
        self.sent
    }

    /// Records the next copy, sent at `now`; returns its number.
    pub fn push(&mut self, now: Nanos, with: T) -> u32 {
        let copy = self.sent;
        self.live.push(LiveCopy { copy, sent: now, expired: false, with });
        self.sent += 1;
        copy
    }

    /// Takes the first live copy that `which` picks out of the race.
    pub fn take(&mut self, which: impl Fn(&LiveCopy<T>) -> bool) -> Option<LiveCopy<T>> {
        let pos = self.live.iter().position(which)?;
        Some(self.live.remove(pos))
    }

    /// Changes what the owner keeps beside the first live copy `which` picks.
    pub fn with_mut(&mut self, which: impl Fn(&LiveCopy<T>) -> bool, change: impl FnOnce(&mut T)) {
        if let Some(c) = self.live.iter_mut().find(|c| which(c)) {
            change(&mut c.with);
        }
    }

    /// Marks the first live copy that `which` picks as past its per-try
    /// timeout; `false` when no live copy matches (it was answered or
    /// given up already).
    pub fn expire(&mut self, which: impl Fn(&LiveCopy<T>) -> bool) -> bool {
        match self.live.iter_mut().find(|c| which(c)) {
            Some(c) => {
                c.expired = true;
                true
            }
            None => false,
        }
    }

    /// Takes every copy whose per-try timeout has passed (oldest first);
    /// the others stay in the race.
    pub fn take_expired(&mut self) -> Vec<LiveCopy<T>> {
        let (gone, kept) = std::mem::take(&mut self.live).into_iter().partition(|c| c.expired);
        self.live = kept;
        gone
    }

    /// Takes every live copy (oldest first): the call has its answer.
    pub fn take_all(&mut self) -> Vec<LiveCopy<T>> {
        std::mem::take(&mut self.live)
    }

    /// Whether no copy is out.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The numbers of the copies out, oldest first.
    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.live.iter().map(|c| c.copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_numbered_in_order_and_taken_expired_and_given_up_by_rule() {
        let mut c = LiveCopies::new();
        assert_eq!((c.push(0, 'a'), c.push(10, 'b'), c.push(20, 'c')), (0, 1, 2));
        assert_eq!(c.sent(), 3);
        // An answer takes its copy out; a second answer for it finds nothing.
        let b = c.take(|x| x.with == 'b').unwrap();
        assert_eq!((b.copy, b.sent, b.expired), (1, 10, false));
        assert!(c.take(|x| x.with == 'b').is_none());
        assert!(!c.expire(|x| x.with == 'b'), "a copy that is out no more does not expire");
        // The last copy's timeout passes: giving up takes it alone.
        assert!(c.expire(|x| x.with == 'c'));
        let gone = c.take_expired();
        assert_eq!(gone.iter().map(|x| (x.copy, x.expired)).collect::<Vec<_>>(), [(2, true)]);
        assert_eq!(c.numbers().collect::<Vec<_>>(), [0]);
        // A copy sent later keeps counting from the copies sent in all.
        assert_eq!(c.push(30, 'd'), 3);
        assert_eq!(c.take_all().iter().map(|x| x.copy).collect::<Vec<_>>(), [0, 3]);
        assert!(c.is_empty());
        assert_eq!(c.sent(), 4);
    }
}
