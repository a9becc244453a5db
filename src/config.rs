//! Reading experiments and policies: TOML parsing, overrides, policy files
//! by path, validation with clear errors, and the typed [`Scenario`] per
//! variant.
//!
//! Overrides are applied to the parsed TOML document (not to typed structs)
//! so that every error can name the file and the field path; only then is
//! the document deserialized and validated.

pub mod messages;
pub mod overrides;
pub mod raw;
pub mod read;
pub mod scenario;
pub mod units;
pub mod validate;

pub use scenario::*;

use crate::error::{InputError, InputResult};
use crate::policy::Policy;
use raw::{ExperimentRaw, VariantRaw};
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// Top-level sections of an experiment file.
const SECTIONS: [&str; 8] =
    ["experiment", "clients", "operations", "services", "faults", "variants", "network", "tune"];

/// A loaded experiment: every variant validated and ready to run.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// The experiment file.
    pub path: PathBuf,
    /// Its text, as written.
    pub source: String,
    /// Every variant, in file order.
    pub variants: Vec<Scenario>,
    /// Every file read (the experiment and the policies), so that outputs never overwrite one.
    pub inputs: Vec<PathBuf>,
}

impl Experiment {
    /// `[experiment] show` over every variant (a variant's `set` may add
    /// to it), in order, without repeats.
    pub fn show(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in self.variants.iter().flat_map(|v| &v.show) {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
        out
    }

    /// `[experiment] answer` over every variant, in order, without repeats.
    pub fn answer(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in self.variants.iter().flat_map(|v| &v.answer) {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
        out
    }

    /// `[experiment] question`, if the experiment states one.
    pub fn question(&self) -> Option<&str> {
        self.variants.iter().find_map(|v| v.question.as_deref())
    }
}

/// Where each inlined policy came from: location (`clients.web`) → file.
type Origins = BTreeMap<String, String>;

/// Loads an experiment, applies each variant's `set` and then `sets`
/// (`KEY=VALUE` from the command line, paths relative to the working
/// directory), and validates every variant.
pub fn load_experiment(path: &Path, sets: &[String]) -> InputResult<Experiment> {
    let file = path.display().to_string();
    let source =
        read::read_input(path).map_err(|e| InputError::file(&file, format!("cannot read the experiment file: {e}")))?;
    let mut doc: Table =
        source.parse().map_err(|e| InputError::file(&file, format!("not valid TOML: {}", messages::toml_error(&e))))?;
    reject_datetimes(&doc, &file)?;
    let exp_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut inputs = vec![path.to_path_buf()];

    let variants: Vec<VariantRaw> = match doc.remove("variants") {
        None => Vec::new(),
        Some(v) => deserialize_at(v, &file, "variants")?,
    };
    let mut origins = Origins::new();
    resolve_policies(&mut doc, &exp_dir, &file, &mut origins, &mut inputs)?;

    let cli: Vec<(String, Value)> = sets
        .iter()
        .map(|s| overrides::split_assignment(s).map_err(|m| InputError::file(format!("--set {s}"), m)))
        .collect::<InputResult<_>>()?;
    for (s, (k, v)) in sets.iter().zip(&cli) {
        if let Some(at) = datetime_in(v, k) {
            return Err(InputError::field(format!("--set {s}"), at, DATETIME));
        }
    }

    let default_name = doc
        .get("experiment")
        .and_then(|e| e.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "experiment".into());
    let plan: Vec<VariantRaw> =
        if variants.is_empty() { vec![VariantRaw { name: default_name, set: BTreeMap::new() }] } else { variants };

    let mut seen = std::collections::BTreeSet::new();
    let mut scenarios = Vec::with_capacity(plan.len());
    let last = plan.len() - 1;
    for (i, v) in plan.iter().enumerate() {
        if !seen.insert(v.name.clone()) {
            return Err(InputError::field(
                &file,
                format!("variants[{i}].name"),
                format!("variant name \"{}\" is used twice; names must be unique", v.name),
            ));
        }
        // The last variant takes the document and origins instead of a copy.
        let (mut d, mut o) = if i == last {
            (std::mem::take(&mut doc), std::mem::take(&mut origins))
        } else {
            (doc.clone(), origins.clone())
        };
        for (k, val) in &v.set {
            let field = format!("variants.{}.set.\"{k}\"", v.name);
            if SECTIONS.contains(&k.as_str()) && val.is_table() {
                return Err(InputError::field(
                    &file,
                    field,
                    "override keys are dotted paths: quote them, as in set = { \"clients.web.rate\" = \"900/s\" }",
                ));
            }
            overrides::apply(&mut d, k, val.clone()).map_err(|m| InputError::field(&file, &field, m))?;
            forget_overridden_origins(&mut o, k);
            resolve_policies(&mut d, &exp_dir, &file, &mut o, &mut inputs)?;
        }
        for (s, (k, val)) in sets.iter().zip(&cli) {
            overrides::apply(&mut d, k, val.clone()).map_err(|m| InputError::file(format!("--set {s}"), m))?;
            forget_overridden_origins(&mut o, k);
            resolve_policies(&mut d, Path::new(""), &format!("--set {s}"), &mut o, &mut inputs)?;
        }
        let ctx =
            if plan.len() > 1 || !v.set.is_empty() { format!("in variant \"{}\": ", v.name) } else { String::new() };
        let blame = |e: InputError| blame_override(e, sets, &cli).context(&ctx);
        let raw: ExperimentRaw = deserialize_at(Value::Table(d), &file, "").map_err(blame)?;
        let scenario = validate::scenario(&raw, &v.name, &file, &o).map_err(blame)?;
        scenarios.push(scenario);
    }
    inputs.sort();
    inputs.dedup();
    Ok(Experiment { path: path.to_path_buf(), source, variants: scenarios, inputs })
}

/// Why a TOML date or time is refused: no field of the formats is one.
const DATETIME: &str =
    "a TOML date or time is not a value of any field: quote it (\"2024-01-01\") if it is meant as a name";

/// Whether `v` is or holds a TOML date or time.
fn has_datetime(v: &Value) -> bool {
    match v {
        Value::Datetime(_) => true,
        Value::Array(items) => items.iter().any(has_datetime),
        Value::Table(t) => t.values().any(has_datetime),
        _ => false,
    }
}

/// The field path of the first TOML date or time in `v` (at `path`), if any.
///
/// The path is only built when there is one: a document without dates
/// (every valid one) is scanned without making a string per value.
fn datetime_in(v: &Value, path: &str) -> Option<String> {
    if !has_datetime(v) {
        return None;
    }
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match v {
        Value::Datetime(_) => Some(path.to_string()),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, x)| datetime_in(x, &join(&overrides::element_label(x, i))))
        }
        Value::Table(t) => t.iter().find_map(|(k, x)| datetime_in(x, &join(k))),
        _ => None,
    }
}

