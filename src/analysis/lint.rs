//! `retrysim lint`: the static checks of the pre-launch checklist (DESIGN
//! §6) over one validated variant of an experiment, and the worst-case
//! amplification of every call path.
//!
//! Every rule has a fixed id and severity ([`RULES`]); a [`Finding`] names
//! the file and field to change and a one-line fix. `docs/lint.md` lists the
//! rules, what triggers each and why; `tests/lint.rs` has one experiment
//! per rule.
//!
//! Conventions shared by the rules:
//! - a *retrying edge* is a call edge whose policy has `max_attempts > 1`;
//!   rules about retry settings look only at retrying edges;
//! - an *unknown outcome* is one that may have executed (timeout, reset,
//!   5xx other than 503: DESIGN §4);
//! - the operations on an edge are the client's operation, a call's own
//!   `operation`, or else every operation that reaches the calling service;
//! - a call edge carries a key always (`derive`, or `forward` when every
//!   request reaching the service has one), sometimes, or never.

use crate::config::{Caller, Experiment, KeyMode, Scenario, When, overrides};
use crate::engine::{NEVER, Nanos, from_secs_f64};
use crate::model::Dist;
use crate::policy::{Outcome, Policy};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// How bad a finding is. `lint` exits 1 when any finding is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    /// `error` or `warning`.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A lint rule: its id, fixed severity and what it checks.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    /// One line: what triggers it.
    pub checks: &'static str,
}

/// Every rule, in the order of DESIGN §6.
pub const RULES: [Rule; 12] = [
    Rule {
        id: "unsafe-retry",
        severity: Severity::Error,
        checks: "a non-idempotent operation retried after unknown outcomes (timeout, reset, 500, 502, 504) without an idempotency key, or with a key the service does not check",
    },
    Rule {
        id: "layered-retries",
        severity: Severity::Warning,
        checks: "more than one layer retries on one synchronous call path (the worst case multiplies)",
    },
    Rule {
        id: "no-jitter",
        severity: Severity::Warning,
        checks: "a client class with many instances retries without jitter",
    },
    Rule { id: "no-budget", severity: Severity::Warning, checks: "a retrying edge has no retry budget" },
    Rule {
        id: "retry-after-unbounded",
        severity: Severity::Warning,
        checks: "a policy that obeys Retry-After has max_retry_after unset, \"never\", or not shorter than the deadline",
    },
    Rule {
        id: "attempts-exceed-deadline",
        severity: Severity::Warning,
        checks: "per_try_timeout * max_attempts plus the longest waits exceeds the deadline",
    },
    Rule {
        id: "client-error-retried",
        severity: Severity::Error,
        checks: "400, 401 or 403 in retry_on of a retrying edge",
    },
    Rule {
        id: "ttl-shorter-than-retry-window",
        severity: Severity::Error,
        checks: "an idempotency ledger forgets keys before a caller can stop resending them",
    },
    Rule {
        id: "memory-ledger",
        severity: Severity::Warning,
        checks: "an idempotency ledger kept in memory (emptied by a crash)",
    },
    Rule {
        id: "non-atomic-ledger",
        severity: Severity::Warning,
        checks: "an idempotency record written after the business write, not with it",
    },
    Rule {
        id: "lease-too-short",
        severity: Severity::Warning,
        checks: "a ledger lease of \"never\" or shorter than the slowest execution it guards",
    },
    Rule {
        id: "unprotected-downstream-effect",
        severity: Severity::Warning,
        checks: "a downstream call to a service with side effects without an outbox with dedup, or a key checked by a ledger",
    },
];

/// The rule with this id.
pub fn rule(id: &str) -> &'static Rule {
    RULES.iter().find(|r| r.id == id).expect("a known rule id")
}

/// One finding of one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id.
    pub rule: &'static str,
    pub severity: Severity,
    /// The file to change: the experiment, or the policy file a policy came from.
    pub file: String,
    /// The field in that file, as a dotted path.
    pub field: String,
    /// Where in the experiment: `clients.web`, `services.api.calls.payments`, `services.orders`.
    pub at: String,
    /// What is wrong and what it leads to.
    pub message: String,
    /// One line: how to fix it.
    pub fix: String,
}

