//! The rules about hosts and caches: no-outlier-detection,
//! retry-same-host and cold-cache-overload.

use super::*;
use crate::config::{Caller, ClientMode};

impl Graph<'_> {
    /// Rules about services with replicas and caches in front of calls.
    pub(super) fn host_rules(&self, out: &mut Vec<Finding>) {
        for (si, svc) in self.s.services.iter().enumerate() {
            let at = format!("services.{}", svc.name);
            let replicas = svc.hosts.replicas;
            if replicas > 1 && svc.hosts.outlier.is_none() {
                out.push(self.on_experiment(
                    "no-outlier-detection",
                    format!("services.{}.outlier_detection", svc.name),
                    at.clone(),
                    format!(
                        "{} spreads requests over {replicas} hosts with {} and no outlier detection: a host that fails fast or never answers keeps its share of the traffic",
                        svc.name,
                        svc.hosts.balancer.label()
                    ),
                    "outlier_detection = { consecutive_5xx = 5, interval = \"10s\", base_ejection = \"30s\", max_ejection_percent = 50 }".into(),
                ));
            }
            if replicas > 1 && !svc.hosts.retry_other_host {
                for &e in &self.incoming[si] {
                    if self.policy(e).max_attempts > 1 {
                        out.push(self.on_experiment(
                            "retry-same-host",
                            format!("services.{}.retry_other_host", svc.name),
                            self.location(e),
                            format!(
                                "{} retries calls to {} without retry_other_host: a retry may land on the host that just failed it",
                                self.location(e),
                                svc.name
                            ),
                            format!("retry_other_host = true in services.{}", svc.name),
                        ));
                    }
                }
            }
            for c in svc.calls.iter().filter(|c| c.cache.is_some()) {
                let callee = &self.s.services[c.to];
                let rate = self.request_rate(si);
                let capacity = callee.workers as f64 * callee.hosts.replicas as f64 / callee.service_time.mean_secs();
                if rate > capacity {
                    out.push(self.on_experiment(
                        "cold-cache-overload",
                        format!("services.{}.calls.{}.cache", svc.name, callee.name),
                        format!("services.{}.calls.{}", svc.name, callee.name),
                        format!(
                            "with a cold cache every one of {}'s {:.0} requests/s goes to {}, which serves at most {:.0}/s: a flush or a cold start overloads it, and retries can keep it there",
                            svc.name, rate, callee.name, capacity
                        ),
                        format!(
                            "give {} capacity for the full miss load, or shed or rate-limit the misses (rate_limit on {})",
                            callee.name, callee.name
                        ),
                    ));
                }
            }
        }
    }

    /// First attempts per second reaching service `svc` at the clients' peak
    /// rates (closed clients at count / mean think time; bursts not counted).
    fn request_rate(&self, svc: usize) -> f64 {
        let mut rate = 0.0;
        for &e in &self.incoming[svc] {
            rate += match self.s.edges[e].caller {
                Caller::Client(c) => {
                    let spec = &self.s.clients[c];
                    match &spec.mode {
                        ClientMode::Open(schedule) => {
                            schedule.0.iter().map(|&(_, r)| r).fold(0.0, f64::max) * self.s.load_scale
                        }
                        ClientMode::Closed { think_time } => spec.count as f64 / think_time.mean_secs().max(1e-9),
                        ClientMode::Burst { .. } => 0.0,
                    }
                }
                // One call per request of the caller (outbox relays: one per commit);
                // calls behind a cache count as all missing (the cold case).
                Caller::Service { service, .. } => self.request_rate(service),
            };
        }
        rate
    }
}
