//! The reconcilers on the real servers: a task per reconciler that, every
//! `every`, repairs (asks, then sends again) or compensates the downstream
//! effects its service left unknown, and a task per ledger and reconciler
//! that resolves the placeholders left in progress.

use super::*;

impl Hosts {
    /// The reconcilers of services with a ledger: each resolves, every
    /// `every`, the placeholders in progress since `older_than` or longer
    /// (completed when their write happened, else removed), at most
    /// `batch` per pass; the pass reads the service's own database.
    pub(super) fn reconcile(&mut self, rec: &Arc<Recorder>, net: &Arc<Net>) {
        let s = match self.all.first() {
            Some(h) => h.s.clone(),
            None => return,
        };
        // Effects left unknown after the commit: repaired by calls.
        for (svc, spec) in s.services.iter().enumerate() {
            let own = spec.commits;
            for r in spec.reconcilers.clone() {
                let (rec, net) = (rec.clone(), net.clone());
                self.tasks.push(tokio::spawn(async move {
                    let mut at = r.every;
                    loop {
                        rec.sleep_until(at).await;
                        at = at.saturating_add(r.every);
                        let now = rec.clock.now();
                        let Some(before) = now.checked_sub(r.older_than) else { continue };
                        let taken = rec.lock().take_unresolved(svc, before, r.batch as usize);
                        for (stamp, what) in taken {
                            let (rec, net) = (rec.clone(), net.clone());
                            tokio::spawn(async move {
                                let compensate = r.action == ReconcileAction::Compensate;
                                let ok = if compensate {
                                    net.compensate(what.edge, what.intent, what.operation, what.body).await
                                } else {
                                    net.repair(what.edge, what.intent, what.operation, what.body).await
                                };
                                let now = rec.clock.now();
                                let mut g = rec.lock();
                                if ok && compensate {
                                    g.undo(stamp.0, what.intent, own);
                                }
                                g.repaired(stamp, what, ok, compensate, now);
                            });
                        }
                    }
                }));
            }
        }
        let ledgers: Vec<(usize, Arc<Mutex<Ledger>>)> =
            self.ledgers().into_iter().map(|(v, l)| (v, l.clone())).collect();
        for (svc, ledger) in ledgers {
            let waiters =
                self.all.iter().find(|h| h.svc == svc).expect("a host of the ledger's service").waiters.clone();
            for r in s.services[svc].reconcilers.clone() {
                let (rec, ledger, waiters) = (rec.clone(), ledger.clone(), waiters.clone());
                self.tasks.push(tokio::spawn(async move {
                    let mut at = r.every;
                    loop {
                        rec.sleep_until(at).await;
                        let now = rec.clock.now();
                        if let Some(before) = now.checked_sub(r.older_than) {
                            let mut l = ledger.lock().unwrap_or_else(|e| e.into_inner());
                            let keys = l.stale(before, r.batch as usize);
                            for key in &keys {
                                l.reconcile(*key);
                            }
                            drop(l);
                            for &key in &keys {
                                wake(&waiters, key);
                            }
                            rec.lock().m.counts_at(now).reconciled += keys.len() as u64;
                        }
                        at = at.saturating_add(r.every);
                    }
                }));
            }
        }
    }
}
