//! The report's findings, in words, from `summary.json`: what went wrong
//! in each variant (failed recoveries, duplicates, orphans, lost effects),
//! and for every variant against the baseline the gains, the costs and the
//! non-results, each with its interval. A latency that fell is never
//! reported without the change of success beside it.

use serde_json::Value;

fn mean(v: &Value) -> Option<f64> {
    v.get("mean").and_then(Value::as_f64)
}

fn half(v: &Value) -> Option<f64> {
    let c = v.get("ci95")?;
    Some((c[1].as_f64()? - c[0].as_f64()?) / 2.0)
}

fn significant(d: &Value) -> bool {
    d["significant"] == Value::Bool(true)
}

fn seconds(x: f64) -> String {
    crate::output::table::fmt_seconds(x)
}

/// The problems of one variant on its own.
fn own_findings(v: &Value, out: &mut Vec<String>) {
    let name = v["name"].as_str().unwrap_or("");
    let m = &v["metrics"];
    if m["recovered_fraction"].get("reason").and_then(Value::as_str) == Some(crate::metrics::NEVER_HEALTHY) {
        out.push(format!(
            "\"{name}\" was already overloaded before the first disturbance (never healthy): a service got more requests than it can serve, or goodput was below 95% of offered intents, so its recovery is not measured: there was no healthy state to come back to."
        ));
    } else if mean(&m["recovered_fraction"]) == Some(0.0) {
        out.push(format!("\"{name}\" never recovered after the disturbance within the run."));
    } else if let (Some(f), Some(t)) = (mean(&m["recovered_fraction"]), mean(&m["recovery_time_s"]))
        && f < 1.0
    {
        out.push(format!(
            "\"{name}\" recovered in only {:.0}% of the replications (after {t:.1} s when it did).",
            f * 100.0
        ));
    }
    if let Some(d) = mean(&m["duplicate_intents"]).filter(|d| *d > 0.0) {
        out.push(format!(
            "\"{name}\" performed the side effect of {d:.1} intents more than once per replication (duplicates)."
        ));
    }
    if let Some(o) = mean(&m["orphan_commits"]).filter(|o| *o > 0.0) {
        out.push(format!(
            "\"{name}\" left {o:.1} orphan commits per replication: side effects committed for intents their clients were told had failed (they need reconciliation)."
        ));
    }
    if let Some(l) = mean(&m["lost_effects"]).filter(|l| *l > 0.0) {
        out.push(format!(
            "\"{name}\" lost {l:.1} effects per replication (an after-commit call or relay that gave up)."
        ));
    }
    if let Some(s) = mean(&m["stuck_placeholders"]).filter(|s| *s > 0.0) {
        out.push(format!("\"{name}\" left {s:.1} idempotency placeholders stuck in progress."));
    }
}

/// A relative change with its interval: `27% ± 1%` (`27%, within ±0.5%`
/// when the interval rounds to nothing).
fn relative(diff: f64, h: f64, base: f64) -> String {
    let (x, h) = ((diff / base).abs() * 100.0, (h / base).abs() * 100.0);
    if h < 0.5 { format!("{x:.0}% (within ±0.5%)") } else { format!("{x:.0}% ± {h:.0}%") }
}

/// A signed change in per cent with its interval, for a non-result:
/// `+2% ± 3%`, or `none in any replication` when both are nothing.
fn signed_relative(x: f64, h: f64) -> String {
    if x.abs() < 0.5 && h < 0.5 {
        "no change in any replication".into()
    } else if h < 0.5 {
        format!("{x:+.0}%, within ±0.5%")
    } else {
        format!("{x:+.0}% ± {h:.0}%")
    }
}

