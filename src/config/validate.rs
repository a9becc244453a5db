//! Turns the deserialized files into typed, checked values. Every error
//! names the file, the field path and what is allowed.

mod calls;
mod dist;
mod faults;
mod hosts;
mod queues;
mod reconcilers;

pub use retrysim_policy::validate::policy;

use super::raw::*;
use super::scenario::*;
use super::units::{parse_duration, parse_rate};
use crate::engine::{NEVER, Nanos};
use crate::error::{InputError, InputResult};
use crate::model::Dist;
use dist::Dists;
use retrysim_policy::validate::{V, first_extra};
use std::collections::BTreeMap;

/// The most side-effect kinds (`commits` names) an experiment may use.
pub const MAX_EFFECT_KINDS: usize = 8;

/// Validates one variant's experiment document.
pub fn scenario(
    raw: &ExperimentRaw,
    variant: &str,
    file: &str,
    origins: &BTreeMap<String, String>,
) -> InputResult<Scenario> {
    let v = V { file };
    let e = &raw.experiment;
    let duration = v.positive_dur("experiment.duration", e.duration.as_ref(), 0).map_err(|_| match &e.duration {
        None => v.err("experiment.duration", "required: how long intents arrive, such as \"60s\""),
        Some(s) => {
            v.err("experiment.duration", parse_duration(s).err().unwrap_or_else(|| "must be longer than 0".into()))
        }
    })?;
    if duration == NEVER {
        return Err(v.err("experiment.duration", "must be finite"));
    }
    let warmup = v.dur("experiment.warmup", e.warmup.as_ref(), 0)?;
    if warmup >= duration {
        return Err(v.err("experiment.warmup", "must be shorter than `duration`"));
    }
    let seed = e.seed.unwrap_or(1);
    if seed < 0 {
        return Err(v.err("experiment.seed", "must be a non-negative integer"));
    }
    let replications = v.int_in("experiment.replications", e.replications, 5, 1, 100_000)? as u32;
    let bin = v.positive_dur("experiment.bin", e.bin.as_ref(), 1_000_000_000)?;
    if duration / bin > 1_000_000 {
        return Err(v.err("experiment.bin", "gives more than a million bins over `duration`: use a coarser bin"));
    }
    let load_scale = e.load_scale.unwrap_or(1.0);
    if !(load_scale.is_finite() && load_scale >= 0.0) {
        return Err(v.err("experiment.load_scale", format!("must be a non-negative number, got {load_scale}")));
    }
    let drain_limit = v.dur("experiment.drain_limit", e.drain_limit.as_ref(), 600_000_000_000)?;
    if drain_limit == NEVER {
        return Err(v.err("experiment.drain_limit", "must be finite"));
    }
    let show = e.show.clone().unwrap_or_default();
    for (i, m) in show.iter().enumerate() {
        if !crate::metrics::METRICS.contains(&m.as_str()) {
            return Err(v.err(
                &format!("experiment.show[{i}]"),
                format!("unknown metric \"{m}\"; allowed: {}", crate::metrics::METRICS.join(", ")),
            ));
        }
    }
    let equivalence = equivalence_margins(&v, e.equivalence.as_ref())?;

    let latency = match raw.network.as_ref().and_then(|n| n.latency.as_ref()) {
        Some(d) => v.dist("network.latency", d)?,
        None => Dist::Const(1_000_000),
    };

    let mut operations: Vec<OperationSpec> = Vec::new();
    for o in &raw.operations {
        let field = format!("operations.{}", o.name);
        v.name(&format!("{field}.name"), &o.name)?;
        if operations.iter().any(|x| x.name == o.name) {
            return Err(v.err(&format!("{field}.name"), "operation names must be unique"));
        }
        let status_time = v.positive_dur(&format!("{field}.status_time"), o.status_time.as_ref(), STATUS_TIME)?;
        operations.push(OperationSpec { name: o.name.clone(), idempotent: o.idempotent.unwrap_or(false), status_time });
    }

    if raw.services.is_empty() {
        return Err(InputError::field(file, "services", "an experiment needs at least one [[services]] table"));
    }
    let mut services: Vec<ServiceSpec> = Vec::new();
    let mut effect_kinds: Vec<String> = Vec::new();
    for s in &raw.services {
        services.push(service(&v, s, &services, &mut effect_kinds)?);
    }
    if effect_kinds.len() > MAX_EFFECT_KINDS {
        return Err(InputError::field(
            file,
            "services",
            format!("at most {MAX_EFFECT_KINDS} distinct `commits` kinds, got {}", effect_kinds.len()),
        ));
    }
    let service_index = |field: &str, name: &str| -> InputResult<usize> {
        services.iter().position(|s| s.name == name).ok_or_else(|| {
            let names: Vec<&str> = services.iter().map(|s| s.name.as_str()).collect();
            v.err(field, format!("no service named \"{name}\" (services: {})", names.join(", ")))
        })
    };

    if raw.clients.is_empty() {
        return Err(InputError::field(file, "clients", "an experiment needs at least one [[clients]] table"));
    }
    let mut clients: Vec<ClientSpec> = Vec::new();
    let mut edges: Vec<EdgeSpec> = Vec::new();
    for (ci, c) in raw.clients.iter().enumerate() {
        let field = format!("clients.{}", c.name);
        let f = |n: &str| format!("{field}.{n}");
        v.name(&f("name"), &c.name)?;
        if clients.iter().any(|x| x.name == c.name) {
            return Err(v.err(&f("name"), "client names must be unique"));
        }
        if services.iter().any(|x| x.name == c.name) {
            return Err(v.err(&f("name"), "a client may not have a service's name: edges are named caller->callee"));
        }
        let mode_name = c.mode.as_deref().unwrap_or("open");
        let takes: &[&str] = match mode_name {
            "open" => &["rate"],
            "closed" => &["think_time"],
            "burst" => &["at", "spread"],
            other => {
                return Err(v.err(&f("mode"), format!("unknown mode \"{other}\": allowed are open, closed, burst")));
            }
        };
        let present = [
            ("rate", c.rate.is_some()),
            ("think_time", c.think_time.is_some()),
            ("at", c.at.is_some()),
            ("spread", c.spread.is_some()),
        ];
        if let Some(extra) = first_extra(&present, takes) {
            return Err(v.err(&f(extra), format!("not used by mode = \"{mode_name}\" (it takes {})", takes.join(", "))));
        }
        let count = v.int_in(&f("count"), c.count, 1, 1, 100_000_000)? as u32;
        let mode = match mode_name {
            "open" => ClientMode::Open(RateSchedule(rate_schedule(&v, &f("rate"), c.rate.as_ref(), duration)?)),
            "closed" => match &c.think_time {
                Some(d) => {
                    let think_time = v.dist(&f("think_time"), d)?;
                    // A zero think time would let an instance whose breaker
                    // fails it fast start intents forever at one instant.
                    if think_time.mean_secs() <= 0.0 {
                        return Err(v.err(
                            &f("think_time"),
                            "must have a mean longer than 0 (a closed-loop user always pauses between intents)",
                        ));
                    }
                    ClientMode::Closed { think_time }
                }
                None => {
                    return Err(v.err(
                        &f("think_time"),
                        "required for mode = \"closed\": a distribution such as { dist = \"exp\", mean = \"2s\" }",
                    ));
                }
            },
            _ => {
                let at = v.dur(&f("at"), c.at.as_ref(), 0)?;
                let spread = v.dur(&f("spread"), c.spread.as_ref(), 0)?;
                if at.saturating_add(spread) > duration || at >= duration {
                    return Err(v.err(
                        &f("at"),
                        "the burst must arrive within the experiment's `duration` (at + spread <= duration)",
                    ));
                }
                ClientMode::Burst { at, spread }
            }
        };
        let target = service_index(&f("target"), &c.target)?;
        let operation = match &c.operation {
            Some(name) => operations.iter().position(|o| &o.name == name).ok_or_else(|| {
                let names: Vec<&str> = operations.iter().map(|o| o.name.as_str()).collect();
                v.err(
                    &f("operation"),
                    format!(
                        "no operation named \"{name}\" in [[operations]] (operations: {})",
                        if names.is_empty() { "none".into() } else { names.join(", ") }
                    ),
                )
            })?,
            None => {
                // An implicit, non-idempotent operation per client class.
                operations.push(OperationSpec {
                    name: format!("{}-request", c.name),
                    idempotent: false,
                    status_time: STATUS_TIME,
                });
                operations.len() - 1
            }
        };
        let key_reuse_rate = v.prob(&f("key_reuse_rate"), c.key_reuse_rate, 0.0)?;
        if key_reuse_rate > 0.0 && !c.idempotency_key.unwrap_or(false) {
            return Err(v.err(&f("key_reuse_rate"), "key reuse needs idempotency_key = true"));
        }
        let policy = match &c.policy {
            None => crate::policy::Policy::default(),
            Some(p) => {
                let origin = origins.get(&field);
                let prefix = format!("{field}.policy");
                policy(p, origin.map(String::as_str).unwrap_or(file), if origin.is_some() { "" } else { &prefix })?
            }
        };
        let spec = ClientSpec {
            name: c.name.clone(),
            count,
            mode,
            target,
            operation,
            policy,
            idempotency_key: c.idempotency_key.unwrap_or(false),
            key_reuse_rate,
            edge: edges.len(),
            priority: hosts::priority(&v, c.priority.as_deref(), &f("priority"))?,
            thinned_from: None,
        };
        if spec.stateful_instances() > 1_000_000 {
            return Err(v.err(&f("count"), format!("closed and burst clients, per-instance budgets and throttles (scope = \"client\") and circuit breakers keep state per instance: at most 1000000 instances, got {count}")));
        }
        let edge = edges.len();
        edges.push(EdgeSpec {
            name: format!("{}->{}", c.name, c.target),
            caller: Caller::Client(ci),
            to: target,
            latency: latency.clone(),
        });
        clients.push(spec);
        debug_assert_eq!(edge, ci);
    }

    let mut queues = queues::queues(&v, &raw.queues)?;
    calls::calls(&v, &raw.services, &mut services, &operations, &mut edges, origins, &latency, &mut queues)?;
    if let Some(q) = queues.iter().find(|q| q.consumer == usize::MAX) {
        return Err(v.err(
            &format!("queues.{}", q.name),
            "no call goes through this queue: give a [[services.calls]] `via` its name",
        ));
    }
    let faults = faults::faults(&v, &raw.faults, &services, &edges)?;
    let question = match e.question.as_deref().map(str::trim) {
        Some("") => return Err(v.err("experiment.question", "is empty; write the question the experiment answers")),
        Some(q) if q.chars().count() > 500 || q.contains('\n') => {
            return Err(v.err("experiment.question", "must be one line of at most 500 characters"));
        }
        q => q.map(str::to_string),
    };
    let answer = e.answer.clone().unwrap_or_default();
    let known = crate::output::answer::paths(&clients, &services, &edges, &effect_kinds);
    for (i, path) in answer.iter().enumerate() {
        if !known.contains(path) {
            return Err(v.err(
                &format!("experiment.answer[{i}]"),
                format!(
                    "unknown metric path \"{path}\"; allowed: {}",
                    crate::output::answer::allowed(&clients, &services, &edges, &effect_kinds)
                ),
            ));
        }
        if answer[..i].contains(path) {
            return Err(v.err(&format!("experiment.answer[{i}]"), format!("\"{path}\" is listed twice")));
        }
    }

    Ok(Scenario {
        variant: variant.to_string(),
        name: e.name.clone().unwrap_or_else(|| variant.to_string()),
        duration,
        warmup,
        seed: seed as u64,
        replications,
        bin,
        load_scale,
        drain_limit,
        show,
        question,
        answer,
        equivalence,
        clients,
        operations,
        services,
        faults,
        queues,
        edges,
        effect_kinds,
    })
}

