//! Choosing among candidates that tie with the best: fewer lint findings
//! first, then the gentler policy (fewer attempts, jitter, a budget); and
//! saying why, both for the candidates passed over and for every lint
//! finding the winner keeps.

use super::evaluate::{Context, Evaluated};
use super::judge::{Comparison, Judged, significantly_worse};
use super::space::Candidate;
use super::spec::Domain;
use crate::analysis::lint::{Finding, Severity, lint, sources};
use crate::analysis::stats::Summary;
use crate::config::load_experiment;
use std::collections::HashMap;
use std::path::Path;

/// (lint errors, lint warnings, attempts, edges without jitter, edges without a budget).
type PreferenceKey = (usize, usize, u32, u32, u32);

/// What a candidate's policies look like to lint and to a reviewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// Lint findings of the tune file with the candidate applied.
    pub findings: Vec<Finding>,
    pub errors: usize,
    pub warnings: usize,
    /// `max_attempts` summed over the tuned edges.
    pub attempts: u32,
    /// Tuned edges that retry without jitter, and without a budget.
    pub unjittered: u32,
    pub unbudgeted: u32,
}

impl Assessment {
    /// The preference key: smaller is preferred.
    fn key(&self) -> PreferenceKey {
        (self.errors, self.warnings, self.attempts, self.unjittered, self.unbudgeted)
    }
}

/// Same rule at the same place and field.
fn same(a: &Finding, b: &Finding) -> bool {
    a.rule == b.rule && a.at == b.at && a.field == b.field
}

/// Lints the tune file's first variant with the candidate applied.
pub fn assess(ctx: &Context, tune_file: &Path, c: &Candidate) -> anyhow::Result<Assessment> {
    let mut sets = ctx.sets.to_vec();
    sets.extend(c.overrides(ctx.spec));
    let exp = load_experiment(tune_file, &sets)?;
    let s = &exp.variants[0];
    let report = lint(s, &sources(&exp, &s.variant, &sets));
    let (mut attempts, mut unjittered, mut unbudgeted) = (0, 0, 0);
    for edge in &ctx.spec.edges {
        if let Some(p) = super::policy_at(s, edge) {
            attempts += p.max_attempts;
            if p.max_attempts > 1 {
                unjittered += u32::from(!p.backoff.is_jittered());
                unbudgeted += u32::from(p.budget.is_none());
            }
        }
    }
    Ok(Assessment {
        errors: report.count(Severity::Error),
        warnings: report.count(Severity::Warning),
        findings: report.findings,
        attempts,
        unjittered,
        unbudgeted,
    })
}

/// Assessments made on demand, each once.
#[derive(Debug)]
pub struct Assessor<'a> {
    ctx: &'a Context<'a>,
    tune_file: &'a Path,
    done: HashMap<Vec<u64>, Assessment>,
}

impl<'a> Assessor<'a> {
    /// Assesses candidates of `ctx` against `tune_file`.
    pub fn new(ctx: &'a Context<'a>, tune_file: &'a Path) -> Self {
        Self { ctx, tune_file, done: HashMap::new() }
    }

    /// The assessment of `evals[i]`.
    pub fn get(&mut self, evals: &[Evaluated], i: usize) -> anyhow::Result<&Assessment> {
        self.of(&evals[i].candidate)
    }

    /// The assessment of any candidate (evaluated or not).
    pub fn of(&mut self, c: &Candidate) -> anyhow::Result<&Assessment> {
        let key = c.key();
        if !self.done.contains_key(&key) {
            let a = assess(self.ctx, self.tune_file, c)?;
            self.done.insert(key.clone(), a);
        }
        Ok(&self.done[&key])
    }
}