/// Refuses a document with a TOML date or time anywhere: the formats have
/// none, and one would otherwise be read as text (a name "1979-05-27").
fn reject_datetimes(doc: &Table, file: &str) -> InputResult<()> {
    match doc.iter().find_map(|(k, v)| datetime_in(v, k)) {
        Some(at) => Err(InputError::field(file, at, DATETIME)),
        None => Ok(()),
    }
}

/// Names the `--set` argument as the source of an error in a field it set
/// (or inside a table it set), instead of the experiment file.
fn blame_override(e: InputError, sets: &[String], cli: &[(String, Value)]) -> InputError {
    let Some(field) = &e.field else { return e };
    let culprit =
        sets.iter().zip(cli).rev().find(|(_, (k, _))| {
            field == k || field.starts_with(&format!("{k}.")) || field.starts_with(&format!("{k}["))
        });
    match culprit {
        Some((s, _)) => InputError { file: format!("--set {s}"), ..e },
        None => e,
    }
}

/// Forgets the file a policy came from once an override changed one of its
/// fields: errors in it are then reported against the override.
fn forget_overridden_origins(origins: &mut Origins, key: &str) {
    origins.retain(|location, _| !key.starts_with(&format!("{location}.policy.")));
}

/// Loads and validates one policy file.
pub fn load_policy_file(path: &Path) -> InputResult<Policy> {
    let (_, policy) = read_policy(path, &path.display().to_string())?;
    Ok(policy)
}

