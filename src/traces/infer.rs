//! The model read from the span graph: clients and their arrival rates,
//! services with their capacity, service times and own errors, and the
//! call edges with calls per request, network latency and retry policy.

use super::graph::{Call, Graph};
use super::policy::{self, Policy, dur, quantile};
use super::span::{Answer, Kind};
use std::collections::{BTreeMap, HashMap};

/// One observed call: latency (s, first attempt's start to last one's
/// end), whether it ended ok, and its attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallSample {
    pub latency: f64,
    pub ok: bool,
    pub attempts: u32,
}

fn samples(calls: &[&Call]) -> Vec<CallSample> {
    calls
        .iter()
        .map(|c| CallSample { latency: secs(c.latency()), ok: c.outcome().is_ok(), attempts: c.attempts.len() as u32 })
        .collect()
}

/// A client class: the callers of one root operation.
#[derive(Debug, Clone)]
pub struct ClientModel {
    pub name: String,
    pub target: String,
    pub operation: String,
    pub rate_per_s: f64,
    pub roots: usize,
    /// Coefficient of variation of the inter-arrival times (1 for Poisson).
    pub cv: f64,
    pub policy: Policy,
    /// One-way latency samples (s) of the edge into the target; empty when
    /// the client is not traced (its root is a SERVER span).
    pub latency: Vec<f64>,
    pub latency_evidence: String,
    /// How the root was read.
    pub evidence: String,
    /// The root calls (end to end, as the client saw them).
    pub samples: Vec<CallSample>,
}

/// A downstream call of a service.
#[derive(Debug, Clone)]
pub struct CallModel {
    pub to: String,
    pub operation: String,
    pub per_request: f64,
    pub calls: usize,
    pub requests: usize,
    pub policy: Policy,
    pub latency: Vec<f64>,
    pub latency_evidence: String,
    /// The calls of complete traces (all calls when too few).
    pub samples: Vec<CallSample>,
}

/// A service.
#[derive(Debug, Clone)]
pub struct ServiceModel {
    pub name: String,
    pub workers: u32,
    pub workers_evidence: String,
    /// Self times (s), sorted.
    pub service_time: Vec<f64>,
    pub server_spans: usize,
    /// Own error answers: (status, share of SERVER spans, count).
    pub errors: Vec<(u16, f64, usize)>,
    pub calls: Vec<CallModel>,
    /// Every attempt its callers sent it, as they saw it (one attempt each).
    pub attempts: Vec<CallSample>,
}

/// An operation and whether it is idempotent (from its HTTP method).
#[derive(Debug, Clone)]
pub struct OperationModel {
    pub name: String,
    pub idempotent: bool,
    pub evidence: String,
}

/// Everything inferred.
#[derive(Debug, Clone)]
pub struct Model {
    /// First and last root start (ns since the epoch).
    pub window: (i64, i64),
    pub clients: Vec<ClientModel>,
    pub services: Vec<ServiceModel>,
    pub operations: Vec<OperationModel>,
    /// Remarks on the whole (clock skew, sampling).
    pub notes: Vec<String>,
}

/// A name as the experiment file allows it (`[A-Za-z0-9_-]`).
pub fn sanitize(s: &str) -> String {
    super::names::sanitize_or(s, "op")
}

fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

fn idempotent_method(m: Option<&str>) -> Option<bool> {
    let m = m?.to_ascii_uppercase();
    Some(matches!(m.as_str(), "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE" | "TRACE"))
}

/// Per-span facts the inference needs.
struct Facts {
    /// Calls made while handling each span.
    calls_of: HashMap<usize, Vec<usize>>,
    /// SERVER spans answered with an error not caused by a failed call.
    own_error: Vec<bool>,
    /// Per SERVER span doing work: others of its service in service at its start.
    others_at_start: HashMap<usize, u32>,
}

