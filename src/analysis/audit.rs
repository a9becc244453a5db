//! `retrysim audit`: the worst breakpoints of DESIGN §6, derived from an
//! experiment's topology and run as short targeted simulations, with the
//! invariants checked on each and one counterexample intent per failure.

use crate::config::{Caller, ClientMode, ClientSpec, EdgeSpec, FaultKind, FaultSpec, Scenario};
use crate::engine::{NEVER, Nanos};
use crate::metrics::RunResult;
use crate::model::{RunOptions, simulate_with};

const S: Nanos = 1_000_000_000;

/// The result of one invariant at one breakpoint.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The breakpoint (DESIGN §6 wording).
    pub breakpoint: String,
    /// What it was applied to (a service or client).
    pub target: String,
    /// The invariant checked.
    pub invariant: String,
    /// `None`: passed; `Some(why)`: failed.
    pub failure: Option<String>,
    /// The attempts (trace rows, DESIGN §5) of one intent that broke it;
    /// empty when it passed or was checked statically.
    pub trace: Vec<serde_json::Value>,
}

impl Finding {
    /// Whether the invariant held.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// A breakpoint's scenario, and the invariants to check on its run.
struct Probe {
    breakpoint: &'static str,
    target: String,
    scenario: Scenario,
    checks: Vec<Check>,
}

#[derive(Clone, Copy)]
enum Check {
    /// One order, one charge, one event per intent (and so one resource id on repeat).
    OneEffect,
    /// No placeholder stays in progress forever.
    NoStuckPlaceholder,
    /// No client waits past its deadline.
    NoOverrun,
    /// A reconciler resolves every placeholder within `every + older_than`.
    Reconciled,
}

impl Check {
    fn invariant(self) -> &'static str {
        match self {
            Check::OneEffect => "one effect of each kind per intent",
            Check::NoStuckPlaceholder => "no placeholder stays in progress past its lease",
            Check::NoOverrun => "no client waits past its deadline",
            Check::Reconciled => "a reconciler resolves every record within every + older_than",
        }
    }

    /// The failure, if any, and the witness kind to trace.
    fn judge(self, r: &RunResult) -> Option<(String, &'static str)> {
        let get = |k: &str| r.metrics.get(k).copied().flatten();
        match self {
            Check::OneEffect => {
                let d = get("duplicate_intents").unwrap_or(0.0);
                (d > 0.0).then(|| (format!("{d} intents had a side effect more than once"), "duplicate_intent"))
            }
            Check::NoStuckPlaceholder => {
                let n = get("stuck_placeholders").unwrap_or(0.0);
                (n > 0.0).then(|| {
                    (format!("{n} placeholders stayed in progress with no lease to recover them"), "stuck_placeholder")
                })
            }
            Check::NoOverrun => {
                let n = get("deadline_overruns").unwrap_or(0.0);
                (n > 0.0).then(|| (format!("{n} intents ended after their deadline"), "deadline_overrun"))
            }
            Check::Reconciled => {
                let n = get("unresolved_at_end").unwrap_or(0.0);
                (n > 0.0).then(|| (format!("{n} records or effects were still unresolved at the end"), "unresolved"))
            }
        }
    }
}

/// A short copy of `base` without its own faults: the breakpoints bring theirs.
fn short(base: &Scenario) -> Scenario {
    let mut s = base.clone();
    s.duration = base.duration.min(20 * S);
    s.warmup = 0;
    s.replications = 1;
    s.drain_limit = 120 * S;
    s.faults.clear();
    for c in &mut s.clients {
        if let ClientMode::Burst { at, spread } = &mut c.mode {
            *at = (*at).min(s.duration / 4);
            *spread = (*spread).min(s.duration / 4);
        }
    }
    s
}

fn fault(name: &str, target: usize, start: Nanos, end: Nanos, kind: FaultKind) -> FaultSpec {
    FaultSpec { name: name.into(), target, host: None, start, end, kind }
}

/// Services where side effects happen (they commit), else every target of a client.
fn committing(s: &Scenario) -> Vec<usize> {
    let c: Vec<usize> = (0..s.services.len()).filter(|&i| s.services[i].commits.is_some()).collect();
    let mut c = if c.is_empty() { s.clients.iter().map(|c| c.target).collect() } else { c };
    c.sort_unstable();
    c.dedup();
    c
}

