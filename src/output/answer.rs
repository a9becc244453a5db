//! The metrics that answer an experiment's question (`[experiment] answer`):
//! paths into summary.json's variants — a headline metric
//! (`success_rate`), a client class's (`clients.NAME.METRIC`), a service's
//! or one of its hosts' (`services.NAME.METRIC`, `services.NAME[i].METRIC`),
//! a call edge's (`edges.FROM->TO.METRIC`) or a side effect's
//! (`effects.KIND.METRIC`). Tables put them first, reports open with them.

use super::VariantSummary;
use super::columns::{Column, Style, column_of};
use crate::analysis::Summary;
use crate::config::{ClientSpec, EdgeSpec, ServiceSpec};
use crate::metrics::{EDGE_METRICS, EFFECT_METRICS, HOST_METRICS, METRICS, SERVICE_METRICS};

/// Every path an experiment with these clients, services, edges and side
/// effects can answer with, in summary.json's order.
pub fn paths(clients: &[ClientSpec], services: &[ServiceSpec], edges: &[EdgeSpec], effects: &[String]) -> Vec<String> {
    let mut out: Vec<String> = METRICS.iter().map(|m| m.to_string()).collect();
    out.push("recovery_time_median_s".into());
    for c in clients {
        out.extend(METRICS.iter().map(|m| format!("clients.{}.{m}", c.name)));
    }
    for s in services {
        out.extend(SERVICE_METRICS.iter().chain(&HOST_METRICS).map(|m| format!("services.{}.{m}", s.name)));
        if s.hosts.replicas > 1 {
            for h in 0..s.hosts.replicas {
                out.extend(HOST_METRICS.iter().map(|m| format!("services.{}[{h}].{m}", s.name)));
            }
        }
    }
    for e in edges {
        out.extend(EDGE_METRICS.iter().map(|m| format!("edges.{}.{m}", e.name)));
    }
    for k in effects {
        out.extend(EFFECT_METRICS.iter().map(|m| format!("effects.{k}.{m}")));
    }
    out
}

/// What [`paths`] allows, in words, for an error message.
pub fn allowed(clients: &[ClientSpec], services: &[ServiceSpec], edges: &[EdgeSpec], effects: &[String]) -> String {
    let names = |v: Vec<&str>| v.join(", ");
    let mut parts = vec![format!("a headline metric ({}, recovery_time_median_s)", METRICS.join(", "))];
    parts.push(format!(
        "clients.NAME.METRIC with NAME one of {} and METRIC a headline metric",
        names(clients.iter().map(|c| c.name.as_str()).collect())
    ));
    parts.push(format!(
        "services.NAME.METRIC with NAME one of {} (or a host, NAME[i], of a service with replicas) and METRIC one of {}",
        names(services.iter().map(|s| s.name.as_str()).collect()),
        names(SERVICE_METRICS.iter().chain(&HOST_METRICS).copied().collect())
    ));
    parts.push(format!(
        "edges.NAME.{} with NAME one of {}",
        EDGE_METRICS.join("|"),
        names(edges.iter().map(|e| e.name.as_str()).collect())
    ));
    if !effects.is_empty() {
        parts.push(format!(
            "effects.KIND.METRIC with KIND one of {} and METRIC one of {}",
            names(effects.iter().map(String::as_str).collect()),
            EFFECT_METRICS.join(", ")
        ));
    }
    parts.join("; ")
}

/// A table column for any path: its header, its style and how to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct PathColumn {
    /// The path as summary.json spells it.
    pub path: String,
    pub header: String,
    pub style: Style,
    /// The headline column it is, if it is one (not a class's, service's, …).
    pub headline: Option<Column>,
}

/// Splits a path into (group, name, metric); `None` group for a headline metric.
pub fn split(path: &str) -> (Option<&str>, &str, &str) {
    for group in ["clients", "services", "edges", "effects"] {
        if let Some(rest) = path.strip_prefix(group).and_then(|r| r.strip_prefix('.'))
            && let Some((name, metric)) = rest.rsplit_once('.')
        {
            return (Some(group), name, metric);
        }
    }
    (None, "", path)
}

impl PathColumn {
    /// The column of `path`.
    pub fn of(path: &str) -> PathColumn {
        let (group, name, metric) = split(path);
        let base = column_of(metric);
        let style = base.map_or_else(|| super::columns::style_of(metric), |c| c.style);
        let short = |m: &str| base.map_or_else(|| m.replace('_', " "), |c| c.header.to_string());
        let header = match group {
            None => short(metric),
            Some(_) => format!("{name} {}", short(metric)),
        };
        PathColumn { path: path.to_string(), header, style, headline: if group.is_none() { base } else { None } }
    }

    /// From a headline column.
    pub fn headline(c: Column) -> PathColumn {
        PathColumn { path: c.metric.to_string(), header: c.header.to_string(), style: c.style, headline: Some(c) }
    }
}

/// The summary at `path` in a variant, if it has one.
pub fn lookup<'a>(v: &'a VariantSummary, path: &str) -> Option<&'a Summary> {
    let find = |groups: &'a [(String, Vec<(String, Summary)>)], name: &str, metric: &str| {
        groups.iter().find(|(n, _)| n == name).and_then(|(_, ms)| ms.iter().find(|(k, _)| k == metric)).map(|(_, s)| s)
    };
    match split(path) {
        (None, _, m) => v.metric(m),
        (Some("clients"), n, m) => find(&v.clients, n, m),
        (Some("services"), n, m) => find(&v.services, n, m),
        (Some("edges"), n, m) => find(&v.edges, n, m),
        (Some("effects"), n, m) => find(&v.effects, n, m),
        _ => None,
    }
}

/// Whether a higher value of the metric at `path` is better.
pub fn higher_is_better(path: &str) -> bool {
    let (_, _, metric) = split(path);
    matches!(
        metric,
        "success_rate"
            | "goodput_per_s"
            | "recovered_fraction"
            | "intents"
            | "hedge_wins"
            | "cache_hit_ratio"
            | "ledger_replays"
            | "ledger_recoveries"
    )
}

/// The answer paths of an experiment: `[experiment] answer` as written, or
/// by default success, each class's success when there are several
/// classes, and `recovered_fraction` when the experiment has a disturbance.
pub fn answer_paths(answer: &[String], classes: &[String], disturbed: bool) -> Vec<String> {
    if !answer.is_empty() {
        return answer.to_vec();
    }
    let mut out = vec!["success_rate".to_string()];
    if classes.len() > 1 {
        out.extend(classes.iter().map(|c| format!("clients.{c}.success_rate")));
    }
    if disturbed {
        out.push("recovered_fraction".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_their_group_name_and_metric() {
        assert_eq!(split("success_rate"), (None, "", "success_rate"));
        assert_eq!(split("clients.user.success_rate"), (Some("clients"), "user", "success_rate"));
        assert_eq!(split("edges.web->api.attempts_per_intent"), (Some("edges"), "web->api", "attempts_per_intent"));
        assert_eq!(split("services.api[0].cache_hit_ratio"), (Some("services"), "api[0]", "cache_hit_ratio"));
        let c = PathColumn::of("clients.user.success_rate");
        assert_eq!((c.header.as_str(), c.style, c.headline), ("user success", Style::Percent, None));
        assert_eq!(PathColumn::of("services.cache.cache_hit_ratio").header, "cache cache hit ratio");
        assert_eq!(PathColumn::of("latency_p99_s").headline.map(|c| c.header), Some("p99"));
    }
}
