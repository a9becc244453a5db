//! over-capacity and near-capacity: the clients' steady load, multiplied by
//! the requests each intent makes at a service when nothing fails, against
//! what the service can serve (workers / the time a request holds one).

use super::*;
use crate::model::unloaded::{SteadyRate, capacity_per_s, holding_time_s, requests_per_intent, steady_rate};

/// Utilisation above which `near-capacity` warns.
pub(super) const NEAR: f64 = 0.8;

impl Graph<'_> {
    /// over-capacity (utilisation above 100% before any fault) and
    /// near-capacity (above 80%), one finding per service.
    pub(super) fn capacity_rules(&self, out: &mut Vec<Finding>) {
        let s = self.s;
        let per_client: Vec<Option<(SteadyRate, Vec<f64>)>> =
            (0..s.clients.len()).map(|c| steady_rate(s, c).map(|r| (r, requests_per_intent(s, c)))).collect();
        for (svc, spec) in s.services.iter().enumerate() {
            let mut demand = 0.0;
            let mut parts = Vec::new();
            let mut upper_bound = false;
            for (c, entry) in per_client.iter().enumerate() {
                let Some((rate, rpi)) = entry else { continue };
                let n = rpi[svc];
                if n == 0.0 || rate.per_s() == 0.0 {
                    continue;
                }
                demand += rate.per_s() * n;
                upper_bound |= matches!(rate, SteadyRate::AtMost(_));
                let how = match rate {
                    SteadyRate::Open(r) => format!("{}/s", number(*r)),
                    SteadyRate::AtMost(r) => format!("at most {}/s (count / mean think time)", number(*r)),
                };
                let requests = if number(n) == "1" { "request" } else { "requests" };
                parts.push(format!("clients.{} {how} x {} {requests} per intent", s.clients[c].name, number(n)));
            }
            let capacity = capacity_per_s(s, svc);
            if demand == 0.0 || !capacity.is_finite() {
                continue;
            }
            let utilisation = demand / capacity;
            let id = if utilisation > 1.0 {
                "over-capacity"
            } else if utilisation > NEAR {
                "near-capacity"
            } else {
                continue;
            };
            let hold = holding_time_s(s, svc);
            let held = if spec.calls.iter().any(|c| c.when != crate::config::When::Outbox) {
                "its own service time plus its synchronous downstream calls, without queueing"
            } else {
                "its mean service time"
            };
            let replicas = spec.hosts.replicas as f64;
            // Workers per host (each of the `replicas` hosts has `workers`).
            let needed = (demand * hold / NEAR / replicas).ceil() as u64;
            let load = if upper_bound { "at most " } else { "" };
            let consequence = if utilisation > 1.0 {
                "its queue grows without end (or it sheds load) before any fault, and retries add to it"
            } else {
                "little headroom: queues and latency grow steeply near full utilisation, and any fault or retry tips it over"
            };
            out.push(self.on_experiment(
                id,
                format!("services.{}.workers", spec.name),
                format!("services.{}", spec.name),
                format!(
                    "{} gets {load}{} requests/s before any fault ({}) but serves at most {}/s ({} workers / {} per request, {held}): {:.0}% utilisation; {consequence}",
                    spec.name,
                    number(demand),
                    parts.join(" + "),
                    number(capacity),
                    if spec.hosts.replicas > 1 {
                        format!("{} hosts x {}", spec.hosts.replicas, spec.workers)
                    } else {
                        spec.workers.to_string()
                    },
                    human(crate::engine::from_secs_f64(hold)),
                    utilisation * 100.0,
                ),
                format!(
                    "give services.{}.workers at least {needed} (80% utilisation), make its requests cheaper, or send less load",
                    spec.name
                ),
            ));
        }
    }
}

/// A rate or count for messages: at most 4 significant digits, no noise.
fn number(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