/// Candidates one list value away from `evals[winner]` (not among `seen`)
/// whose lint is better: a search that did not try every combination (a
/// sample, the optimizer) may have missed a change that removes a finding
/// at no cost (a bounded `max_retry_after` where no service sends
/// Retry-After). Combinations the policy rejects are skipped.
pub fn gentler_neighbours(
    ctx: &Context,
    evals: &[Evaluated],
    winner: usize,
    seen: &std::collections::HashSet<Vec<u64>>,
    assessor: &mut Assessor,
) -> anyhow::Result<Vec<Candidate>> {
    let w = assessor.get(evals, winner)?.key();
    let mut out = Vec::new();
    for (d, dim) in ctx.spec.space.iter().enumerate() {
        let Domain::List(values) = &dim.domain else { continue };
        for v in 0..values.len() {
            let mut c = evals[winner].candidate.clone();
            if c.0[d] == v as f64 {
                continue;
            }
            c.0[d] = v as f64;
            if seen.contains(&c.key()) {
                continue;
            }
            if let Ok(a) = assessor.of(&c)
                && a.key() < w
            {
                out.push(c);
            }
        }
    }
    Ok(out)
}

/// A candidate that tied with the best and was passed over.
#[derive(Debug, Clone)]
pub struct Tie {
    pub index: usize,
    /// Its paired difference from the best (its objective minus the best's).
    pub difference: Summary,
    /// Why the winner was preferred to it.
    pub why: String,
}

/// The outcome of the choice.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The best worst-case objective.
    pub best: usize,
    pub winner: usize,
    /// The winner's paired difference from the best (zero when it is the best).
    pub difference: Summary,
    /// How the winner was chosen, in one sentence.
    pub chosen_by: String,
    /// The other candidates not significantly worse than the best.
    pub ties: Vec<Tie>,
    /// The winner's lint findings, each with why the space kept it.
    pub remaining: Vec<(Finding, String)>,
}

/// Why `w` is preferred to `o` (given `w.key() <= o.key()`); `objective`
/// names the metric and gives both worst cases.
fn why_preferred(w: &Assessment, o: &Assessment, objective: (&str, Option<f64>, Option<f64>)) -> String {
    // "That one" is the other candidate, so that no sentence reads as if
    // the winner had the fault.
    if o.errors != w.errors {
        format!("that one has more lint errors ({} against the winner's {})", o.errors, w.errors)
    } else if o.warnings != w.warnings {
        format!("that one has more lint warnings ({} against the winner's {})", o.warnings, w.warnings)
    } else if o.attempts != w.attempts {
        format!("that one allows more attempts ({} against the winner's {})", o.attempts, w.attempts)
    } else if o.unjittered != w.unjittered {
        "that one retries without jitter".into()
    } else if o.unbudgeted != w.unbudgeted {
        "that one retries without a budget".into()
    } else {
        let (metric, wv, ov) = objective;
        if wv == ov {
            format!("that one is as gentle with the same worst-case {metric}, and was evaluated later")
        } else {
            let n = |x: Option<f64>| x.map_or_else(|| "—".into(), |x| format!("{x:.4}"));
            format!(
                "that one is as gentle, with a worse worst-case {metric} ({} against the winner's {})",
                n(ov),
                n(wv)
            )
        }
    }
}

/// Chooses the winner among the candidates tied with `best` and explains it.
pub fn choose(
    ctx: &Context,
    evals: &[Evaluated],
    judged: &[Judged],
    best: usize,
    assessor: &mut Assessor,
) -> anyhow::Result<Choice> {
    let spec = ctx.spec;
    let cmp = Comparison::new(ctx, evals, judged, best);
    let tied = super::judge::ties(ctx, evals, judged, &cmp);
    let better = |a: usize, b: usize| {
        let (x, y) = (judged[a].objective.unwrap_or(f64::NAN), judged[b].objective.unwrap_or(f64::NAN));
        if spec.maximize { y.total_cmp(&x) } else { x.total_cmp(&y) }
    };
    let mut ranked: Vec<(usize, PreferenceKey)> = Vec::new();
    for &(i, _) in &tied {
        ranked.push((i, assessor.get(evals, i)?.key()));
    }
    ranked.sort_by(|a, b| a.1.cmp(&b.1).then(better(a.0, b.0)).then(evals[a.0].order.cmp(&evals[b.0].order)));
    let winner = ranked.first().map_or(best, |r| r.0);
    let obj = |i: usize| (spec.objective.as_str(), judged[winner].objective, judged[i].objective);
    let w = assessor.get(evals, winner)?.clone();
    let mut ties = Vec::new();
    for (i, d) in tied.iter().filter(|(i, _)| *i != winner) {
        let o = assessor.get(evals, *i)?;
        ties.push(Tie { index: *i, difference: d.clone(), why: why_preferred(&w, o, obj(*i)) });
    }
    let difference = cmp.difference(ctx, &evals[winner]);
    let chosen_by = if winner == best {
        if ties.is_empty() {
            format!(
                "the best worst-case {}; every other feasible candidate is significantly worse by paired difference",
                spec.objective
            )
        } else {
            format!(
                "the best worst-case {}; of the {} candidates not significantly worse by paired difference, it also has the fewest lint findings and is the gentlest",
                spec.objective,
                ties.len() + 1
            )
        }
    } else {
        let b = assessor.get(evals, best)?;
        format!(
            "not significantly worse than the best worst-case {} ({}), and preferred to it because {}",
            spec.objective,
            evals[best].candidate.label(spec),
            why_preferred(&w, b, obj(best))
        )
    };
    let remaining = explain_findings(ctx, evals, judged, &cmp, winner, &tied, assessor)?;
    Ok(Choice { best, winner, difference, chosen_by, ties, remaining })
}

