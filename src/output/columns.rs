//! Which metrics the table and the report show: the headline metrics
//! always; the burst completion time for burst clients; the business
//! metrics whenever a variant has a non-zero value; the recovery metrics
//! when the experiment has a disturbance to recover from; then the extra
//! columns of `[experiment] show`.

/// How a metric is written in a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A share, as a percentage.
    Percent,
    /// A ratio such as attempts per intent.
    Number,
    /// A duration in a readable unit.
    Seconds,
    /// A count per replication.
    Count,
    /// Replications with a yes: `3/5`.
    Runs,
    /// The Kaplan–Meier median time to recovery and how many replications
    /// recovered: `12.0s (4/5)`, or `> end (2/5)` when fewer than half did.
    Recovery,
}

/// One column: the metric, its header and its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub metric: &'static str,
    pub header: &'static str,
    pub style: Style,
}

const fn col(metric: &'static str, header: &'static str, style: Style) -> Column {
    Column { metric, header, style }
}

/// Always shown. `p99 all` is the latency of every intent, failed ones
/// included, next to the latency of the successful ones.
pub const HEADLINE: [Column; 9] = [
    col("success_rate", "success", Style::Percent),
    col("goodput_per_s", "goodput/s", Style::Number),
    col("attempts_per_intent", "attempts/intent", Style::Number),
    col("amplification", "amplification", Style::Number),
    col("latency_p50_s", "p50", Style::Seconds),
    col("latency_p99_s", "p99", Style::Seconds),
    col("latency_all_p99_s", "p99 all", Style::Seconds),
    col("latency_p999_s", "p99.9", Style::Seconds),
    col("wasted_fraction", "wasted", Style::Percent),
];

/// Shown when some variant has a value (burst clients).
pub const BURST: [Column; 1] = [col("burst_completion_s", "burst done", Style::Seconds)];

/// Shown whenever some variant has a non-zero mean.
pub const BUSINESS: [Column; 4] = [
    col("duplicate_intents", "duplicates/run", Style::Count),
    col("orphan_commits", "orphans/run", Style::Count),
    col("lost_effects", "lost effects/run", Style::Count),
    col("stuck_placeholders", "stuck/run", Style::Count),
];

/// Shown when the experiment has a disturbance (some variant has a value
/// or a reason for it).
pub const RECOVERY: [Column; 2] = [
    col("recovery_time_median_s", "recovery (median)", Style::Recovery),
    col("recovered_fraction", "recovered", Style::Runs),
];

/// Shown when some variant had a degraded replication (users served, the
/// system's state not back).
pub const DEGRADED: [Column; 1] = [col("degraded_fraction", "degraded", Style::Runs)];

/// The column of any metric of [`crate::metrics::METRICS`], for `show`.
pub fn column_of(metric: &str) -> Option<Column> {
    let known =
        HEADLINE.iter().chain(&BURST).chain(&BUSINESS).chain(&RECOVERY).chain(&DEGRADED).find(|c| c.metric == metric);
    if let Some(c) = known {
        return Some(*c);
    }
    let name = *crate::metrics::METRICS.iter().find(|m| **m == metric)?;
    // Counts say what they count, per run.
    let counted = [
        ("intents", "intents/run"),
        ("retries_denied_budget", "budget refusals/run"),
        ("ledger_replays", "replays/run"),
        ("ledger_409", "409s/run"),
        ("ledger_422", "422s/run"),
        ("ledger_recoveries", "recoveries/run"),
        ("deadline_overruns", "deadline overruns/run"),
        ("reconciled", "reconciled/run"),
        ("compensated", "compensated/run"),
        ("unresolved_at_end", "unresolved/run"),
        ("dead_letters", "dead letters/run"),
    ];
    if let Some((_, header)) = counted.iter().find(|(m, _)| *m == name) {
        return Some(Column { metric: name, header, style: Style::Count });
    }
    Some(Column { metric: name, header: name, style: style_of(name) })
}

/// How a metric without a column of its own is written: a share as a
/// percentage, `*_s` as a duration, per-intent and per-second rates and
/// ratios as numbers, anything else as a count.
pub fn style_of(metric: &str) -> Style {
    match crate::analysis::stats::Range::of(metric) {
        crate::analysis::stats::Range::Share => Style::Percent,
        _ if metric.ends_with("_s") => Style::Seconds,
        _ if metric.ends_with("_per_intent")
            || metric.ends_with("_per_s")
            || matches!(metric, "extra" | "redeliveries") =>
        {
            Style::Number
        }
        _ => Style::Count,
    }
}

/// What the selection needs to know about the variants' numbers.
pub trait Shown {
    /// Some variant has a mean of metric `m` other than 0.
    fn nonzero(&self, m: &str) -> bool;
    /// Some variant has a mean of metric `m`, or a reason for having none.
    fn present(&self, m: &str) -> bool;
}

/// The columns to show, in order, without repeats.
pub fn choose(show: &[String], numbers: &dyn Shown) -> Vec<Column> {
    let mut out: Vec<Column> = HEADLINE.to_vec();
    out.extend(BURST.iter().filter(|c| numbers.present(c.metric)));
    out.extend(BUSINESS.iter().filter(|c| numbers.nonzero(c.metric)));
    if RECOVERY.iter().any(|c| numbers.present(c.metric)) {
        out.extend(RECOVERY);
    }
    out.extend(DEGRADED.iter().filter(|c| numbers.nonzero(c.metric)));
    for m in show {
        if let Some(c) = column_of(m)
            && !out.iter().any(|o| o.metric == c.metric)
        {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Numbers(&'static [&'static str], &'static [&'static str]);
    impl Shown for Numbers {
        fn nonzero(&self, m: &str) -> bool {
            self.0.contains(&m)
        }
        fn present(&self, m: &str) -> bool {
            self.1.contains(&m)
        }
    }

    #[test]
    fn business_recovery_and_show_columns_appear_when_they_have_something_to_say() {
        let quiet = choose(&[], &Numbers(&[], &[]));
        assert_eq!(quiet, HEADLINE.to_vec());
        let busy = choose(&[], &Numbers(&["orphan_commits"], &["recovered_fraction"]));
        let names: Vec<&str> = busy.iter().map(|c| c.metric).collect();
        assert_eq!(&names[HEADLINE.len()..], ["orphan_commits", "recovery_time_median_s", "recovered_fraction"]);
        let show = ["ledger_replays".to_string(), "success_rate".to_string(), "orphan_commits".to_string()];
        let shown = choose(&show, &Numbers(&["orphan_commits"], &[]));
        let names: Vec<&str> = shown.iter().map(|c| c.metric).collect();
        assert_eq!(&names[HEADLINE.len()..], ["orphan_commits", "ledger_replays"]);
        assert_eq!(column_of("ledger_replays").unwrap().style, Style::Count);
        assert_eq!(column_of("collapse_time_s").unwrap().style, Style::Seconds);
        assert_eq!(column_of("outbox_events_per_intent").unwrap().style, Style::Number);
        assert!(column_of("nope").is_none());
    }
}
