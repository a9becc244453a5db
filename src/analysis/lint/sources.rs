//! Which file each policy came from: the experiment, or the policy file
//! it was loaded from, as the variant's `set` and `--set` leave it.

use crate::config::{Experiment, overrides};
use std::collections::BTreeMap;
use std::path::Path;

/// Where the experiment and its policies were written: so that a finding
/// can name the file to change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sources {
    /// The experiment file as shown to the user.
    pub experiment: String,
    /// Policy location (`clients.web`, `services.api.calls.payments`) →
    /// the policy file it was loaded from, for policies given by path and
    /// not changed field by field by an override.
    pub policies: BTreeMap<String, String>,
}

/// Works out which policy file each policy of `variant` came from: the
/// experiment's policy paths, then the variant's `set`, then `sets`
/// (`--set KEY=VALUE`, paths relative to the working directory), as
/// `load_experiment` resolves them.
pub fn sources(exp: &Experiment, variant: &str, sets: &[String]) -> Sources {
    let experiment = exp.path.display().to_string();
    let mut policies = BTreeMap::new();
    let Ok(doc) = exp.source.parse::<toml::Table>() else {
        return Sources { experiment, policies };
    };
    let dir = exp.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut locations = Vec::new();
    if let Some(toml::Value::Array(clients)) = doc.get("clients") {
        for (i, c) in clients.iter().enumerate() {
            let loc = format!("clients.{}", overrides::element_label(c, i));
            if let Some(toml::Value::String(p)) = c.get("policy") {
                policies.insert(loc.clone(), tidy(&dir.join(p)));
            }
            locations.push(loc);
        }
    }
    if let Some(toml::Value::Array(services)) = doc.get("services") {
        for (i, s) in services.iter().enumerate() {
            let label = overrides::element_label(s, i);
            if let Some(toml::Value::Array(calls)) = s.get("calls") {
                for (j, c) in calls.iter().enumerate() {
                    let loc = format!("services.{label}.calls.{}", overrides::element_label(c, j));
                    if let Some(toml::Value::String(p)) = c.get("policy") {
                        policies.insert(loc.clone(), tidy(&dir.join(p)));
                    }
                    locations.push(loc);
                }
            }
        }
    }
    let mut apply = |key: &str, value: &toml::Value, base: &Path| {
        for loc in &locations {
            if key == format!("{loc}.policy") {
                match value {
                    toml::Value::String(p) => {
                        policies.insert(loc.clone(), tidy(&base.join(p)));
                    }
                    _ => {
                        policies.remove(loc);
                    }
                }
            } else if key.starts_with(&format!("{loc}.policy.")) || key == loc.as_str() {
                policies.remove(loc);
            }
        }
    };
    if let Some(toml::Value::Array(variants)) = doc.get("variants") {
        let chosen = variants.iter().find(|v| v.get("name").and_then(toml::Value::as_str) == Some(variant));
        if let Some(toml::Value::Table(set)) = chosen.and_then(|v| v.get("set")) {
            for (k, v) in set {
                apply(k, v, &dir);
            }
        }
    }
    for s in sets {
        if let Ok((k, v)) = overrides::split_assignment(s) {
            apply(&k, &v, Path::new(""));
        }
    }
    Sources { experiment, policies }
}

/// A path as shown, with `a/../` folded away (`experiments/../policies/x.toml`
/// becomes `policies/x.toml`).
fn tidy(path: &Path) -> String {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out.iter().collect::<std::path::PathBuf>().display().to_string()
}