/// The worst-case amplification of one call path from a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRow {
    /// The client class.
    pub client: String,
    /// The client, then every service along the path.
    pub hops: Vec<String>,
    /// `max_attempts` of each edge along the path.
    pub attempts: Vec<u32>,
    /// Whether each edge is an outbox relay.
    pub outbox: Vec<bool>,
    /// The product of `attempts`: requests at the last service per intent, at worst.
    pub worst_case: u64,
}

/// What `lint` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Errors first, then warnings; in rule order within each.
    pub findings: Vec<Finding>,
    /// Every call path from every client (each prefix of a longer path too).
    pub paths: Vec<PathRow>,
}

impl Report {
    /// Findings of this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == severity).count()
    }
}

/// Where the experiment and its policies were written: so that a finding
/// can name the file to change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// The experiment file as shown to the user.
    pub experiment: String,
    /// Policy location (`clients.web`, `services.api.calls.payments`) →
    /// the policy file it was loaded from, for policies given by path and
    /// not changed field by field by an override.
    pub policies: BTreeMap<String, String>,
}

/// Works out which policy file each policy of `variant` came from: the
/// experiment's policy paths, then the variant's `set`, then `sets`
/// (`--set KEY=VALUE`, paths relative to the working directory), as
/// `load_experiment` resolves them.
pub fn sources(exp: &Experiment, variant: &str, sets: &[String]) -> Sources {
    let experiment = exp.path.display().to_string();
    let mut policies = BTreeMap::new();
    let Ok(doc) = exp.source.parse::<toml::Table>() else {
        return Sources { experiment, policies };
    };
    let dir = exp.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut locations = Vec::new();
    if let Some(toml::Value::Array(clients)) = doc.get("clients") {
        for (i, c) in clients.iter().enumerate() {
            let loc = format!("clients.{}", overrides::element_label(c, i));
            if let Some(toml::Value::String(p)) = c.get("policy") {
                policies.insert(loc.clone(), tidy(&dir.join(p)));
            }
            locations.push(loc);
        }
    }
    if let Some(toml::Value::Array(services)) = doc.get("services") {
        for (i, s) in services.iter().enumerate() {
            let label = overrides::element_label(s, i);
            if let Some(toml::Value::Array(calls)) = s.get("calls") {
                for (j, c) in calls.iter().enumerate() {
                    let loc = format!("services.{label}.calls.{}", overrides::element_label(c, j));
                    if let Some(toml::Value::String(p)) = c.get("policy") {
                        policies.insert(loc.clone(), tidy(&dir.join(p)));
                    }
                    locations.push(loc);
                }
            }
        }
    }
    let mut apply = |key: &str, value: &toml::Value, base: &Path| {
        for loc in &locations {
            if key == format!("{loc}.policy") {
                match value {
                    toml::Value::String(p) => {
                        policies.insert(loc.clone(), tidy(&base.join(p)));
                    }
                    _ => {
                        policies.remove(loc);
                    }
                }
            } else if key.starts_with(&format!("{loc}.policy.")) || key == loc.as_str() {
                policies.remove(loc);
            }
        }
    };
    if let Some(toml::Value::Array(variants)) = doc.get("variants") {
        let chosen = variants.iter().find(|v| v.get("name").and_then(toml::Value::as_str) == Some(variant));
        if let Some(toml::Value::Table(set)) = chosen.and_then(|v| v.get("set")) {
            for (k, v) in set {
                apply(k, v, &dir);
            }
        }
    }
    for s in sets {
        if let Ok((k, v)) = overrides::split_assignment(s) {
            apply(&k, &v, Path::new(""));
        }
    }
    Sources { experiment, policies }
}

/// A path as shown, with `a/../` folded away (`experiments/../policies/x.toml`
/// becomes `policies/x.toml`).
fn tidy(path: &Path) -> String {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out.iter().collect::<std::path::PathBuf>().display().to_string()
}

