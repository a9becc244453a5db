//! Spaces with ranges are searched by the Tree-structured Parzen Estimator
//! of the `tpe` crate (Bergstra et al. 2011, the default sampler of
//! Optuna): one estimator per field, a histogram for a list of values and
//! a Parzen window for a range (on its log scale where it has one), told
//! each candidate's screening score.

use super::space::Candidate;
use super::spec::{Domain, TuneSpec};
use crate::engine::random::{Stream, hash_words};
use tpe::{TpeOptimizer, categorical_range, histogram_estimator, parzen_estimator, range};

/// The optimizer's state: one estimator per field and its random stream.
#[derive(Debug)]
pub struct Tpe {
    fields: Vec<TpeOptimizer>,
    rng: Stream,
}

/// Ranges are searched on [0, 1), mapped onto the range by [`super::spec::Range::at`].
const TOP: f64 = 1.0 - 1e-9;

impl Tpe {
    /// A fresh optimizer for `spec`, seeded by `seed`.
    pub fn new(spec: &TuneSpec, seed: u64) -> Self {
        let fields = spec
            .space
            .iter()
            .map(|d| match &d.domain {
                Domain::List(v) => {
                    TpeOptimizer::new(histogram_estimator(), categorical_range(v.len()).expect("a list is not empty"))
                }
                Domain::Range(_) => TpeOptimizer::new(parzen_estimator(), range(0.0, 1.0).expect("a valid range")),
            })
            .collect();
        Self { fields, rng: Stream::from_state(hash_words(seed, &[0x7E5E])) }
    }

    /// The next point to try.
    pub fn ask(&mut self, spec: &TuneSpec) -> anyhow::Result<Candidate> {
        let mut coords = Vec::with_capacity(spec.space.len());
        for (d, field) in spec.space.iter().zip(&mut self.fields) {
            let p = field.ask(&mut self.rng).map_err(|e| anyhow::anyhow!("tune optimizer: {e}"))?;
            coords.push(match &d.domain {
                Domain::List(v) => p.floor().clamp(0.0, v.len() as f64 - 1.0),
                Domain::Range(r) => r.at(p),
            });
        }
        Ok(Candidate(coords))
    }

    /// Tells the optimizer how `c` scored (lower is better).
    pub fn tell(&mut self, spec: &TuneSpec, c: &Candidate, score: f64) -> anyhow::Result<()> {
        for ((d, field), &x) in spec.space.iter().zip(&mut self.fields).zip(&c.0) {
            let p = match &d.domain {
                Domain::List(_) => x,
                Domain::Range(r) => r.position(x).min(TOP),
            };
            field.tell(p, score).map_err(|e| anyhow::anyhow!("tune optimizer: {e}"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tune::spec::parse_spec;
    use std::path::Path;

    #[test]
    fn it_closes_in_on_the_minimum_of_a_range() {
        let spec = parse_spec(
            Path::new("t.toml"),
            "[tune]\nedge = \"clients.web.policy\"\n[tune.space]\n\"backoff.base\" = \"1ms..10s\"\n",
        )
        .unwrap();
        let mut tpe = Tpe::new(&spec, 5);
        // The best base is 300 ms; the score is the distance in decades.
        let score = |c: &Candidate| (c.0[0] / 3e8).log10().abs();
        let mut best = f64::INFINITY;
        for _ in 0..60 {
            let c = tpe.ask(&spec).unwrap();
            let s = score(&c);
            best = best.min(s);
            tpe.tell(&spec, &c, s).unwrap();
        }
        // Within a tenth of a decade of the optimum, over four decades.
        assert!(best < 0.1, "{best}");
    }
}
