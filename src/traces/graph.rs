//! The span graph: spans joined to their parents, traces checked for
//! completeness, and CLIENT spans grouped into calls (one call, several
//! attempts) on caller → callee edges.

use super::read::Dropped;
use super::span::{Answer, Kind, Span};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One attempt of a call: a CLIENT span, and the SERVER span it reached.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub client: usize,
    pub server: Option<usize>,
    pub answer: Answer,
    pub start: i64,
    pub end: i64,
}

/// One call on an edge: its attempts in order (redirect hops left out).
#[derive(Debug, Clone)]
pub struct Call {
    pub caller: String,
    pub callee: String,
    /// The caller's span handling the request that made the call (its
    /// SERVER span, or the root); `None` for a root CLIENT span.
    pub handler: Option<usize>,
    pub attempts: Vec<Attempt>,
    /// Whether the call's trace is complete (one root, every parent present).
    pub complete: bool,
    /// Requests that followed a 3xx answer: counted by
    /// `http.request.resend_count`, but no retries.
    pub redirects: u32,
}

impl Call {
    /// The last attempt's answer: the call's outcome.
    pub fn outcome(&self) -> &Answer {
        &self.attempts.last().expect("a call has an attempt").answer
    }
    /// From the first attempt's start to the last one's end (ns).
    pub fn latency(&self) -> i64 {
        self.attempts.last().map_or(0, |a| a.end) - self.attempts.first().map_or(0, |a| a.start)
    }
}

/// The joined spans.
#[derive(Debug, Default)]
pub struct Graph {
    pub spans: Vec<Span>,
    pub children: Vec<Vec<usize>>,
    pub parent: Vec<Option<usize>>,
    /// Per span: whether its trace is complete.
    pub complete: Vec<bool>,
    /// Root spans (no parent id) of traces with one root, complete or not, by start time.
    pub roots: Vec<usize>,
    pub calls: Vec<Call>,
    /// Traces seen, and how many were complete.
    pub traces: usize,
    pub complete_traces: usize,
}

/// Cuts every parent cycle in `parent` (span index → parent index): each
/// span on a cycle loses its link. Returns which spans were on one. Spans
/// whose chain only leads into a cycle keep their link (after the cut their
/// chain ends at the cycle's span). Linear in the spans.
fn cut_parent_cycles(parent: &mut [Option<usize>]) -> Vec<bool> {
    // 0 unvisited, 1 on the current walk, 2 known to end.
    let mut state = vec![0u8; parent.len()];
    let mut cyclic = vec![false; parent.len()];
    let mut walk = Vec::new();
    for start in 0..parent.len() {
        let mut cur = Some(start);
        while let Some(i) = cur {
            match state[i] {
                0 => {
                    state[i] = 1;
                    walk.push(i);
                    cur = parent[i];
                }
                1 => {
                    // `i` is on this walk: the spans from it on form a cycle.
                    let from = walk.iter().position(|&w| w == i).expect("on the walk");
                    for &w in &walk[from..] {
                        cyclic[w] = true;
                        parent[w] = None;
                    }
                    break;
                }
                _ => break,
            }
        }
        for w in walk.drain(..) {
            state[w] = 2;
        }
    }
    cyclic
}

