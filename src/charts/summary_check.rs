//! The types of what `plot` and `report` read from a `summary.json`: a
//! file that was edited, cut short or written by something else gets an
//! error naming the field, instead of charts and tables that silently
//! leave a value out.

use serde_json::Value;

/// A field path and what is wrong with it.
pub type Problem = (String, String);

/// What a JSON value is, in the format's words.
fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {}", serde_json::Value::String(s.chars().take(40).collect())),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn wrong(field: &str, expected: &str, got: &Value) -> Problem {
    (field.to_string(), format!("expected {expected}, got {}", kind(got)))
}

fn number_or_null(field: &str, v: &Value) -> Result<(), Problem> {
    if v.is_null() || v.as_f64().is_some() { Ok(()) } else { Err(wrong(field, "a number or null", v)) }
}

fn object<'a>(field: &str, v: &'a Value) -> Result<&'a serde_json::Map<String, Value>, Problem> {
    v.as_object().ok_or_else(|| wrong(field, "an object", v))
}

/// A metric: `{ "mean": number|null, "ci95": [lo, hi]|null, "values": [number|null, …] }`.
fn metric(field: &str, v: &Value) -> Result<(), Problem> {
    let m = object(field, v)?;
    if let Some(mean) = m.get("mean") {
        number_or_null(&format!("{field}.mean"), mean)?;
    }
    match m.get("ci95") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.len() == 2 && a.iter().all(|x| x.as_f64().is_some()) => {}
        Some(other) => return Err(wrong(&format!("{field}.ci95"), "null or an array of two numbers", other)),
    }
    match m.get("values") {
        None => {}
        Some(Value::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                number_or_null(&format!("{field}.values[{i}]"), x)?;
            }
        }
        Some(other) => return Err(wrong(&format!("{field}.values"), "an array of numbers", other)),
    }
    Ok(())
}

/// An object of metrics (`metrics`, a client's, a service's, an edge's).
fn metrics(field: &str, v: &Value) -> Result<(), Problem> {
    for (k, m) in object(field, v)? {
        metric(&format!("{field}.{k}"), m)?;
    }
    Ok(())
}

/// Checks the parts of a summary that `plot` and `report` read.
pub fn check(doc: &Value) -> Result<(), Problem> {
    let root = object("", doc).map_err(|(_, w)| ("(the whole file)".to_string(), w))?;
    let exp = root.get("experiment").ok_or_else(|| ("experiment".to_string(), "missing".to_string()))?;
    let e = object("experiment", exp)?;
    for k in ["duration_s", "warmup_s", "bin_s"] {
        if let Some(x) = e.get(k) {
            number_or_null(&format!("experiment.{k}"), x)?;
        }
    }
    if let Some(n) = e.get("name").filter(|n| !n.is_string()) {
        return Err(wrong("experiment.name", "a string", n));
    }
    if let Some(show) = e.get("show") {
        match show {
            Value::Array(a) if a.iter().all(Value::is_string) => {}
            other => return Err(wrong("experiment.show", "an array of metric names", other)),
        }
    }
    let variants = root.get("variants").ok_or_else(|| ("variants".to_string(), "missing".to_string()))?;
    let variants = variants.as_array().ok_or_else(|| wrong("variants", "an array", variants))?;
    for (i, v) in variants.iter().enumerate() {
        let at = format!("variants[{i}]");
        let o = object(&at, v)?;
        match o.get("name") {
            Some(Value::String(_)) => {}
            Some(other) => return Err(wrong(&format!("{at}.name"), "a string", other)),
            None => return Err((format!("{at}.name"), "missing".into())),
        }
        if let Some(r) = o.get("replications").filter(|r| r.as_u64().is_none()) {
            return Err(wrong(&format!("{at}.replications"), "a whole number", r));
        }
        metrics(&format!("{at}.metrics"), o.get("metrics").unwrap_or(&Value::Null))?;
        for group in ["clients", "services", "edges", "effects"] {
            if let Some(g) = o.get(group) {
                for (name, m) in object(&format!("{at}.{group}"), g)? {
                    metrics(&format!("{at}.{group}.{name}"), m)?;
                }
            }
        }
        for counts in ["failures", "retry_denials"] {
            if let Some(c) = o.get(counts) {
                for (k, n) in object(&format!("{at}.{counts}"), c)? {
                    if n.as_f64().is_none() {
                        return Err(wrong(&format!("{at}.{counts}.{k}"), "a count", n));
                    }
                }
            }
        }
        if let Some(cdf) = o.get("latency_cdf") {
            let points = cdf.as_array().ok_or_else(|| wrong(&format!("{at}.latency_cdf"), "an array", cdf))?;
            for (j, p) in points.iter().enumerate() {
                let f = format!("{at}.latency_cdf[{j}]");
                let p = object(&f, p)?;
                for k in ["q", "latency_s"] {
                    let x = p.get(k).unwrap_or(&Value::Null);
                    if x.as_f64().is_none() {
                        return Err(wrong(&format!("{f}.{k}"), "a number", x));
                    }
                }
            }
        }
        match o.get("vs_baseline") {
            None | Some(Value::Null) => {}
            Some(Value::Object(b)) => {
                for (k, m) in b {
                    if m.is_object() {
                        metric(&format!("{at}.vs_baseline.{k}"), m)?;
                    }
                }
            }
            Some(other) => return Err(wrong(&format!("{at}.vs_baseline"), "null or an object", other)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(metric: Value) -> Value {
        json!({ "experiment": { "name": "x", "duration_s": 1.0 },
                "variants": [{ "name": "a", "replications": 2, "metrics": { "success_rate": metric } }] })
    }

    #[test]
    fn wrong_types_are_named_with_their_field() {
        assert!(check(&doc(json!({ "mean": 0.5, "ci95": [0.4, 0.6], "values": [0.5, null] }))).is_ok());
        assert!(check(&doc(json!({ "mean": null, "ci95": null }))).is_ok());
        let (f, w) = check(&doc(json!({ "mean": "0.5" }))).unwrap_err();
        assert_eq!(f, "variants[0].metrics.success_rate.mean");
        assert!(w.contains("expected a number or null, got the string \"0.5\""), "{w}");
        let (f, _) = check(&doc(json!({ "mean": 0.5, "ci95": [0.4] }))).unwrap_err();
        assert_eq!(f, "variants[0].metrics.success_rate.ci95");
        let (f, _) = check(&json!({ "experiment": {}, "variants": [{ "name": 3 }] })).unwrap_err();
        assert_eq!(f, "variants[0].name");
        let (f, w) = check(&json!({ "variants": [] })).unwrap_err();
        assert_eq!((f.as_str(), w.as_str()), ("experiment", "missing"));
    }
}
