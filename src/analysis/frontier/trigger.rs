//! The triggers the frontier sizes: a load spike, a brownout, a slowdown,
//! an outage or a burst (a thundering herd), added to a scenario that has
//! no disturbance of its own.

use crate::config::{ClientMode, ClientSpec, FaultKind, FaultSpec, RateSchedule, Scenario};
use crate::engine::Nanos;

/// A trigger family (`--trigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TriggerKind {
    /// Every open-loop client's arrival rate is multiplied by the size.
    Spike,
    /// The size is the share of the target's workers removed.
    Brownout,
    /// The target's service times are multiplied by the size.
    Slowdown,
    /// The target refuses connections; the size is the outage's length in seconds.
    Outage,
    /// A herd of `size` intents of the target's first client arrives at once
    /// (spread over the trigger's length, 0 by default).
    Burst,
}

impl TriggerKind {
    /// The name written on the command line.
    pub fn label(self) -> &'static str {
        match self {
            TriggerKind::Spike => "spike",
            TriggerKind::Brownout => "brownout",
            TriggerKind::Slowdown => "slowdown",
            TriggerKind::Outage => "outage",
            TriggerKind::Burst => "burst",
        }
    }

    /// The size that changes nothing (no trigger).
    pub fn identity(self) -> f64 {
        match self {
            TriggerKind::Spike | TriggerKind::Slowdown => 1.0,
            TriggerKind::Brownout | TriggerKind::Outage | TriggerKind::Burst => 0.0,
        }
    }

    /// The default `--size`.
    pub fn default_sizes(self) -> &'static str {
        match self {
            TriggerKind::Spike => "1..5:33",
            TriggerKind::Brownout => "0..1:41",
            TriggerKind::Slowdown => "1..10:37",
            TriggerKind::Outage => "0s..60s:61",
            TriggerKind::Burst => "0..10000:41",
        }
    }

    /// The default `--length`: a burst arrives at once, other triggers last 10 s.
    pub fn default_length(self) -> &'static str {
        if self == TriggerKind::Burst { "0s" } else { "10s" }
    }

    /// Whether `--length` applies (an outage's size is its length).
    pub fn has_length(self) -> bool {
        self != TriggerKind::Outage
    }

    /// Whether the size must be at least the identity (or, for a brownout, at most 1).
    pub fn allows(self, size: f64) -> bool {
        match self {
            TriggerKind::Spike | TriggerKind::Slowdown => size.is_finite() && size >= 1.0,
            TriggerKind::Brownout => (0.0..=1.0).contains(&size),
            TriggerKind::Outage => size.is_finite() && size >= 0.0,
            TriggerKind::Burst => size.is_finite() && size >= 0.0 && size.fract() == 0.0 && size <= u32::MAX as f64,
        }
    }

    /// What a size may be, in words.
    pub fn allowed(self) -> &'static str {
        match self {
            TriggerKind::Spike => "a spike's size multiplies the arrival rate: numbers of at least 1",
            TriggerKind::Brownout => "a brownout's size is the share of capacity removed: numbers from 0 to 1",
            TriggerKind::Slowdown => "a slowdown's size multiplies service times: numbers of at least 1",
            TriggerKind::Outage => "an outage's size is its length: durations such as 5s",
            TriggerKind::Burst => "a burst's size is a number of intents: whole numbers of at least 0",
        }
    }
}

/// One trigger: its family, target service, start, length and size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trigger {
    pub kind: TriggerKind,
    /// The service a brownout, slowdown or outage hits, and a burst's herd calls.
    pub target: usize,
    pub at: Nanos,
    /// Ignored by an outage (its size is its length).
    pub length: Nanos,
    pub size: f64,
    /// The largest size of the search: a spike's arrivals are made by
    /// thinning the arrivals of a spike this large, so that every size
    /// shares the same candidate arrivals and every intent its numbers.
    pub ceiling: f64,
}

impl Trigger {
    /// The trigger's window [start, end).
    pub fn window(&self) -> (Nanos, Nanos) {
        let length = match self.kind {
            TriggerKind::Outage => crate::engine::from_secs_f64(self.size),
            _ => self.length,
        };
        (self.at, self.at.saturating_add(length))
    }

    /// `base` with this trigger, run until `horizon` after the trigger's end.
    pub fn apply(&self, base: &Scenario, horizon: Nanos) -> Scenario {
        let mut s = base.clone();
        let (start, end) = self.window();
        s.duration = end.saturating_add(horizon);
        let fault = |kind: FaultKind| FaultSpec {
            name: format!("frontier-{}", self.kind.label()),
            target: self.target,
            host: None,
            start,
            end,
            kind,
        };
        match self.kind {
            TriggerKind::Spike => {
                for c in &mut s.clients {
                    if let ClientMode::Open(schedule) = &mut c.mode {
                        let ceiling = spiked(schedule, start, end, self.ceiling.max(self.size));
                        *schedule = spiked(schedule, start, end, self.size);
                        c.thinned_from = Some(ceiling);
                    }
                }
            }
            TriggerKind::Brownout => s.faults.push(fault(FaultKind::Brownout { capacity: 1.0 - self.size })),
            TriggerKind::Slowdown => s.faults.push(fault(FaultKind::Slowdown { factor: self.size })),
            TriggerKind::Outage => s.faults.push(fault(FaultKind::Outage)),
            TriggerKind::Burst => {
                let herd = self.size as u32;
                let users = s.clients.iter().position(|c| c.target == self.target).unwrap_or(0);
                if herd > 0
                    && let Some(users) = s.clients.get(users)
                {
                    // The herd is the users of the target's first client: their
                    // policy, edge and keys; a class of its own, after every other,
                    // so the other classes keep their random numbers.
                    let herd = ClientSpec {
                        name: format!("frontier-{}", self.kind.label()),
                        count: herd,
                        mode: ClientMode::Burst { at: start, spread: end - start },
                        thinned_from: None,
                        ..users.clone()
                    };
                    s.clients.push(herd);
                }
            }
        }
        s
    }
}

/// `schedule` with its rate multiplied by `factor` over [start, end).
fn spiked(schedule: &RateSchedule, start: Nanos, end: Nanos, factor: f64) -> RateSchedule {
    let mut points: Vec<Nanos> = schedule.0.iter().map(|p| p.0).chain([start, end]).collect();
    points.sort_unstable();
    points.dedup();
    let steps = points
        .into_iter()
        .map(|t| {
            let r = schedule.rate_at(t).0;
            (t, if (start..end).contains(&t) { r * factor } else { r })
        })
        .collect();
    RateSchedule(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spike_multiplies_the_rate_inside_its_window_only() {
        let s = RateSchedule(vec![(0, 100.0)]);
        let spiked = spiked(&s, 10, 20, 3.0);
        assert_eq!(spiked.0, vec![(0, 100.0), (10, 300.0), (20, 100.0)]);
        assert_eq!(spiked.rate_at(15).0, 300.0);
        assert_eq!(spiked.rate_at(25).0, 100.0);
    }
}