/// One variant against the baseline; `answer` the experiment's answer paths.
fn vs_findings(v: &Value, base: &Value, answer: &[String], out: &mut Vec<String>) {
    let name = v["name"].as_str().unwrap_or("");
    let base_name = base["name"].as_str().unwrap_or("");
    let vs = &v["vs_baseline"];
    let bm = |k: &str| mean(&base["metrics"][k]);
    let service = v["amplification_service"].as_str().unwrap_or("");
    let success = &vs["success_rate"];
    let success_text = |d: &Value| {
        mean(d).map(|x| {
            let (x, h) = (x * 100.0, half(d).unwrap_or(0.0) * 100.0);
            if x.abs() < 0.005 && h < 0.005 {
                "no change in any replication".to_string()
            } else {
                format!("{x:+.2} ± {h:.2} points")
            }
        })
    };
    let mut no_difference = Vec::new();

    // Success.
    if let Some(text) = success_text(success) {
        if significant(success) {
            out.push(format!("\"{name}\" changes success by {text} versus \"{base_name}\"."));
        } else {
            no_difference.push(format!("success ({text})"));
        }
    }
    // The answer's metrics of classes, services, edges and effects.
    for path in answer.iter().filter(|p| p.contains('.')) {
        let d = &vs[path.as_str()];
        let c = crate::output::answer::PathColumn::of(path);
        let Some(x) = mean(d) else { continue };
        let h = half(d).unwrap_or(0.0);
        let text = if c.style == crate::output::columns::Style::Percent {
            format!("{:+.2} ± {:.2} points", x * 100.0, h * 100.0)
        } else {
            format!(
                "{}{} ± {}",
                if x > 0.0 { "+" } else { "" },
                crate::output::table::fmt_value(x, c.style),
                crate::output::table::fmt_half(h, c.style)
            )
        };
        if significant(d) {
            out.push(format!("\"{name}\" changes {} by {text} versus \"{base_name}\".", c.header));
        } else {
            no_difference.push(format!("{} ({text})", c.header));
        }
    }
    // Amplification, at the one service every variant is measured at.
    let amp = &vs["amplification"];
    if let (Some(d), Some(h), Some(b)) = (mean(amp), half(amp), bm("amplification"))
        && b.abs() > 0.0
    {
        if significant(amp) && (d / b).abs() < 0.01 {
            // Significant but below 1%: not worth a sentence either way.
        } else if significant(amp) {
            let verb = if d < 0.0 { "cuts" } else { "raises" };
            out.push(format!(
                "\"{name}\" {verb} amplification at {service} by {} versus \"{base_name}\" ({:.3} vs {b:.3} requests per intent).",
                relative(d, h, b),
                b + d
            ));
        } else {
            no_difference.push(format!(
                "amplification at {service} ({})",
                signed_relative(d / b * 100.0, (h / b).abs() * 100.0)
            ));
        }
    }
    if !no_difference.is_empty() {
        out.push(format!(
            "\"{name}\" makes no significant difference to {} versus \"{base_name}\".",
            no_difference.join(" or to ")
        ));
    }
    // A budget that never refused a retry does nothing.
    if mean(&v["metrics"]["retries_denied_budget"]) == Some(0.0) && bm("retries_denied_budget") != Some(0.0) {
        out.push(format!(
            "The budget of \"{name}\" never refused a retry (0 refusals per replication): it changes nothing in this scenario."
        ));
    }
    // Latency of successful intents: costs, and gains only beside success.
    let p99 = &vs["latency_p99_s"];
    if let (Some(d), Some(b)) = (mean(p99), bm("latency_p99_s"))
        && significant(p99)
        && b > 0.0
        && (d / b).abs() >= 0.1
    {
        let now = b + d;
        let all = &vs["latency_all_p99_s"];
        let all_text = match (mean(all), bm("latency_all_p99_s")) {
            (Some(da), Some(ba)) if ba > 0.0 && significant(all) => {
                format!("; p99 of every intent {:+.0}% ({} vs {})", da / ba * 100.0, seconds(ba + da), seconds(ba))
            }
            _ => String::new(),
        };
        if d > 0.0 {
            out.push(format!(
                "Cost: \"{name}\" raises the p99 latency of successful intents by {:+.0}% versus \"{base_name}\" ({} vs {}){all_text}.",
                d / b * 100.0,
                seconds(now),
                seconds(b)
            ));
        } else {
            let with = success_text(success).map(|t| format!(", while success changes by {t}")).unwrap_or_default();
            out.push(format!(
                "\"{name}\" cuts the p99 latency of successful intents by {:.0}% versus \"{base_name}\" ({} vs {}){with}{all_text}.",
                -d / b * 100.0,
                seconds(now),
                seconds(b)
            ));
        }
    }
}

/// Findings in words, from the numbers.
pub fn findings(summary: &Value) -> Vec<String> {
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let answer: Vec<String> = summary["experiment"]["answer"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for v in &variants {
        own_findings(v, &mut out);
        let vs = &v["vs_baseline"];
        if vs.is_object() {
            let base_name = vs["baseline"].as_str().unwrap_or("");
            if let Some(base) = variants.iter().find(|x| x["name"].as_str() == Some(base_name)) {
                vs_findings(v, base, &answer, &mut out);
            }
        }
    }
    out.extend(identical(&variants));
    if out.is_empty() && variants.len() == 1 {
        let name = variants[0]["name"].as_str().unwrap_or("");
        out.push(format!(
            "Only one variant ran (\"{name}\"), so there is nothing to compare it with; it had no duplicate, lost effect or failed recovery. Its numbers are in the table and the charts."
        ));
    } else if out.is_empty() {
        out.push("No variant showed a significant difference, a duplicate, a lost effect or a failed recovery.".into());
    }
    out
}

/// The identical-variants sentences, from summary.json's values.
fn identical(variants: &[Value]) -> Vec<String> {
    let summaries: Vec<crate::output::VariantSummary> = variants.iter().map(as_variant_summary).collect();
    crate::output::notes::identical_sentences(&summaries)
}

/// Enough of a variant of summary.json to compare its values.
fn as_variant_summary(v: &Value) -> crate::output::VariantSummary {
    use crate::analysis::Summary;
    let metrics = v["metrics"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, m)| {
                    let values =
                        m["values"].as_array().map(|a| a.iter().map(Value::as_f64).collect()).unwrap_or_default();
                    (k.clone(), Summary { mean: mean(m), ci95: None, values })
                })
                .collect()
        })
        .unwrap_or_default();
    crate::output::VariantSummary { name: v["name"].as_str().unwrap_or("").to_string(), metrics, ..Default::default() }
}
