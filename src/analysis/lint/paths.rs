//! The call-path table: the worst-case amplification of every call path
//! from every client.

use super::*;
use crate::config::{Caller, When};

/// The most call-path rows listed (a wide fan-out could list very many).
const MAX_PATHS: usize = 1000;

impl Graph<'_> {
    /// Every call path from every client, prefixes included.
    pub(super) fn paths(&self) -> Vec<PathRow> {
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
