//! Overrides on the parsed TOML document: `--set KEY=VALUE`, a variant's
//! `set` and a sweep point's `--param` all go through [`apply`].
//!
//! Keys are dotted paths; arrays of tables are addressed by an element's
//! `name` (calls by `to`) or by index: `services.api.calls.payments.policy.max_attempts`.

use toml::{Table, Value};

/// Parses an override value as a TOML value (`32`, `true`, `[1, 2]`,
/// `{ dist = "exp", mean = "5ms" }`), falling back to a plain string
/// (`10s`, `policies/x.toml`).
pub fn parse_value(text: &str) -> Value {
    let wrapped = format!("v = {text}");
    match wrapped.parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(text.to_string())),
        Err(_) => Value::String(text.to_string()),
    }
}

/// Splits `KEY=VALUE` at the first `=`.
pub fn split_assignment(text: &str) -> Result<(String, Value), String> {
    let (k, v) = text.split_once('=').ok_or_else(|| format!("expected KEY=VALUE, got \"{text}\""))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("expected KEY=VALUE with a non-empty KEY, got \"{text}\""));
    }
    Ok((k.to_string(), parse_value(v.trim())))
}

/// Sets `key` (a dotted path) to `value` in `doc`, creating intermediate
/// tables. Returns an error naming the path segment that could not be found.
pub fn apply(doc: &mut Table, key: &str, value: Value) -> Result<(), String> {
    let segments: Vec<&str> = key.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(format!("\"{key}\" has an empty path segment"));
    }
    set_in_table(doc, &segments, value, String::new())
}

fn set_in_table(table: &mut Table, segs: &[&str], value: Value, walked: String) -> Result<(), String> {
    let (head, rest) = (segs[0], &segs[1..]);
    let here = join(&walked, head);
    if rest.is_empty() {
        table.insert(head.to_string(), value);
        return Ok(());
    }
    if !table.contains_key(head) && ARRAYS.contains(&head) {
        // An array of tables that is not there has no element to set.
        return Err(format!("`{here}` has no entries: there is no \"{}\" to set `{}` in", rest[0], segs.join(".")));
    }
    let child = table.entry(head.to_string()).or_insert_with(|| Value::Table(Table::new()));
    set_in_value(child, rest, value, here)
}

/// Keys whose values are arrays of tables, addressed by element.
const ARRAYS: [&str; 5] = ["clients", "operations", "services", "faults", "calls"];

fn set_in_value(node: &mut Value, segs: &[&str], value: Value, walked: String) -> Result<(), String> {
    match node {
        Value::Table(t) => set_in_table(t, segs, value, walked),
        Value::Array(items) => {
            let head = segs[0];
            let idx = find_element(items, head).ok_or_else(|| {
                let names: Vec<String> = items.iter().enumerate().map(|(i, v)| element_label(v, i)).collect();
                format!("`{walked}` has no entry named \"{head}\" (entries: {})", names.join(", "))
            })?;
            let here = join(&walked, head);
            if segs.len() == 1 {
                items[idx] = value;
                Ok(())
            } else {
                set_in_value(&mut items[idx], &segs[1..], value, here)
            }
        }
        other => {
            Err(format!("`{walked}` is a {}, not a table: cannot set `{}` inside it", other.type_str(), segs.join(".")))
        }
    }
}

fn find_element(items: &[Value], key: &str) -> Option<usize> {
    let by_field = |field: &str| {
        items.iter().position(|v| v.as_table().and_then(|t| t.get(field)).and_then(Value::as_str) == Some(key))
    };
    by_field("name").or_else(|| by_field("to")).or_else(|| key.parse::<usize>().ok().filter(|&i| i < items.len()))
}

/// How an array element is addressed in paths and messages: its `name`,
/// else its `to`, else its index.
pub fn element_label(v: &Value, index: usize) -> String {
    let t = v.as_table();
    t.and_then(|t| t.get("name").or_else(|| t.get("to")))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| index.to_string())
}

fn join(walked: &str, seg: &str) -> String {
    if walked.is_empty() { seg.to_string() } else { format!("{walked}.{seg}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Table {
        r#"
            [experiment]
            name = "x"
            [[services]]
            name = "api"
            workers = 4
            [[services.calls]]
            to = "payments"
            policy = { max_attempts = 3 }
            [[faults]]
            kind = "error"
            target = "api"
        "#
        .parse()
        .unwrap()
    }

    #[test]
    fn values_parse_as_toml_or_fall_back_to_strings() {
        assert_eq!(parse_value("32"), Value::Integer(32));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("10s"), Value::String("10s".into()));
        assert_eq!(parse_value("\"10s\""), Value::String("10s".into()));
        assert_eq!(parse_value("policies/x.toml"), Value::String("policies/x.toml".into()));
        assert!(parse_value("{ dist = \"exp\", mean = \"5ms\" }").is_table());
    }

    #[test]
    fn arrays_of_tables_are_addressed_by_name_to_or_index() {
        let mut d = doc();
        apply(&mut d, "services.api.workers", Value::Integer(32)).unwrap();
        apply(&mut d, "services.api.calls.payments.policy.max_attempts", Value::Integer(1)).unwrap();
        apply(&mut d, "faults.0.probability", Value::Float(0.5)).unwrap();
        apply(&mut d, "services.api.queue.limit", Value::Integer(8)).unwrap();
        let api = d["services"].as_array().unwrap()[0].as_table().unwrap();
        assert_eq!(api["workers"].as_integer(), Some(32));
        assert_eq!(api["queue"]["limit"].as_integer(), Some(8));
        let call = api["calls"].as_array().unwrap()[0].as_table().unwrap();
        assert_eq!(call["policy"]["max_attempts"].as_integer(), Some(1));
        assert_eq!(d["faults"].as_array().unwrap()[0]["probability"].as_float(), Some(0.5));
        // An array that is not there is not made up as a table.
        let mut bare: Table = "[experiment]\n".parse().unwrap();
        let e = apply(&mut bare, "faults.0.start", Value::String("1s".into())).unwrap_err();
        assert!(e.contains("`faults` has no entries"), "{e}");
        assert!(!bare.contains_key("faults"));
    }

    #[test]
    fn unknown_names_are_errors_that_list_what_exists() {
        let mut d = doc();
        let e = apply(&mut d, "services.orders.workers", Value::Integer(1)).unwrap_err();
        assert!(e.contains("no entry named \"orders\"") && e.contains("api"), "{e}");
        let e = apply(&mut d, "experiment.name.x", Value::Integer(1)).unwrap_err();
        assert!(e.contains("not a table"), "{e}");
        assert!(split_assignment("novalue").is_err());
    }
}
