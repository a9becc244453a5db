//! `retrysim import`: the inverse of `export`. A deployed retry config —
//! a gRPC service config, an Envoy route `retry_policy` (or an Envoy
//! config dump), an AWS shared config profile, an Istio VirtualService, a
//! Gateway API HTTPRoute (and XBackendTrafficPolicy) or Linkerd
//! annotations (and ServiceProfile) — read into a [`Policy`], with every
//! setting that has no policy field named ([`Loss`], `field` being the
//! source's key).
//!
//! What a target does not say is filled with what that software does by
//! default (Envoy's 15 s route timeout, gRPC's ±20% jitter, botocore
//! 1.44's standard mode); each such choice is named too. `import` of an
//! `export` gives back the policy on every field the target carries
//! (`tests/it/import_round_trip.rs`).

use crate::engine::{NEVER, Nanos};
use crate::error::{InputError, InputResult};
use crate::output::export::{Loss, Target};
use crate::policy::{Backoff, BackoffKind, Jitter, Policy, RetryOn};
use serde::Deserialize;
use serde_json::Value;

mod aws;
mod envoy;
mod gateway_api;
mod grpc;
mod istio;
mod linkerd;

/// What an import found: the policy and what it could not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The policy (write it with [`crate::policy::file::to_toml`]).
    pub policy: Policy,
    /// Settings of the source with no policy field, and defaults chosen.
    pub losses: Vec<Loss>,
    /// Remarks about how the policy was read (not losses).
    pub notes: Vec<String>,
}

impl Imported {
    fn new(name: &str) -> Self {
        Self { policy: Policy { name: name.to_string(), ..Policy::default() }, losses: Vec::new(), notes: Vec::new() }
    }

    fn lose(&mut self, field: &str, why: impl Into<String>) {
        self.losses.push(Loss { field: field.into(), why: why.into() });
    }

    /// A policy needs a per-try timeout or a deadline: `deadline` when the
    /// source has neither, named as a loss.
    fn ensure_timeout(&mut self, deadline: Nanos, why: &str) {
        if self.policy.per_try_timeout == NEVER && self.policy.deadline == NEVER {
            self.policy.deadline = deadline;
            self.lose("timeout", format!("none in the config: {why}; wrote deadline = \"{}\"", human(deadline)));
        }
    }
}

/// Reads `text` (from `file`, named in errors) as `target`'s config.
/// `name` is the policy name when the source has none (the file stem).
/// The policy is checked as a policy file is: a config whose values no
/// policy allows (say 100 000 attempts) is bad input.
pub fn import(text: &str, target: Target, file: &str, name: &str) -> InputResult<Imported> {
    let x = read(text, target, file, name)?;
    Policy::from_toml(&crate::policy::file::to_toml(&x.policy), file)
        .map_err(|e| e.context("the imported policy is not valid: "))?;
    Ok(x)
}

fn read(text: &str, target: Target, file: &str, name: &str) -> InputResult<Imported> {
    match target {
        Target::Grpc => grpc::import(text, file, name),
        Target::Envoy => envoy::import(text, file, name),
        Target::Aws => aws::import(text, file, name),
        Target::Istio => istio::import(text, file, name),
        Target::GatewayApi => gateway_api::import(text, file, name),
        Target::Linkerd => linkerd::import(text, file, name),
        Target::Resilience4j => Err(InputError::file(
            file,
            "import --from resilience4j is not supported: allowed are grpc, envoy, aws, istio, gateway-api, linkerd",
        )),
    }
}

/// The deepest nesting a config may have: a Kubernetes object or an Envoy
/// config dump nests about 20 levels; the YAML parser stops at 128 anyway,
/// but only after reading the whole nest (tens of seconds for 100 000).
const MAX_YAML_DEPTH: usize = 128;

/// How deeply `text` nests YAML collections, counted without parsing:
/// open flow brackets (`[`, `{`) outside quotes and comments, plus block
/// levels (lines indented deeper than the line before, as a stack of
/// indents). An over-estimate for text in block scalars, which no config
/// nests this deep.
fn yaml_depth(text: &str) -> usize {
    let mut deepest = 0;
    let mut flow = 0usize;
    let mut indents: Vec<usize> = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches([' ', '-']).len();
        if flow == 0 && !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            while indents.last().is_some_and(|&i| i >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let mut quote: Option<char> = None;
        let mut prev = ' ';
        for c in line.chars() {
            match (quote, c) {
                (Some('"'), '"') if prev == '\\' => {}
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '#') if prev.is_whitespace() => break,
                (None, '[' | '{') => flow += 1,
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            deepest = deepest.max(flow + indents.len());
            prev = c;
        }
    }
    deepest
}

/// A YAML error in the format's words. The one the parser words in its
/// own types is a key that is not a string (`{[1]: 2}`, `? {a: 1}`): JSON,
/// and every config read here, has string keys only.
fn yaml_error(msg: &str) -> String {
    for got in ["map", "sequence"] {
        if let Some((at, rest)) = msg.split_once(&format!("invalid type: {got}, expected a string")) {
            let at = at.trim_end_matches(": ").trim();
            let place = if at.is_empty() { String::new() } else { format!(" under `{at}`") };
            return format!(
                "not valid YAML for a config: a key{place} is a list or key: value pairs, not a plain string{rest}"
            );
        }
    }
    format!("not valid YAML: {}", retrysim_policy::messages::plain(msg))
}

