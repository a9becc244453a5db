//! A service's hosts and server-side defences (`replicas`, `balancer`,
//! `retry_other_host`, `outlier_detection`, `concurrency_limit`,
//! `shed_by_priority`), client `priority`, and call caches.

use super::{V, first_extra};
use crate::config::raw::{CacheRaw, LimitRaw, ServiceRaw};
use crate::config::scenario::{Balancer, CacheSpec, HostsSpec, LimitKind, LimitSpec, OutlierSpec, Priority};
use crate::error::InputResult;

/// The most hosts a service may have.
pub const MAX_REPLICAS: i64 = 10_000;

/// The most keys a cache may have (each key keeps an expiry time).
pub const MAX_CACHE_KEYS: i64 = 10_000_000;

/// Validates the host fields of service `s` (its field path is `field`).
pub fn hosts(v: &V, s: &ServiceRaw, field: &str) -> InputResult<HostsSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let replicas = v.int_in(&f("replicas"), s.replicas, 1, 1, MAX_REPLICAS)? as u32;
    let balancer = match s.balancer.as_deref().unwrap_or("round_robin") {
        "round_robin" => Balancer::RoundRobin,
        "random" => Balancer::Random,
        "least_request" => Balancer::LeastRequest,
        "peak_ewma" => Balancer::PeakEwma,
        other => {
            return Err(v.err(
                &f("balancer"),
                format!("unknown balancer \"{other}\": allowed are round_robin, random, least_request, peak_ewma"),
            ));
        }
    };
    /// The shortest outlier detection interval: each one is an event.
    const MIN_OUTLIER_INTERVAL: u64 = 1_000_000;
    let outlier = match &s.outlier_detection {
        None => None,
        Some(o) => {
            let g = |n: &str| f(&format!("outlier_detection.{n}"));
            let consecutive_5xx = v.int_in(&g("consecutive_5xx"), o.consecutive_5xx, 5, 1, 1_000_000)? as u32;
            let interval = v.positive_dur(&g("interval"), o.interval.as_ref(), 10_000_000_000)?;
            if interval < MIN_OUTLIER_INTERVAL {
                return Err(v.err(
                    &g("interval"),
                    "must be at least 1ms: a sweep runs every interval for the whole run (Envoy's default is 10s)",
                ));
            }
            let base_ejection = v.positive_dur(&g("base_ejection"), o.base_ejection.as_ref(), 30_000_000_000)?;
            let max_ejection =
                v.positive_dur(&g("max_ejection"), o.max_ejection.as_ref(), base_ejection.max(300_000_000_000))?;
            if max_ejection < base_ejection {
                return Err(v.err(&g("max_ejection"), "must be at least `base_ejection` (as in Envoy)"));
            }
            let pct = o.max_ejection_percent.unwrap_or(10.0);
            if !(0.0..=100.0).contains(&pct) {
                return Err(v.err(&g("max_ejection_percent"), format!("must be a percentage from 0 to 100, got {pct}")));
            }
            Some(OutlierSpec { consecutive_5xx, interval, base_ejection, max_ejection, max_ejection_percent: pct })
        }
    };
    let concurrency_limit = s.concurrency_limit.as_ref().map(|l| limit(v, l, &f("concurrency_limit"))).transpose()?;
    let mut shed_above = [f64::INFINITY; 3];
    if let Some(sh) = &s.shed_by_priority {
        for (p, value) in
            [(Priority::Critical, sh.critical), (Priority::Degraded, sh.degraded), (Priority::Sheddable, sh.sheddable)]
        {
            if let Some(x) = value {
                if !(0.0..=1.0).contains(&x) {
                    return Err(v.err(
                        &f(&format!("shed_by_priority.{}", p.label())),
                        format!("must be a share of busy workers from 0 to 1, got {x}"),
                    ));
                }
                shed_above[p as usize] = x;
            }
        }
    }
    Ok(HostsSpec {
        replicas,
        balancer,
        retry_other_host: s.retry_other_host.unwrap_or(false),
        outlier,
        concurrency_limit,
        shed_above,
    })
}