/// The findings of warning and error level as one line each, for `run` to
/// print at its start (`-q` silences them). Fields are named by their path
/// in the experiment (`clients.web.policy.budget`).
pub fn warnings_for_run(s: &Scenario) -> Vec<String> {
    lint(s, &Sources::default())
        .findings
        .iter()
        .map(|f| format!("lint {} [{}] {}: {} (fix: {})", f.severity.label(), f.rule, f.field, f.message, f.fix))
        .collect()
}

/// Runs every rule over `s` and lists the call paths.
pub fn lint(s: &Scenario, src: &Sources) -> Report {
    let g = Graph::new(s, src);
    let mut findings = Vec::new();
    g.edge_rules(&mut findings);
    g.layered_retries(&mut findings);
    g.ledger_rules(&mut findings);
    g.downstream_effects(&mut findings);
    let order = |id: &str| RULES.iter().position(|r| r.id == id).unwrap_or(usize::MAX);
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(order(a.rule).cmp(&order(b.rule))));
    Report { findings, paths: g.paths() }
}

/// Whether a call edge carries an idempotency key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyed {
    Never,
    Sometimes,
    Always,
}

/// Why an edge's retries are unsafe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnsafeRetry {
    /// No key (or not always) and `retry_unknown_without_key = true`.
    NoKey(Keyed),
    /// A key the callee has no ledger to check.
    KeyUnchecked,
}

/// The most call-path rows listed (a wide fan-out could list very many).
const MAX_PATHS: usize = 1000;

struct Graph<'a> {
    s: &'a Scenario,
    src: &'a Sources,
    /// Edges into each service.
    incoming: Vec<Vec<usize>>,
}

impl<'a> Graph<'a> {
    fn new(s: &'a Scenario, src: &'a Sources) -> Self {
        let mut incoming = vec![Vec::new(); s.services.len()];
        for (e, edge) in s.edges.iter().enumerate() {
            incoming[edge.to].push(e);
        }
        Self { s, src, incoming }
    }

    fn policy(&self, e: usize) -> &Policy {
        self.s.edge_policy(e)
    }

    /// `clients.web` or `services.api.calls.payments`.
    fn location(&self, e: usize) -> String {
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
        Finding { rule: id, severity: rule(id).severity, file, field, at, message, fix }
    }

    /// A finding about a policy field of edge `e`.
    fn on_policy(&self, id: &'static str, e: usize, field: &str, message: String, fix: String) -> Finding {
        let (file, field) = self.policy_field(e, field);
        self.finding(id, file, field, self.location(e), message, fix)
    }

    /// A finding about a field of the experiment.
    fn on_experiment(&self, id: &'static str, field: String, at: String, message: String, fix: String) -> Finding {
        self.finding(id, self.src.experiment.clone(), field, at, message, fix)
    }

