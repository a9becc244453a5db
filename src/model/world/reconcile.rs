//! Reconcilers (`[[services.reconcilers]]`): a downstream effect left
//! unknown at a service — an `after_commit` call or an outbox relay that
//! finally failed — waits in the service's pool until a pass of one of its
//! reconcilers finds it older than `older_than`. The pass (every `every`,
//! at most `batch` effects, oldest first) repairs each with a call on the
//! failed call's edge, under its policy, whose first attempt is a status
//! query asking the downstream for the intent's state by its key: found,
//! the effect is confirmed; not found, the effect goes again with the same
//! key. A reconciler whose action is `compensate` rolls the intent back
//! instead: a call on the same edge asks the downstream to undo whatever it
//! committed under the intent's key (every commit of its kind for the
//! intent; nothing when it has none), and once that succeeds the service's
//! own write is undone too. A repair that fails goes back to the pool for a
//! later pass. The intent stays in the system until its last unknown
//! effect is resolved: its time to consistency runs from the end of the
//! intent to then.

use super::*;
use crate::config::ReconcileAction;

/// A downstream effect left unknown: what a repair sends again.
#[derive(Clone, Copy, Debug)]
pub(super) struct Unresolved {
    pub(super) intent: Id,
    /// The failed call's edge.
    pub(super) edge: u32,
    pub(super) operation: u32,
    pub(super) idem_key: Option<u64>,
    pub(super) fingerprint: u64,
}

