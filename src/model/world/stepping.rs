//! A run advanced piece by piece and looked at in between: what the
//! metastability commands (`frontier`, `collapse-rate`) need to stop a run
//! once its verdict is known, and to branch copies of a run from a state
//! nearer collapse (multilevel splitting).
//!
//! A world between two calls of [`World::advance_to`] is at an event
//! boundary: every event due so far is processed and nothing is half done,
//! so a clone of it is a faithful copy of the run at that instant.
//! [`World::branch`] clones it and re-keys its random numbers, so that the
//! copy's future is independent of the original's (every draw is keyed,
//! DESIGN §4: changing the run's key changes every draw made from then on,
//! and nothing else).

use super::{World, purpose};
use crate::config::Scenario;
use crate::engine::Nanos;
use crate::engine::random::{KeyedRandom, hash_words};
use crate::metrics::timeseries::TimeSeries;

impl<'s> World<'s> {
    /// The time of the last event processed.
    pub fn now(&self) -> Nanos {
        self.q.now()
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.q.events_processed()
    }

    /// The time series so far (bins up to the last event).
    pub fn series(&self) -> &TimeSeries {
        &self.m.series
    }

    /// Requests waiting (not in service) at every host of service `service` now.
    pub fn queue_len(&self, service: usize) -> usize {
        self.hosts.iter().filter(|h| h.service as usize == service).map(|h| h.queue.len()).sum()
    }

    /// A copy of this run whose random numbers from now on are keyed by
    /// `branch` as well: the same past, an independent future. Different
    /// `branch` values give different futures; the same one the same.
    pub fn branch(&self, branch: u64) -> World<'s> {
        let mut copy = self.clone();
        copy.rng = KeyedRandom::from_seed(hash_words(self.rng.seed(), &[0xB4A2C4, branch]));
        for (c, client) in copy.clients.iter_mut().enumerate() {
            client.arrivals = copy.rng.stream(&[purpose::ARRIVAL, c as u64, client.next_seq]);
        }
        copy
    }

    /// A copy of this run that goes on under `s`: a scenario of the same
    /// shape (clients, services, calls) whose policies or service settings
    /// differ (the causal anatomy switches one mechanism off this way). The
    /// random numbers stay the same; a budget or breaker that `s` adds to a
    /// client starts fresh.
    pub fn rebind<'t>(&self, s: &'t Scenario) -> World<'t> {
        let c = self.clone();
        let mut w = World {
            s,
            rng: c.rng,
            q: c.q,
            intents: c.intents,
            calls: c.calls,
            actions: Vec::new(),
            requests: c.requests,
            writes: c.writes,
            next_unresolved: c.next_unresolved,
            messages: c.messages,
            queues: c.queues,
            consumers: c.consumers,
            services: c.services,
            hosts: c.hosts,
            clients: c.clients,
            edges: c.edges,
            m: c.m,
            options: c.options,
            slowdowns: c.slowdowns,
            brownouts: c.brownouts,
            progress_reported: c.progress_reported,
            immediate: c.immediate,
        };
        for (state, spec) in w.clients.iter_mut().zip(&s.clients) {
            state.guards.add_missing(spec);
        }
        w
    }
}
