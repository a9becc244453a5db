//! `[[services.calls]]`: downstream calls, their edges, and the check that
//! the call graph has no cycle.

use super::dist::Dists;
use super::{V, first_extra, policy};
use crate::config::raw::ServiceRaw;
use crate::config::scenario::{
    CallSpec, Caller, EdgeSpec, KeyMode, MessageQueueSpec, OperationSpec, ServiceSpec, When,
};
use crate::error::InputResult;
use crate::model::Dist;
use std::collections::BTreeMap;

/// Validates every service's calls (all services are known by now), adds
/// their edges, and rejects cycles; a call `via` a queue makes the queue's
/// consumer its callee.
#[allow(clippy::too_many_arguments)]
pub fn calls(
    v: &V,
    raw: &[ServiceRaw],
    services: &mut [ServiceSpec],
    operations: &[OperationSpec],
    edges: &mut Vec<EdgeSpec>,
    origins: &BTreeMap<String, String>,
    network: &Dist,
    queues: &mut [MessageQueueSpec],
) -> InputResult<()> {
    for (si, s) in raw.iter().enumerate() {
        let mut specs = Vec::new();
        for (ci, c) in s.calls.iter().enumerate() {
            let field = format!("services.{}.calls.{}", s.name, c.to);
            let f = |n: &str| format!("{field}.{n}");
            if s.calls[..ci].iter().any(|x| x.to == c.to) {
                return Err(
                    v.err(&f("to"), format!("\"{}\" is called twice by \"{}\": one call per callee", c.to, s.name))
                );
            }
            let to = services.iter().position(|x| x.name == c.to).ok_or_else(|| {
                let names: Vec<&str> = services.iter().map(|x| x.name.as_str()).collect();
                v.err(&f("to"), format!("no service named \"{}\" (services: {})", c.to, names.join(", ")))
            })?;
            let operation = match &c.operation {
                None => None,
                Some(name) => Some(operations.iter().position(|o| &o.name == name).ok_or_else(|| {
                    let names: Vec<&str> = operations.iter().map(|o| o.name.as_str()).collect();
                    v.err(
                        &f("operation"),
                        format!("no operation named \"{name}\" in [[operations]] (operations: {})", names.join(", ")),
                    )
                })?),
            };
            let key = match c.key.as_deref().unwrap_or("forward") {
                "forward" => KeyMode::Forward,
                "derive" => KeyMode::Derive,
                "none" => KeyMode::None,
                other => {
                    return Err(v.err(
                        &f("key"),
                        format!("unknown key handling \"{other}\": allowed are forward, derive, none"),
                    ));
                }
            };
            let when = match c.when.as_deref().unwrap_or("before_commit") {
                "before_commit" => When::BeforeCommit,
                "after_commit" => When::AfterCommit,
                "outbox" => When::Outbox,
                other => {
                    return Err(v.err(
                        &f("when"),
                        format!("unknown `when` \"{other}\": allowed are before_commit, after_commit, outbox"),
                    ));
                }
            };
            if when == When::Outbox && c.propagate_deadline.is_some() {
                return Err(v.err(
                    &f("propagate_deadline"),
                    "not used with when = \"outbox\": a relay runs after the caller has its answer",
                ));
            }
            let via = match &c.via {
                None => None,
                Some(name) => {
                    let Some(q) = queues.iter().position(|q| &q.name == name) else {
                        let names: Vec<&str> = queues.iter().map(|q| q.name.as_str()).collect();
                        return Err(v.err(
                            &f("via"),
                            format!("no queue named \"{name}\" in [[queues]] (queues: {})", names.join(", ")),
                        ));
                    };
                    if queues[q].consumer != usize::MAX && queues[q].consumer != to {
                        return Err(v.err(
                            &f("via"),
                            format!(
                                "queue \"{name}\" already delivers to \"{}\": one consumer service per queue",
                                services[queues[q].consumer].name
                            ),
                        ));
                    }
                    queues[q].consumer = to;
                    for (field, given) in
                        [("cache", c.cache.is_some()), ("propagate_deadline", c.propagate_deadline.is_some())]
                    {
                        if given {
                            return Err(v.err(
                                &f(field),
                                "not used with `via`: the queue delivers the message, the caller does not wait for it",
                            ));
                        }
                    }
                    Some(q)
                }
            };
            if when != When::Outbox
                && let Some(extra) = first_extra(
                    &[("relay_delay", c.relay_delay.is_some()), ("dedup", c.dedup.is_some() && via.is_none())],
                    &[],
                )
            {
                return Err(v.err(&f(extra), "only used with when = \"outbox\" (dedup also with `via`)"));
            }
            let relay_delay = match &c.relay_delay {
                Some(d) => v.dist(&f("relay_delay"), d)?,
                None => Dist::Const(0),
            };
            let policy = match &c.policy {
                None => crate::policy::Policy::default(),
                Some(p) => {
                    let origin = origins.get(&field);
                    let prefix = format!("{field}.policy");
                    policy(
                        p,
                        origin.map(String::as_str).unwrap_or(v.file),
                        if origin.is_some() { "" } else { &prefix },
                    )?
                }
            };
            let latency = match &c.latency {
                Some(d) => v.dist(&f("latency"), d)?,
                None => network.clone(),
            };
            let edge = edges.len();
            edges.push(EdgeSpec {
                name: format!("{}->{}", s.name, c.to),
                caller: Caller::Service { service: si, index: ci },
                to,
                latency,
            });
            specs.push(CallSpec {
                to,
                operation,
                policy,
                key,
                when,
                propagate_deadline: c.propagate_deadline.unwrap_or(false),
                relay_delay,
                dedup: c.dedup.unwrap_or(false),
                via,
                edge,
                cache: match &c.cache {
                    None => None,
                    Some(_) if when == When::Outbox => {
                        return Err(
                            v.err(&f("cache"), "not used with when = \"outbox\": a relay has nothing to look up")
                        );
                    }
                    Some(raw) => Some(super::hosts::cache(v, raw, &f("cache"))?),
                },
            });
        }
        if !services[si].reconcilers.is_empty()
            && services[si].ledger.is_none()
            && !specs.iter().any(|c| c.when != When::BeforeCommit)
        {
            return Err(v.err(
                &format!("services.{}.reconcilers", services[si].name),
                "a reconciler resolves idempotency placeholders left in progress and downstream effects left unknown after the commit: this service has no `idempotency` ledger and no `after_commit` or `outbox` call",
            ));
        }
        services[si].calls = specs;
    }
    let dedup_edges = services.iter().flat_map(|s| &s.calls).filter(|c| c.when == When::Outbox && c.dedup).count();
    if dedup_edges > 32 {
        return Err(v.err("services", format!("at most 32 outbox calls with dedup = true, got {dedup_edges}")));
    }
    if let Some(cycle) = find_cycle(services) {
        let path: Vec<&str> = cycle.iter().map(|&i| services[i].name.as_str()).collect();
        return Err(v.err(
            &format!("services.{}.calls", services[cycle[0]].name),
            format!("the call graph has a cycle: {}; calls must form a directed acyclic graph", path.join(" -> ")),
        ));
    }
    Ok(())
}

/// A cycle in the service call graph, as a path that returns to its start.
fn find_cycle(services: &[ServiceSpec]) -> Option<Vec<usize>> {
    // 0 = unvisited, 1 = on the current path, 2 = done.
    fn visit(s: usize, services: &[ServiceSpec], mark: &mut [u8], path: &mut Vec<usize>) -> Option<Vec<usize>> {
        mark[s] = 1;
        path.push(s);
        for c in &services[s].calls {
            if mark[c.to] == 1 {
                let start = path.iter().position(|&x| x == c.to).unwrap_or(0);
                let mut cycle = path[start..].to_vec();
                cycle.push(c.to);
                return Some(cycle);
            }
            if mark[c.to] == 0
                && let Some(cycle) = visit(c.to, services, mark, path)
            {
                return Some(cycle);
            }
        }
        path.pop();
        mark[s] = 2;
        None
    }
    let mut mark = vec![0u8; services.len()];
    (0..services.len()).find_map(|s| if mark[s] == 0 { visit(s, services, &mut mark, &mut Vec::new()) } else { None })
}