/// `[experiment] equivalence`: `metric = "0.5pp"` (points of a share),
/// `"5%"` (of the baseline's mean) or a number in the metric's own unit.
fn equivalence_margins(v: &V, table: Option<&toml::Table>) -> InputResult<Vec<(String, Margin)>> {
    let mut out = Vec::new();
    for (metric, value) in table.into_iter().flatten() {
        let field = format!("experiment.equivalence.{metric}");
        if !crate::metrics::METRICS.contains(&metric.as_str()) {
            return Err(
                v.err(&field, format!("unknown metric \"{metric}\"; allowed: {}", crate::metrics::METRICS.join(", ")))
            );
        }
        let share = crate::analysis::stats::Range::of(metric) == crate::analysis::stats::Range::Share;
        let bad = |why: &str| {
            v.err(
                &field,
                format!(
                    "{why}; allowed: a positive number in the metric's unit, \"N%\" of the baseline's mean{}",
                    if share { ", or \"Npp\" (points)" } else { "" }
                ),
            )
        };
        let number = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0);
        let margin = match value {
            toml::Value::Float(x) if x.is_finite() && *x > 0.0 => Margin::Absolute(*x),
            toml::Value::Integer(n) if *n > 0 => Margin::Absolute(*n as f64),
            toml::Value::String(s) => {
                if let Some(p) = s.strip_suffix("pp") {
                    if !share {
                        return Err(bad(&format!("\"{s}\": points (pp) are for shares, and {metric} is not one")));
                    }
                    Margin::Absolute(
                        number(p).ok_or_else(|| bad(&format!("\"{s}\" is not a positive number of points")))? / 100.0,
                    )
                } else if let Some(p) = s.strip_suffix('%') {
                    Margin::Relative(
                        number(p).ok_or_else(|| bad(&format!("\"{s}\" is not a positive percentage")))? / 100.0,
                    )
                } else {
                    Margin::Absolute(number(s).ok_or_else(|| bad(&format!("\"{s}\" is not a margin")))?)
                }
            }
            other => return Err(bad(&format!("got {other}"))),
        };
        out.push((metric.clone(), margin));
    }
    Ok(out)
}

