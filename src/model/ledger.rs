//! The idempotency ledger of one service (DESIGN §4): records keyed by
//! (caller class, operation, key) with the request's fingerprint, the
//! state machine absent → placeholder → completed, replay, 422 on another
//! body, 409 or wait while in progress, expiry after `ttl` and recovery of
//! placeholders older than the lease. Memory is bounded by the records
//! created within one `ttl`.

use crate::config::LedgerSpec;
use crate::engine::{NEVER, Nanos};
use crate::policy::Outcome;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// What the ledger says about an arriving request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// No record: a placeholder was written; execute.
    Execute,
    /// A placeholder older than the lease was taken over; execute again.
    Recover,
    /// Completed with the same fingerprint: answer the stored result.
    Replay(Outcome),
    /// The key was used with another body: 422.
    Reject,
    /// In progress: 409.
    Conflict,
    /// In progress, and the ledger holds duplicates until it completes.
    Wait,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    InProgress { since: Nanos },
    Completed { answer: Outcome },
}

#[derive(Debug, Clone, Copy)]
struct Record {
    fingerprint: u64,
    /// Who wrote it (for counterexamples): (client class, intent number).
    owner: (u32, u64),
    state: State,
    /// Distinguishes a record from an earlier one with the same key in the expiry queue.
    generation: u64,
    /// The business write it guards happened (the record itself may still
    /// be in progress: written later, or lost by a crash).
    written: bool,
}

/// One service's ledger.
#[derive(Debug, Clone)]
pub struct Ledger {
    spec: LedgerSpec,
    records: HashMap<u64, Record>,
    /// (expiry time, key, generation), in creation order.
    expiry: VecDeque<(Nanos, u64, u64)>,
    next_generation: u64,
    /// The records in progress, oldest first: (since, key, generation).
    in_progress: BTreeSet<(Nanos, u64, u64)>,
    /// The most records held at once.
    pub peak: usize,
}

impl Ledger {
    /// An empty ledger.
    pub fn new(spec: LedgerSpec) -> Self {
        Self {
            spec,
            records: HashMap::new(),
            expiry: VecDeque::new(),
            next_generation: 0,
            in_progress: BTreeSet::new(),
            peak: 0,
        }
    }

    /// The ledger's configuration.
    pub fn spec(&self) -> &LedgerSpec {
        &self.spec
    }

    fn purge(&mut self, now: Nanos) {
        while let Some(&(at, key, generation)) = self.expiry.front() {
            if at > now {
                break;
            }
            self.expiry.pop_front();
            if self.records.get(&key).is_some_and(|r| r.generation == generation) {
                let r = self.records.remove(&key).expect("present");
                self.unindex(key, &r);
            }
        }
    }

    fn place(&mut self, now: Nanos, key: u64, fingerprint: u64, owner: (u32, u64)) {
        let generation = self.next_generation;
        self.next_generation += 1;
        self.records.insert(
            key,
            Record { fingerprint, owner, state: State::InProgress { since: now }, generation, written: false },
        );
        self.in_progress.insert((now, key, generation));
        self.expiry.push_back((now.saturating_add(self.spec.ttl), key, generation));
        self.peak = self.peak.max(self.records.len());
    }

    /// Looks up `key` for a request whose body has `fingerprint`, writing a
    /// placeholder (owned by `owner`) when the request is to execute.
    pub fn lookup(&mut self, now: Nanos, key: u64, fingerprint: u64, owner: (u32, u64)) -> Lookup {
        self.purge(now);
        let Some(record) = self.records.get_mut(&key) else {
            self.place(now, key, fingerprint, owner);
            return Lookup::Execute;
        };
        if record.fingerprint != fingerprint {
            return Lookup::Reject;
        }
        match record.state {
            State::Completed { answer } => Lookup::Replay(answer),
            State::InProgress { since } => {
                if self.spec.lease != NEVER && now.saturating_sub(since) >= self.spec.lease {
                    record.state = State::InProgress { since: now };
                    let generation = record.generation;
                    self.in_progress.remove(&(since, key, generation));
                    self.in_progress.insert((now, key, generation));
                    Lookup::Recover
                } else if self.spec.wait {
                    Lookup::Wait
                } else {
                    Lookup::Conflict
                }
            }
        }
    }

    /// The request holding `key`'s placeholder finished with `answer`.
    /// Returns whether a placeholder was completed.
    pub fn complete(&mut self, key: u64, answer: Outcome) -> bool {
        match self.records.get_mut(&key) {
            Some(r) if matches!(r.state, State::InProgress { .. }) => {
                let (old, generation) = (r.state, r.generation);
                r.state = State::Completed { answer };
                if let State::InProgress { since } = old {
                    self.in_progress.remove(&(since, key, generation));
                }
                true
            }
            _ => false,
        }
    }

    /// The business write guarded by `key`'s placeholder happened (its
    /// record may follow later, or be lost by a crash).
    pub fn written(&mut self, key: u64) {
        if let Some(r) = self.records.get_mut(&key) {
            r.written = true;
        }
    }

    /// Up to `max` keys of placeholders in progress since `before` or
    /// earlier, oldest first.
    pub fn stale(&self, before: Nanos, max: usize) -> Vec<u64> {
        self.in_progress.iter().take_while(|&&(since, _, _)| since <= before).take(max).map(|&(_, k, _)| k).collect()
    }

