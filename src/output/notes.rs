//! The lines under the terminal table: variants whose numbers are
//! identical, why intents failed and why retries were refused.

use super::VariantSummary;

/// A share of intents as a percentage with at least two significant
/// digits, so that a non-zero count never reads as `0.00%`.
pub fn fmt_share(n: u64, total: f64) -> String {
    if total <= 0.0 {
        return n.to_string();
    }
    let pct = n as f64 / total * 100.0;
    if n == 0 || pct >= 0.01 {
        return format!("{pct:.2}%");
    }
    // Two significant digits below 0.01%.
    let digits = (-pct.log10().floor()) as usize + 1;
    format!("{pct:.digits$}%")
}

/// The headline metrics whose values differ between two variants in some
/// replication (bit for bit).
fn differing(a: &VariantSummary, b: &VariantSummary) -> Vec<String> {
    let mut out = Vec::new();
    for (k, sa) in &a.metrics {
        let same = b.metric(k).is_some_and(|sb| {
            sa.values.len() == sb.values.len()
                && sa.values.iter().zip(&sb.values).all(|(x, y)| x.map(f64::to_bits) == y.map(f64::to_bits))
        });
        if !same {
            out.push(k.clone());
        }
    }
    out
}

/// How two variants' numbers compare when they are (almost) the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sameness {
    /// Every headline metric is identical in every replication.
    Identical,
    /// Identical but for the latency of every intent (`latency_all_*`):
    /// only the intents that failed took a different time to fail.
    OnlyFailureLatency,
}

/// Groups of variants (each of two or more, in file order) whose numbers
/// are identical, or identical but for how long failed intents took.
pub fn identical_groups(summaries: &[VariantSummary]) -> Vec<(Sameness, Vec<&str>)> {
    let relation = |a: &VariantSummary, b: &VariantSummary| {
        let d = differing(a, b);
        if d.is_empty() {
            Some(Sameness::Identical)
        } else if d.iter().all(|k| k.starts_with("latency_all_")) {
            Some(Sameness::OnlyFailureLatency)
        } else {
            None
        }
    };
    // Each variant joins the first group whose first member it relates to
    // (a group of one takes the kind of its first partner).
    let mut groups: Vec<(Sameness, Vec<usize>)> = Vec::new();
    for i in 0..summaries.len() {
        let joined = groups.iter_mut().find_map(|(kind, g)| {
            let k = relation(&summaries[g[0]], &summaries[i])?;
            (g.len() == 1 || k == *kind).then(|| {
                *kind = k;
                g.push(i);
            })
        });
        if joined.is_none() {
            groups.push((Sameness::Identical, vec![i]));
        }
    }
    groups
        .into_iter()
        .filter(|(_, g)| g.len() > 1)
        .map(|(k, g)| (k, g.into_iter().map(|i| summaries[i].name.as_str()).collect()))
        .collect()
}

/// One sentence per group of identical variants.
pub fn identical_sentences(summaries: &[VariantSummary]) -> Vec<String> {
    identical_groups(summaries)
        .iter()
        .map(|(kind, g)| {
            let names: Vec<String> = g.iter().map(|n| format!("\"{n}\"")).collect();
            let names = names.join(" and ");
            match kind {
                Sameness::Identical => format!(
                    "{names} have identical metrics in every replication, to the last digit: the settings that differ between them were applied, but changed none of these numbers in this scenario (a --trace shows where their attempts differ)."
                ),
                Sameness::OnlyFailureLatency => format!(
                    "{names} have identical metrics in every replication, to the last digit, except the latency of every intent (p99 all): the settings that differ between them were applied, but changed only how long the intents that failed took to fail."
                ),
            }
        })
        .collect()
}

/// The identical-variants lines, or nothing.
pub fn render_identical(summaries: &[VariantSummary]) -> String {
    identical_sentences(summaries).iter().map(|s| format!("\nidentical: {s}\n")).collect()
}

/// Why intents failed and why retries were refused, per variant.
pub fn render_breakdown(summaries: &[VariantSummary]) -> String {
    let mut out = String::new();
    for v in summaries {
        let intents: f64 = v.metric("intents").map(|s| s.values.iter().flatten().sum()).unwrap_or(0.0);
        if v.failures.is_empty() && v.denials.is_empty() {
            continue;
        }
        let mut failures: Vec<(&String, &u64)> = v.failures.iter().collect();
        failures.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let f: Vec<String> = failures.iter().map(|(k, n)| format!("{k} {}", fmt_share(**n, intents))).collect();
        out.push_str(&format!("{}: failed: {}", v.name, if f.is_empty() { "none".into() } else { f.join(", ") }));
        if !v.denials.is_empty() {
            let d: Vec<String> = v.denials.iter().map(|(k, n)| format!("{k} {n}")).collect();
            out.push_str(&format!("; retries refused: {}", d.join(", ")));
        }
        out.push('\n');
    }
    if !out.is_empty() {
        out.insert_str(0, "\nwhy intents failed (share of intents, all replications) and retries refused (count):\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_zero_share_is_never_written_as_zero() {
        assert_eq!(fmt_share(1803, 10_000.0), "18.03%");
        assert_eq!(fmt_share(0, 10_000.0), "0.00%");
        assert_eq!(fmt_share(3, 100_000.0), "0.0030%");
        assert_eq!(fmt_share(1, 1e9), "0.00000010%");
        assert_eq!(fmt_share(7, 0.0), "7");
        for n in 1..50u64 {
            assert_ne!(fmt_share(n, 1e7).trim_end_matches('%').parse::<f64>().unwrap(), 0.0);
        }
    }

    #[test]
    fn the_breakdown_shows_rare_failures() {
        use crate::analysis::Summary;
        let v = VariantSummary {
            name: "v".into(),
            policy: String::new(),
            metrics: vec![("intents".into(), Summary { mean: None, ci95: None, values: vec![Some(300_000.0); 2] })],
            reasons: Default::default(),
            amplification_service: String::new(),
            clients: Vec::new(),
            edges: Vec::new(),
            services: Vec::new(),
            effects: Vec::new(),
            queues: Vec::new(),
            failures: [("timeout (max_attempts)".to_string(), 90_000), ("502".to_string(), 12)].into(),
            denials: Default::default(),
            latency_cdf: Vec::new(),
            vs_baseline: Vec::new(),
            baseline: String::new(),
            degraded_by: Default::default(),
        };
        let text = render_breakdown(&[v]);
        assert!(text.contains("v: failed: timeout (max_attempts) 15.00%, 502 0.0020%\n"), "{text}");
        assert!(!text.contains("0.00%"), "{text}");
    }
}