/// Reads a policy file: its table (with `name` filled from the file stem)
/// and the validated policy. Errors name the policy file (the policy
/// crate reads it, as [`Policy::load`] does).
fn read_policy(path: &Path, shown: &str) -> InputResult<(Table, Policy)> {
    retrysim_policy::load::read(path, shown)
}

/// Replaces every policy given by path (`clients[*].policy`,
/// `services[*].calls[*].policy`) with the file's table, resolving the path
/// against `base`.
fn resolve_policies(
    doc: &mut Table,
    base: &Path,
    file: &str,
    origins: &mut Origins,
    inputs: &mut Vec<PathBuf>,
) -> InputResult<()> {
    if let Some(Value::Array(clients)) = doc.get_mut("clients") {
        for (i, c) in clients.iter_mut().enumerate() {
            let location = format!("clients.{}", overrides::element_label(c, i));
            if let Some(slot) = c.as_table_mut().and_then(|t| t.get_mut("policy")) {
                resolve_slot(slot, location, base, file, origins, inputs)?;
            }
        }
    }
    if let Some(Value::Array(services)) = doc.get_mut("services") {
        for (i, s) in services.iter_mut().enumerate() {
            let label = overrides::element_label(s, i);
            if let Some(Value::Array(calls)) = s.as_table_mut().and_then(|t| t.get_mut("calls")) {
                for (j, c) in calls.iter_mut().enumerate() {
                    let location = format!("services.{label}.calls.{}", overrides::element_label(c, j));
                    if let Some(slot) = c.as_table_mut().and_then(|t| t.get_mut("policy")) {
                        resolve_slot(slot, location, base, file, origins, inputs)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Loads one policy given by path into its slot.
fn resolve_slot(
    slot: &mut Value,
    location: String,
    base: &Path,
    file: &str,
    origins: &mut Origins,
    inputs: &mut Vec<PathBuf>,
) -> InputResult<()> {
    let Value::String(rel) = slot else {
        return Ok(());
    };
    let resolved = base.join(rel.as_str());
    let shown = resolved.display().to_string();
    let (table, _) = read_policy(&resolved, &shown).map_err(|e| {
        if e.field.is_none() && e.message.starts_with("cannot read") {
            let why = e.message.trim_start_matches("cannot read the policy file: ");
            InputError::field(
                file,
                format!("{location}.policy"),
                format!("cannot read policy file \"{rel}\" ({shown}): {why}"),
            )
        } else {
            e
        }
    })?;
    *slot = Value::Table(table);
    origins.insert(location, shown);
    inputs.push(resolved);
    Ok(())
}

/// Deserializes `value` with serde, turning errors into [`InputError`]s whose
/// field path names array elements by their `name`.
fn deserialize_at<T: DeserializeOwned>(value: Value, file: &str, prefix: &str) -> InputResult<T> {
    serde_path_to_error::deserialize(value.clone()).map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
        let path = pretty_path(&value, e.path(), prefix);
        let msg = messages::plain(e.inner().message());
        if path.is_empty() { InputError::file(file, msg) } else { InputError::field(file, path, msg) }
    })
}

/// Renders a serde path with array indices replaced by element names.
fn pretty_path(doc: &Value, path: &serde_path_to_error::Path, prefix: &str) -> String {
    use serde_path_to_error::Segment;
    let mut out: Vec<String> = if prefix.is_empty() { vec![] } else { vec![prefix.to_string()] };
    let mut node = Some(doc);
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => {
                let elem = node.and_then(|n| n.as_array()).and_then(|a| a.get(*index));
                out.push(elem.map(|v| overrides::element_label(v, *index)).unwrap_or_else(|| index.to_string()));
                node = elem;
            }
            Segment::Map { key } => {
                out.push(key.clone());
                node = node.and_then(|n| n.get(key.as_str()));
            }
            Segment::Enum { variant } => out.push(variant.clone()),
            Segment::Unknown => out.push("?".into()),
        }
    }
    out.join(".")
}
