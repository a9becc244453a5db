//! Human names, with units, for the metrics and swept keys that charts
//! put on their axes and in their titles.

/// What a metric is, for an axis: a name with its unit.
pub fn metric_axis(metric: &str) -> String {
    let known = match metric {
        "success_rate" => "success rate (share of intents)",
        "goodput_per_s" => "goodput (successful intents per second)",
        "attempts_per_intent" => "attempts per intent",
        "amplification" => "amplification (requests per intent at the busiest service)",
        "latency_p50_s" => "p50 latency of successful intents (s)",
        "latency_p99_s" => "p99 latency of successful intents (s)",
        "latency_p999_s" => "p99.9 latency of successful intents (s)",
        "latency_all_p50_s" => "p50 latency of every intent (s)",
        "latency_all_p99_s" => "p99 latency of every intent (s)",
        "latency_all_p999_s" => "p99.9 latency of every intent (s)",
        "wasted_fraction" => "wasted work (share of service time)",
        "recovery_time_s" => "recovery time (s)",
        "recovered_fraction" => "recovered (share of replications)",
        "duplicate_intents" => "duplicate intents per replication",
        "orphan_commits" => "orphan commits per replication",
        "lost_effects" => "lost effects per replication",
        "hedges_per_intent" => "hedged copies per intent",
        "throttled_per_intent" => "attempts throttled per intent",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    let words = metric.replace('_', " ");
    match words.strip_suffix(" s") {
        Some(w) => format!("{w} (s)"),
        None => words,
    }
}

/// A metric's name for a title: the axis name without its unit.
pub fn metric_title(metric: &str) -> String {
    let axis = metric_axis(metric);
    let name = axis.split(" (").next().unwrap_or(&axis).to_string();
    let mut c = name.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

/// Whether the metric is a share, drawn on an axis that stays in [0, 1].
pub fn is_share(metric: &str) -> bool {
    matches!(metric, "success_rate" | "wasted_fraction" | "recovered_fraction" | "cancelled_fraction" | "hedge_wins")
        || metric.ends_with("_fraction")
        || metric.ends_with(".utilization")
}

/// A swept key as an axis name: `experiment.load_scale` is "offered load
/// (× nominal)", `services.api.workers` "workers at api"; other keys as
/// written.
pub fn key_axis(key: &str) -> String {
    let parts: Vec<&str> = key.split('.').collect();
    match parts.as_slice() {
        ["experiment", "load_scale"] => "offered load (× nominal)".into(),
        ["experiment", "duration"] => "duration (s)".into(),
        ["services", s, "workers"] => format!("workers at {s}"),
        ["services", s, "queue_capacity"] => format!("queue capacity at {s}"),
        ["services", s, "replicas"] => format!("hosts of {s}"),
        ["clients", c, "rate"] => format!("arrival rate of {c} (per second)"),
        [.., "policy", "max_attempts"] => format!("max attempts ({})", parts[..parts.len() - 2].join(".")),
        [.., "policy", "backoff", f] => format!("backoff {f} (s) ({})", parts[..parts.len() - 3].join(".")),
        [.., "policy", f] if f.ends_with("timeout") => {
            format!("{} (s) ({})", f.replace('_', " "), parts[..parts.len() - 2].join("."))
        }
        _ => key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_have_human_names_with_units() {
        assert_eq!(key_axis("experiment.load_scale"), "offered load (× nominal)");
        assert_eq!(key_axis("services.api.workers"), "workers at api");
        assert_eq!(key_axis("clients.web.policy.max_attempts"), "max attempts (clients.web)");
        assert_eq!(key_axis("something.else"), "something.else");
        assert_eq!(metric_axis("success_rate"), "success rate (share of intents)");
        assert_eq!(metric_axis("burst_completion_s"), "burst completion (s)");
        assert_eq!(metric_title("latency_p99_s"), "P99 latency of successful intents");
        assert!(is_share("success_rate") && is_share("api.utilization") && !is_share("goodput_per_s"));
    }
}
