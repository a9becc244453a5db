//! `[[faults]]`: kinds, windows and targets.

use super::dist::Dists;
use super::{V, first_extra};
use crate::config::raw::FaultRaw;
use crate::config::scenario::{EdgeSpec, FaultKind, FaultSpec, ServiceSpec};
use crate::engine::NEVER;
use crate::error::InputResult;
use std::collections::HashSet;

/// Validates the fault timeline.
pub fn faults(v: &V, raw: &[FaultRaw], services: &[ServiceSpec], edges: &[EdgeSpec]) -> InputResult<Vec<FaultSpec>> {
    let mut faults = Vec::new();
    let mut names = HashSet::new();
    for (i, fr) in raw.iter().enumerate() {
        let label = fr.name.clone().unwrap_or_else(|| i.to_string());
        let field = format!("faults.{label}");
        let f = |n: &str| format!("{field}.{n}");
        if let Some(n) = &fr.name {
            v.name(&f("name"), n)?;
        }
        if !names.insert(label.clone()) {
            return Err(v.err(&f("name"), "fault names must be unique"));
        }
        let start = v.dur(&f("start"), fr.start.as_ref(), 0)?;
        let length = v.dur_or_never(&f("duration"), fr.duration.as_ref(), NEVER)?;
        let present = [
            ("capacity", fr.capacity.is_some()),
            ("status", fr.status.is_some()),
            ("probability", fr.probability.is_some()),
            ("retry_after", fr.retry_after.is_some()),
            ("extra", fr.extra.is_some()),
            ("restart_after", fr.restart_after.is_some()),
            ("factor", fr.factor.is_some()),
        ];
        let takes = |allowed: &[&str]| -> InputResult<()> {
            match first_extra(&present, allowed) {
                Some(extra) => Err(v.err(
                    &f(extra),
                    format!(
                        "not a field of a {} fault (it takes {}, start{})",
                        fr.kind,
                        allowed.join(", "),
                        if fr.kind == "crash" || fr.kind == "cache_flush" { "" } else { ", duration" }
                    ),
                )),
                None => Ok(()),
            }
        };
        let kind = match fr.kind.as_str() {
            "error" => {
                takes(&["status", "probability", "retry_after"])?;
                let retry_after = fr.retry_after.as_ref().map(|s| v.dur(&f("retry_after"), Some(s), 0)).transpose()?;
                FaultKind::Error {
                    status: v.status(&f("status"), fr.status.as_ref(), 503)?,
                    probability: v.prob(&f("probability"), fr.probability, 1.0)?,
                    retry_after,
                }
            }
            "response_loss" => {
                takes(&["probability"])?;
                FaultKind::ResponseLoss { probability: v.prob(&f("probability"), fr.probability, 1.0)? }
            }
            "request_loss" => {
                takes(&["probability"])?;
                FaultKind::RequestLoss { probability: v.prob(&f("probability"), fr.probability, 1.0)? }
            }
            "reset" => {
                takes(&["probability"])?;
                FaultKind::Reset { probability: v.prob(&f("probability"), fr.probability, 1.0)? }
            }
            "crash" => {
                takes(&["restart_after"])?;
                if fr.duration.is_some() {
                    return Err(v.err(
                        &f("duration"),
                        "a crash happens at `start`; say how long the service is down with `restart_after`",
                    ));
                }
                let down = v.positive_dur(&f("restart_after"), fr.restart_after.as_ref(), 0).map_err(|_| {
                    v.err(&f("restart_after"), "required: how long the service is down, such as \"5s\"")
                })?;
                let (target, host) = target_of(v, services, &fr.target, &f("target"))?;
                faults.push(FaultSpec {
                    name: label,
                    target,
                    host,
                    start,
                    end: start.saturating_add(down),
                    kind: FaultKind::Crash,
                });
                continue;
            }
            "outage" => {
                takes(&[])?;
                FaultKind::Outage
            }
            "brownout" => {
                takes(&["capacity"])?;
                let capacity = fr
                    .capacity
                    .ok_or_else(|| v.err(&f("capacity"), "required: the fraction of workers left, from 0 to 1"))?;
                if !(0.0..=1.0).contains(&capacity) {
                    return Err(v.err(&f("capacity"), format!("must be a fraction from 0 to 1, got {capacity}")));
                }
                FaultKind::Brownout { capacity }
            }
            "latency" => {
                takes(&["extra"])?;
                let extra = fr.extra.as_ref().ok_or_else(|| {
                    v.err(&f("extra"), "required: a distribution such as { dist = \"exp\", mean = \"200ms\" }")
                })?;
                FaultKind::Latency { extra: v.dist(&f("extra"), extra)? }
            }
            "partition" => {
                takes(&[])?;
                let edge = edges.iter().position(|e| e.name == fr.target).ok_or_else(|| {
                    let names: Vec<&str> = edges.iter().map(|e| e.name.as_str()).collect();
                    v.err(
                        &f("target"),
                        format!(
                            "a partition targets an edge \"caller->callee\"; no edge \"{}\" (edges: {})",
                            fr.target,
                            names.join(", ")
                        ),
                    )
                })?;
                faults.push(FaultSpec {
                    name: label,
                    target: edges[edge].to,
                    host: None,
                    start,
                    end: start.saturating_add(length),
                    kind: FaultKind::Partition { edge },
                });
                continue;
            }
            "slowdown" => {
                takes(&["factor"])?;
                let factor = fr.factor.ok_or_else(|| {
                    v.err(&f("factor"), "required: how many times longer every service time is, such as 4.0")
                })?;
                if !(factor.is_finite() && factor > 0.0 && factor <= 1e6) {
                    return Err(v.err(&f("factor"), format!("must be a number above 0 (at most 1e6), got {factor}")));
                }
                FaultKind::Slowdown { factor }
            }
            "host_down" => {
                takes(&[])?;
                FaultKind::HostDown
            }
            "cache_flush" => {
                takes(&[])?;
                if fr.duration.is_some() {
                    return Err(v.err(&f("duration"), "a cache flush happens at `start`: it has no duration"));
                }
                let (target, host) = target_of(v, services, &fr.target, &f("target"))?;
                if host.is_some() {
                    return Err(v.err(
                        &f("target"),
                        "a cache is shared by every host of its service: target the service, without [host]",
                    ));
                }
                if services[target].calls.iter().all(|c| c.cache.is_none()) {
                    return Err(v.err(
                        &f("target"),
                        format!(
                            "\"{}\" has no call with a `cache`: cache_flush targets the calling service",
                            services[target].name
                        ),
                    ));
                }
                faults.push(FaultSpec { name: label, target, host, start, end: start, kind: FaultKind::CacheFlush });
                continue;
            }
            other => {
                return Err(v.err(
                    &f("kind"),
                    format!("unknown fault kind \"{other}\": allowed are error, response_loss, request_loss, reset, outage, brownout, latency, crash, partition, slowdown, host_down, cache_flush"),
                ));
            }
        };
        let (target, host) = target_of(v, services, &fr.target, &f("target"))?;
        faults.push(FaultSpec { name: label, target, host, start, end: start.saturating_add(length), kind });
    }
    Ok(faults)
}

