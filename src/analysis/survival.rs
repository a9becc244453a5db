//! Times to an event that some replications never reach within the run:
//! the time to recovery, censored at the end of the run. The Kaplan–Meier
//! estimate keeps every replication (a run that did not recover says the
//! time is longer than its horizon), where a mean over the runs that
//! recovered would favour the variant that recovers less often.

/// One replication: the time of the event, or the time it was last seen
/// without it (censored).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observed {
    Event(f64),
    Censored(f64),
}

/// The Kaplan–Meier median and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Median {
    /// The smallest time at which the survival estimate is at most ½;
    /// `None` when it never falls that far (most runs did not recover).
    pub median: Option<f64>,
    /// Brookmeyer–Crowley: the times whose survival estimate is within
    /// 1.96 Greenwood standard errors of ½. An open upper end is `None`.
    pub ci95: (Option<f64>, Option<f64>),
    pub events: usize,
    pub runs: usize,
}

/// The survival curve: at each distinct event time, S(t) and Greenwood's
/// variance sum Σ d/(n(n−d)).
fn curve(obs: &[Observed]) -> Vec<(f64, f64, f64)> {
    let mut times: Vec<(f64, bool)> = obs
        .iter()
        .map(|o| match *o {
            Observed::Event(t) => (t, true),
            Observed::Censored(t) => (t, false),
        })
        .collect();
    // Events before censorings at the same time (the usual convention).
    times.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut at_risk = times.len() as f64;
    let (mut s, mut green) = (1.0, 0.0);
    let mut out = Vec::new();
    let mut i = 0;
    while i < times.len() {
        let t = times[i].0;
        let (mut d, mut c) = (0.0, 0.0);
        while i < times.len() && times[i].0 == t {
            if times[i].1 {
                d += 1.0
            } else {
                c += 1.0
            }
            i += 1;
        }
        if d > 0.0 {
            s *= 1.0 - d / at_risk;
            if at_risk > d {
                green += d / (at_risk * (at_risk - d));
            } else {
                green = f64::INFINITY;
            }
            out.push((t, s, green));
        }
        at_risk -= d + c;
    }
    out
}

/// The Kaplan–Meier median of `obs` with its Brookmeyer–Crowley interval.
pub fn km_median(obs: &[Observed]) -> Median {
    let events = obs.iter().filter(|o| matches!(o, Observed::Event(_))).count();
    let c = curve(obs);
    let median = c.iter().find(|p| p.1 <= 0.5 + 1e-12).map(|p| p.0);
    let z = 1.959_963_984_540_054;
    // Greenwood: Var S = S² Σ; a step with S = 0 has no spread left.
    let se = |s: f64, g: f64| if g.is_finite() { s * g.sqrt() } else { 0.0 };
    let lo = c.iter().find(|p| p.1 <= 0.5 + z * se(p.1, p.2)).map(|p| p.0);
    let hi = c.iter().find(|p| p.1 < 0.5 - z * se(p.1, p.2)).map(|p| p.0);
    Median { median, ci95: (lo, hi), events, runs: obs.len() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Observed::*;

    #[test]
    fn without_censoring_it_is_the_sample_median() {
        let m = km_median(&[Event(5.0), Event(1.0), Event(3.0), Event(2.0), Event(4.0)]);
        // S drops 0.2 a step: 0.8, 0.6, 0.4 at t = 3.
        assert_eq!(m.median, Some(3.0));
        assert_eq!((m.events, m.runs), (5, 5));
    }

    #[test]
    fn runs_that_never_recover_push_the_median_up_not_out() {
        // 2 of 5 recovered (at 1 s and 2 s), 3 censored at 60 s: S stays at 0.6.
        let m = km_median(&[Event(1.0), Event(2.0), Censored(60.0), Censored(60.0), Censored(60.0)]);
        assert_eq!(m.median, None);
        assert_eq!(m.events, 2);
        // The mean over recovered runs would say 1.5 s; half of them recovered by 3 s here.
        let m = km_median(&[Event(1.0), Event(2.0), Event(3.0), Censored(60.0), Censored(60.0)]);
        assert_eq!(m.median, Some(3.0));
    }

    #[test]
    fn greenwood_and_the_interval_follow_the_textbook_example() {
        // Censoring inside the data (the classic 6-MP remission times, Freireich
        // et al. 1963, treated arm): KM median 23 weeks.
        let weeks = [
            (6.0, true),
            (6.0, true),
            (6.0, true),
            (6.0, false),
            (7.0, true),
            (9.0, false),
            (10.0, true),
            (10.0, false),
            (11.0, false),
            (13.0, true),
            (16.0, true),
            (17.0, false),
            (19.0, false),
            (20.0, false),
            (22.0, true),
            (23.0, true),
            (25.0, false),
            (32.0, false),
            (32.0, false),
            (34.0, false),
            (35.0, false),
        ];
        let obs: Vec<Observed> = weeks.iter().map(|&(t, e)| if e { Event(t) } else { Censored(t) }).collect();
        let c = curve(&obs);
        // S(6) = 18/21 = 0.857, S(7) = 0.807, S(10) = 0.753, S(13) = 0.690,
        // S(16) = 0.627, S(22) = 0.538, S(23) = 0.448.
        let s: Vec<f64> = c.iter().map(|p| (p.1 * 1000.0).round() / 1000.0).collect();
        assert_eq!(s, vec![0.857, 0.807, 0.753, 0.690, 0.627, 0.538, 0.448]);
        let m = km_median(&obs);
        assert_eq!(m.median, Some(23.0));
        // The upper end is open: S never falls below 0.5 − 1.96 SE.
        assert_eq!(m.ci95.1, None);
        assert_eq!(m.ci95.0, Some(13.0));
    }
}