/// The most candidates looked at to find one that avoids a finding.
const SCAN: usize = 2000;

/// For each lint finding of the winner: why the space kept it.
fn explain_findings(
    ctx: &Context,
    evals: &[Evaluated],
    judged: &[Judged],
    cmp: &Comparison,
    winner: usize,
    tied: &[(usize, Summary)],
    assessor: &mut Assessor,
) -> anyhow::Result<Vec<(Finding, String)>> {
    let spec = ctx.spec;
    let w = assessor.get(evals, winner)?.clone();
    // Feasible candidates, best objective first.
    let mut order: Vec<usize> =
        (0..evals.len()).filter(|&i| judged[i].feasible && judged[i].objective.is_some()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (judged[a].objective.unwrap_or(f64::NAN), judged[b].objective.unwrap_or(f64::NAN));
        (if spec.maximize { y.total_cmp(&x) } else { x.total_cmp(&y) }).then(evals[a].order.cmp(&evals[b].order))
    });
    order.truncate(SCAN);
    let mut out = Vec::new();
    for f in &w.findings {
        let mut avoider = None;
        for &i in &order {
            if !assessor.get(evals, i)?.findings.iter().any(|g| same(f, g)) {
                avoider = Some(i);
                break;
            }
        }
        let why = match avoider {
            None if order.len() < SCAN => format!(
                "no feasible candidate in the space avoids it; to try, add what its fix changes to [tune.space] ({})",
                f.fix
            ),
            None => format!("none of the {SCAN} best feasible candidates avoids it"),
            Some(i) => {
                let d = cmp.difference(ctx, &evals[i]);
                if significantly_worse(ctx, &d) {
                    format!(
                        "the best candidate without it ({}) is significantly worse: {} {} {}",
                        evals[i].candidate.label(spec),
                        spec.objective,
                        signed(d.mean),
                        interval(&d)
                    )
                } else if tied.iter().any(|(t, _)| *t == i) {
                    let o = assessor.get(evals, i)?;
                    format!(
                        "{} avoids it and ties with the best, but the winner was preferred to it because {}",
                        evals[i].candidate.label(spec),
                        why_preferred(&w, o, (&spec.objective, judged[winner].objective, judged[i].objective))
                    )
                } else {
                    format!("{} avoids it", evals[i].candidate.label(spec))
                }
            }
        };
        out.push((f.clone(), why));
    }
    Ok(out)
}

/// `+0.0012` / `-0.0040`, or `—`.
pub fn signed(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), |x| format!("{x:+.4}"))
}

/// `[lo, hi]` of a summary, or a note that there is none.
pub fn interval(s: &Summary) -> String {
    s.ci95.map_or_else(|| "(no interval: one replication)".into(), |(lo, hi)| format!("[{lo:+.4}, {hi:+.4}]"))
}

/// "1 error, 2 warnings" style counts.
pub fn counts(a: &Assessment) -> String {
    format!("{}, {}", crate::words::plural(a.errors, "error"), crate::words::plural(a.warnings, "warning"))
}
