//! serde's messages in the words of the file format: "expected an
//! integer, got the string \"x\"" instead of "invalid type: string \"x\",
//! expected i64"; tables, arrays and keys instead of structs, sequences,
//! maps and fields.

/// What a table of the format looks like, for the message that expected one.
fn table_example(type_name: &str) -> &'static str {
    match type_name {
        "DistRaw" => "a table such as { dist = \"exp\", mean = \"10ms\" }",
        "QueueRaw" => "a table such as { limit = 64, discipline = \"fifo\" }",
        "LedgerRaw" => "a table such as { store = \"durable\", ttl = \"24h\" } ({} for the defaults)",
        "OverloadRaw" => "a table such as { status = 503, retry_after = \"1s\" }",
        "RateLimitRaw" => "a table such as { rate = \"2000/s\", burst = 100 }",
        "BackoffRaw" => "a table such as { kind = \"exponential\", base = \"100ms\", cap = \"20s\" }",
        "BudgetRaw" => "a table such as { kind = \"token_bucket\" }",
        "BreakerRaw" => {
            "a table such as { failure_ratio = 0.5, window = \"10s\", min_requests = 20, open_for = \"5s\", half_open_probes = 3 }"
        }
        "PolicyRaw" => "a policy: a table such as { max_attempts = 3, deadline = \"3s\" } or the path of a policy file",
        "NetworkRaw" => "a table such as { latency = { dist = \"const\", value = \"1ms\" } }",
        "ExperimentTableRaw" => "the table [experiment]",
        "ExperimentRaw" => "an experiment: TOML tables [experiment], [[clients]], [[services]], …",
        "ClientRaw" => "a [[clients]] table",
        "ServiceRaw" => "a [[services]] table",
        "OperationRaw" => "an [[operations]] table",
        "CallRaw" => "a [[services.calls]] table",
        "FaultRaw" => "a [[faults]] table",
        "VariantRaw" => "a [[variants]] table with name and set",
        _ => "a table",
    }
}

/// The format's words for what serde expected.
fn expected(what: &str) -> String {
    let what = what.trim();
    if let Some(name) = what.strip_prefix("struct ") {
        return table_example(name.trim()).to_string();
    }
    match what {
        "i64" | "i32" | "i16" | "i8" => "an integer".into(),
        "u64" | "u32" | "u16" | "u8" | "usize" => "a whole number (0 or more)".into(),
        "f64" | "f32" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" | "a borrowed string" => "a string in quotes".into(),
        "a sequence" => "an array [ … ]".into(),
        "a map" => "a table { … }".into(),
        other => other.replace("a sequence", "an array").replace("a map", "a table"),
    }
}

/// The format's words for what was found: `string "x"`, `integer `5``,
/// `floating point `1.5``, `boolean `true``, `map`, `sequence`.
fn found(what: &str) -> String {
    let what = what.trim();
    let ticked = |prefix: &str| what.strip_prefix(prefix).map(|v| v.trim().trim_matches('`').to_string());
    if let Some(v) = ticked("integer") {
        return format!("the integer {v}");
    }
    if let Some(v) = ticked("floating point") {
        return format!("the number {v}");
    }
    if let Some(v) = ticked("boolean") {
        return v;
    }
    if let Some(v) = what.strip_prefix("string") {
        return format!("the string {}", v.trim());
    }
    match what {
        "map" => "a table".into(),
        "sequence" => "an array".into(),
        other => other.into(),
    }
}

