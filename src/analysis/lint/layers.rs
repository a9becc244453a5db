//! layered-retries: more than one layer retrying on one synchronous call
//! path.

use super::*;
use crate::config::When;
use std::collections::BTreeMap;

impl Graph<'_> {
    /// layered-retries: every synchronous path (outbox relays excluded)
    /// on which more than one edge retries, once per set of retrying edges.
    pub(super) fn layered_retries(&self, out: &mut Vec<Finding>) {
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
}