fn facts(g: &Graph) -> (Facts, BTreeMap<String, u32>) {
    let mut calls_of: HashMap<usize, Vec<usize>> = HashMap::new();
    for (ci, c) in g.calls.iter().enumerate() {
        if let Some(h) = c.handler {
            calls_of.entry(h).or_default().push(ci);
        }
    }
    let own_error: Vec<bool> = (0..g.spans.len())
        .map(|i| {
            let s = &g.spans[i];
            // A redirect (3xx) is an answer, not an error: its hop is left out at the caller.
            s.kind == Kind::Server
                && !s.answer.is_ok()
                && !s.answer.is_redirect()
                && calls_of.get(&i).is_none_or(|cs| cs.iter().all(|&c| g.calls[c].outcome().is_ok()))
        })
        .collect();
    // Sweep over each service's working SERVER spans.
    let mut by_service: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in g.spans.iter().enumerate() {
        if s.kind == Kind::Server && !own_error[i] {
            by_service.entry(&s.service).or_default().push(i);
        }
    }
    let mut others_at_start = HashMap::new();
    let mut peak = BTreeMap::new();
    for (svc, spans) in by_service {
        let mut ev: Vec<(i64, i32, usize)> = Vec::with_capacity(spans.len() * 2);
        for &i in &spans {
            ev.push((g.spans[i].start, 1, i));
            ev.push((g.spans[i].end, -1, i));
        }
        // Ends before starts at the same instant.
        ev.sort_by_key(|e| (e.0, e.1, e.2));
        let mut active: i64 = 0;
        let mut max = 0;
        for (_, d, i) in ev {
            if d > 0 {
                others_at_start.insert(i, active as u32);
                active += 1;
                max = max.max(active);
            } else {
                active -= 1;
            }
        }
        peak.insert(svc.to_string(), max as u32);
    }
    (Facts { calls_of, own_error, others_at_start }, peak)
}

/// Self time of a SERVER span: its duration less the union of its calls'
/// windows (first attempt's start to last attempt's end, waits included).
fn self_time(g: &Graph, f: &Facts, i: usize) -> f64 {
    let s = &g.spans[i];
    let mut windows: Vec<(i64, i64)> = f
        .calls_of
        .get(&i)
        .map(|cs| {
            cs.iter()
                .map(|&c| {
                    let c = &g.calls[c];
                    (c.attempts[0].start.max(s.start), c.attempts[c.attempts.len() - 1].end.min(s.end))
                })
                .filter(|w| w.1 > w.0)
                .collect()
        })
        .unwrap_or_default();
    windows.sort();
    let mut busy = 0i64;
    let mut cur: Option<(i64, i64)> = None;
    for w in windows {
        match &mut cur {
            Some(c) if w.0 <= c.1 => c.1 = c.1.max(w.1),
            _ => {
                if let Some(c) = cur {
                    busy += c.1 - c.0;
                }
                cur = Some(w);
            }
        }
    }
    if let Some(c) = cur {
        busy += c.1 - c.0;
    }
    secs((s.duration() - busy).max(0))
}

/// One-way network latency samples of `calls`: half of (client span −
/// server span) for answered attempts whose server had two workers free
/// when the server span started (so no wait for a worker is inside the
/// gap), and the clock offsets seen.
fn network(g: &Graph, f: &Facts, calls: &[&Call], workers: u32) -> (Vec<f64>, String, Vec<f64>) {
    let mut all = Vec::new();
    let mut free = Vec::new();
    let mut offsets = Vec::new();
    let mut outside = 0;
    for c in calls {
        for a in &c.attempts {
            let Some(si) = a.server else { continue };
            if matches!(a.answer, Answer::Timeout | Answer::ConnectError) {
                continue;
            }
            let (cs, ss) = (&g.spans[a.client], &g.spans[si]);
            let gap = (cs.duration() - ss.duration()) as f64 / 2.0 / 1e9;
            offsets.push(((ss.start - cs.start) - (cs.end - ss.end)) as f64 / 2.0 / 1e9);
            // A server span may end after its client's (it ends after writing
            // the answer the client has already read), but cannot start first.
            if ss.start < cs.start {
                outside += 1;
            }
            if gap < 0.0 {
                continue;
            }
            all.push(gap);
            let queued_free =
                f.own_error[si] || f.others_at_start.get(&si).is_some_and(|&o| workers >= 2 && o + 1 < workers);
            if queued_free {
                free.push(gap);
            }
        }
    }
    let mut note = String::new();
    let use_free = free.len() >= 20;
    let mut v = if use_free { free } else { all };
    v.sort_by(f64::total_cmp);
    if !v.is_empty() {
        note = format!(
            "half of (CLIENT span − SERVER span) over {} answered attempts{}: median {}, p99 {}",
            v.len(),
            if use_free {
                " whose server had a worker to spare (no wait for a worker inside)"
            } else {
                " (a wait for a worker may be inside)"
            },
            dur(quantile(&v, 0.5)),
            dur(quantile(&v, 0.99))
        );
    }
    if outside > 0 {
        note.push_str(&format!(
            "; {outside} SERVER spans start before their CLIENT span on the hosts' clocks (clock skew): only durations are used"
        ));
    }
    (v, note, offsets)
}

