//! `timeseries.csv` and `faults.csv`.

use crate::analysis::RunSet;
use crate::engine::to_secs_f64;

/// One row per (variant, replication, bin), DESIGN §5 columns, then three
/// columns per service, each service with replicas followed by its hosts
/// (`api[0].queue_len`, …); then `hedges_per_s` and `throttled_per_s` when
/// a variant hedges or throttles; then, with several client classes,
/// `NAME.offered_per_s` and `NAME.goodput_per_s` per class; then
/// `QUEUE.depth` per message queue.
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
    // Hosts get columns when a service has replicas in any variant.
    let most: Vec<u32> = (0..first.services.len())
        .map(|k| set.variants.iter().map(|v| v.scenario.services[k].hosts.replicas).max().unwrap_or(1))
        .collect();
    // Per column: service, host (None = the service as a whole).
    let mut columns: Vec<(usize, Option<u32>)> = Vec::new();
    for (k, &n) in most.iter().enumerate() {
        let name = &first.services[k].name;
        columns.push((k, None));
        header.extend([format!("{name}.queue_len"), format!("{name}.utilization"), format!("{name}.wasted_per_s")]);
        for r in (0..n).filter(|_| n > 1) {
            columns.push((k, Some(r)));
            header.extend([
                format!("{name}[{r}].queue_len"),
                format!("{name}[{r}].utilization"),
                format!("{name}[{r}].wasted_per_s"),
            ]);
        }
    }
    if hedged {
        header.push("hedges_per_s".into());
    }
    if throttled {
        header.push("throttled_per_s".into());
    }
    // Per client class, when there are several.
    let classes: Vec<&str> =
        if first.clients.len() > 1 { first.clients.iter().map(|c| c.name.as_str()).collect() } else { Vec::new() };
    for c in &classes {
        header.extend([format!("{c}.offered_per_s"), format!("{c}.goodput_per_s")]);
    }
    // Per message queue: the time-average number of messages in it.
    let queues: Vec<&str> = first.queues.iter().map(|q| q.name.as_str()).collect();
    for q in &queues {
        header.push(format!("{q}.depth"));
    }
    w.write_record(&header)?;
    for v in &set.variants {
        let s = &v.scenario;
        let main = s.clients[0].target;
        let slots = crate::metrics::run::host_slots(s);
        // Per column: the metrics slot and the workers it has, if this variant has it.
        let cols: Vec<Option<(usize, f64)>> = columns
            .iter()
            .map(|&(k, host)| {
                let sv = &s.services[k];
                match host {
                    None => Some((k, (sv.workers * sv.hosts.replicas) as f64)),
                    Some(r) => {
                        slots.iter().position(|&x| x == (k, r)).map(|j| (s.services.len() + j, sv.workers as f64))
                    }
                }
            })
            .collect();
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
                let svc = |k: usize, workers: f64| {
                    [
                        (row.queue_area[k] / bin_ns).to_string(),
                        (row.busy_area[k] / (bin_ns * workers)).to_string(),
                        (row.wasted[k] as f64 / bin_s).to_string(),
                    ]
                };
                let main_workers = (s.services[main].workers * s.services[main].hosts.replicas) as f64;
                rec.extend(svc(main, main_workers));
                for col in &cols {
                    match *col {
                        Some((k, workers)) => rec.extend(svc(k, workers)),
                        None => rec.extend([String::new(), String::new(), String::new()]),
                    }
                }
                if hedged {
                    rec.push((row.hedges as f64 / bin_s).to_string());
                }
                if throttled {
                    rec.push((row.throttled as f64 / bin_s).to_string());
                }
                for k in 0..classes.len() {
                    let per_s = |v: &[u64]| v.get(k).map_or(String::new(), |n| (*n as f64 / bin_s).to_string());
                    rec.extend([per_s(&row.class_offered), per_s(&row.class_goodput)]);
                }
                for q in 0..queues.len() {
                    rec.push((row.queue_depth_area.get(q).copied().unwrap_or(0.0) / bin_ns).to_string());
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
                f.target_label(&s.services),
                to_secs_f64(f.start).to_string(),
                end,
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