/// `concurrency_limit = { kind, … }` with each kind's defaults from Netflix
/// concurrency-limits: aimd initial 10, backoff_ratio 0.9, timeout 5s;
/// vegas initial 20, smoothing 1.0, probe_multiplier 30; gradient2
/// initial 20, min 20, max 200, smoothing 0.2, long_window 600, queue_size 4.
fn limit(v: &V, l: &LimitRaw, field: &str) -> InputResult<LimitSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let kind_name = l.kind.as_deref().ok_or_else(|| v.err(&f("kind"), "required: aimd, vegas or gradient2"))?;
    let present = [
        ("backoff_ratio", l.backoff_ratio.is_some()),
        ("timeout", l.timeout.is_some()),
        ("smoothing", l.smoothing.is_some()),
        ("probe_multiplier", l.probe_multiplier.is_some()),
        ("long_window", l.long_window.is_some()),
        ("queue_size", l.queue_size.is_some()),
    ];
    let takes: &[&str] = match kind_name {
        "aimd" => &["backoff_ratio", "timeout"],
        "vegas" => &["smoothing", "probe_multiplier"],
        "gradient2" => &["smoothing", "long_window", "queue_size"],
        other => {
            return Err(v.err(
                &f("kind"),
                format!("unknown concurrency limit \"{other}\": allowed are aimd, vegas, gradient2"),
            ));
        }
    };
    if let Some(extra) = first_extra(&present, takes) {
        return Err(v.err(
            &f(extra),
            format!("not a field of kind = \"{kind_name}\" (it takes initial, min, max, {})", takes.join(", ")),
        ));
    }
    let smoothing = |default: f64| -> InputResult<f64> {
        let x = l.smoothing.unwrap_or(default);
        if !(x > 0.0 && x <= 1.0) {
            return Err(v.err(&f("smoothing"), format!("must be in (0, 1], got {x}")));
        }
        Ok(x)
    };
    let (kind, initial, min, max) = match kind_name {
        "aimd" => {
            let backoff_ratio = l.backoff_ratio.unwrap_or(0.9);
            if !(0.5..1.0).contains(&backoff_ratio) {
                return Err(
                    v.err(&f("backoff_ratio"), format!("must be in [0.5, 1) as in AIMDLimit, got {backoff_ratio}"))
                );
            }
            let timeout = v.positive_dur(&f("timeout"), l.timeout.as_ref(), 5_000_000_000)?;
            (LimitKind::Aimd { backoff_ratio, timeout }, 10, 1, 1000)
        }
        "vegas" => {
            let probe_multiplier = v.int_in(&f("probe_multiplier"), l.probe_multiplier, 30, 1, 1_000_000)? as u32;
            (LimitKind::Vegas { smoothing: smoothing(1.0)?, probe_multiplier }, 20, 1, 1000)
        }
        _ => {
            let long_window = v.int_in(&f("long_window"), l.long_window, 600, 1, 1_000_000)? as u32;
            let queue_size = v.int_in(&f("queue_size"), l.queue_size, 4, 0, 1_000_000)? as f64;
            (LimitKind::Gradient2 { smoothing: smoothing(0.2)?, long_window, queue_size }, 20, 20, 200)
        }
    };
    let min = v.int_in(&f("min"), l.min, min, 1, 10_000_000)?;
    let max = v.int_in(&f("max"), l.max, max.max(min), min, 10_000_000)?;
    let initial = v.int_in(&f("initial"), l.initial, initial.clamp(min, max), min, max)?;
    Ok(LimitSpec { kind, initial: initial as f64, min: min as f64, max: max as f64 })
}

/// A client's `priority`.
pub fn priority(v: &V, p: Option<&str>, field: &str) -> InputResult<Priority> {
    match p.unwrap_or("critical") {
        "critical" => Ok(Priority::Critical),
        "degraded" => Ok(Priority::Degraded),
        "sheddable" => Ok(Priority::Sheddable),
        other => Err(v.err(field, format!("unknown priority \"{other}\": allowed are critical, degraded, sheddable"))),
    }
}

/// A call's `cache = { keys, zipf, ttl }`.
pub fn cache(v: &V, c: &CacheRaw, field: &str) -> InputResult<CacheSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let keys = c.keys.ok_or_else(|| v.err(&f("keys"), "required: how many distinct keys the cache is asked for"))?;
    let keys = v.int_in(&f("keys"), Some(keys), 1, 1, MAX_CACHE_KEYS)? as u32;
    let zipf = c.zipf.unwrap_or(1.0);
    if !(zipf.is_finite() && zipf >= 0.0) {
        return Err(v.err(&f("zipf"), format!("must be a Zipf exponent of at least 0 (0 = uniform), got {zipf}")));
    }
    let ttl = v.positive_dur(&f("ttl"), c.ttl.as_ref(), 0).map_err(|_| match &c.ttl {
        None => v.err(&f("ttl"), "required: how long a filled entry stays, such as \"60s\""),
        Some(_) => v.err(&f("ttl"), "must be a duration longer than 0, such as \"60s\""),
    })?;
    Ok(CacheSpec { keys, zipf, ttl })
}