fn probes(base: &Scenario) -> Vec<Probe> {
    let mut out = Vec::new();
    let d = short(base).duration;
    for svc in committing(base) {
        let name = base.services[svc].name.clone();
        let mut s = short(base);
        s.faults.push(fault("audit-response-loss", svc, d / 10, NEVER, FaultKind::ResponseLoss { probability: 0.2 }));
        out.push(Probe {
            breakpoint: "response lost after commit",
            target: name.clone(),
            scenario: s,
            checks: vec![Check::OneEffect, Check::NoOverrun],
        });

        // A short crash (200 ms), so that callers' retries of answers lost
        // before it come back after the restart.
        let mut s = short(base);
        s.faults.push(fault("audit-crash", svc, d / 2, d / 2 + S / 5, FaultKind::Crash));
        s.faults.push(fault("audit-response-loss", svc, d / 10, NEVER, FaultKind::ResponseLoss { probability: 0.2 }));
        let reconciles = base.services[svc].ledger.is_some() && !base.services[svc].reconcilers.is_empty();
        if reconciles {
            out.push(Probe {
                breakpoint: "crash after reservation",
                target: name.clone(),
                scenario: s.clone(),
                checks: vec![Check::Reconciled],
            });
        }
        out.push(Probe {
            breakpoint: "crash after the placeholder",
            target: name.clone(),
            scenario: s,
            checks: vec![Check::OneEffect, Check::NoStuckPlaceholder],
        });

        if let Some(l) = base.services[svc].ledger
            && !l.atomic
        {
            let mut s = short(base);
            // Crash while records of recent writes are still pending.
            s.faults.push(fault("audit-crash", svc, d / 2, d / 2 + S / 5, FaultKind::Crash));
            s.faults.push(fault(
                "audit-response-loss",
                svc,
                d / 10,
                NEVER,
                FaultKind::ResponseLoss { probability: 0.5 },
            ));
            out.push(Probe {
                breakpoint: "crash between business write and ledger record",
                target: name.clone(),
                scenario: s,
                checks: vec![Check::OneEffect],
            });
        }
    }
    for q in &base.queues {
        // The consumer's acknowledgement of 20% of the deliveries is lost
        // after it committed: the message is delivered again, and only the
        // call's dedup keeps the second delivery from committing again.
        let mut s = short(base);
        s.faults.push(fault("audit-ack-loss", q.consumer, d / 10, NEVER, FaultKind::ResponseLoss { probability: 0.2 }));
        out.push(Probe {
            breakpoint: "acknowledgement lost",
            target: format!("queues.{}", q.name),
            scenario: s,
            checks: vec![Check::OneEffect],
        });
    }
    for (ci, c) in base.clients.iter().enumerate() {
        // Two identical keys at once: the per-try timeout is far shorter
        // than the work, so each retry arrives while the first is in progress.
        let mut s = short(base);
        let service = &base.services[c.target];
        let p = &mut s.clients[ci].policy;
        p.per_try_timeout = crate::engine::from_secs_f64(service.service_time.mean_secs() / 4.0).max(1_000_000);
        p.max_attempts = p.max_attempts.max(3);
        out.push(Probe {
            breakpoint: "two identical keys at once",
            target: c.name.clone(),
            scenario: s,
            checks: vec![Check::OneEffect],
        });

        if c.idempotency_key {
            let mut s = short(base);
            s.clients[ci].key_reuse_rate = 0.3;
            out.push(Probe {
                breakpoint: "same key with a different body",
                target: c.name.clone(),
                scenario: s,
                checks: vec![Check::OneEffect],
            });
        }

        if c.policy.deadline != NEVER {
            let mut s = short(base);
            let ra = c.policy.deadline.saturating_mul(2);
            s.faults.push(fault(
                "audit-retry-after",
                c.target,
                0,
                NEVER,
                FaultKind::Error { status: 503, probability: 0.5, retry_after: Some(ra) },
            ));
            out.push(Probe {
                breakpoint: "Retry-After longer than the remaining deadline",
                target: c.name.clone(),
                scenario: s,
                checks: vec![Check::NoOverrun],
            });
        }

        // Thousands of clients receive 503 together.
        let mut s = short(base);
        let herd = ClientSpec {
            name: format!("{}-herd", c.name),
            count: 2000,
            mode: ClientMode::Burst { at: d / 4, spread: 0 },
            ..c.clone()
        };
        let edge = s.edges.len();
        s.edges.push(EdgeSpec {
            name: format!("{}->{}", herd.name, service.name),
            caller: Caller::Client(s.clients.len()),
            to: c.target,
            latency: base.edges[c.edge].latency.clone(),
        });
        s.clients.push(ClientSpec { edge, ..herd });
        s.faults.push(fault(
            "audit-503",
            c.target,
            d / 4,
            d / 4 + S,
            FaultKind::Error { status: 503, probability: 1.0, retry_after: None },
        ));
        out.push(Probe {
            breakpoint: "thousands of clients receive 503 together",
            target: c.name.clone(),
            scenario: s,
            checks: vec![Check::OneEffect, Check::NoOverrun],
        });
    }
    out
}

