//! The call graph the rules walk: the edges into each service, and what
//! travels on an edge (its policy, operations and idempotency key).

use super::*;
use crate::config::{Caller, KeyMode, When};
use std::collections::BTreeSet;

/// Whether a call edge carries an idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keyed {
    Never,
    Sometimes,
    Always,
}

/// Why an edge's retries are unsafe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UnsafeRetry {
    /// No key (or not always) and `retry_unknown_without_key = true`.
    NoKey(Keyed),
    /// A key the callee has no ledger to check.
    KeyUnchecked,
}

pub(super) struct Graph<'a> {
    pub(super) s: &'a Scenario,
    src: &'a Sources,
    /// Edges into each service.
    pub(super) incoming: Vec<Vec<usize>>,
}

impl<'a> Graph<'a> {
    pub(super) fn new(s: &'a Scenario, src: &'a Sources) -> Self {
        let mut incoming = vec![Vec::new(); s.services.len()];
        for (e, edge) in s.edges.iter().enumerate() {
            incoming[edge.to].push(e);
        }
        Self { s, src, incoming }
    }

    pub(super) fn policy(&self, e: usize) -> &Policy {
        self.s.edge_policy(e)
    }

    /// `clients.web` or `services.api.calls.payments`.
    pub(super) fn location(&self, e: usize) -> String {
        match self.s.edges[e].caller {
            Caller::Client(c) => format!("clients.{}", self.s.clients[c].name),
            Caller::Service { service, index } => {
                let svc = &self.s.services[service];
                format!("services.{}.calls.{}", svc.name, self.s.services[svc.calls[index].to].name)
            }
        }
    }

    /// The file and field of a policy field of edge `e`.
    fn policy_field(&self, e: usize, field: &str) -> (String, String) {
        let loc = self.location(e);
        match self.src.policies.get(&loc) {
            Some(file) => (file.clone(), field.to_string()),
            None => (self.src.experiment.clone(), format!("{loc}.policy.{field}")),
        }
    }

    fn finding(
        &self,
        id: &'static str,
        file: String,
        field: String,
        at: String,
        message: String,
        fix: String,
    ) -> Finding {
        Finding {
            rule: id,
            variant: self.s.variant.clone(),
            severity: rule(id).severity,
            file,
            field,
            at,
            message,
            fix,
        }
    }

    /// A finding about a policy field of edge `e`.
    pub(super) fn on_policy(&self, id: &'static str, e: usize, field: &str, message: String, fix: String) -> Finding {
        let (file, field) = self.policy_field(e, field);
        self.finding(id, file, field, self.location(e), message, fix)
    }

    /// A finding about a field of the experiment.
    pub(super) fn on_experiment(
        &self,
        id: &'static str,
        field: String,
        at: String,
        message: String,
        fix: String,
    ) -> Finding {
        self.finding(id, self.src.experiment.clone(), field, at, message, fix)
    }

    pub(super) fn callee(&self, e: usize) -> &str {
        &self.s.services[self.s.edges[e].to].name
    }

    /// Operations that travel on edge `e`.
    fn edge_ops(&self, e: usize) -> BTreeSet<usize> {
        match self.s.edges[e].caller {
            Caller::Client(c) => BTreeSet::from([self.s.clients[c].operation]),
            Caller::Service { service, index } => match self.s.services[service].calls[index].operation {
                Some(op) => BTreeSet::from([op]),
                None => self.service_ops(service),
            },
        }
    }

    /// Operations of the requests that reach service `svc`.
    fn service_ops(&self, svc: usize) -> BTreeSet<usize> {
        self.incoming[svc].iter().flat_map(|&e| self.edge_ops(e)).collect()
    }

    /// The non-idempotent operations on edge `e`, by name.
    pub(super) fn unsafe_ops(&self, e: usize) -> Vec<String> {
        self.edge_ops(e)
            .into_iter()
            .filter(|&op| !self.s.operations[op].idempotent)
            .map(|op| self.s.operations[op].name.clone())
            .collect()
    }

    /// Whether requests on edge `e` carry an idempotency key.
    pub(super) fn keyed(&self, e: usize) -> Keyed {
        match self.s.edges[e].caller {
            Caller::Client(c) => {
                if self.s.clients[c].idempotency_key {
                    Keyed::Always
                } else {
                    Keyed::Never
                }
            }
            Caller::Service { service, index } => match self.s.services[service].calls[index].key {
                KeyMode::Derive => Keyed::Always,
                KeyMode::None => Keyed::Never,
                KeyMode::Forward => {
                    let up: Vec<Keyed> = self.incoming[service].iter().map(|&u| self.keyed(u)).collect();
                    if up.is_empty() || up.iter().all(|&k| k == Keyed::Never) {
                        Keyed::Never
                    } else if up.iter().all(|&k| k == Keyed::Always) {
                        Keyed::Always
                    } else {
                        Keyed::Sometimes
                    }
                }
            },
        }
    }

    /// Whether edge `e`'s own retries can execute a non-idempotent
    /// operation twice at its callee: it retries unknown outcomes, the
    /// callee is no outbox consumer with dedup, and either it sends no key
    /// (not always) while `retry_unknown_without_key` lets it retry anyway,
    /// or it sends a key (so it retries) that the callee, which commits,
    /// does not check for want of a ledger.
    pub(super) fn unsafe_retry(&self, e: usize) -> Option<UnsafeRetry> {
        let p = self.policy(e);
        if p.max_attempts < 2 || unknown_outcomes(p).is_empty() || self.unsafe_ops(e).is_empty() {
            return None;
        }
        if p.on_unknown != crate::policy::OnUnknown::Retry {
            // It asks for the state of an unknown outcome, or gives up on it:
            // it never repeats one blindly.
            return None;
        }
        if let Caller::Service { service, index } = self.s.edges[e].caller {
            let c = &self.s.services[service].calls[index];
            if c.when == When::Outbox && c.dedup {
                return None;
            }
        }
        let keyed = self.keyed(e);
        let svc = &self.s.services[self.s.edges[e].to];
        if keyed != Keyed::Always && p.retry_unknown_without_key {
            Some(UnsafeRetry::NoKey(keyed))
        } else if keyed != Keyed::Never && svc.ledger.is_none() && svc.commits.is_some() {
            Some(UnsafeRetry::KeyUnchecked)
        } else {
            None
        }
    }

    /// The client and services along a path of edges.
    pub(super) fn hops(&self, path: &[usize]) -> Vec<String> {
        let mut hops = Vec::new();
        if let Some(&first) = path.first() {
            hops.push(match self.s.edges[first].caller {
                Caller::Client(c) => self.s.clients[c].name.clone(),
                Caller::Service { service, .. } => self.s.services[service].name.clone(),
            });
        }
        hops.extend(path.iter().map(|&e| self.callee(e).to_string()));
        hops
    }
}
