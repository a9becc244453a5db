//! The load generator: open-loop Poisson arrivals at each class's rate
//! schedule (spikes included), closed-loop instances with think times, and
//! bursts. Each intent runs as a task of its own under its class's policy.
//! The generator records how late it sent each intent after its scheduled
//! time: a late generator offers less load than the experiment says.

use super::caller::{Body, Net};
use crate::config::ClientMode;
use crate::engine::random::hash_words;
use crate::engine::{Nanos, from_secs_f64};
use crate::policy::DenyReason;
use std::sync::Arc;
use tokio::task::JoinSet;

/// Random draws of the generator: the first word of every key.
const ARRIVAL: u64 = 0xA1;
const INSTANCE: u64 = 0xA2;
const THINK: u64 = 0xA3;
const KEY: u64 = 0xA4;
const BODY: u64 = 0xA5;
const REUSE: u64 = 0xA6;

/// Runs every client class until the end of the arrivals; returns the
/// 99th percentile of the generator's lateness (real seconds).
pub async fn generate(net: Arc<Net>) -> f64 {
    let mut classes = JoinSet::new();
    for c in 0..net.s.clients.len() {
        let spec = &net.s.clients[c];
        match &spec.mode {
            ClientMode::Open(_) => {
                classes.spawn(open_loop(net.clone(), c));
            }
            ClientMode::Closed { .. } => {
                for instance in 0..spec.count {
                    classes.spawn(closed_loop(net.clone(), c, instance));
                }
            }
            ClientMode::Burst { at, spread } => {
                for instance in 0..spec.count {
                    let u = net.rng.unit(&[ARRIVAL, c as u64, instance as u64]);
                    let t = at + (u * *spread as f64) as Nanos;
                    classes.spawn(burst(net.clone(), c, instance, t));
                }
            }
        }
    }
    let mut late = Vec::new();
    while let Some(done) = classes.join_next().await {
        late.extend(done.unwrap_or_default());
    }
    late.sort_by(f64::total_cmp);
    late.get(((late.len() as f64 * 0.99).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0)
}

/// How late (real seconds) the generator is at its scheduled model time `t`.
async fn wait_until(net: &Net, t: Nanos) -> f64 {
    net.rec.sleep_until(t).await
}

/// Poisson arrivals of class `c` at its schedule's rate times the load
/// scale. The schedule is kept by a thread of its own that sleeps to each
/// arrival (woken tens of microseconds late) and hands the intent to the
/// runtime, so a busy runtime delays the intents' work, not their arrivals.
async fn open_loop(net: Arc<Net>, c: usize) -> Vec<f64> {
    let handle = tokio::runtime::Handle::current();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let generator = net.clone();
    let schedule = tokio::task::spawn_blocking(move || {
        let net = generator;
        let ClientMode::Open(schedule) = &net.s.clients[c].mode else { return Vec::new() };
        let (duration, scale) = (net.s.duration, net.s.load_scale);
        let mut late = Vec::new();
        let (mut t, mut seq) = (0, 0u64);
        'arrivals: loop {
            // The next arrival: exponential gaps at the rate in force, redrawn at a change.
            loop {
                let (rate, next_change) = schedule.rate_at(t);
                let r = rate * scale;
                if r > 0.0 {
                    let gap = -net.rng.unit(&[ARRIVAL, c as u64, seq, t]).ln() / r;
                    let at = t.saturating_add(from_secs_f64(gap));
                    if next_change.is_none_or(|nc| at < nc) {
                        if at >= duration {
                            break 'arrivals;
                        }
                        t = at;
                        break;
                    }
                }
                match next_change {
                    Some(nc) if nc < duration => t = nc,
                    _ => break 'arrivals,
                }
            }
            let at = net.rec.clock.real_at(t).into_std();
            let now = std::time::Instant::now();
            if at > now {
                std::thread::sleep(at - now);
            }
            late.push(std::time::Instant::now().saturating_duration_since(at).as_secs_f64());
            let instance = pick_instance(&net, c, seq);
            if tx.send(handle.spawn(intent(net.clone(), c, instance, seq))).is_err() {
                break;
            }
            seq += 1;
        }
        late
    });
    while let Some(task) = rx.recv().await {
        let _ = task.await;
    }
    schedule.await.unwrap_or_default()
}

/// The instance an open-loop intent comes from.
fn pick_instance(net: &Net, c: usize, seq: u64) -> usize {
    let n = net.clients[c].len();
    if n > 1 { (net.rng.unit(&[INSTANCE, c as u64, seq]) * n as f64) as usize % n } else { 0 }
}

/// One closed-loop instance: an intent, its think time, the next.
async fn closed_loop(net: Arc<Net>, c: usize, instance: u32) -> Vec<f64> {
    let ClientMode::Closed { think_time } = &net.s.clients[c].mode else { return Vec::new() };
    let mut round = 0u64;
    let stateful = net.clients[c].len() > 1;
    while net.rec.clock.now() < net.s.duration {
        let seq = ((instance as u64) << 32) | round;
        intent(net.clone(), c, if stateful { instance as usize } else { 0 }, seq).await;
        let think = think_time.sample(&net.rng, &[THINK, c as u64, instance as u64, round]);
        let at = net.rec.clock.now().saturating_add(think);
        if at >= net.s.duration {
            break;
        }
        wait_until(&net, at).await;
        round += 1;
    }
    Vec::new()
}

/// One burst instance's intent at `t`.
async fn burst(net: Arc<Net>, c: usize, instance: u32, t: Nanos) -> Vec<f64> {
    let late = wait_until(&net, t).await;
    let stateful = net.clients[c].len() > 1;
    intent(net.clone(), c, if stateful { instance as usize } else { 0 }, instance as u64).await;
    vec![late]
}

/// One intent of class `c` from instance `instance`, from arrival to its end.
async fn intent(net: Arc<Net>, c: usize, instance: usize, seq: u64) {
    let spec = &net.s.clients[c];
    let (id, _) = net.rec.intent_arrives(c, seq);
    let shared = net.clients[c][instance].clone();
    // A client that reuses keys (a bug) sends an earlier intent's key with its own body.
    let reuse = spec.key_reuse_rate > 0.0 && seq > 0 && net.rng.unit(&[REUSE, c as u64, seq]) < spec.key_reuse_rate;
    let body = Body {
        key: spec.idempotency_key.then(|| hash_words(0, &[KEY, c as u64, if reuse { seq - 1 } else { seq }])),
        fingerprint: hash_words(0, &[BODY, c as u64, seq]),
    };
    let (last, end) =
        net.call(spec.edge, shared, id, spec.operation, body, None, super::caller::Asking::Operation).await;
    let failure = match (end, last) {
        (Ok(()), _) => String::new(),
        // An open breaker failed the intent fast, without sending anything.
        (Err(DenyReason::BreakerOpen), None) => "breaker_open (failed fast)".to_string(),
        (Err(reason), None) => format!("{reason}"),
        (Err(DenyReason::NotRetryable), Some(last)) => format!("{last}"),
        (Err(reason), Some(last)) => format!("{last} ({reason})"),
    };
    net.rec.intent_ends(id, end.is_ok(), failure, spec.policy.deadline);
}