/// Every YAML document of `text` as JSON values (a JSON file is one YAML document).
fn yaml_docs(text: &str, file: &str) -> InputResult<Vec<Value>> {
    if yaml_depth(text) > MAX_YAML_DEPTH {
        return Err(InputError::file(
            file,
            format!("nested more than {MAX_YAML_DEPTH} levels deep: no config of this kind nests so deep"),
        ));
    }
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v = Value::deserialize(doc).map_err(|e| InputError::file(file, yaml_error(&e.to_string())))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// A duration as the targets write them: proto3 JSON (`"0.100s"`), Go and
/// Gateway API (`"1s500ms"`, `"2m"`), or a bare number of seconds.
fn duration(v: &Value, file: &str, field: &str) -> InputResult<Nanos> {
    let bad = || {
        InputError::field(
            file,
            field,
            format!("{v} is not a duration: expected e.g. \"0.100s\", \"250ms\" or \"1m30s\""),
        )
    };
    if let Some(x) = v.as_f64() {
        return if x >= 0.0 { Ok((x * 1e9).round() as Nanos) } else { Err(bad()) };
    }
    let t = v.as_str().ok_or_else(bad)?.trim();
    if t == "0" {
        return Ok(0);
    }
    let mut rest = t;
    let mut total = 0f64;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let (num, tail) = rest.split_at(split);
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let per = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(bad()),
        };
        let n: f64 = num.parse().map_err(|_| bad())?;
        total += n * per;
        rest = next;
    }
    Ok((total * 1e9).round() as Nanos)
}

/// The value at a dotted path of object keys.
fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

/// What a JSON or YAML value is, for a message: "the string \"100%\"", "null".
fn shown_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::String(s) => format!("the string {}", Value::String(s.chars().take(40).collect())),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "key: value pairs".into(),
        other => other.to_string(),
    }
}

/// `obj.key` when it is there, which must then be a mapping.
fn mapping<'a>(obj: &'a Value, key: &str, file: &str, field: &str) -> InputResult<Option<&'a Value>> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) if v.is_object() => Ok(Some(v)),
        Some(v) => Err(InputError::field(file, field, format!("expected key: value pairs, got {}", shown_value(v)))),
    }
}

/// `obj.key` when it is there, which must then be a string.
fn string<'a>(obj: &'a Value, key: &str, file: &str, field: &str) -> InputResult<Option<&'a str>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(InputError::field(file, field, format!("expected a string, got {}", shown_value(v)))),
    }
}

/// `obj.key` when it is there, which must then be true or false.
fn boolean(obj: &Value, key: &str, file: &str, field: &str) -> InputResult<Option<bool>> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(InputError::field(file, field, format!("expected true or false, got {}", shown_value(v)))),
    }
}

/// A non-negative integer field.
fn uint(v: &Value, file: &str, field: &str) -> InputResult<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| InputError::field(file, field, format!("{v} is not a non-negative integer")))
}

/// A count of retries (at most 1000), as attempts: the count + 1.
fn retries(v: &Value, file: &str, field: &str) -> InputResult<u32> {
    let n = uint(v, file, field)?;
    if n > 1000 {
        return Err(InputError::field(file, field, format!("{n}: at most 1000 retries")));
    }
    Ok(n as u32 + 1)
}

/// A number field.
fn number(v: &Value, file: &str, field: &str) -> InputResult<f64> {
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| InputError::field(file, field, format!("{v} is not a number")))
}

/// The full-jitter exponential backoff Envoy (and Istio) apply.
fn envoy_backoff(base: Nanos, max: Nanos) -> Backoff {
    Backoff {
        kind: BackoffKind::Exponential,
        base,
        cap: max,
        multiplier: 2.0,
        jitter: Jitter::Full,
        throttling_base: None,
    }
}

/// Adds status codes to a retry set, sorted and without repeats.
fn add_statuses(r: &mut RetryOn, codes: impl IntoIterator<Item = u16>) {
    r.statuses.extend(codes);
    r.statuses.sort_unstable();
    r.statuses.dedup();
}

fn human(ns: Nanos) -> String {
    crate::policy::file::duration(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_before_parsing() {
        assert_eq!(yaml_depth("a: 1\n"), 1);
        assert_eq!(yaml_depth("a:\n  b:\n    c: [1, {d: 2}]\n"), 5);
        // Brackets in quotes and comments do not count.
        assert_eq!(yaml_depth("a: \"[[[\\\"[[\"  # {{{{\nb: '[[['\n"), 1);
        let deep = format!("retry_policy: {}{}", "[".repeat(100_000), "]".repeat(100_000));
        // Refused by the count, not by the parser (which takes seconds to say so).
        let e = yaml_docs(&deep, "deep.yaml").unwrap_err();
        assert!(e.to_string().contains("nested more than 128 levels"), "{e}");
        let blocks: String = (0..200).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
        assert!(yaml_docs(&blocks, "blocks.yaml").unwrap_err().to_string().contains("nested more than"));
        let fine = (0..100).map(|_| "[").collect::<String>() + &"]".repeat(100);
        assert!(yaml_docs(&fine, "fine.yaml").is_ok());
    }

    #[test]
    fn a_key_that_is_not_a_string_is_said_in_the_formats_words() {
        for text in ["a:\n  {[1]: 2}: x\n", "a:\n  ? [1, 2]\n  : x\n"] {
            let e = yaml_docs(text, "k.yaml").unwrap_err().to_string();
            assert!(e.contains("a key under `a` is a list or key: value pairs, not a plain string"), "{e}");
            assert!(!retrysim_policy::messages::names_program_types(&e), "{e}");
        }
    }
}
