//! Look-aside caches in front of a service's calls: each request asks for a
//! key drawn from a Zipf population; a hit skips the call, a successful
//! miss fills the entry for `ttl`. The cache starts warm (every entry
//! present, expiring uniformly over the first `ttl`), and a `cache_flush`
//! fault empties it, so every miss goes downstream until it refills.
//!
//! Concurrent misses on one key all go downstream (no request coalescing).

use super::*;
use crate::config::CacheSpec;
use rand_distr::Distribution;

/// One cache: an expiry time per key.
#[derive(Clone)]
pub(crate) struct Cache {
    spec: CacheSpec,
    expires: Vec<Nanos>,
    zipf: Option<rand_distr::Zipf<f64>>,
}

impl Cache {
    /// A warm cache: key k expires at a keyed uniform time in [0, ttl).
    pub(crate) fn warm(spec: CacheSpec, rng: &KeyedRandom, key: &[u64]) -> Self {
        let base = hash_words(0, key);
        let ttl = if spec.ttl == NEVER { NEVER } else { spec.ttl };
        let expires = (0..spec.keys)
            .map(|k| {
                if ttl == NEVER {
                    NEVER
                } else {
                    (rng.unit(&[purpose::CACHE_WARM, base, k as u64]) * ttl as f64) as Nanos
                }
            })
            .collect();
        let zipf = (spec.zipf > 0.0).then(|| rand_distr::Zipf::new(spec.keys as f64, spec.zipf).expect("validated"));
        Self { spec, expires, zipf }
    }

    /// The key asked for by the draw stream `stream`.
    pub(crate) fn key(&self, stream: &mut Stream) -> u32 {
        let n = self.spec.keys;
        match &self.zipf {
            // Zipf ranks are 1..=n.
            Some(z) => (z.sample(stream) as u32).clamp(1, n) - 1,
            None => ((stream.unit() * n as f64) as u32).min(n - 1),
        }
    }

    /// Whether `key` is present at `now`.
    pub(crate) fn hit(&self, key: u32, now: Nanos) -> bool {
        now < self.expires[key as usize]
    }

    /// A successful answer fills `key` until `now + ttl`.
    pub(crate) fn fill(&mut self, key: u32, now: Nanos) {
        self.expires[key as usize] = now.saturating_add(self.spec.ttl);
    }

    /// Empties the cache.
    pub(crate) fn flush(&mut self) {
        self.expires.fill(0);
    }
}

impl World<'_> {
    /// Looks up the cache before call `index` of request `id`: `None` on a
    /// hit (the call is skipped), else the key a successful answer fills
    /// ([`NO_FILL`] without a cache).
    pub(super) fn cache_lookup(&mut self, id: Id, index: usize) -> Option<u32> {
        let req = self.requests.get(id).expect("live request");
        let svc = req.service as usize;
        let Some(cache) = self.services[svc].caches[index].as_ref() else {
            return Some(NO_FILL);
        };
        // The item is a property of the intent: its retries ask for the same key.
        let it = self.intents.get(req.intent).expect("live intent");
        let mut stream = self.rng.stream(&[purpose::CACHE_KEY, it.client as u64, it.seq, svc as u64, index as u64]);
        let key = cache.key(&mut stream);
        let tally = it.tally;
        let hit = cache.hit(key, self.q.now());
        let counts = self.m.counts(tally);
        counts.cache_lookups[svc] += 1;
        if hit {
            counts.cache_hits[svc] += 1;
        }
        if hit { None } else { Some(key) }
    }

    /// A call that missed the cache succeeded: its entry fills.
    pub(super) fn cache_fill(&mut self, parent: Id, edge: usize, key: u32) {
        let Caller::Service { service, index } = self.s.edges[edge].caller else { return };
        let now = self.q.now();
        if self.requests.get(parent).is_some()
            && let Some(c) = self.services[service].caches[index].as_mut()
        {
            c.fill(key, now);
        }
    }

    /// A `cache_flush` fault: the target's caches empty.
    pub(super) fn on_flush(&mut self, fault: usize) {
        let svc = self.s.faults[fault].target;
        for c in self.services[svc].caches.iter_mut().flatten() {
            c.flush();
        }
    }
}