    fn callee(&self, e: usize) -> &str {
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
    fn unsafe_ops(&self, e: usize) -> Vec<String> {
        self.edge_ops(e)
            .into_iter()
            .filter(|&op| !self.s.operations[op].idempotent)
            .map(|op| self.s.operations[op].name.clone())
            .collect()
    }

    /// Whether requests on edge `e` carry an idempotency key.
    fn keyed(&self, e: usize) -> Keyed {
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

    /// Whether service `svc` can answer with a Retry-After (overload,
    /// rate limit, or an `error` fault that sets one).
    fn sends_retry_after(&self, svc: usize) -> bool {
        let spec = &self.s.services[svc];
        spec.overload.retry_after.is_some()
            || spec.rate_limit.is_some_and(|r| r.retry_after.is_some())
            || self.s.faults.iter().any(|f| {
                f.target == svc && matches!(f.kind, crate::config::FaultKind::Error { retry_after: Some(_), .. })
            })
    }

    /// Whether edge `e`'s own retries can execute a non-idempotent
    /// operation twice at its callee: it retries unknown outcomes, the
    /// callee is no outbox consumer with dedup, and either it sends no key
    /// (not always) while `retry_unknown_without_key` lets it retry anyway,
    /// or it sends a key (so it retries) that the callee, which commits,
    /// does not check for want of a ledger.
    fn unsafe_retry(&self, e: usize) -> Option<UnsafeRetry> {
        let p = self.policy(e);
        if p.max_attempts < 2 || unknown_outcomes(p).is_empty() || self.unsafe_ops(e).is_empty() {
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

    /// Whether a layer above service `svc` retries (so it can execute twice).
    fn retries_above(&self, svc: usize) -> bool {
        self.incoming[svc].iter().any(|&e| {
            self.policy(e).max_attempts > 1
                || matches!(self.s.edges[e].caller, Caller::Service { service, .. } if self.retries_above(service))
        })
    }

    /// How long after the first attempt of an intent on edge `e` the same
    /// intent (and so the same forwarded or derived key) can still arrive
    /// on `e`: its own retry window plus that of the layers above that
    /// resend the key. `None`: unbounded.
    fn span(&self, e: usize) -> Option<Nanos> {
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
    fn slowest(&self, svc: usize) -> Option<Nanos> {
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

    /// The rules about one edge's policy.
    fn edge_rules(&self, out: &mut Vec<Finding>) {
        for e in 0..self.s.edges.len() {
            let p = self.policy(e);
            if p.max_attempts < 2 {
                continue;
            }
            let loc = self.location(e);
            let n = p.max_attempts;
            let callee = self.callee(e);

            // unsafe-retry
            if let Some(kind) = self.unsafe_retry(e) {
                let unknown = unknown_outcomes(p).join(", ");
                let ops = self.unsafe_ops(e).join(", ");
                match kind {
                    UnsafeRetry::NoKey(keyed) => {
                        let how =
                            if keyed == Keyed::Never { "without an idempotency key" } else { "not always with a key" };
                        let fix = match self.s.edges[e].caller {
                            Caller::Client(_) => format!(
                                "send one key per intent ({loc}.idempotency_key = true) to a service with an idempotency ledger, or set retry_unknown_without_key = false"
                            ),
                            Caller::Service { .. } => format!(
                                "set {loc}.key = \"derive\" (or forward a key every caller sends) and give {callee} an idempotency ledger, or set retry_unknown_without_key = false"
                            ),
                        };
                        out.push(self.on_policy(
                            "unsafe-retry",
                            e,
                            "retry_unknown_without_key",
                            format!(
                                "{loc} retries {ops} (not idempotent) on {callee} after {unknown} {how}: a retry after an answer lost past the commit executes it again"
                            ),
                            fix,
                        ));
                    }
                    UnsafeRetry::KeyUnchecked => out.push(self.on_experiment(
                        "unsafe-retry",
                        format!("services.{callee}.idempotency"),
                        loc.clone(),
                        format!(
                            "{loc} sends an idempotency key to {callee}, which has no idempotency ledger, and retries {ops} (not idempotent) after {unknown}: the key protects nothing and a retry executes it again"
                        ),
                        format!(
                            "give {callee} a ledger: idempotency = {{ store = \"durable\", ttl = \"24h\" }}, or take the unknown outcomes out of retry_on"
                        ),
                    )),
                }
            }

            // no-jitter
            if let Caller::Client(c) = self.s.edges[e].caller {
                let count = self.s.clients[c].count;
                if count > 1 && !p.backoff.is_jittered() {
                    out.push(self.on_policy(
                        "no-jitter",
                        e,
                        "backoff.jitter",
                        format!(
                            "{loc} has {count} instances retrying up to {} times with {} backoff and no jitter: instances that fail together retry together, in synchronized waves",
                            n - 1,
                            backoff_kind(p)
                        ),
                        "use capped exponential backoff with jitter: [backoff] kind = \"exponential\", jitter = \"full\"".into(),
                    ));
                }
            }

            // no-budget
            if p.budget.is_none() {
                out.push(self.on_policy(
                    "no-budget",
                    e,
                    "budget",
                    format!(
                        "{loc} retries up to {} times with no retry budget: while {callee} fails, every intent makes {n} attempts ({n}x the load on a struggling service)",
                        n - 1
                    ),
                    "add a [budget], e.g. kind = \"token_bucket\" (gRPC retry throttling) or kind = \"ratio\" with ratio = 0.1".into(),
                ));
            }

            // retry-after-unbounded
            if p.respect_retry_after {
                let problem = match p.max_retry_after {
                    None if p.deadline == NEVER => Some(
                        "is unset and there is no deadline: a server can make the client wait without limit"
                            .to_string(),
                    ),
                    None => Some(format!(
                        "is unset, so it defaults to the deadline ({}): a Retry-After can hold the intent for all of its remaining time and leave none for the attempt",
                        human(p.deadline)
                    )),
                    Some(NEVER) => Some("is \"never\": a server can make the client wait without limit".to_string()),
                    Some(m) if p.deadline != NEVER && m >= p.deadline => Some(format!(
                        "({}) is not shorter than the deadline ({}): such a wait can never be followed by an attempt",
                        human(m),
                        human(p.deadline)
                    )),
                    Some(_) => None,
                };
                if let Some(problem) = problem {
                    let suggestion = if p.deadline != NEVER { human(p.deadline / 3) } else { "30s".into() };
                    out.push(self.on_policy(
                        "retry-after-unbounded",
                        e,
                        "max_retry_after",
                        format!("{loc} obeys Retry-After and max_retry_after {problem}"),
                        format!("set max_retry_after well below the deadline, e.g. \"{suggestion}\", to give up instead of waiting"),
                    ));
                }
            }

            // attempts-exceed-deadline
            if p.per_try_timeout != NEVER && p.deadline != NEVER {
                let waits: Vec<Nanos> = (1..n).map(|k| p.backoff.max_delay(k)).collect();
                let total = p
                    .per_try_timeout
                    .saturating_mul(n as u64)
                    .saturating_add(waits.iter().fold(0u64, |a, &w| a.saturating_add(w)));
                if total > p.deadline {
                    // How many attempts fit in the deadline.
                    let mut fit = 0;
                    let mut used: Nanos = 0;
                    for k in 0..n {
                        let wait = if k == 0 { 0 } else { waits[k as usize - 1] };
                        used = used.saturating_add(wait).saturating_add(p.per_try_timeout);
                        if used > p.deadline {
                            break;
                        }
                        fit += 1;
                    }
                    let wait_total = total - p.per_try_timeout.saturating_mul(n as u64).min(total);
                    out.push(self.on_policy(
                        "attempts-exceed-deadline",
                        e,
                        "per_try_timeout",
                        format!(
                            "{loc}: {n} attempts x per_try_timeout {} + waits up to {} = {} exceeds the deadline {}: only {fit} attempt(s) that time out fit, the rest are cut short or never made",
                            human(p.per_try_timeout),
                            human(wait_total),
                            human(total),
                            human(p.deadline)
                        ),
                        format!(
                            "lower per_try_timeout to at most {}, lower max_attempts to {}, or raise the deadline to {}",
                            human(p.deadline.saturating_sub(wait_total) / n as u64),
                            fit.max(1),
                            human(total)
                        ),
                    ));
                }
            }

            // client-error-retried
            let bad: Vec<String> =
                p.retry_on.statuses.iter().filter(|s| matches!(s, 400 | 401 | 403)).map(u16::to_string).collect();
            if !bad.is_empty() {
                out.push(self.on_policy(
                    "client-error-retried",
                    e,
                    "retry_on",
                    format!(
                        "{loc} retries {}: a malformed, unauthenticated or forbidden request fails the same way every time; retrying only adds load",
                        bad.join(", ")
                    ),
                    format!("remove {} from retry_on", bad.join(", ")),
                ));
            }
        }
    }

    /// layered-retries: every synchronous path (outbox relays excluded)
    /// on which more than one edge retries, once per set of retrying edges.
    fn layered_retries(&self, out: &mut Vec<Finding>) {
        let mut seen: BTreeMap<Vec<usize>, (Vec<usize>, u64)> = BTreeMap::new();
        for c in 0..self.s.clients.len() {
            let mut stack = vec![self.s.clients[c].edge];
            self.walk_sync(&mut stack, &mut |path: &[usize]| {
                let retrying: Vec<usize> = path.iter().copied().filter(|&e| self.policy(e).max_attempts > 1).collect();
                if retrying.len() < 2 {
                    return;
                }
                let product = path.iter().fold(1u64, |a, &e| a.saturating_mul(self.policy(e).max_attempts as u64));
                let entry = seen.entry(retrying).or_insert_with(|| (path.to_vec(), product));
                if product > entry.1 {
                    *entry = (path.to_vec(), product);
                }
            });
        }
        for (retrying, (path, product)) in seen {
            let inner = *retrying.last().expect("two retrying edges");
            let layers: Vec<String> = retrying.iter().map(|&e| self.location(e)).collect();
            let factors: Vec<String> = path.iter().map(|&e| self.policy(e).max_attempts.to_string()).collect();
            out.push(self.on_policy(
                "layered-retries",
                inner,
                "max_attempts",
                format!(
                    "{} layers retry on {}: {} = {product} requests to {} per intent at worst ({})",
                    retrying.len(),
                    self.hops(&path).join(" -> "),
                    factors.join(" x "),
                    self.callee(*path.last().expect("a path")),
                    layers.join(", ")
                ),
                format!("retry at one layer only: set max_attempts = 1 on all but one of {}", layers.join(", ")),
            ));
        }
    }

    /// Calls `visit` with every maximal synchronous path that starts with `stack`.
    fn walk_sync(&self, stack: &mut Vec<usize>, visit: &mut dyn FnMut(&[usize])) {
        let svc = self.s.edges[*stack.last().expect("a path")].to;
        let next: Vec<usize> =
            self.s.services[svc].calls.iter().filter(|c| c.when != When::Outbox).map(|c| c.edge).collect();
        if next.is_empty() {
            visit(stack);
            return;
        }
        for e in next {
            stack.push(e);
            self.walk_sync(stack, visit);
            stack.pop();
        }
    }

    /// The client and services along a path of edges.
    fn hops(&self, path: &[usize]) -> Vec<String> {
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

    /// Rules about idempotency ledgers.
    fn ledger_rules(&self, out: &mut Vec<Finding>) {
        for (si, svc) in self.s.services.iter().enumerate() {
            let Some(l) = svc.ledger else { continue };
            let at = format!("services.{}", svc.name);
            let field = |f: &str| format!("services.{}.idempotency.{f}", svc.name);

            // ttl-shorter-than-retry-window
            let mut worst: Option<(usize, Option<Nanos>)> = None;
            for &e in &self.incoming[si] {
                if self.keyed(e) == Keyed::Never {
                    continue;
                }
                let span = self.span(e);
                if span == Some(0) {
                    continue;
                }
                let longer = match (worst, span) {
                    (None, _) => true,
                    (Some((_, None)), _) => false,
                    (Some(_), None) => true,
                    (Some((_, Some(a))), Some(b)) => b > a,
                };
                if longer {
                    worst = Some((e, span));
                }
            }
            if let Some((e, span)) = worst {
                let too_short = match span {
                    None => true,
                    Some(w) => w >= l.ttl,
                };
                if too_short {
                    let window = match span {
                        None => "without limit (no deadline, and no bound on the waits)".to_string(),
                        Some(w) => format!("up to {} after the first attempt", human(w)),
                    };
                    let fix = match span {
                        Some(w) => format!(
                            "raise {} above {} (e.g. \"24h\"), or give the callers a shorter deadline",
                            field("ttl"),
                            human(w)
                        ),
                        None => {
                            format!("give {} a deadline, and keep {} longer than it", self.location(e), field("ttl"))
                        }
                    };
                    out.push(self.on_experiment(
                        "ttl-shorter-than-retry-window",
                        field("ttl"),
                        at.clone(),
                        format!(
                            "{} forgets keys after {}, but {} can resend a key {window}: a late retry executes again as a new intent",
                            svc.name,
                            human(l.ttl),
                            self.location(e)
                        ),
                        fix,
                    ));
                }
            }

            if !l.durable {
                out.push(self.on_experiment(
                    "memory-ledger",
                    field("store"),
                    at.clone(),
                    format!(
                        "{}'s idempotency ledger is kept in memory: a crash empties it, and retries of the requests it had answered execute again, exactly when retries are most frequent",
                        svc.name
                    ),
                    "store = \"durable\" (the ledger in the same database as the business data)".into(),
                ));
            }
            if !l.atomic {
                out.push(self.on_experiment(
                    "non-atomic-ledger",
                    field("atomic"),
                    at.clone(),
                    format!(
                        "{} writes the idempotency record {} after the business write: a crash in between loses the record, and a retry executes again",
                        svc.name,
                        human(l.record_delay)
                    ),
                    "atomic = true: write the record in the same transaction as the business write".into(),
                ));
            }

            // lease-too-short
            let slowest = self.slowest(si);
            let problem = if l.lease == NEVER {
                Some("is \"never\": a placeholder left by a crash stays in progress for ever, and every retry of that key gets 409 or waits".to_string())
            } else {
                match slowest {
                    None => Some(format!(
                        "({}) may be shorter than the slowest execution, which is unbounded (a before_commit call has no timeout)",
                        human(l.lease)
                    )),
                    Some(t) if l.lease < t => Some(format!(
                        "({}) is shorter than the slowest execution ({}, p99.9 of the service time plus the before_commit calls): a duplicate then re-executes a request still in progress",
                        human(l.lease),
                        human(t)
                    )),
                    Some(_) => None,
                }
            };
            if let Some(problem) = problem {
                let fix = match slowest {
                    Some(t) => format!(
                        "set lease to a finite value above {}, e.g. \"{}\"",
                        human(t),
                        human(t.saturating_mul(2))
                    ),
                    None => {
                        "give the before_commit calls a deadline, then set lease above the slowest execution".into()
                    }
                };
                out.push(self.on_experiment(
                    "lease-too-short",
                    field("lease"),
                    at.clone(),
                    format!("{}'s ledger lease {problem}", svc.name),
                    fix,
                ));
            }
        }
    }

    /// unprotected-downstream-effect: a call to a service that commits a
    /// side effect of a non-idempotent operation, unless it is an outbox
    /// with consumer dedup or always carries a key the callee's ledger
    /// checks, and it can repeat (a retry on or above it, an outbox relay)
    /// or be lost (after_commit).
    fn downstream_effects(&self, out: &mut Vec<Finding>) {
        for (si, svc) in self.s.services.iter().enumerate() {
            for c in &svc.calls {
                let callee = &self.s.services[c.to];
                let Some(kind) = callee.commits else { continue };
                let e = c.edge;
                if self.unsafe_ops(e).is_empty() {
                    continue;
                }
                let keyed = self.keyed(e);
                let protected =
                    (c.when == When::Outbox && c.dedup) || (keyed == Keyed::Always && callee.ledger.is_some());
                // The call's own unsafe retries are reported by unsafe-retry.
                if protected || self.unsafe_retry(e).is_some() {
                    continue;
                }
                let repeats = self.retries_above(si);
                if !repeats && c.when != When::AfterCommit {
                    continue;
                }
                let effect = &self.s.effect_kinds[kind];
                let loc = self.location(e);
                let key = match (keyed, callee.ledger.is_some()) {
                    (Keyed::Always, false) => {
                        format!("the key it sends is not checked ({} has no idempotency ledger)", callee.name)
                    }
                    (Keyed::Sometimes, _) => {
                        "it does not always carry a key (some requests have none to forward)".into()
                    }
                    _ => "it carries no idempotency key".into(),
                };
                let why =
                    if c.when == When::Outbox { format!("its consumer does not deduplicate and {key}") } else { key };
                let consequence = if repeats {
                    format!("a repeat of {} (a retry above it) repeats the \"{effect}\" effect", svc.name)
                } else {
                    "a failed call after the commit loses the effect for good (no relay retries it)".to_string()
                };
                let field = if c.when == When::Outbox { "dedup" } else { "key" };
                out.push(self.on_experiment(
                    "unprotected-downstream-effect",
                    format!("{loc}.{field}"),
                    loc.clone(),
                    format!("{loc} reaches {}, which commits \"{effect}\", but {why}: {consequence}", callee.name),
                    format!(
                        "make it an outbox call with dedup = true, or send a stable key (key = \"derive\") to an idempotency ledger at {}",
                        callee.name
                    ),
                ));
            }
        }
    }

    /// Every call path from every client, prefixes included.
    fn paths(&self) -> Vec<PathRow> {
        let mut rows = Vec::new();
        for (ci, c) in self.s.clients.iter().enumerate() {
            let mut stack = vec![c.edge];
            self.walk_all(ci, &mut stack, &mut rows);
        }
        rows
    }

    fn walk_all(&self, client: usize, stack: &mut Vec<usize>, rows: &mut Vec<PathRow>) {
        if rows.len() >= MAX_PATHS {
            return;
        }
        let attempts: Vec<u32> = stack.iter().map(|&e| self.policy(e).max_attempts).collect();
        rows.push(PathRow {
            client: self.s.clients[client].name.clone(),
            hops: self.hops(stack),
            worst_case: attempts.iter().fold(1u64, |a, &n| a.saturating_mul(n as u64)),
            attempts,
            outbox: stack.iter().map(|&e| self.is_outbox(e)).collect(),
        });
        let svc = self.s.edges[*stack.last().expect("a path")].to;
        for c in &self.s.services[svc].calls {
            stack.push(c.edge);
            self.walk_all(client, stack, rows);
            stack.pop();
        }
    }

    fn is_outbox(&self, e: usize) -> bool {
        match self.s.edges[e].caller {
            Caller::Client(_) => false,
            Caller::Service { service, index } => self.s.services[service].calls[index].when == When::Outbox,
        }
    }
}

/// The outcomes in `retry_on` that may have executed (DESIGN §4).
fn unknown_outcomes(p: &Policy) -> Vec<String> {
    let r = &p.retry_on;
    let mut out = Vec::new();
    if r.timeout {
        out.push("timeout".to_string());
    }
    if r.reset {
        out.push("reset".into());
    }
    out.extend(r.statuses.iter().filter(|&&s| !Outcome::Status(s).nothing_executed()).map(u16::to_string));
    out
}

/// How long after its first attempt an intent can still be retried under
/// `p` (the deadline; else attempts x per-try timeout plus the longest
/// backoffs and, when the callee can send one, Retry-After waits).
/// `None`: unbounded.
fn window(p: &Policy, retry_after: bool) -> Option<Nanos> {
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

fn backoff_kind(p: &Policy) -> &'static str {
    match p.backoff.kind {
        crate::policy::BackoffKind::None => "no",
        crate::policy::BackoffKind::Constant => "constant",
        crate::policy::BackoffKind::Exponential => "exponential",
        crate::policy::BackoffKind::Decorrelated => "decorrelated",
    }
}

/// The `q` quantile of a duration distribution.
fn quantile(d: &Dist, q: f64) -> Nanos {
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
    };
    from_secs_f64(secs.max(0.0))
}

/// A duration for messages: `250ms`, `1.5s`, `never`.
fn human(ns: Nanos) -> String {
    fn trim(x: f64) -> String {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
    if ns == NEVER {
        "never".into()
    } else if ns == 0 {
        "0s".into()
    } else if ns >= 3_600_000_000_000 && ns.is_multiple_of(3_600_000_000_000) {
        format!("{}h", ns / 3_600_000_000_000)
    } else if ns >= 1_000_000_000 {
        format!("{}s", trim(ns as f64 / 1e9))
    } else if ns >= 1_000_000 {
        format!("{}ms", trim(ns as f64 / 1e6))
    } else {
        format!("{}µs", trim(ns as f64 / 1e3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles() {
        assert_eq!(quantile(&Dist::Const(5), 0.999), 5);
        let q = quantile(&Dist::Exp { mean: 0.01 }, 0.999) as f64 / 1e9;
        assert!((q - 0.01 * 1000f64.ln()).abs() < 1e-6);
        let g = quantile(&Dist::Gamma { shape: 1.0, scale: 0.01 }, 0.999) as f64 / 1e9;
        assert!((g - q).abs() < 1e-4, "gamma(1) is exponential: {g} vs {q}");
    }

    #[test]
    fn every_rule_id_is_unique() {
        let ids: BTreeSet<&str> = RULES.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), RULES.len());
    }
}
