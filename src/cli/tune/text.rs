//! The text report of `tune`: the search, the Pareto front, the winner and
//! how it was chosen, the ties, the winner per scenario, its lint findings.

use super::Report;
use crate::analysis::stats::{Summary, paired_at, summarize};
use crate::analysis::tune::prefer::{counts, interval, signed};
use std::fmt::Write as _;

/// A value with 4 decimals, or `—`.
pub fn num(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), |x| format!("{x:.4}"))
}

/// The winner and the runner-up on fresh seeds, and whether the winner still wins.
fn confirmation_text(r: &Report, c: &crate::analysis::tune::confirm::Confirmation) -> String {
    let spec = r.ctx.spec;
    let ms = |m: &[(String, Summary)], k: &str| {
        m.iter().find(|(n, _)| n == k).map_or("—".to_string(), |(_, s)| match (s.mean, s.half_width()) {
            (Some(x), Some(h)) => format!("{x:.4} ±{h:.4}"),
            (Some(x), None) => format!("{x:.4}"),
            _ => "—".into(),
        })
    };
    let mut t = String::new();
    let _ = writeln!(
        t,
        "  confirmed on fresh seeds (experiment.seed = {}, {} replications per scenario, as the search ran), against the search's winner's curse:",
        c.seed,
        match c.replications.as_slice() {
            [first, rest @ ..] if rest.iter().all(|n| n == first) => first.to_string(),
            all => all.iter().map(u32::to_string).collect::<Vec<_>>().join("/"),
        }
    );
    let _ = writeln!(t, "    worst-case {}: winner {}", spec.objective, ms(&c.winner_metrics, &spec.objective));
    if let Some(ru) = c.runner_up {
        let _ = writeln!(
            t,
            "    runner-up ({}): {}; difference {}",
            r.evaluated[ru].candidate.label(spec),
            ms(&c.runner_up_metrics, &spec.objective),
            c.difference.first().map_or("—".into(), |(_, d)| format!("{} {}", signed(d.mean), interval(d)))
        );
    }
    let missed = |j: &crate::analysis::tune::Judged| -> String {
        let m: Vec<&str> = spec
            .constraints
            .iter()
            .zip(&j.violations)
            .filter(|(_, v)| **v > 0.0)
            .map(|(con, _)| con.text.as_str())
            .collect();
        m.join(", ")
    };
    let runner_up_misses = c.runner_up_judged.as_ref().filter(|j| !j.feasible).map(missed);
    let verdict = if !c.winner_judged.feasible {
        format!(
            "the winner NO LONGER WINS: on fresh seeds it misses {} (more replications, or a margin on the constraints)",
            missed(&c.winner_judged)
        )
    } else if !c.still_wins {
        "the winner NO LONGER WINS: on fresh seeds the runner-up is feasible and significantly better; \
         the winner's place came from the search's seeds"
            .to_string()
    } else if let Some(m) = runner_up_misses {
        format!("the winner still wins: feasible, and the runner-up misses {m} on fresh seeds")
    } else {
        "the winner still wins: feasible, and the runner-up is not significantly better".to_string()
    };
    let _ = writeln!(t, "    {verdict}");
    t
}

/// The most ties listed in the text (all are in the JSON).
const TIES_SHOWN: usize = 12;

/// `mean ±half-width`, or the count of replications that did not recover.
pub fn mean_ci(values: &[Option<f64>]) -> String {
    let lost = values.iter().flatten().filter(|x| x.is_infinite()).count();
    if lost > 0 {
        return format!("{lost}/{} not recovered", values.len());
    }
    let s = summarize(values.to_vec());
    match (s.mean, s.half_width()) {
        (Some(m), Some(h)) => format!("{m:.4} ±{h:.4}"),
        (Some(m), None) => format!("{m:.4}"),
        _ => "—".into(),
    }
}

fn diff_text(d: &Summary) -> String {
    match d.mean {
        Some(_) if d.mean.is_some_and(f64::is_finite) => format!("{} {}", signed(d.mean), interval(d)),
        _ => "—".into(),
    }
}

/// How a constraint stands for the winner, on its binding scenario.
fn constraint_line(r: &Report, ci: usize, w: usize) -> String {
    let spec = r.ctx.spec;
    let c = &spec.constraints[ci];
    let v = r.judged[w].violations[ci];
    let on = r.judged[w].binding[ci].map(|s| file_name(&r.ctx.scenarios[s].path)).unwrap_or_default();
    let spare = if c.value.abs() < 1e-9 {
        format!("{:.4} to spare", (-v).max(0.0))
    } else {
        format!("{:.1}% to spare", (-v * 100.0).max(0.0))
    };
    format!("  {}: met with {spare} on the CI bound (tightest on {on})", c.text)
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| p.display().to_string())
}

