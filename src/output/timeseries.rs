//! `timeseries.csv` and `faults.csv`.

use crate::analysis::RunSet;
use crate::engine::to_secs_f64;

/// One row per (variant, replication, bin), DESIGN §5 columns, then three
/// columns per service; then `hedges_per_s` and `throttled_per_s` when a
/// variant hedges or throttles.
pub fn render_timeseries(set: &RunSet) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let first = &set.variants[0].scenario;
    let any = |f: &dyn Fn(&crate::policy::Policy) -> bool| {
        set.variants.iter().any(|v| (0..v.scenario.edges.len()).any(|e| f(v.scenario.edge_policy(e))))
    };
    let (hedged, throttled) = (any(&|p| p.hedging.is_some()), any(&|p| p.throttle.is_some()));
    let mut header: Vec<String> = [
        "variant",
        "replication",
        "t_s",
        "offered_per_s",
        "attempts_per_s",
        "goodput_per_s",
        "p99_s",
        "queue_len",
        "utilization",
        "wasted_per_s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for s in &first.services {
        header.extend([
            format!("{}.queue_len", s.name),
            format!("{}.utilization", s.name),
            format!("{}.wasted_per_s", s.name),
        ]);
    }
    if hedged {
        header.push("hedges_per_s".into());
    }
    if throttled {
        header.push("throttled_per_s".into());
    }
    w.write_record(&header)?;
    for v in &set.variants {
        let s = &v.scenario;
        let main = s.clients[0].target;
        for (rep, run) in v.runs.iter().enumerate() {
            let bin_ns = run.series.bin() as f64;
            let bin_s = to_secs_f64(run.series.bin());
            for (i, row) in run.series.rows().iter().enumerate() {
                let mut rec = vec![
                    s.variant.clone(),
                    rep.to_string(),
                    run.series.t_s(i).to_string(),
                    (row.offered as f64 / bin_s).to_string(),
                    (row.attempts as f64 / bin_s).to_string(),
                    (row.goodput as f64 / bin_s).to_string(),
                    row.latency.as_ref().and_then(|h| h.quantile_s(0.99)).map(|x| x.to_string()).unwrap_or_default(),
                ];
                let svc = |k: usize| {
                    [
                        (row.queue_area[k] / bin_ns).to_string(),
                        (row.busy_area[k] / (bin_ns * s.services[k].workers as f64)).to_string(),
                        (row.wasted[k] as f64 / bin_s).to_string(),
                    ]
                };
                rec.extend(svc(main));
                for k in 0..s.services.len() {
                    rec.extend(svc(k));
                }
                if hedged {
                    rec.push((row.hedges as f64 / bin_s).to_string());
                }
                if throttled {
                    rec.push((row.throttled as f64 / bin_s).to_string());
                }
                w.write_record(&rec)?;
            }
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// Fault windows per variant, so charts can shade them.
pub fn render_faults(set: &RunSet) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["variant", "fault", "kind", "target", "start_s", "end_s"])?;
    for v in &set.variants {
        let s = &v.scenario;
        for f in &s.faults {
            let end = if f.end == crate::engine::NEVER { String::new() } else { to_secs_f64(f.end).to_string() };
            w.write_record([
                s.variant.clone(),
                f.name.clone(),
                f.kind.label().to_string(),
                s.services[f.target].name.clone(),
                to_secs_f64(f.start).to_string(),
                end,
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