/// The list of names in serde's "expected one of `a`, `b`" (or "expected `a`").
fn names(list: &str) -> String {
    list.trim()
        .trim_start_matches("one of")
        .split(',')
        .map(|n| n.trim().trim_matches('`'))
        .filter(|n| !n.is_empty())
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rewrites one serde message in the format's words; other messages (the
/// project's own) are returned as they are.
pub fn plain(msg: &str) -> String {
    let msg = msg.trim();
    for kind in ["invalid type:", "invalid value:"] {
        if let Some(rest) = msg.strip_prefix(kind)
            && let Some((got, want)) = rest.rsplit_once(", expected ")
        {
            return format!("expected {}, got {}", expected(want), found(got));
        }
    }
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        let (field, allowed) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let field = field.trim().trim_matches('`');
        return if allowed.contains("there are no fields") || allowed.is_empty() {
            format!("unknown key `{field}`: this table takes no keys")
        } else {
            format!("unknown key `{field}`; allowed keys: {}", names(allowed))
        };
    }
    if let Some(rest) = msg.strip_prefix("unknown variant ") {
        let (value, allowed) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return format!("\"{}\" is not allowed; allowed: {}", value.trim().trim_matches('`'), names(allowed));
    }
    if let Some(rest) = msg.strip_prefix("missing field ") {
        return format!("missing required key {}", rest.trim());
    }
    if let Some(rest) = msg.strip_prefix("invalid length ") {
        // "0, expected struct BreakerRaw with 5 elements": an array where a table belongs.
        let (n, want) = rest.split_once(", expected ").unwrap_or((rest, ""));
        let want = want.split(" with ").next().unwrap_or(want);
        return format!("expected {}, got an array of {} elements", expected(want), n.trim());
    }
    msg.to_string()
}

/// A TOML parse error in the format's words: the parser reports an integer
/// beyond 64 bits as "invalid type: integer `N` as i128, expected any
/// valid TOML value"; every other line is kept.
pub fn toml_error(e: &toml::de::Error) -> String {
    e.to_string()
        .lines()
        .map(|line| match line.strip_prefix("invalid type: integer ") {
            Some(rest) if rest.contains(" as i128") => format!(
                "the integer {} is out of range: TOML integers are from -9223372036854775808 to 9223372036854775807",
                rest.split(" as ").next().unwrap_or(rest).trim_matches('`')
            ),
            _ => plain(line),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `msg` still names a type of the program instead of the format
/// (for tests and the fuzz harness).
pub fn names_program_types(msg: &str) -> bool {
    let words: Vec<&str> = msg.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
    let rust = ["i64", "i32", "u64", "u32", "u16", "u8", "usize", "f64", "f32", "struct", "enum", "Option", "Vec"];
    words.iter().any(|w| rust.contains(w) || (w.ends_with("Raw") && w.len() > 3))
        || msg.contains("a sequence")
        || msg.contains("a map")
        || msg.contains("invalid type:")
        || msg.contains("invalid length")
        || msg.contains("unknown field")
        || msg.contains("missing field")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integer_beyond_64_bits_is_named_in_the_format() {
        let e = "seed = 99999999999999999999".parse::<toml::Table>().unwrap_err();
        assert!(names_program_types(&e.to_string()), "{e}");
        let ours = toml_error(&e);
        assert!(ours.contains("the integer 99999999999999999999 is out of range"), "{ours}");
        assert!(ours.contains("line 1"), "{ours}");
        assert!(!names_program_types(&ours), "{ours}");
    }

    #[test]
    fn serde_messages_speak_the_format() {
        let cases = [
            ("invalid type: string \"x\", expected i64", "expected an integer, got the string \"x\""),
            ("invalid type: floating point `1.5`, expected i64", "expected an integer, got the number 1.5"),
            ("invalid type: sequence, expected f64", "expected a number, got an array"),
            (
                "invalid type: integer `5`, expected struct DistRaw",
                "expected a table such as { dist = \"exp\", mean = \"10ms\" }, got the integer 5",
            ),
            ("invalid type: map, expected a string", "expected a string in quotes, got a table"),
            ("invalid type: integer `5`, expected a sequence", "expected an array [ … ], got the integer 5"),
            ("invalid type: integer `1`, expected a boolean", "expected true or false, got the integer 1"),
            (
                "unknown field `foo`, expected one of `name`, `count`",
                "unknown key `foo`; allowed keys: `name`, `count`",
            ),
            ("missing field `name`", "missing required key `name`"),
            (
                "invalid length 0, expected struct BudgetRaw with 5 elements",
                "expected a table such as { kind = \"token_bucket\" }, got an array of 0 elements",
            ),
            ("must be a non-negative integer", "must be a non-negative integer"),
        ];
        for (serde, ours) in cases {
            assert_eq!(plain(serde), ours);
            assert!(names_program_types(serde) || serde == ours, "{serde}");
            assert!(!names_program_types(ours), "{ours}");
        }
    }
}
