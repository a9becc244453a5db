//! What the emulator runs for real, and what it refuses: every setting of
//! the model it does not carry out is named, with why, rather than run
//! with a silent difference.

use crate::config::Scenario;

/// The settings of `s` the emulator does not carry out, each as
/// `"<field>: <why>"` naming the field as the file writes it; empty when
/// it runs all of `s`.
pub fn unsupported(s: &Scenario) -> Vec<String> {
    let mut out = Vec::new();
    let mut no = |field: String, why: &str| out.push(format!("{field}: {why}"));
    for sv in &s.services {
        if sv.hosts.concurrency_limit.is_some() {
            no(
                format!("services.{}.concurrency_limit", sv.name),
                "the emulated hosts have no adaptive concurrency limit yet",
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quick_start_runs_and_an_adaptive_concurrency_limit_is_named() {
        let exp = crate::config::load_experiment(std::path::Path::new("experiments/quickstart.toml"), &[])
            .expect("the quick start loads");
        for v in &exp.variants {
            assert_eq!(unsupported(v), Vec::<String>::new(), "{}", v.variant);
        }
        let mut s = exp.variants[0].clone();
        s.services[0].hosts.concurrency_limit = Some(crate::config::LimitSpec {
            kind: crate::config::LimitKind::Aimd { backoff_ratio: 0.9, timeout: 1 },
            initial: 10.0,
            min: 1.0,
            max: 100.0,
        });
        let named = unsupported(&s);
        assert_eq!(named.len(), 1);
        let field = format!("services.{}.concurrency_limit: ", s.services[0].name);
        assert!(named[0].starts_with(&field), "{named:?}");
    }
}
