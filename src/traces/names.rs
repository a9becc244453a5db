//! Names and call edges as an experiment allows them. A trace's
//! `service.name` or span name may be anything (a dot, a space, `->`,
//! letters of any script, nothing at all, 300 characters); an experiment's
//! names are 1 to 63 of `A-Z a-z 0-9 _ -`, unique among services and
//! clients, and its calls form a directed acyclic graph. [`settle`] maps the
//! model onto those rules and says what it changed.

use super::infer::Model;
use std::collections::{BTreeMap, BTreeSet};

/// The longest name written: a Kubernetes label's 63, far below a file
/// name's 255 bytes (data files are named after one or two services).
pub const MAX_NAME: usize = 63;

/// `s` as a name the experiment file allows: other characters become `_`
/// (runs of them one), at most [`MAX_NAME`] characters, `fallback` when
/// nothing is left.
pub fn sanitize_or(s: &str, fallback: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let out: String = out.trim_matches('_').chars().take(MAX_NAME).collect();
    let out = out.trim_end_matches('_');
    if out.is_empty() { fallback.to_string() } else { out.to_string() }
}

/// `name`, or `name-2`, `name-3`, … (within [`MAX_NAME`]), whichever is
/// not in `taken`; the result is added to `taken`.
fn unique(name: String, taken: &mut BTreeSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        let suffix = format!("-{n}");
        let stem: String = name.chars().take(MAX_NAME - suffix.len()).collect();
        candidate = format!("{stem}{suffix}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// The model name of every service name of the traces (`names` in order;
/// the same input always gives the same map).
pub fn service_names<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeMap<String, String> {
    let mut taken = BTreeSet::new();
    let mut out = BTreeMap::new();
    let mut sorted: Vec<&str> = names.into_iter().collect();
    sorted.sort();
    sorted.dedup();
    // Names that are already valid keep themselves first.
    for &n in &sorted {
        if sanitize_or(n, "service") == n && taken.insert(n.to_string()) {
            out.insert(n.to_string(), n.to_string());
        }
    }
    for &n in &sorted {
        if !out.contains_key(n) {
            let name = unique(sanitize_or(n, "service"), &mut taken);
            out.insert(n.to_string(), name);
        }
    }
    out
}

/// Renames the model's services, call targets and clients to valid,
/// unique names, drops calls to a service that has no SERVER spans and
/// calls that would close a cycle, and adds a note for each change.
pub fn settle(m: &mut Model) {
    let map = service_names(m.services.iter().map(|s| s.name.as_str()));
    for (from, to) in &map {
        if from != to {
            m.notes.push(format!(
                "service.name {} is named {to} in this experiment (names are 1 to {MAX_NAME} of A-Z a-z 0-9 _ -)",
                shown(from)
            ));
        }
    }
    let mut taken: BTreeSet<String> = map.values().cloned().collect();
    for s in &mut m.services {
        s.name = map[&s.name].clone();
        s.calls.retain_mut(|c| match map.get(&c.to) {
            Some(to) => {
                c.to = to.clone();
                true
            }
            None => false,
        });
    }
    let before = m.clients.len();
    m.clients.retain_mut(|c| match map.get(&c.target) {
        Some(t) => {
            c.target = t.clone();
            true
        }
        None => false,
    });
    if m.clients.len() < before {
        m.notes.push(format!(
            "{} client class(es) whose target has no SERVER span left out: a target must be a service",
            before - m.clients.len()
        ));
    }
    for c in &mut m.clients {
        let name = unique(sanitize_or(&c.name, "client"), &mut taken);
        if name != c.name {
            m.notes.push(format!(
                "client {} is named {name} (names are unique among services and clients)",
                shown(&c.name)
            ));
        }
        c.name = name;
    }
    for o in &mut m.operations {
        o.name = sanitize_or(&o.name, "op");
    }
    for c in m.clients.iter_mut() {
        c.operation = sanitize_or(&c.operation, "op");
    }
    for s in &mut m.services {
        for c in &mut s.calls {
            c.operation = sanitize_or(&c.operation, "op");
        }
    }
    drop_cycles(m);
}

/// A name as quoted in a note.
fn shown(s: &str) -> String {
    let cut: String = s.chars().take(80).collect();
    format!("\"{}{}\"", cut, if cut.len() < s.len() { "…" } else { "" })
}

/// Removes the calls that close a cycle of the call graph (a service that
/// calls itself, or `a -> b -> a`), found by a depth-first walk from each
/// service in name order, and notes each.
fn drop_cycles(m: &mut Model) {
    let index: BTreeMap<String, usize> = m.services.iter().enumerate().map(|(i, s)| (s.name.clone(), i)).collect();
    let mut order: Vec<usize> = (0..m.services.len()).collect();
    order.sort_by(|&a, &b| m.services[a].name.cmp(&m.services[b].name));
    // 0 unvisited, 1 on the walk, 2 done.
    let mut state = vec![0u8; m.services.len()];
    let mut dropped: Vec<(usize, usize)> = Vec::new();
    for &root in &order {
        if state[root] != 0 {
            continue;
        }
        // (service, next call to look at)
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some(top) = stack.last_mut() {
            let (s, k) = *top;
            if k >= m.services[s].calls.len() {
                state[s] = 2;
                stack.pop();
                continue;
            }
            top.1 += 1;
            let to = index[&m.services[s].calls[k].to];
            match state[to] {
                0 => {
                    state[to] = 1;
                    stack.push((to, 0));
                }
                1 => dropped.push((s, k)),
                _ => {}
            }
        }
    }
    dropped.sort_by(|a, b| b.cmp(a));
    for (s, k) in dropped {
        let c = m.services[s].calls.remove(k);
        m.notes.push(format!(
            "the calls {} -> {} are left out: they close a cycle of calls, and an experiment's calls form a directed acyclic graph",
            m.services[s].name, c.to
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_becomes_a_unique_valid_one() {
        let long = "s".repeat(300);
        let map = service_names(["a.b", "a_b", "c d", "x->y", "é", "", &long, "api"]);
        assert_eq!(map["a_b"], "a_b");
        assert_eq!(map["a.b"], "a_b-2");
        assert_eq!(map["c d"], "c_d");
        assert_eq!(map["x->y"], "x-_y");
        assert_eq!(map[""], "service");
        assert_eq!(map["é"], "service-2");
        assert_eq!(map[long.as_str()].len(), MAX_NAME);
        assert_eq!(map["api"], "api");
        let values: BTreeSet<&String> = map.values().collect();
        assert_eq!(values.len(), map.len());
    }
}
