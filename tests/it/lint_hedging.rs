//! `retrysim lint`'s unsafe-hedge rule: hedging a non-idempotent operation
//! without an idempotency key (or with a key no ledger checks) is an error,
//! as retrying it after an unknown outcome is.

use crate::support::lint_run;

use lint_run::{lint_cli, rules, set_args};

const DESIGN: &str = r#"
[experiment]
name = "hedged writes"
duration = "10s"

[[clients]]
name = "web"
count = 100
rate = "100/s"
target = "api"
operation = "create_order"
idempotency_key = true
policy = { max_attempts = 1, deadline = "3s", hedging = { max_attempts = 2, delay = "20ms" } }

[[operations]]
name = "create_order"
idempotent = false

[[services]]
name = "api"
workers = 8
service_time = { dist = "exp", mean = "10ms" }
commits = "order"
idempotency = { store = "durable", ttl = "24h", lease = "30s", atomic = true }
"#;

/// The exit status and the JSON report of linting `toml` with `sets`.
fn lint(toml: &str, sets: &[&str]) -> (i32, serde_json::Value) {
    let (code, _, report) = lint_cli(toml, &set_args(sets));
    (code, report)
}

#[test]
fn hedging_a_keyed_write_at_a_service_with_a_ledger_is_clean() {
    let (code, report) = lint(DESIGN, &[]);
    assert_eq!((code, rules(&report)), (0, vec![]), "{report}");
}

#[test]
fn hedging_a_write_without_a_key_is_an_error() {
    let (code, report) = lint(DESIGN, &["clients.web.idempotency_key=false"]);
    assert_eq!(code, 1);
    assert_eq!(rules(&report), ["unsafe-hedge"]);
    let f = &report["findings"][0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["field"], "clients.web.policy.hedging");
    assert!(f["message"].as_str().unwrap().contains("without an idempotency key"), "{f}");
}

#[test]
fn hedging_a_write_whose_key_no_ledger_checks_is_an_error() {
    let design =
        DESIGN.replace(r#"idempotency = { store = "durable", ttl = "24h", lease = "30s", atomic = true }"#, "");
    let (code, report) = lint(&design, &[]);
    assert_eq!((code, rules(&report)), (1, vec!["unsafe-hedge"]), "{report}");
    assert!(report["findings"][0]["message"].as_str().unwrap().contains("no idempotency ledger"));
}

#[test]
fn hedging_an_idempotent_read_is_clean() {
    let design = DESIGN.replace("idempotent = false", "idempotent = true");
    let (code, report) = lint(&design, &["clients.web.idempotency_key=false"]);
    assert_eq!((code, rules(&report)), (0, vec![]), "{report}");
}