    /// A reconciler resolves `key`'s placeholder: completed `ok` when its
    /// business write happened, else removed (a retry executes afresh).
    /// Returns whether it completed it.
    pub fn reconcile(&mut self, key: u64) -> bool {
        let Some(r) = self.records.get(&key).copied() else { return false };
        let State::InProgress { since } = r.state else { return false };
        self.in_progress.remove(&(since, key, r.generation));
        if r.written {
            self.records.get_mut(&key).expect("present").state = State::Completed { answer: Outcome::Ok };
            true
        } else {
            self.records.remove(&key);
            false
        }
    }

    /// Takes a record out of the in-progress index.
    fn unindex(&mut self, key: u64, r: &Record) {
        if let State::InProgress { since } = r.state {
            self.in_progress.remove(&(since, key, r.generation));
        }
    }

    /// The request holding `key`'s placeholder failed without committing:
    /// the placeholder goes, so a retry executes afresh.
    pub fn abandon(&mut self, key: u64) {
        if self.records.get(&key).is_some_and(|r| matches!(r.state, State::InProgress { .. })) {
            let r = self.records.remove(&key).expect("present");
            self.unindex(key, &r);
        }
    }

    /// The service crashed: a memory store loses everything.
    pub fn crash(&mut self) {
        if !self.spec.durable {
            self.records.clear();
            self.expiry.clear();
            self.in_progress.clear();
        }
    }

    /// Placeholders in progress that no request will ever recover: with a
    /// lease of "never", every placeholder still in progress at the end of
    /// a run (when no request is running). With a finite lease a stale
    /// placeholder is recovered by the next request, so none is stuck.
    pub fn stuck(&self) -> u64 {
        if self.spec.lease != NEVER {
            return 0;
        }
        self.records.values().filter(|r| matches!(r.state, State::InProgress { .. })).count() as u64
    }

    /// The owner of one stuck placeholder (the smallest, for determinism).
    pub fn stuck_example(&self) -> Option<(u32, u64)> {
        if self.spec.lease != NEVER {
            return None;
        }
        self.records.values().filter(|r| matches!(r.state, State::InProgress { .. })).map(|r| r.owner).min()
    }

    /// Records held now.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the ledger holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    fn spec() -> LedgerSpec {
        LedgerSpec { durable: true, ttl: 100 * S, wait: false, lease: 10 * S, atomic: true, record_delay: 0 }
    }

    #[test]
    fn the_state_machine() {
        let mut l = Ledger::new(spec());
        assert_eq!(l.lookup(0, 7, 1, (0, 0)), Lookup::Execute);
        assert_eq!(l.lookup(S, 7, 1, (0, 0)), Lookup::Conflict, "in progress");
        assert_eq!(l.lookup(S, 7, 2, (0, 0)), Lookup::Reject, "another body");
        assert!(l.complete(7, Outcome::Ok));
        assert_eq!(l.lookup(2 * S, 7, 1, (0, 0)), Lookup::Replay(Outcome::Ok));
        assert_eq!(l.lookup(2 * S, 7, 9, (0, 0)), Lookup::Reject, "never the old result for another body");
    }

    #[test]
    fn stale_placeholders_are_recovered_after_the_lease_and_records_expire() {
        let mut l = Ledger::new(spec());
        assert_eq!(l.lookup(0, 1, 1, (0, 0)), Lookup::Execute);
        assert_eq!(l.lookup(9 * S, 1, 1, (0, 0)), Lookup::Conflict);
        assert_eq!(l.stuck(), 0, "a finite lease lets the next request recover it");
        assert_eq!(l.lookup(10 * S, 1, 1, (0, 0)), Lookup::Recover);
        l.complete(1, Outcome::Ok);
        // After the ttl the key is new again.
        assert_eq!(l.lookup(100 * S, 1, 1, (0, 0)), Lookup::Execute);
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn never_leases_stick_and_wait_holds_duplicates() {
        let mut l = Ledger::new(LedgerSpec { lease: NEVER, wait: true, ..spec() });
        assert_eq!(l.lookup(0, 3, 1, (0, 0)), Lookup::Execute);
        assert_eq!(l.lookup(99 * S, 3, 1, (0, 0)), Lookup::Wait);
        assert_eq!(l.stuck(), 1);
        l.abandon(3);
        assert_eq!(l.lookup(50 * S, 3, 1, (0, 0)), Lookup::Execute, "a failed execution leaves no record");
    }

    #[test]
    fn a_crash_empties_only_a_memory_store() {
        let mut durable = Ledger::new(spec());
        let mut memory = Ledger::new(LedgerSpec { durable: false, ..spec() });
        for l in [&mut durable, &mut memory] {
            l.lookup(0, 5, 1, (0, 0));
            l.complete(5, Outcome::Ok);
            l.crash();
        }
        assert_eq!(durable.lookup(S, 5, 1, (0, 0)), Lookup::Replay(Outcome::Ok));
        assert_eq!(memory.lookup(S, 5, 1, (0, 0)), Lookup::Execute);
    }

    #[test]
    fn memory_is_bounded_by_the_ttl_window() {
        let mut l = Ledger::new(LedgerSpec { ttl: 10 * S, ..spec() });
        for i in 0..10_000u64 {
            let now = i * S / 10; // 10 keys per second
            assert_eq!(l.lookup(now, i, 1, (0, 0)), Lookup::Execute);
            l.complete(i, Outcome::Ok);
        }
        assert!(l.peak <= 101, "peak {}", l.peak);
    }
}