impl Graph {
    /// Joins `spans`, dropping (and counting in `dropped`) duplicates and
    /// spans that end before they start.
    pub fn build(spans: Vec<Span>, files: &[std::path::PathBuf], dropped: &mut Dropped) -> Graph {
        let at =
            |s: &Span| format!("{}:{}", files.get(s.at.0).map(|p| p.display().to_string()).unwrap_or_default(), s.at.1);
        let mut seen: HashMap<(String, String), usize> = HashMap::new();
        let mut kept = Vec::with_capacity(spans.len());
        for s in spans {
            if s.end < s.start {
                dropped.add("a span that ends before it starts", || at(&s));
                continue;
            }
            if seen.contains_key(&(s.trace.clone(), s.id.clone())) {
                dropped.add("a span seen twice (same trace and span id; the first is kept)", || at(&s));
                continue;
            }
            seen.insert((s.trace.clone(), s.id.clone()), kept.len());
            kept.push(s);
        }
        let n = kept.len();
        let mut g =
            Graph { children: vec![Vec::new(); n], parent: vec![None; n], complete: vec![true; n], ..Graph::default() };
        let mut by_trace: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, s) in kept.iter().enumerate() {
            by_trace.entry(&s.trace).or_default().push(i);
            if let Some(p) = &s.parent
                && let Some(&pi) = seen.get(&(s.trace.clone(), p.clone()))
            {
                g.parent[i] = Some(pi);
            }
        }
        // A trace is untrusted input: a span that is its own ancestor (its
        // own parent, or a longer parent cycle) loses its parent link and
        // its trace counts as incomplete, so that every walk up ends.
        let cyclic = cut_parent_cycles(&mut g.parent);
        let mut in_cycle = 0u64;
        let mut cycle_example = String::new();
        for (i, &c) in cyclic.iter().enumerate() {
            if c {
                in_cycle += 1;
                if cycle_example.is_empty() {
                    cycle_example = at(&kept[i]);
                }
            }
            if let Some(pi) = g.parent[i] {
                g.children[pi].push(i);
            }
        }
        g.traces = by_trace.len();
        let mut orphans = 0u64;
        let mut orphan_example = String::new();
        let mut rootless = 0u64;
        let mut multi = 0u64;
        for members in by_trace.values() {
            let roots: Vec<usize> = members.iter().copied().filter(|&i| kept[i].parent.is_none()).collect();
            let missing: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&i| kept[i].parent.is_some() && g.parent[i].is_none() && !cyclic[i])
                .collect();
            let has_cycle = members.iter().any(|&i| cyclic[i]);
            if let Some(&m) = missing.first() {
                orphans += missing.len() as u64;
                if orphan_example.is_empty() {
                    orphan_example = at(&kept[m]);
                }
            }
            let complete = missing.is_empty() && !has_cycle && roots.len() == 1;
            if roots.is_empty() {
                rootless += 1;
            } else if roots.len() > 1 {
                multi += 1;
            }
            if roots.len() == 1 {
                g.roots.push(roots[0]);
            }
            if complete {
                g.complete_traces += 1;
            } else {
                for &i in members {
                    g.complete[i] = false;
                }
            }
        }
        dropped.add_n(
            "a span whose parent is not in the files (sampled away, lost, or a caller that is not traced): its trace counts for arrivals, service times, network latency and errors, not for calls per request or attempts per call",
            orphans,
            orphan_example,
        );
        dropped.add_n(
            "a span that is its own ancestor (its own parent, or in a parent cycle): its parent link is ignored and its trace counts as incomplete",
            in_cycle,
            cycle_example,
        );
        dropped.add_n(
            "a trace with no root span (its entry was sampled away or lost): no arrival",
            rootless,
            String::new(),
        );
        dropped.add_n("a trace with more than one root span: no arrival", multi, String::new());
        g.roots.sort_by_key(|&i| (kept[i].start, i));
        g.spans = kept;
        g.group_calls(files, dropped);
        g
    }

    /// The span handling the request in which span `i` was made: the
    /// nearest SERVER ancestor in the same service, or its topmost
    /// same-service ancestor; `None` for a root CLIENT span.
    pub fn handler(&self, i: usize) -> Option<usize> {
        let service = &self.spans[i].service;
        let mut cur = i;
        loop {
            match self.parent[cur] {
                Some(p) if &self.spans[p].service == service => {
                    if self.spans[p].kind == Kind::Server {
                        return Some(p);
                    }
                    cur = p;
                }
                _ => return if cur == i { None } else { Some(cur) },
            }
        }
    }

    /// The SERVER span a CLIENT span reached, if traced.
    pub fn server_of(&self, i: usize) -> Option<usize> {
        self.children[i].iter().copied().find(|&c| self.spans[c].kind == Kind::Server)
    }

    fn group_calls(&mut self, files: &[std::path::PathBuf], dropped: &mut Dropped) {
        let at =
            |s: &Span| format!("{}:{}", files.get(s.at.0).map(|p| p.display().to_string()).unwrap_or_default(), s.at.1);
        // Where a peer (peer.service, server.address:port) leads, learned from
        // CLIENT spans whose SERVER span is traced.
        let mut peers: HashMap<String, BTreeMap<String, u64>> = HashMap::new();
        for (i, s) in self.spans.iter().enumerate() {
            if s.kind == Kind::Client
                && let (Some(p), Some(srv)) = (&s.peer, self.server_of(i))
            {
                *peers.entry(p.clone()).or_default().entry(self.spans[srv].service.clone()).or_insert(0) += 1;
            }
        }
        let known: BTreeSet<&str> = self.spans.iter().map(|s| s.service.as_str()).collect();
        let target = |g: &Graph, i: usize| -> Option<String> {
            if let Some(srv) = g.server_of(i) {
                return Some(g.spans[srv].service.clone());
            }
            let p = g.spans[i].peer.as_ref()?;
            if let Some(m) = peers.get(p) {
                return m.iter().max_by_key(|(_, n)| **n).map(|(s, _)| s.clone());
            }
            known.contains(p.as_str()).then(|| p.clone())
        };
        // Client spans by (handler, callee), in start order.
        let mut groups: BTreeMap<(Option<usize>, String, String), Vec<usize>> = BTreeMap::new();
        let mut resend_edges: BTreeSet<(String, String)> = BTreeSet::new();
        let mut root_clients = Vec::new();
        for i in 0..self.spans.len() {
            let s = &self.spans[i];
            if s.kind != Kind::Client {
                continue;
            }
            let Some(callee) = target(self, i) else {
                dropped.add(
                    "a CLIENT span whose callee is unknown (no SERVER span under it, no peer.service or server.address seen elsewhere)",
                    || at(s),
                );
                continue;
            };
            if s.resend_count.is_some() {
                resend_edges.insert((s.service.clone(), callee.clone()));
            }
            match self.handler(i) {
                Some(h) => groups.entry((Some(h), s.service.clone(), callee)).or_default().push(i),
                None => root_clients.push((i, callee)),
            }
        }
        let mut calls = Vec::new();
        for ((handler, caller, callee), mut members) in groups {
            members.sort_by_key(|&i| (self.spans[i].start, i));
            let by_resend = resend_edges.contains(&(caller.clone(), callee.clone()));
            let mut cur: Vec<usize> = Vec::new();
            let flush = |cur: &mut Vec<usize>, calls: &mut Vec<Call>, g: &Graph| {
                if !cur.is_empty() {
                    calls.push(g.call(handler, &caller, &callee, std::mem::take(cur)));
                }
            };
            for i in members {
                let s = &self.spans[i];
                let continues = match cur.last() {
                    None => false,
                    Some(&prev) if by_resend => {
                        s.resend_count.unwrap_or(0) > 0 && self.spans[prev].resend_count <= s.resend_count
                    }
                    Some(&prev) => !self.spans[prev].answer.is_ok(),
                };
                if !continues {
                    flush(&mut cur, &mut calls, self);
                }
                cur.push(i);
            }
            flush(&mut cur, &mut calls, self);
        }
        for (i, callee) in root_clients {
            let caller = self.spans[i].service.clone();
            calls.push(self.call(None, &caller, &callee, vec![i]));
        }
        self.calls = calls;
    }

    fn call(&self, handler: Option<usize>, caller: &str, callee: &str, members: Vec<usize>) -> Call {
        let mut attempts = Vec::new();
        let mut redirects = 0;
        for (k, &i) in members.iter().enumerate() {
            let s = &self.spans[i];
            // A 3xx followed by another request: a redirect hop, not an attempt.
            if s.answer.is_redirect() && k + 1 < members.len() {
                redirects += 1;
                continue;
            }
            attempts.push(Attempt {
                client: i,
                server: self.server_of(i),
                answer: s.answer.clone(),
                start: s.start,
                end: s.end,
            });
        }
        if attempts.is_empty() {
            let i = *members.last().expect("members");
            let s = &self.spans[i];
            attempts.push(Attempt {
                client: i,
                server: self.server_of(i),
                answer: s.answer.clone(),
                start: s.start,
                end: s.end,
            });
        }
        let complete = self.complete[members[0]];
        Call { caller: caller.to_string(), callee: callee.to_string(), handler, attempts, complete, redirects }
    }
}
