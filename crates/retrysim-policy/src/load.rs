//! Reading a policy file: a size limit, TOML, no dates, unknown keys
//! refused with their field path, then validation.

use crate::Policy;
use crate::error::{InputError, InputResult, PolicyErrorKind};
use crate::messages;
use crate::raw::PolicyRaw;
use std::io::Read;
use std::path::Path;
use toml::{Table, Value};

/// The largest policy file read: 16 MiB.
pub const MAX_POLICY_BYTES: u64 = 16 * 1024 * 1024;

/// Why a TOML date or time is refused: no field of the format is one.
pub const DATETIME: &str =
    "a TOML date or time is not a value of any field: quote it (\"2024-01-01\") if it is meant as a name";

impl Policy {
    /// Loads and validates a policy file. `name` defaults to the file's stem.
    /// Errors name the file, the field and what is allowed, with the words
    /// `retrysim` uses.
    pub fn load(path: &Path) -> InputResult<Policy> {
        read(path, &path.display().to_string()).map(|(_, p)| p)
    }

    /// Parses and validates a policy from TOML text; `shown` names it in errors.
    pub fn from_toml(text: &str, shown: &str) -> InputResult<Policy> {
        parse(text, shown, "policy").map(|(_, p)| p)
    }
}

/// Reads a policy file: its table (with `name` filled from the file stem)
/// and the validated policy. Errors name the file as `shown`.
pub fn read(path: &Path, shown: &str) -> InputResult<(Table, Policy)> {
    let text = read_text(path)
        .map_err(|e| InputError::new(PolicyErrorKind::Read, shown, format!("cannot read the policy file: {e}")))?;
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "policy".into());
    parse(&text, shown, &stem)
}

fn parse(text: &str, shown: &str, stem: &str) -> InputResult<(Table, Policy)> {
    let mut table: Table = text.parse().map_err(|e| {
        InputError::new(PolicyErrorKind::Syntax, shown, format!("not valid TOML: {}", messages::toml_error(&e)))
    })?;
    if let Some(at) = table.iter().find_map(|(k, v)| datetime_in(v, k)) {
        return Err(InputError::field(shown, at, DATETIME));
    }
    if !table.contains_key("name") {
        table.insert("name".into(), Value::String(stem.to_string()));
    }
    let value = Value::Table(table.clone());
    let raw: PolicyRaw =
        serde_path_to_error::deserialize(value.clone()).map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
            let path = pretty_path(&value, e.path());
            let kind = if e.inner().message().starts_with("unknown field") {
                PolicyErrorKind::UnknownField
            } else {
                PolicyErrorKind::Invalid
            };
            let err = InputError::new(kind, shown, messages::plain(e.inner().message()));
            if path.is_empty() { err } else { err.at(path) }
        })?;
    let policy = crate::validate::policy(&raw, shown, "")?;
    Ok((table, policy))
}

/// Reads at most [`MAX_POLICY_BYTES`] of UTF-8 text.
fn read_text(path: &Path) -> std::io::Result<String> {
    read_bounded(path, MAX_POLICY_BYTES)
}

/// `bytes` as a size for a message: "16 MB", "1 GB", "1000 bytes".
fn shown_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{} GB", b >> 30),
        b if b >= 1 << 20 => format!("{} MB", b >> 20),
        b if b >= 1 << 10 => format!("{} KB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Reads the UTF-8 text file at `path`, refusing one larger than `limit`
/// bytes after reading at most `limit + 1` of them, and refusing up front
/// anything but a regular file (after symbolic links): a FIFO or socket
/// would block in `open` or `read` until another process writes, a device
/// never ends. The error says what is wrong ("larger than the 16 MB limit
/// of an input file", "not a regular file", "not UTF-8 text", or the
/// system's reason) for the caller to name the file.
#[doc(hidden)]
pub fn read_bounded(path: &Path, limit: u64) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        let what = if meta.is_dir() { "a folder" } else { "not a regular file (a FIFO, socket or device)" };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what}: give the path of a file (write a pipe's output to a file first)"),
        ));
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the {} limit of an input file", shown_size(limit)),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text".to_string()))
}

/// An array element's label in a field path: its `name` (or `to`), else its index.
fn element_label(v: &Value, index: usize) -> String {
    v.as_table()
        .and_then(|t| t.get("name").or_else(|| t.get("to")))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| index.to_string())
}

/// The field path of the first TOML date or time in `v` (at `path`), if any.
fn datetime_in(v: &Value, path: &str) -> Option<String> {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match v {
        Value::Datetime(_) => Some(path.to_string()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, x)| datetime_in(x, &join(&element_label(x, i)))),
        Value::Table(t) => t.iter().find_map(|(k, x)| datetime_in(x, &join(k))),
        _ => None,
    }
}

/// A serde path with array indices replaced by element labels.
fn pretty_path(doc: &Value, path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out: Vec<String> = Vec::new();
    let mut node = Some(doc);
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => {
                let elem = node.and_then(|n| n.as_array()).and_then(|a| a.get(*index));
                out.push(elem.map(|v| element_label(v, *index)).unwrap_or_else(|| index.to_string()));
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
