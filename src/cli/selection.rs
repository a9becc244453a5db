//! What the flags of a simulating command select: the overrides that
//! `--seed` and `--replications` add to `--set`, and the variants that
//! `--variant` names.

use crate::config::Scenario;
use crate::error::InputError;

/// The `--set` overrides `sets` with `--seed` and `--replications` added
/// (a replication count of 0 is refused).
pub fn overrides(sets: &[String], seed: Option<u64>, replications: Option<u32>) -> Result<Vec<String>, InputError> {
    let mut sets = sets.to_vec();
    if let Some(seed) = seed {
        sets.push(format!("experiment.seed={seed}"));
    }
    if let Some(r) = replications {
        if r == 0 {
            return Err(InputError::file("--replications", "must be at least 1"));
        }
        sets.push(format!("experiment.replications={r}"));
    }
    Ok(sets)
}

/// Refuses a `--variant` name that is not one of `variants`, naming those there are.
pub fn check_variants(variants: &[Scenario], wanted: &[String]) -> Result<(), InputError> {
    for want in wanted {
        if !variants.iter().any(|v| &v.variant == want) {
            let names: Vec<&str> = variants.iter().map(|v| v.variant.as_str()).collect();
            return Err(InputError::file(
                format!("--variant {want}"),
                format!("no such variant; the experiment has: {}", names.join(", ")),
            ));
        }
    }
    Ok(())
}

/// The variants named by `--variant` (`wanted`), in the experiment's
/// order; all of them when none is named.
pub fn chosen_variants(variants: &[Scenario], wanted: &[String]) -> Result<Vec<Scenario>, InputError> {
    check_variants(variants, wanted)?;
    Ok(variants.iter().filter(|v| wanted.is_empty() || wanted.contains(&v.variant)).cloned().collect())
}
