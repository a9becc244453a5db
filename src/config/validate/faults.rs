//! `[[faults]]`: kinds, windows and targets.

use super::{V, first_extra};
use crate::config::raw::FaultRaw;
use crate::config::scenario::{EdgeSpec, FaultKind, FaultSpec, ServiceSpec};
use crate::engine::NEVER;
use crate::error::InputResult;
use std::collections::HashSet;

/// Validates the fault timeline.
pub fn faults(v: &V, raw: &[FaultRaw], services: &[ServiceSpec], edges: &[EdgeSpec]) -> InputResult<Vec<FaultSpec>> {
    let mut faults = Vec::new();
    let mut names = HashSet::new();
    for (i, fr) in raw.iter().enumerate() {
        let label = fr.name.clone().unwrap_or_else(|| i.to_string());
        let field = format!("faults.{label}");
        let f = |n: &str| format!("{field}.{n}");
        if let Some(n) = &fr.name {
            v.name(&f("name"), n)?;
        }
        if !names.insert(label.clone()) {
            return Err(v.err(&f("name"), "fault names must be unique"));
        }
        let start = v.dur(&f("start"), fr.start.as_ref(), 0)?;
        let length = v.dur_or_never(&f("duration"), fr.duration.as_ref(), NEVER)?;
        let present = [
            ("capacity", fr.capacity.is_some()),
            ("status", fr.status.is_some()),
            ("probability", fr.probability.is_some()),
            ("retry_after", fr.retry_after.is_some()),
            ("extra", fr.extra.is_some()),
            ("restart_after", fr.restart_after.is_some()),
        ];
        let takes = |allowed: &[&str]| -> InputResult<()> {
            match first_extra(&present, allowed) {
                Some(extra) => Err(v.err(
                    &f(extra),
                    format!(
                        "not a field of a {} fault (it takes {}, start{})",
                        fr.kind,
                        allowed.join(", "),
                        if fr.kind == "crash" { "" } else { ", duration" }
                    ),
                )),
                None => Ok(()),
            }
        };
        let kind = match fr.kind.as_str() {
            "error" => {
                takes(&["status", "probability", "retry_after"])?;
                let retry_after = fr.retry_after.as_ref().map(|s| v.dur(&f("retry_after"), Some(s), 0)).transpose()?;
                FaultKind::Error {
                    status: v.status(&f("status"), fr.status.as_ref(), 503)?,
                    probability: v.prob(&f("probability"), fr.probability, 1.0)?,
                    retry_after,
                }
            }
            "response_loss" => {
                takes(&["probability"])?;
                FaultKind::ResponseLoss { probability: v.prob(&f("probability"), fr.probability, 1.0)? }
            }
            "reset" => {
                takes(&["probability"])?;
                FaultKind::Reset { probability: v.prob(&f("probability"), fr.probability, 1.0)? }
            }
            "crash" => {
                takes(&["restart_after"])?;
                if fr.duration.is_some() {
                    return Err(v.err(
                        &f("duration"),
                        "a crash happens at `start`; say how long the service is down with `restart_after`",
                    ));
                }
                let down = v.positive_dur(&f("restart_after"), fr.restart_after.as_ref(), 0).map_err(|_| {
                    v.err(&f("restart_after"), "required: how long the service is down, such as \"5s\"")
                })?;
                if down == NEVER {
                    return Err(v.err(&f("restart_after"), "must be finite"));
                }
                let target = target_of(v, services, &fr.target, &f("target"))?;
                faults.push(FaultSpec {
                    name: label,
                    target,
                    start,
                    end: start.saturating_add(down),
                    kind: FaultKind::Crash,
                });
                continue;
            }
            "outage" => {
                takes(&[])?;
                FaultKind::Outage
            }
            "brownout" => {
                takes(&["capacity"])?;
                let capacity = fr
                    .capacity
                    .ok_or_else(|| v.err(&f("capacity"), "required: the fraction of workers left, from 0 to 1"))?;
                if !(0.0..=1.0).contains(&capacity) {
                    return Err(v.err(&f("capacity"), format!("must be a fraction from 0 to 1, got {capacity}")));
                }
                FaultKind::Brownout { capacity }
            }
            "latency" => {
                takes(&["extra"])?;
                let extra = fr.extra.as_ref().ok_or_else(|| {
                    v.err(&f("extra"), "required: a distribution such as { dist = \"exp\", mean = \"200ms\" }")
                })?;
                FaultKind::Latency { extra: v.dist(&f("extra"), extra)? }
            }
            "partition" => {
                takes(&[])?;
                let edge = edges.iter().position(|e| e.name == fr.target).ok_or_else(|| {
                    let names: Vec<&str> = edges.iter().map(|e| e.name.as_str()).collect();
                    v.err(
                        &f("target"),
                        format!(
                            "a partition targets an edge \"caller->callee\"; no edge \"{}\" (edges: {})",
                            fr.target,
                            names.join(", ")
                        ),
                    )
                })?;
                faults.push(FaultSpec {
                    name: label,
                    target: edges[edge].to,
                    start,
                    end: start.saturating_add(length),
                    kind: FaultKind::Partition { edge },
                });
                continue;
            }
            other => {
                return Err(v.err(
                    &f("kind"),
                    format!("unknown fault kind \"{other}\": allowed are error, response_loss, reset, outage, brownout, latency, crash, partition"),
                ));
            }
        };
        let target = target_of(v, services, &fr.target, &f("target"))?;
        faults.push(FaultSpec { name: label, target, start, end: start.saturating_add(length), kind });
    }
    Ok(faults)
}

fn target_of(v: &V, services: &[ServiceSpec], name: &str, field: &str) -> InputResult<usize> {
    services.iter().position(|s| s.name == name).ok_or_else(|| {
        let names: Vec<&str> = services.iter().map(|s| s.name.as_str()).collect();
        v.err(field, format!("no service named \"{name}\" (services: {})", names.join(", ")))
    })
}
