//! How long things can take, for the ledger rules: how long a key can
//! still arrive after its intent's first attempt, and the slowest execution
//! at a service.

use super::graph::Keyed;
use super::*;
use crate::config::{Caller, KeyMode, When};
use crate::engine::from_secs_f64;
use crate::model::Dist;

impl Graph<'_> {
    /// Whether service `svc` can answer with a Retry-After (overload,
    /// rate limit, or an `error` fault that sets one).
    pub(super) fn sends_retry_after(&self, svc: usize) -> bool {
        let spec = &self.s.services[svc];
        spec.overload.retry_after.is_some()
            || spec.rate_limit.is_some_and(|r| r.retry_after.is_some())
            || self.s.faults.iter().any(|f| {
                f.target == svc && matches!(f.kind, crate::config::FaultKind::Error { retry_after: Some(_), .. })
            })
    }

    /// How long after the first attempt of an intent on edge `e` the same
    /// intent (and so the same forwarded or derived key) can still arrive
    /// on `e`: its own retry window plus that of the layers above that
    /// resend the key. `None`: unbounded.
    pub(super) fn span(&self, e: usize) -> Option<Nanos> {
        let p = self.policy(e);
        let own = if p.max_attempts > 1 { window(p, self.sends_retry_after(self.s.edges[e].to))? } else { 0 };
        let up = match self.s.edges[e].caller {
            Caller::Client(_) => 0,
            Caller::Service { service, index } => {
                let mode = self.s.services[service].calls[index].key;
                let mut up = 0;
                if mode != KeyMode::None {
                    for &u in &self.incoming[service] {
                        if mode == KeyMode::Forward && self.keyed(u) == Keyed::Never {
                            continue;
                        }
                        up = up.max(self.span(u)?);
                    }
                }
                up
            }
        };
        Some(own.saturating_add(up))
    }

    /// The slowest execution at service `svc` from placeholder to commit:
    /// the 99.9th percentile of its service time plus the longest each
    /// `before_commit` call can take. `None`: unbounded.
    pub(super) fn slowest(&self, svc: usize) -> Option<Nanos> {
        let spec = &self.s.services[svc];
        let mut total = quantile(&spec.service_time, 0.999);
        for c in spec.calls.iter().filter(|c| c.when == When::BeforeCommit) {
            let p = &c.policy;
            let bound = if p.deadline != NEVER || p.per_try_timeout != NEVER {
                p.retry_window().filter(|&w| w != NEVER)?
            } else {
                // No timeout: each attempt lasts as long as the callee takes.
                let latency = quantile(&self.s.edges[c.edge].latency, 0.999).saturating_mul(2);
                let one = self.slowest(c.to)?.saturating_add(latency);
                let mut t = one.saturating_mul(p.max_attempts as u64);
                for n in 1..p.max_attempts {
                    t = t.saturating_add(p.backoff.max_delay(n));
                }
                t
            };
            total = total.saturating_add(bound);
        }
        (total != NEVER).then_some(total)
    }
}

/// How long after its first attempt an intent can still be retried under
/// `p` (the deadline; else attempts x per-try timeout plus the longest
/// backoffs and, when the callee can send one, Retry-After waits).
/// `None`: unbounded.
pub(super) fn window(p: &Policy, retry_after: bool) -> Option<Nanos> {
    if p.deadline != NEVER {
        return Some(p.deadline);
    }
    let base = p.retry_window().filter(|&w| w != NEVER)?;
    if retry_after && p.respect_retry_after && p.max_attempts > 1 {
        let m = p.max_retry_after.filter(|&m| m != NEVER)?;
        return Some(base.saturating_add(m.saturating_mul(p.max_attempts as u64 - 1)));
    }
    Some(base)
}

/// The `q` quantile of a duration distribution.
pub(super) fn quantile(d: &Dist, q: f64) -> Nanos {
    use statrs::distribution::ContinuousCDF;
    let secs = match *d {
        Dist::Const(v) => return v,
        Dist::Exp { mean } => -mean * (1.0 - q).ln(),
        Dist::Uniform { max, .. } => max,
        Dist::LogNormal { mu, sigma } => {
            let z = statrs::distribution::Normal::new(0.0, 1.0).map(|n| n.inverse_cdf(q)).unwrap_or(3.09);
            (mu + sigma * z).exp()
        }
        Dist::Gamma { shape, scale } => statrs::distribution::Gamma::new(shape, 1.0 / scale)
            .map(|g| g.inverse_cdf(q))
            .unwrap_or(shape * scale * 5.0),
        Dist::Pareto { scale, shape } => scale * (1.0 - q).powf(-1.0 / shape),
        // An upper bound: at the largest part quantile every part's CDF is at least q.
        Dist::Mixture(ref m) => return m.parts().map(|(_, p)| quantile(p, q)).max().unwrap_or(0),
        Dist::Empirical(ref e) => e.quantile(q),
    };
    from_secs_f64(secs.max(0.0))
}