/// Builds the model. `workers`: capacities given on the command line.
pub fn infer(g: &Graph, workers: &BTreeMap<String, u32>) -> Model {
    let (f, peak) = facts(g);
    let mut notes = Vec::new();
    let mut operations: BTreeMap<String, OperationModel> = BTreeMap::new();
    let mut op_of = |name: &str, method: Option<&str>| -> String {
        let n = sanitize(name);
        operations.entry(n.clone()).or_insert_with(|| {
            let (idempotent, evidence) = match idempotent_method(method) {
                Some(i) => (i, format!("http.request.method {}", method.unwrap_or_default())),
                None => (false, "no http.request.method: taken as not idempotent".into()),
            };
            OperationModel { name: n.clone(), idempotent, evidence }
        });
        n
    };
    // The operation a callee's SERVER spans name, most common first.
    let callee_op = |calls: &[&Call]| -> (String, Option<String>) {
        let mut names: BTreeMap<(String, Option<String>), usize> = BTreeMap::new();
        for c in calls {
            for a in &c.attempts {
                if let Some(s) = a.server {
                    let sp = &g.spans[s];
                    let m = sp.method.clone().or_else(|| g.spans[a.client].method.clone());
                    *names.entry((sp.name.clone(), m)).or_insert(0) += 1;
                }
            }
        }
        names.into_iter().max_by_key(|(_, n)| *n).map(|(k, _)| k).unwrap_or_else(|| ("call".into(), None))
    };
    // Services: everything with SERVER spans.
    let mut names: Vec<String> = g.spans.iter().filter(|s| s.kind == Kind::Server).map(|s| s.service.clone()).collect();
    names.sort();
    names.dedup();
    let workers_of =
        |svc: &str| workers.get(svc).copied().unwrap_or_else(|| peak.get(svc).copied().unwrap_or(1).max(1));
    let mut services = Vec::new();
    for svc in &names {
        let server: Vec<usize> =
            (0..g.spans.len()).filter(|&i| g.spans[i].kind == Kind::Server && &g.spans[i].service == svc).collect();
        let working: Vec<usize> = server.iter().copied().filter(|&i| !f.own_error[i]).collect();
        let complete: Vec<usize> = working.iter().copied().filter(|&i| g.complete[i]).collect();
        let basis = if complete.len() >= 20 { &complete } else { &working };
        let mut st: Vec<f64> = basis.iter().map(|&i| self_time(g, &f, i)).collect();
        st.sort_by(f64::total_cmp);
        let mut errs: BTreeMap<u16, usize> = BTreeMap::new();
        for &i in &server {
            if f.own_error[i] {
                let code = match g.spans[i].answer {
                    Answer::Status(s) if s < 600 => s,
                    _ => 500,
                };
                *errs.entry(code).or_insert(0) += 1;
            }
        }
        let errors = errs.into_iter().map(|(s, n)| (s, n as f64 / server.len().max(1) as f64, n)).collect();
        let w = workers_of(svc);
        let workers_evidence = match workers.get(svc) {
            Some(n) => format!("{n} from --workers"),
            None => format!(
                "at most {} SERVER spans of {svc} were in progress at once: a lower bound on its capacity (--workers {svc}=N to set it)",
                peak.get(svc).copied().unwrap_or(0)
            ),
        };
        // Its downstream calls, per callee.
        let mut by_callee: BTreeMap<String, Vec<&Call>> = BTreeMap::new();
        for c in &g.calls {
            if c.handler.is_some_and(|h| g.spans[h].kind == Kind::Server && &g.spans[h].service == svc) {
                by_callee.entry(c.callee.clone()).or_default().push(c);
            }
        }
        let requests = working.iter().filter(|&&i| g.complete[i]).count();
        let mut calls = Vec::new();
        for (to, cs) in by_callee {
            let complete_calls: Vec<&Call> = cs.iter().copied().filter(|c| c.complete).collect();
            let basis: Vec<&Call> = if complete_calls.len() >= 20 { complete_calls.clone() } else { cs.clone() };
            let (op_name, method) = callee_op(&basis);
            let operation = op_of(&op_name, method.as_deref());
            let idem = idempotent_method(method.as_deref()).unwrap_or(false);
            let (latency, latency_evidence, _) = network(g, &f, &cs, workers_of(&to));
            calls.push(CallModel {
                to,
                operation,
                per_request: complete_calls.len() as f64 / requests.max(1) as f64,
                calls: complete_calls.len(),
                requests,
                policy: policy::infer(&basis, idem),
                latency,
                latency_evidence,
                samples: samples(&basis),
            });
        }
        let attempts = g
            .calls
            .iter()
            .filter(|c| &c.callee == svc)
            .flat_map(|c| c.attempts.iter())
            .map(|a| CallSample { latency: secs(a.end - a.start), ok: a.answer.is_ok(), attempts: 1 })
            .collect();
        services.push(ServiceModel {
            attempts,
            name: svc.clone(),
            workers: w,
            workers_evidence,
            service_time: st,
            server_spans: server.len(),
            errors,
            calls,
        });
    }
    // Clients: one per root operation.
    let root_calls: HashMap<usize, usize> = g
        .calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.handler.is_none())
        .map(|(ci, c)| (c.attempts[0].client, ci))
        .collect();
    type Group<'a> = (Vec<usize>, Vec<&'a Call>, Kind);
    let mut groups: BTreeMap<(String, String, String), Group> = BTreeMap::new();
    for &r in &g.roots {
        let s = &g.spans[r];
        let (target, call): (String, Vec<&Call>) = match s.kind {
            Kind::Client => match root_calls.get(&r) {
                Some(&ci) => (g.calls[ci].callee.clone(), vec![&g.calls[ci]]),
                None => continue,
            },
            Kind::Server => (s.service.clone(), Vec::new()),
            _ => {
                let cs: Vec<&Call> =
                    f.calls_of.get(&r).map(|v| v.iter().map(|&c| &g.calls[c]).collect()).unwrap_or_default();
                match cs.first() {
                    Some(c) => {
                        let t = c.callee.clone();
                        (t.clone(), cs.into_iter().filter(|c| c.callee == t).collect())
                    }
                    None => continue,
                }
            }
        };
        let e = groups.entry((s.service.clone(), s.name.clone(), target)).or_insert((Vec::new(), Vec::new(), s.kind));
        e.0.push(r);
        e.1.extend(call);
    }
    let first = g.roots.first().map(|&r| g.spans[r].start).unwrap_or(0);
    let last = g.roots.last().map(|&r| g.spans[r].start).unwrap_or(0);
    let span_s = secs(last - first).max(1e-9);
    let per_service_roots = groups.keys().fold(BTreeMap::<String, usize>::new(), |mut m, k| {
        *m.entry(k.0.clone()).or_insert(0) += 1;
        m
    });
    let mut clients = Vec::new();
    for ((svc, name, target), (roots, calls, kind)) in groups {
        let mut starts: Vec<i64> = roots.iter().map(|&r| g.spans[r].start).collect();
        starts.sort();
        let gaps: Vec<f64> = starts.windows(2).map(|w| secs(w[1] - w[0])).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len().max(1) as f64;
        let var = gaps.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (gaps.len().max(2) - 1) as f64;
        let cv = if mean > 0.0 { var.sqrt() / mean } else { f64::NAN };
        let base = if kind == Kind::Server { format!("{svc}-callers") } else { svc.clone() };
        let client_name = if per_service_roots.get(&svc).copied().unwrap_or(0) > 1 {
            sanitize(&format!("{base}-{name}"))
        } else {
            sanitize(&base)
        };
        let (op_name, method) = if calls.is_empty() {
            (name.clone(), roots.first().and_then(|&r| g.spans[r].method.clone()))
        } else {
            callee_op(&calls)
        };
        let operation = op_of(&op_name, method.as_deref());
        let idem = idempotent_method(method.as_deref()).unwrap_or(false);
        let observed = if calls.is_empty() {
            roots
                .iter()
                .map(|&r| CallSample {
                    latency: secs(g.spans[r].duration()),
                    ok: g.spans[r].answer.is_ok(),
                    attempts: 1,
                })
                .collect()
        } else {
            samples(&calls)
        };
        let (latency, latency_evidence, policy, evidence) = if calls.is_empty() {
            let p = Policy {
                max_attempts: 1,
                per_try_timeout: 60.0,
                timeout_evidence: "the caller is not traced: its timeout is unknown".into(),
                retry_on: Vec::new(),
                backoff: None,
                retry_unknown_without_key: false,
                evidence: vec!["the caller is not traced: retries it may make are not seen".into()],
            };
            (
                Vec::new(),
                "the caller is not traced: no network time".to_string(),
                p,
                format!("{} root SERVER spans {svc} \"{name}\"", roots.len()),
            )
        } else {
            let (l, e, _) = network(g, &f, &calls, workers_of(&target));
            (l, e, policy::infer(&calls, idem), format!("{} root spans {svc} \"{name}\" ({:?})", roots.len(), kind))
        };
        clients.push(ClientModel {
            name: client_name,
            target,
            operation,
            rate_per_s: (roots.len().saturating_sub(1)) as f64 / span_s,
            roots: roots.len(),
            cv,
            policy,
            latency,
            latency_evidence,
            evidence,
            samples: observed,
        });
    }
    // Clock skew between caller and callee hosts, per edge.
    for (caller, callee, offs) in skew(g) {
        notes.push(format!(
            "clock skew: {callee}'s clock reads {} {} {caller}'s (median over {} answered attempts); durations, not cross-host timestamps, are used",
            dur(offs.abs()),
            if offs > 0.0 { "ahead of" } else { "behind" },
            g.calls.iter().filter(|c| c.caller == caller && c.callee == callee).count()
        ));
    }
    let mut model =
        Model { window: (first, last), clients, services, operations: operations.into_values().collect(), notes };
    super::names::settle(&mut model);
    model
}

/// Edges whose median clock offset (server − client, from the midpoints of
/// answered attempts) is above 1 ms and above the one-way latency.
fn skew(g: &Graph) -> Vec<(String, String, f64)> {
    let mut by_edge: BTreeMap<(String, String), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for c in &g.calls {
        for a in &c.attempts {
            let Some(si) = a.server else { continue };
            if matches!(a.answer, Answer::Timeout | Answer::ConnectError) {
                continue;
            }
            let (cs, ss) = (&g.spans[a.client], &g.spans[si]);
            let e = by_edge.entry((c.caller.clone(), c.callee.clone())).or_default();
            e.0.push(((ss.start - cs.start) - (cs.end - ss.end)) as f64 / 2e9);
            e.1.push((cs.duration() - ss.duration()).max(0) as f64 / 2e9);
        }
    }
    let mut out = Vec::new();
    for ((a, b), (mut offs, mut gaps)) in by_edge {
        offs.sort_by(f64::total_cmp);
        gaps.sort_by(f64::total_cmp);
        let m = quantile(&offs, 0.5);
        if m.abs() > 1e-3 && m.abs() > quantile(&gaps, 0.5) {
            out.push((a, b, m));
        }
    }
    out
}
