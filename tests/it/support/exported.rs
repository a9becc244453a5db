//! What the `retrysim export` tests (`export.rs`,
//! `export_hedging_throttle.rs`, `export_targets.rs`) share: the policies
//! they export (a shipped preset, or a policy file written on the spot) and
//! the readings of an export (the fields lost, why, its YAML documents).
//!
//! Test binaries include it with
//! `use crate::support::exported;`.
#![allow(dead_code)]

use retrysim::config::load_policy_file;
use retrysim::output::export::Exported;
use retrysim::policy::Policy;
use serde::de::DeserializeOwned;
use std::path::Path;

/// The shipped preset `policies/<name>.toml`.
pub fn preset(name: &str) -> Policy {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies").join(format!("{name}.toml"));
    load_policy_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The policy file `toml`, loaded as retrysim loads one.
pub fn inline(toml: &str) -> Policy {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, toml).unwrap();
    load_policy_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The fields the export reports lost, in its order.
pub fn lost(x: &Exported) -> Vec<&str> {
    x.losses.iter().map(|l| l.field.as_str()).collect()
}

/// Why each loss of `field` was lost.
pub fn why<'a>(x: &'a Exported, field: &str) -> Vec<&'a str> {
    x.losses.iter().filter(|l| l.field == field).map(|l| l.why.as_str()).collect()
}

/// The export's text parsed as YAML documents.
pub fn yaml_docs<T: DeserializeOwned>(x: &Exported) -> Vec<T> {
    serde_yaml_ng::Deserializer::from_str(&x.text)
        .map(|d| T::deserialize(d).unwrap_or_else(|e| panic!("not YAML: {e}\n{}", x.text)))
        .collect()
}