/// Static: no caller's retry window may outlast the ledger's ttl (a resend
/// after expiry would be a new intent).
fn ttl_findings(s: &Scenario) -> Vec<Finding> {
    let mut out = Vec::new();
    for (si, svc) in s.services.iter().enumerate() {
        let Some(ledger) = svc.ledger else { continue };
        for (ei, e) in s.edges.iter().enumerate() {
            if e.to != si {
                continue;
            }
            let policy = s.edge_policy(ei);
            // Only callers that send a key and resend it matter here.
            let sends_key = match e.caller {
                Caller::Client(c) => s.clients[c].idempotency_key,
                Caller::Service { service, index } => {
                    s.services[service].calls[index].key != crate::config::KeyMode::None
                }
            };
            if policy.max_attempts < 2 || !sends_key {
                continue;
            }
            let window = policy.retry_window();
            let failure = match window {
                None => Some(format!(
                    "{} retries with neither deadline nor per-try timeout: its retry window is unbounded, longer than the ttl",
                    e.name
                )),
                Some(w) if w >= ledger.ttl => Some(format!(
                    "{} can resend a key up to {:.3} s after the first attempt, but {} forgets keys after {:.3} s",
                    e.name,
                    w as f64 / 1e9,
                    svc.name,
                    ledger.ttl as f64 / 1e9
                )),
                _ => None,
            };
            out.push(Finding {
                breakpoint: "key resent just after its expiry".into(),
                target: e.name.clone(),
                invariant: "no caller's retry window outlasts the ledger's ttl".into(),
                failure,
                trace: Vec::new(),
            });
        }
    }
    out
}

/// How every probe runs: one after the other, each fully traced (a
/// failure's counterexample is one of its intents).
pub const PROBE_OPTIONS: RunOptions = RunOptions { trace_fraction: 1.0, lean: false };

/// The scenario of every breakpoint [`audit`] runs, for its estimate.
pub fn probe_scenarios(base: &Scenario) -> Vec<Scenario> {
    probes(base).into_iter().map(|p| p.scenario).collect()
}

/// Runs every breakpoint of `base` and checks the invariants.
pub fn audit(base: &Scenario) -> Vec<Finding> {
    let mut findings = ttl_findings(base);
    for probe in probes(base) {
        let run = simulate_with(&probe.scenario, 0, PROBE_OPTIONS);
        for check in &probe.checks {
            let (failure, trace) = match check.judge(&run) {
                None => (None, Vec::new()),
                Some((why, witness)) => {
                    let trace = run
                        .witnesses
                        .get(witness)
                        .map(|&(client, intent)| {
                            run.trace
                                .iter()
                                .filter(|t| t.client == client && t.intent == intent)
                                .map(|t| t.to_json(&probe.scenario, 0))
                                .collect()
                        })
                        .unwrap_or_default();
                    (Some(why), trace)
                }
            };
            findings.push(Finding {
                breakpoint: probe.breakpoint.into(),
                target: probe.target.clone(),
                invariant: check.invariant().into(),
                failure,
                trace,
            });
        }
    }
    findings
}
