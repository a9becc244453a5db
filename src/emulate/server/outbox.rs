//! What a committed request leaves to run after it: its outbox events
//! (`when = "outbox"`), each relayed after its `relay_delay` by a task that
//! outlives the request (the outbox is part of the commit: a crash does not
//! lose it) — published to its queue (`via`), or sent under the call's
//! edge policy, a relay that finally fails being a lost effect and one for
//! the service's reconcilers — and the gauge a broker reads of a consumer
//! service's free workers.

use super::*;
use crate::config::When;
use crate::emulate::broker::Message;

/// Random draws of the relays.
const RELAY_DELAY: u64 = 0xE5;

/// The load of a service's hosts as a broker delivering to it sees it.
pub struct Gauge(Vec<Arc<Host>>);

impl Gauge {
    /// Workers taken (busy, or promised to a request waiting in a room)
    /// and workers there are at `now` (brownouts taken off), over the hosts.
    pub fn taken(&self, now: Nanos) -> (usize, u32) {
        let (mut taken, mut workers) = (0, 0);
        for h in &self.0 {
            let d = h.door();
            taken += d.busy() as usize + d.waiting();
            workers += h.workers_now(now);
        }
        (taken, workers)
    }
}

impl Hosts {
    /// Whether no host holds a request (none in service, none waiting).
    pub fn idle(&self) -> bool {
        self.all.iter().all(|h| {
            let d = h.door();
            d.busy() == 0 && d.waiting() == 0
        })
    }

    /// The gauge of service `svc`'s hosts.
    pub fn gauge(&self, svc: usize) -> Gauge {
        Gauge(self.all.iter().filter(|h| h.svc == svc).cloned().collect())
    }
}

impl Host {
    /// The outbox events of request `a`, which has just committed.
    pub(super) fn relay_outbox(&self, a: &Arrival) {
        let spec = &self.s.services[self.svc];
        let Some(net) = self.net.get() else { return };
        for (i, c) in spec.calls.iter().enumerate().filter(|(_, c)| c.when == When::Outbox) {
            let now = self.rec.clock.now();
            let body = Body {
                key: self.downstream_key(c.key, a, c.edge),
                fingerprint: hash_words(a.body.fingerprint, &[c.edge as u64]),
            };
            let message =
                Message { intent: a.intent, edge: c.edge, operation: c.operation.unwrap_or(a.operation), body };
            let delay = c.relay_delay.sample(&self.rng, &[RELAY_DELAY, a.draw, i as u64]);
            let deadline = (c.policy.deadline != crate::engine::NEVER).then(|| now.saturating_add(c.policy.deadline));
            self.rec.lock().relay_started(a.intent);
            let (net, rec, svc, via) = (net.clone(), self.rec.clone(), self.svc, c.via);
            let reconciling = !spec.reconcilers.is_empty();
            tokio::spawn(async move {
                rec.sleep(delay).await;
                let ok = match via {
                    Some(q) => {
                        net.publish(q, message);
                        true
                    }
                    None => {
                        let Message { intent, edge, operation, body } = message;
                        net.downstream(edge, intent, operation, body, deadline).await == Outcome::Ok
                    }
                };
                let now = rec.clock.now();
                let mut g = rec.lock();
                if !ok {
                    g.lose(message.intent);
                    if reconciling {
                        let Message { intent, edge, operation, body } = message;
                        g.unresolved(svc, now, Unresolved { intent, edge, operation, body });
                    }
                }
                g.relay_done();
            });
        }
    }
}
