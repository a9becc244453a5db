//! A host's idempotency ledger as its requests use it: consulted when a
//! request gets a worker, recorded after its business write (at once, or
//! later and lost to a crash in between), forgotten when the request ends
//! without writing, and emptied by a crash when it is kept in memory.

use super::{Arrival, Host, SCOPE};
use crate::config::Caller;
use crate::engine::random::hash_words;
use crate::model::ledger::Lookup;
use crate::policy::Outcome;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// What the ledger says of a request.
pub(super) enum Consulted {
    /// Do the work (holding this record, if any).
    Execute(Option<u64>),
    /// Answer this status at once.
    Answer(u16),
    /// A duplicate of a request in progress, held until its record
    /// completes or goes (`in_progress = "wait"`): then ask again.
    Wait(tokio::sync::oneshot::Receiver<()>),
}

/// Wakes the duplicates waiting for record `scope` in `waiters`.
pub(super) fn wake(waiters: &Mutex<HashMap<u64, Vec<oneshot::Sender<()>>>>, scope: u64) {
    let held = waiters.lock().unwrap_or_else(|e| e.into_inner()).remove(&scope);
    for w in held.into_iter().flatten() {
        let _ = w.send(());
    }
}

impl Host {
    /// With a worker: the ledger, when the service has one and the request
    /// a key. A record's answer is replayed; a key reused with another body
    /// gets 422; a duplicate of a request in progress 409, or waits.
    pub(super) fn consult(&self, a: &Arrival) -> Consulted {
        let (Some(ledger), Some(key)) = (&self.ledger, a.body.key) else {
            return Consulted::Execute(None);
        };
        let caller = match self.s.edges[a.edge].caller {
            Caller::Client(c) => c as u64,
            Caller::Service { service, .. } => (1 << 32) | service as u64,
        };
        let scope = hash_words(0, &[SCOPE, caller, a.operation as u64, key]);
        let now = self.rec.clock.now();
        let owner = self.rec.lock().owner(a.intent);
        let mut l = ledger.lock().unwrap_or_else(|e| e.into_inner());
        let lookup = l.lookup(now, scope, a.body.fingerprint, owner);
        if lookup == Lookup::Wait {
            // Registered under the ledger's lock: a completion cannot slip
            // in between the lookup and the registration.
            let (tx, rx) = oneshot::channel();
            self.waiters.lock().unwrap_or_else(|e| e.into_inner()).entry(scope).or_default().push(tx);
            return Consulted::Wait(rx);
        }
        drop(l);
        let mut g = self.rec.lock();
        let tally = g.tally(a.intent);
        let counts = g.m.counts(tally);
        match lookup {
            Lookup::Execute => Consulted::Execute(Some(scope)),
            Lookup::Recover => {
                counts.ledger_recoveries += 1;
                Consulted::Execute(Some(scope))
            }
            Lookup::Replay(answer) => {
                counts.ledger_replays += 1;
                Consulted::Answer(match answer {
                    Outcome::Status(code) => code,
                    _ => 200,
                })
            }
            Lookup::Reject => {
                counts.ledger_rejects += 1;
                Consulted::Answer(422)
            }
            Lookup::Wait => unreachable!("handled above"),
            Lookup::Conflict => {
                counts.ledger_conflicts += 1;
                Consulted::Answer(409)
            }
        }
    }

    /// The business write of the request holding ledger record `scope`
    /// happened: the record completes now (atomic) or `record_delay` later,
    /// unless the host crashes before (the pending write is lost).
    pub(super) fn record(&self, scope: u64) {
        let Some(ledger) = self.ledger.clone() else { return };
        ledger.lock().unwrap_or_else(|e| e.into_inner()).written(scope);
        let spec = *ledger.lock().unwrap_or_else(|e| e.into_inner()).spec();
        if spec.atomic {
            ledger.lock().unwrap_or_else(|e| e.into_inner()).complete(scope, Outcome::Ok);
            wake(&self.waiters, scope);
            return;
        }
        let (rec, waiters) = (self.rec.clone(), self.waiters.clone());
        let mut crashes = self.crashes.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                Ok(()) = crashes.changed() => {}
                _ = rec.sleep(spec.record_delay) => {
                    ledger.lock().unwrap_or_else(|e| e.into_inner()).complete(scope, Outcome::Ok);
                    wake(&waiters, scope);
                }
            }
        });
    }

    /// The host crashed: a memory ledger forgets everything (a durable
    /// one keeps its records, placeholders included).
    pub(super) fn crash_ledger(&self) {
        if let Some(ledger) = &self.ledger {
            ledger.lock().unwrap_or_else(|e| e.into_inner()).crash();
        }
    }

    /// The request holding record `scope` ends without its business write:
    /// the placeholder goes.
    pub(super) fn forget(&self, scope: Option<u64>) {
        if let (Some(ledger), Some(scope)) = (&self.ledger, scope) {
            ledger.lock().unwrap_or_else(|e| e.into_inner()).abandon(scope);
            wake(&self.waiters, scope);
        }
    }
}