fn service(v: &V, s: &ServiceRaw, before: &[ServiceSpec], effect_kinds: &mut Vec<String>) -> InputResult<ServiceSpec> {
    let field = format!("services.{}", s.name);
    let f = |n: &str| format!("{field}.{n}");
    v.name(&f("name"), &s.name)?;
    if before.iter().any(|x| x.name == s.name) {
        return Err(v.err(&f("name"), "service names must be unique"));
    }
    let workers = v.int_in(&f("workers"), s.workers, 1, 1, 10_000_000)? as u32;
    let mut queue_limit = None;
    let mut discipline = Discipline::Fifo;
    if let Some(q) = &s.queue {
        if let Some(l) = q.limit {
            queue_limit = Some(v.int_in(&f("queue.limit"), Some(l), 0, 0, u32::MAX as i64)? as u32);
        }
        let name = q.discipline.as_deref().unwrap_or("fifo");
        discipline = match name {
            "fifo" => Discipline::Fifo,
            "lifo" => Discipline::Lifo,
            "codel" => Discipline::Codel {
                target: v.positive_dur(&f("queue.target"), q.target.as_ref(), 5_000_000)?,
                interval: v.positive_dur(&f("queue.interval"), q.interval.as_ref(), 100_000_000)?,
            },
            other => {
                return Err(v.err(
                    &f("queue.discipline"),
                    format!("unknown discipline \"{other}\": allowed are fifo, lifo, codel"),
                ));
            }
        };
        if name != "codel"
            && let Some(extra) = first_extra(&[("target", q.target.is_some()), ("interval", q.interval.is_some())], &[])
        {
            return Err(v.err(&f(&format!("queue.{extra}")), "only used with discipline = \"codel\""));
        }
    }
    let service_time = match &s.service_time {
        Some(d) => v.dist(&f("service_time"), &DistRaw { per_inflight: None, ..d.clone() })?,
        None => {
            return Err(
                v.err(&f("service_time"), "required: a distribution such as { dist = \"exp\", mean = \"10ms\" }")
            );
        }
    };
    let overload = match &s.overload {
        None => OverloadAnswer { status: 503, retry_after: None },
        Some(o) => OverloadAnswer {
            status: v.status(&f("overload.status"), o.status.as_ref(), 503)?,
            retry_after: o.retry_after.as_ref().map(|r| v.dur(&f("overload.retry_after"), Some(r), 0)).transpose()?,
        },
    };
    let rate_limit = match &s.rate_limit {
        None => None,
        Some(r) => {
            let rate = match &r.rate {
                Some(text) => parse_rate(text).map_err(|m| v.err(&f("rate_limit.rate"), m))?,
                None => return Err(v.err(&f("rate_limit.rate"), "required: a rate such as \"2000/s\"")),
            };
            let burst = r.burst.unwrap_or(1);
            if burst < 1 {
                return Err(v.err(&f("rate_limit.burst"), format!("must be at least 1, got {burst}")));
            }
            Some(RateLimit {
                rate,
                burst: burst as f64,
                status: v.status(&f("rate_limit.status"), r.status.as_ref(), 429)?,
                retry_after: r
                    .retry_after
                    .as_ref()
                    .map(|x| v.dur(&f("rate_limit.retry_after"), Some(x), 0))
                    .transpose()?,
            })
        }
    };
    let ledger = match &s.idempotency {
        None => None,
        Some(l) => Some(ledger(v, l, &f("idempotency"))?),
    };
    let occ_rows = match &s.occ {
        None => None,
        Some(t) => {
            if let Some(k) = t.keys().find(|k| *k != "rows") {
                return Err(v.err(&f(&format!("occ.{k}")), "unknown key: occ takes `rows`"));
            }
            let rows = match t.get("rows") {
                None => 1,
                Some(toml::Value::Integer(n)) if (1..=1_000_000_000).contains(n) => *n as u32,
                Some(other) => {
                    return Err(v.err(&f("occ.rows"), format!("must be an integer from 1 to 1000000000, got {other}")));
                }
            };
            Some(rows)
        }
    };
    let commits = match &s.commits {
        None => None,
        Some(c) => {
            v.name(&f("commits"), c)?;
            Some(effect_kinds.iter().position(|k| k == c).unwrap_or_else(|| {
                effect_kinds.push(c.clone());
                effect_kinds.len() - 1
            }))
        }
    };
    Ok(ServiceSpec {
        name: s.name.clone(),
        workers,
        queue_limit,
        discipline,
        rate_limit,
        service_time,
        drop_expired: s.drop_expired.unwrap_or(false),
        overload,
        commits,
        occ_rows,
        calls: Vec::new(),
        ledger,
        per_inflight: match s.service_time.as_ref().and_then(|d| d.per_inflight.as_ref()) {
            None => 0,
            Some(x) => match v.dur(&f("service_time.per_inflight"), Some(x), 0)? {
                NEVER => return Err(v.err(&f("service_time.per_inflight"), "must be finite")),
                d => d,
            },
        },
        hosts: hosts::hosts(v, s, &field)?,
        memory: memory_limit(v, s, &field)?,
        reconcilers: reconcilers::reconcilers(v, s, &field)?,
    })
}