/// The whole report (`elapsed`: seconds the search took).
pub fn report(r: &Report, elapsed: f64) -> String {
    let spec = r.ctx.spec;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "tuned {} over {} ({}) x {}, {} runs, in {elapsed:.1} s; objective: {} {} (worst scenario); constraints on the 95% CI bound: {}",
        spec.edges.join(" + "),
        crate::words::plural(r.evaluated.len(), "candidate"),
        match r.method.label() {
            "grid" => "the grid",
            "latin_hypercube" => "a Latin-hypercube sample",
            _ => "the TPE optimizer",
        },
        crate::words::plural(spec.scenarios.len(), "scenario"),
        r.runs,
        spec.direction(),
        spec.objective,
        spec.constraints_text()
    );
    let services: Vec<String> =
        r.ctx.scenarios.iter().map(|s| format!("{} at {}", file_name(&s.path), s.amplification_service)).collect();
    let _ = writeln!(
        t,
        "amplification is taken at one service per scenario, its busiest as written: {}",
        services.join(", ")
    );

    let _ = writeln!(t, "\nPareto front (worst scenario: success up, amplification down, p99 down):");
    let _ = writeln!(t, "{:<10} {:<10} {:<10} {:<9}  candidate", "success", "amplif.", "p99 (s)", "feasible");
    for &i in &r.front {
        let j = &r.judged[i];
        let _ = writeln!(
            t,
            "{:<10} {:<10} {:<10} {:<9}  {}",
            num(j.success),
            num(j.amplification),
            num(j.p99),
            if j.feasible { "yes" } else { "no" },
            r.evaluated[i].candidate.label(spec)
        );
    }

    let Some(choice) = r.choice else {
        let closest = r.closest().filter(|_| r.judged.iter().any(|j| j.objective.is_some()));
        match closest {
            None => {
                let _ = writeln!(
                    t,
                    "\nno candidate has a value for {} in any scenario: nothing to choose from.",
                    spec.objective
                );
            }
            Some((i, ci, v)) => {
                let c = &spec.constraints[ci];
                let by = if !v.is_finite() {
                    "cannot be checked (no value, or a replication that did not recover)".to_string()
                } else if c.value.abs() < 1e-9 {
                    // A limit of 0: by how much in the metric's own units.
                    format!("misses it by {v:.4}")
                } else {
                    format!("misses it by {:.1}% of its limit", v * 100.0)
                };
                let _ = writeln!(
                    t,
                    "\nno candidate meets every constraint. Closest: {} on \"{}\": {by} on its worst scenario.",
                    r.evaluated[i].candidate.label(spec),
                    c.text
                );
            }
        }
        return t;
    };

    let w = choice.winner;
    let j = &r.judged[w];
    let _ = writeln!(t, "\nwinner: {}", r.evaluated[w].candidate.label(spec));
    let _ = writeln!(t, "  chosen as: {}", choice.chosen_by);
    let best_note = if choice.best == w {
        String::new()
    } else {
        format!(" (best {}; paired difference {})", num(r.judged[choice.best].objective), diff_text(&choice.difference))
    };
    let _ = writeln!(
        t,
        "  worst-case {} = {}{best_note}; success {}, amplification {}, p99 {} s",
        spec.objective,
        num(j.objective),
        num(j.success),
        num(j.amplification),
        num(j.p99)
    );
    for ci in 0..spec.constraints.len() {
        let _ = writeln!(t, "{}", constraint_line(r, ci, w));
    }
    if let Some(c) = r.confirmation {
        t.push_str(&confirmation_text(r, c));
    }

    let reps = r.ctx.scenarios.iter().map(|s| s.replications).min().unwrap_or(0);
    if choice.ties.is_empty() {
        let _ = writeln!(
            t,
            "\nties: none; every other feasible candidate is significantly worse than the best by paired difference ({reps} replications, same seeds)"
        );
    } else {
        let _ = writeln!(
            t,
            "\nties: {} not significantly worse than the best (paired difference of the per-replication worst {}, {reps} replications, same seeds; 95% CI with the variance pooled over the candidates); the winner was preferred to each:",
            crate::words::plural_as(choice.ties.len(), "other candidate", "other candidates"),
            spec.objective
        );
        for tie in choice.ties.iter().take(TIES_SHOWN) {
            let a = &r.assessed[&tie.index];
            let note = if tie.index == choice.best { " (the best)" } else { "" };
            let _ = writeln!(
                t,
                "  {:<30} lint {:<22} {}{note}\n      because {}",
                diff_text(&tie.difference),
                counts(a),
                r.evaluated[tie.index].candidate.label(spec),
                tie.why
            );
        }
        if choice.ties.len() > TIES_SHOWN {
            let _ = writeln!(t, "  … and {} more (all in --format json)", choice.ties.len() - TIES_SHOWN);
        }
    }

    let _ = writeln!(t, "\nthe winner per scenario, against the scenario as written (paired: same seeds):");
    for (s, info) in r.ctx.scenarios.iter().enumerate() {
        let _ = writeln!(
            t,
            "  {} ({}), amplification at {}:",
            file_name(&info.path),
            info.name,
            info.amplification_service
        );
        let _ = writeln!(t, "    {:<22} {:<22} {:<22} difference [95% CI]", "metric", "winner", "as written");
        for m in &r.ctx.metrics {
            let (a, b) = (r.baseline.series(r.ctx, s, m), r.evaluated[w].series(r.ctx, s, m));
            let d = paired_at(a, b, 0.95);
            let _ = writeln!(t, "    {:<22} {:<22} {:<22} {}", m, mean_ci(b), mean_ci(a), diff_text(&d));
        }
    }

    let a = &r.assessed[&w];
    let _ = writeln!(t, "\nlint of the emitted policy (the tune file with the winner): {}", counts(a));
    for (f, why) in &choice.remaining {
        let _ = writeln!(t, "  {} [{}] {}: {}\n      kept: {}", f.severity.label(), f.rule, f.field, f.message, why);
    }
    if let Some(c) = &r.chart {
        let _ = writeln!(t, "\ndrew {}", c.display());
    }
    for p in &r.emitted {
        let _ = writeln!(t, "wrote {}", p.display());
    }
    t
}