/// A fault's target: a service (`"api"`) or one of its hosts (`"api[2]"`).
fn target_of(v: &V, services: &[ServiceSpec], name: &str, field: &str) -> InputResult<(usize, Option<u32>)> {
    let (service, host) = match name.strip_suffix(']').and_then(|t| t.split_once('[')) {
        Some((service, index)) => {
            // Digits only: no spaces or signs (`api[ 0]`, `api[+0]` are typos).
            let h = Some(index)
                .filter(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|i| i.parse::<u32>().ok())
                .ok_or_else(|| {
                    v.err(
                        field,
                        format!("\"{name}\": a host is addressed as \"service[index]\", index from 0 in digits only"),
                    )
                })?;
            (service, Some(h))
        }
        None => (name, None),
    };
    let target = services.iter().position(|s| s.name == service).ok_or_else(|| {
        let names: Vec<&str> = services.iter().map(|s| s.name.as_str()).collect();
        v.err(field, format!("no service named \"{service}\" (services: {})", names.join(", ")))
    })?;
    if let Some(h) = host {
        let replicas = services[target].hosts.replicas;
        if h >= replicas {
            return Err(v.err(
                field,
                format!(
                    "\"{name}\": \"{service}\" has {replicas} host(s), addressed {service}[0] to {service}[{}]",
                    replicas - 1
                ),
            ));
        }
    }
    Ok((target, host))
}
