//! `tune --format json`: one object, `schema = "retrysim.tune/1"`
//! (documented in docs/tune.md, section 7).

use super::Report;
use crate::analysis::stats::{Summary, paired_at, summarize};
use crate::analysis::tune::Candidate;
use crate::analysis::tune::prefer::Assessment;
use serde_json::{Map, Value, json};

fn values(r: &Report, c: &Candidate) -> Value {
    let mut m = Map::new();
    for (d, &x) in r.ctx.spec.space.iter().zip(&c.0) {
        m.insert(d.key.clone(), serde_json::to_value(d.value(x)).unwrap_or(Value::Null));
    }
    Value::Object(m)
}

fn num(x: Option<f64>) -> Value {
    x.filter(|x| x.is_finite()).map_or(Value::Null, |x| json!(x))
}

fn interval(s: &Summary) -> Value {
    s.ci95.filter(|(a, b)| a.is_finite() && b.is_finite()).map_or(Value::Null, |(lo, hi)| json!([lo, hi]))
}

/// `{ mean, ci95 }`, with `not_recovered` counting replications that never recovered.
fn stat(values: &[Option<f64>]) -> Value {
    let lost = values.iter().flatten().filter(|x| x.is_infinite()).count();
    let s = summarize(values.iter().map(|x| x.filter(|x| x.is_finite())).collect());
    let mut o = json!({ "mean": num(s.mean), "ci95": interval(&s) });
    if lost > 0 {
        o["not_recovered"] = json!(lost);
    }
    o
}

fn difference(s: &Summary) -> Value {
    json!({ "mean": num(s.mean), "ci95": interval(s) })
}

fn lint(a: &Assessment) -> Value {
    json!({ "errors": a.errors, "warnings": a.warnings })
}

fn candidate(r: &Report, i: usize) -> Value {
    let e = &r.evaluated[i];
    let j = &r.judged[i];
    json!({
        "values": values(r, &e.candidate),
        "overrides": e.candidate.overrides(r.ctx.spec),
        "objective": num(j.objective),
        "worst": {
            "success_rate": num(j.success),
            "amplification": num(j.amplification),
            "latency_p99_s": num(j.p99),
        },
        "feasible": j.feasible,
    })
}

/// The whole object.
pub fn report(r: &Report) -> Value {
    let spec = r.ctx.spec;
    let constraints: Vec<Value> = spec
        .constraints
        .iter()
        .map(|c| json!({ "text": c.text, "metric": c.metric, "op": c.op.label(), "value": c.value }))
        .collect();
    let winner = r.choice.map(|choice| {
        let w = choice.winner;
        let mut o = candidate(r, w);
        o["chosen_by"] = json!(choice.chosen_by);
        o["difference_from_best"] = difference(&choice.difference);
        o["lint"] = lint(&r.assessed[&w]);
        o["lint"]["findings"] = Value::Array(
            choice
                .remaining
                .iter()
                .map(|(f, why)| {
                    json!({
                        "rule": f.rule, "severity": f.severity.label(), "file": f.file, "field": f.field,
                        "at": f.at, "message": f.message, "fix": f.fix, "kept_because": why,
                    })
                })
                .collect(),
        );
        o["constraints"] = Value::Array(
            spec.constraints
                .iter()
                .enumerate()
                .map(|(ci, c)| {
                    json!({
                        "text": c.text,
                        "miss": num(Some(r.judged[w].violations[ci])),
                        "tightest_scenario": r.judged[w].binding[ci].map(|s| r.ctx.scenarios[s].path.display().to_string()),
                    })
                })
                .collect(),
        );
        o["emitted"] = json!(r.emitted.iter().map(|p| p.display().to_string()).collect::<Vec<_>>());
        o
    });
    let ties: Vec<Value> = r
        .choice
        .map(|choice| {
            choice
                .ties
                .iter()
                .map(|t| {
                    let mut o = candidate(r, t.index);
                    o["difference"] = difference(&t.difference);
                    o["best"] = json!(t.index == choice.best);
                    o["lint"] = lint(&r.assessed[&t.index]);
                    o["why_not"] = json!(t.why);
                    o
                })
                .collect()
        })
        .unwrap_or_default();
    let scenarios: Vec<Value> = r
        .ctx
        .scenarios
        .iter()
        .enumerate()
        .map(|(s, info)| {
            let mut metrics = Map::new();
            for m in &r.ctx.metrics {
                let base = r.baseline.series(r.ctx, s, m);
                let mut o = json!({ "as_written": stat(base) });
                if let Some(c) = r.choice {
                    let win = r.evaluated[c.winner].series(r.ctx, s, m);
                    o["winner"] = stat(win);
                    o["difference"] = difference(&paired_at(base, win, 0.95));
                }
                metrics.insert(m.clone(), o);
            }
            json!({
                "file": info.path.display().to_string(),
                "name": info.name,
                "replications": info.replications,
                "amplification_service": info.amplification_service,
                "measures_recovery": info.measures_recovery,
                "metrics": metrics,
            })
        })
        .collect();
    let closest = if r.choice.is_none() {
        r.closest().filter(|_| r.judged.iter().any(|j| j.objective.is_some())).map(|(i, ci, v)| {
            let mut o = candidate(r, i);
            o["constraint"] = json!(spec.constraints[ci].text);
            o["miss"] = num(Some(v));
            o
        })
    } else {
        None
    };
    let confirmation = r.confirmation.map(|c| {
        let metrics = |m: &[(String, Summary)]| -> Value {
            Value::Object(m.iter().map(|(k, s)| (k.clone(), difference(s))).collect())
        };
        json!({
            "seeds": {
                "experiment.seed": c.seed,
                // One number when every scenario ran as many, else one per scenario.
                "replications": match c.replications.as_slice() {
                    [first, rest @ ..] if rest.iter().all(|n| n == first) => json!(first),
                    all => json!(all),
                },
            },
            "winner": metrics(&c.winner_metrics),
            "winner_feasible": c.winner_judged.feasible,
            "runner_up_feasible": c.runner_up_judged.as_ref().map(|j| j.feasible),
            "runner_up": c.runner_up.map(|i| {
                let mut o = metrics(&c.runner_up_metrics);
                o["candidate"] = values(r, &r.evaluated[i].candidate);
                o
            }),
            "difference": metrics(&c.difference),
            "still_wins": c.still_wins,
        })
    });
    json!({
        "schema": "retrysim.tune/1",
        "experiment": spec.file,
        "edges": spec.edges,
        "objective": { "direction": spec.direction(), "metric": spec.objective, "judged_on": "worst scenario" },
        "constraints": constraints,
        "search": {
            "method": r.method.label(),
            "candidates": r.evaluated.len(),
            "runs": r.runs,
        },
        "winner": winner,
        "confirmation": confirmation,
        "ties": ties,
        "front": r.front.iter().map(|&i| candidate(r, i)).collect::<Vec<_>>(),
        "scenarios": scenarios,
        "closest": closest,
        "chart": r.chart.as_ref().map(|p| p.display().to_string()),
    })
}