/// `memory_limit` with its `restart_after`.
fn memory_limit(v: &V, s: &ServiceRaw, field: &str) -> InputResult<Option<MemoryLimit>> {
    let f = |n: &str| format!("{field}.{n}");
    let Some(limit) = s.memory_limit else {
        if s.restart_after.is_some() {
            return Err(
                v.err(&f("restart_after"), "only used with memory_limit (the host crashes when its queue exceeds it)")
            );
        }
        return Ok(None);
    };
    let queued = v.int_in(&f("memory_limit"), Some(limit), 0, 0, u32::MAX as i64)? as u32;
    let restart_after = match &s.restart_after {
        Some(text) => v.positive_dur_or_never(&f("restart_after"), Some(text), 0)?,
        None => {
            return Err(v.err(
                &f("restart_after"),
                "required with memory_limit: how long a host that ran out of memory is down, such as \"30s\"",
            ));
        }
    };
    Ok(Some(MemoryLimit { queued, restart_after }))
}

/// `idempotency = { … }`: defaults durable, 24h, conflict, 30s lease, atomic, 5ms.
fn ledger(v: &V, l: &LedgerRaw, field: &str) -> InputResult<LedgerSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let durable = match l.store.as_deref().unwrap_or("durable") {
        "durable" => true,
        "memory" => false,
        other => {
            return Err(v.err(&f("store"), format!("unknown store \"{other}\": allowed are durable, memory")));
        }
    };
    let wait = match l.in_progress.as_deref().unwrap_or("conflict") {
        "conflict" => false,
        "wait" => true,
        other => {
            return Err(v.err(
                &f("in_progress"),
                format!("unknown in_progress \"{other}\": allowed are conflict (answer 409), wait"),
            ));
        }
    };
    let ttl = v.positive_dur_or_never(&f("ttl"), l.ttl.as_ref(), 86_400_000_000_000)?;
    let lease = v.positive_dur_or_never(&f("lease"), l.lease.as_ref(), 30_000_000_000)?;
    let atomic = l.atomic.unwrap_or(true);
    if atomic && l.record_delay.is_some() {
        return Err(v.err(&f("record_delay"), "only used with atomic = false"));
    }
    let record_delay = v.dur(&f("record_delay"), l.record_delay.as_ref(), 5_000_000)?;
    if record_delay == NEVER {
        return Err(v.err(&f("record_delay"), "must be finite"));
    }
    Ok(LedgerSpec { durable, ttl, wait, lease, atomic, record_delay })
}