impl World<'_> {
    /// Call `index` of service `svc`, made for intent `what.intent`, finally
    /// failed: a lost effect, and one for the service's reconcilers when it
    /// has any (the intent then waits for its repair). Returns whether a
    /// reconciler took it.
    pub(super) fn effect_failed(&mut self, svc: usize, what: Unresolved) -> bool {
        let now = self.q.now();
        let Some(it) = self.intents.get_mut(what.intent) else {
            return false;
        };
        it.lost = it.lost.saturating_add(1);
        if self.s.services[svc].reconcilers.is_empty() {
            return false;
        }
        it.unresolved += 1;
        it.outstanding += 1;
        let n = self.next_unresolved;
        self.next_unresolved += 1;
        self.services[svc].unresolved.insert((now, n), what);
        true
    }

    /// A pass of reconciler `r` of service `svc`: its ledgers' placeholders
    /// left in progress first, then its unknown downstream effects, at most
    /// `batch` in all.
    pub(super) fn on_reconcile(&mut self, svc: usize, r: usize) {
        let now = self.q.now();
        let spec = self.s.services[svc].reconcilers[r];
        let mut left = spec.batch as usize;
        if let Some(before) = now.checked_sub(spec.older_than) {
            for l in 0..self.services[svc].ledgers.len() {
                let keys = self.services[svc].ledgers[l].ledger.stale(before, left);
                left -= keys.len();
                for key in keys {
                    self.reconcile_record(svc, l, key);
                }
            }
        }
        for _ in 0..left {
            let Some((&(failed, n), _)) = self.services[svc].unresolved.first_key_value() else {
                break;
            };
            if failed.saturating_add(spec.older_than) > now {
                break;
            }
            let what = self.services[svc].unresolved.remove(&(failed, n)).expect("present");
            self.services[svc].repairing.insert(n, (failed, what, spec.action));
            match spec.action {
                ReconcileAction::QueryDownstream => self.repair(svc, n, what, true, false),
                ReconcileAction::Compensate => self.repair(svc, n, what, false, true),
            }
        }
        if now < self.s.duration.saturating_add(self.s.drain_limit) {
            self.q.schedule_in(spec.every, Event::Reconcile { service: svc as u32, reconciler: r as u32 });
        }
    }

    /// Resolves placeholder `key` of ledger `l` of service `svc`: its
    /// business write happened (the record was lost or is late): the record
    /// is completed and the duplicates waiting for it replay it; it did not
    /// (the request was reset by a crash): the placeholder goes and the
    /// duplicates waiting for it execute. The reconciler reads the
    /// service's own database: no request. Both actions do this: a record
    /// completed from the service's own write leaves nothing to undo.
    fn reconcile_record(&mut self, svc: usize, l: usize, key: u64) {
        let now = self.q.now();
        let ls = &mut self.services[svc].ledgers[l];
        let completed = ls.ledger.reconcile(key);
        let waiters = ls.waiters.remove(&key).unwrap_or_default();
        self.m.counts_at(now).reconciled += 1;
        for waiter in waiters {
            if completed {
                let tally = self.tally(self.requests.get(waiter).expect("waiting request").intent);
                self.m.counts(tally).ledger_replays += 1;
                self.finish_request(waiter, Outcome::Ok);
            } else {
                self.begin(waiter);
            }
        }
    }

    /// Starts the repair of unknown effect `n`: a call on its edge, under
    /// its policy, whose first attempt asks for the intent's state (`ask`),
    /// whose every attempt asks the downstream to undo it (`undo`), or that
    /// sends the effect again.
    fn repair(&mut self, svc: usize, n: u64, what: Unresolved, ask: bool, undo: bool) {
        let now = self.q.now();
        let edge = what.edge as usize;
        let policy = self.s.edge_policy(edge);
        let deadline_at = if policy.deadline == NEVER { NEVER } else { now.saturating_add(policy.deadline) };
        // Undoing by the intent's key can be repeated safely.
        let idempotent = undo || self.s.operations[what.operation as usize].idempotent;
        let mut st = CallState::new(deadline_at, now, idempotent, what.idem_key.is_some());
        st.querying = ask;
        let call = self.calls.insert(Call {
            intent: what.intent,
            edge: what.edge,
            owner: Owner::Reconciler { service: svc as u32, item: n, asked: ask },
            operation: what.operation,
            idem_key: what.idem_key,
            fingerprint: what.fingerprint,
            key: hash_words(0, &[purpose::RECONCILE, n, ask as u64 | (undo as u64) << 1, now]),
            machine: Machine::new(st, false),
            current: None,
            tried: 0,
            fill: NO_FILL,
            throttle_wait: 0,
            committed: false,
            undo,
        });
        self.send(call);
    }

    /// A repair call of unknown effect `n` of service `svc` ended with
    /// `outcome`: resolved when `ok` (a compensation then undoes the
    /// service's own write); when its status query found nothing and the
    /// policy had no attempt left to send the effect (`asked`, 404), a
    /// second call sends it; else back in the pool for a later pass.
    pub(super) fn repair_done(&mut self, svc: usize, n: u64, asked: bool, outcome: Outcome) {
        let now = self.q.now();
        if asked && outcome == crate::policy::decision::NOT_FOUND {
            let (_, what, _) = self.services[svc].repairing[&n];
            self.repair(svc, n, what, false, false);
            return;
        }
        let Some((failed, what, action)) = self.services[svc].repairing.remove(&n) else {
            return;
        };
        if outcome != Outcome::Ok {
            self.services[svc].unresolved.insert((failed, n), what);
            return;
        }
        let compensated = action == ReconcileAction::Compensate;
        if compensated {
            self.undo_commits(svc, what.intent);
        }
        let Some(it) = self.intents.get_mut(what.intent) else {
            return;
        };
        it.lost -= 1;
        it.unresolved -= 1;
        it.outstanding -= 1;
        let (tally, last, ended) = (it.tally, it.unresolved == 0, it.done.then_some(it.ended));
        let counts = self.m.counts(tally);
        counts.reconciled += 1;
        counts.compensated += compensated as u64;
        if last && let Some(ended) = ended {
            counts.time_to_consistency.record(now.saturating_sub(ended));
        }
        self.try_settle(what.intent);
    }

    /// Undoes every commit intent `intent` made at service `svc`: its
    /// business records there go (a status query no longer finds them) and
    /// its effects of the service's kind with them.
    pub(super) fn undo_commits(&mut self, svc: usize, intent: Id) {
        let kind = self.s.services[svc].commits;
        let Some(it) = self.intents.get_mut(intent) else {
            return;
        };
        if svc < 64 {
            it.committed_at &= !(1 << svc);
        }
        if let Some(k) = kind {
            it.effects[k] = 0;
        }
    }
}