/// `rate = "800/s"` or `rate = [{ at = "0s", rate = "800/s" }, …]`.
fn rate_schedule(v: &V, field: &str, value: Option<&toml::Value>, duration: Nanos) -> InputResult<Vec<(Nanos, f64)>> {
    let Some(value) = value else {
        return Err(v.err(field, "required for an open-loop client: a rate such as \"800/s\" or a schedule [{ at = \"0s\", rate = \"800/s\" }, …]"));
    };
    match value {
        toml::Value::String(s) => Ok(vec![(0, parse_rate(s).map_err(|m| v.err(field, m))?)]),
        toml::Value::Array(items) if !items.is_empty() => {
            let mut out: Vec<(Nanos, f64)> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let ef = format!("{field}.{i}");
                let t = item
                    .as_table()
                    .ok_or_else(|| v.err(&ef, "each schedule entry is a table { at = \"30s\", rate = \"900/s\" }"))?;
                if let Some(k) = t.keys().find(|k| *k != "at" && *k != "rate") {
                    return Err(v.err(&format!("{ef}.{k}"), "unknown key: a schedule entry has `at` and `rate`"));
                }
                let at = match t.get("at") {
                    Some(toml::Value::String(s)) => parse_duration(s).map_err(|m| v.err(&format!("{ef}.at"), m))?,
                    _ => {
                        return Err(v.err(&format!("{ef}.at"), "required: a duration such as \"30s\""));
                    }
                };
                let rate = match t.get("rate") {
                    Some(toml::Value::String(s)) => parse_rate(s).map_err(|m| v.err(&format!("{ef}.rate"), m))?,
                    _ => {
                        return Err(v.err(&format!("{ef}.rate"), "required: a rate such as \"800/s\""));
                    }
                };
                if let Some(&(prev, _)) = out.last()
                    && at <= prev
                {
                    return Err(v.err(&format!("{ef}.at"), "schedule entries must have strictly increasing `at`"));
                }
                if at >= duration {
                    return Err(v.err(&format!("{ef}.at"), "must be before the experiment's `duration`"));
                }
                out.push((at, rate));
            }
            if out[0].0 > 0 {
                out.insert(0, (0, 0.0));
            }
            Ok(out)
        }
        other => Err(v.err(field, format!("must be a rate such as \"800/s\" or a non-empty schedule, got {other}"))),
    }
}
