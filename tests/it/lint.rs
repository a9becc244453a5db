//! `retrysim lint`: one experiment per rule that triggers exactly that rule
//! (a clean design with one field changed), the clean design itself (no
//! findings, exit 0), a three-layer design whose worst case is 64, file
//! attribution for policies given by path, every variant linted and named,
//! the output formats, totals that count the lines printed, and `run -q`
//! printing every finding all the same.

use crate::support::lint_run;

use lint_run::{lint_cli, rules, set_args};
use retrysim::analysis::lint::{RULES, Severity, Sources, lint, warnings_for_run, warnings_for_variants};
use retrysim::config::load_experiment;
use std::path::Path;
use std::process::Command;

/// A design that passes every rule: one retrying layer with a deadline,
/// jitter, a budget and a bounded Retry-After; keys checked by durable,
/// atomic ledgers with leases; the downstream charge keyed by a derived key.
const CLEAN: &str = r#"
[experiment]
name = "clean"
duration = "10s"

[[clients]]
name = "web"
count = 100
rate = "100/s"
target = "api"
operation = "create_order"
idempotency_key = true
policy = { max_attempts = 3, per_try_timeout = "500ms", deadline = "3s", retry_on = ["connect_error", "timeout", "503"], max_retry_after = "1s", backoff = { kind = "exponential", base = "100ms", cap = "1s", jitter = "full" }, budget = { kind = "token_bucket" } }

[[operations]]
name = "create_order"
idempotent = false

[[services]]
name = "api"
workers = 8
service_time = { dist = "exp", mean = "10ms" }
commits = "order"
idempotency = { store = "durable", ttl = "24h", lease = "30s", atomic = true }

[[services.calls]]
to = "payments"
key = "derive"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[services]]
name = "payments"
workers = 8
service_time = { dist = "exp", mean = "20ms" }
commits = "charge"
idempotency = { store = "durable", ttl = "24h", lease = "30s" }
"#;

/// Asserts that the clean design with `sets` applied triggers exactly
/// `rule`, `count` times, with its documented severity and exit status;
/// returns the findings.
fn only(rule: &str, count: usize, sets: &[&str]) -> Vec<serde_json::Value> {
    only_in(CLEAN, rule, count, sets)
}

/// [`only`] on another experiment text.
fn only_in(toml: &str, rule: &str, count: usize, sets: &[&str]) -> Vec<serde_json::Value> {
    let (code, table, report) = lint_cli(toml, &set_args(sets));
    let found = rules(&report);
    assert_eq!(found, vec![rule; count], "{sets:?}:\n{table}");
    let severity = RULES.iter().find(|r| r.id == rule).unwrap().severity;
    assert_eq!(code, if severity == Severity::Error { 1 } else { 0 }, "{table}");
    let findings = report["findings"].as_array().unwrap().clone();
    for f in &findings {
        assert_eq!(f["severity"], severity.label());
        for key in ["file", "field", "at", "message", "fix"] {
            assert!(!f[key].as_str().unwrap().is_empty(), "{key} empty: {f}");
        }
        assert!(table.contains(&format!("{:<7}  {rule}  ", severity.label())), "{table}");
        assert!(table.contains(&format!("fix: {}", f["fix"].as_str().unwrap())), "{table}");
    }
    findings
}

#[test]
fn a_clean_design_has_no_findings() {
    let (code, table, report) = lint_cli(CLEAN, &[]);
    assert_eq!(code, 0, "{table}");
    assert!(rules(&report).is_empty(), "{table}");
    assert!(table.starts_with("no findings"), "{table}");
    assert_eq!(report["schema"], "retrysim.lint/1");
    assert_eq!(report["passed"], true);
    let paths = report["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2);
    assert_eq!(paths[1]["hops"], serde_json::json!(["web", "api", "payments"]));
    assert_eq!(paths[1]["worst_case"], 3);
}

#[test]
fn unsafe_retry_without_a_key() {
    let f = only(
        "unsafe-retry",
        1,
        &["clients.web.idempotency_key=false", "clients.web.policy.retry_unknown_without_key=true"],
    );
    assert_eq!(f[0]["field"], "clients.web.policy.retry_unknown_without_key");
    assert_eq!(f[0]["at"], "clients.web");
    assert!(f[0]["message"].as_str().unwrap().contains("create_order (not idempotent) on api after timeout"));
}

#[test]
fn unsafe_retry_with_a_key_nobody_checks() {
    let api_ledger = r#"idempotency = { store = "durable", ttl = "24h", lease = "30s", atomic = true }"#;
    assert!(CLEAN.contains(api_ledger));
    let f = only_in(&CLEAN.replace(api_ledger, ""), "unsafe-retry", 1, &[]);
    assert!(f[0]["message"].as_str().unwrap().contains("has no idempotency ledger"), "{f:?}");
    assert_eq!(f[0]["field"], "services.api.idempotency");
}

#[test]
fn layered_retries() {
    let f = only(
        "layered-retries",
        1,
        &[
            // Its retries end within the caller's 500 ms per-try timeout.
            r#"services.api.calls.payments.policy={ max_attempts = 2, per_try_timeout = "150ms", deadline = "400ms", retry_on = ["connect_error", "503"], max_retry_after = "300ms", backoff = { kind = "exponential", base = "50ms", jitter = "full" }, budget = { kind = "token_bucket" } }"#,
        ],
    );
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.contains("web -> api -> payments: 3 x 2 = 6 requests to payments"), "{m}");
    assert_eq!(f[0]["field"], "services.api.calls.payments.policy.max_attempts");
}

#[test]
fn no_jitter_with_many_clients() {
    let f = only("no-jitter", 1, &["clients.web.policy.backoff.jitter=none"]);
    assert_eq!(f[0]["field"], "clients.web.policy.backoff.jitter");
    // One instance cannot synchronise with itself.
    let (_, _, report) =
        lint_cli(CLEAN, &["--set", "clients.web.policy.backoff.jitter=none", "--set", "clients.web.count=1"]);
    assert!(rules(&report).is_empty());
}

#[test]
fn no_budget() {
    let f = only("no-budget", 1, &["clients.web.policy.budget.kind=none"]);
    assert_eq!(f[0]["field"], "clients.web.policy.budget");
}

#[test]
fn retry_after_unbounded() {
    only("retry-after-unbounded", 1, &["clients.web.policy.max_retry_after=never"]);
    only("retry-after-unbounded", 1, &["clients.web.policy.max_retry_after=5s"]);
    // Not obeyed at all: nothing to bound.
    let (_, _, report) = lint_cli(
        CLEAN,
        &["--set", "clients.web.policy.max_retry_after=5s", "--set", "clients.web.policy.respect_retry_after=false"],
    );
    assert!(rules(&report).is_empty());
}

#[test]
fn attempts_exceed_deadline() {
    let f = only("attempts-exceed-deadline", 1, &["clients.web.policy.per_try_timeout=2s"]);
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.contains("3 attempts x per_try_timeout 2s + waits up to 300ms = 6.3s exceeds the deadline 3s"), "{m}");
    assert!(m.contains("only 1 attempt that times out fits"), "{m}");
}

#[test]
fn client_errors_in_retry_on() {
    let f =
        only("client-error-retried", 1, &[r#"clients.web.policy.retry_on=["connect_error", "timeout", "503", "401"]"#]);
    assert_eq!(f[0]["field"], "clients.web.policy.retry_on");
    assert!(f[0]["fix"].as_str().unwrap().contains("remove 401"));
}

#[test]
fn ttl_shorter_than_the_retry_window() {
    let f = only("ttl-shorter-than-retry-window", 1, &["services.api.idempotency.ttl=2s"]);
    assert_eq!(f[0]["field"], "services.api.idempotency.ttl");
    assert!(f[0]["message"].as_str().unwrap().contains("can resend a key up to 3s"));
}

#[test]
fn ttl_counts_the_retries_of_the_layers_above_a_forwarded_key() {
    // payments keeps keys 2 s; its own caller never retries, but the web
    // client resends the intent (and so the derived key) for 3 s.
    let f = only("ttl-shorter-than-retry-window", 1, &["services.payments.idempotency.ttl=2s"]);
    assert!(f[0]["message"].as_str().unwrap().contains("services.api.calls.payments can resend a key up to 3s"));
}

#[test]
fn memory_ledger() {
    let f = only("memory-ledger", 1, &["services.api.idempotency.store=memory"]);
    assert_eq!(f[0]["field"], "services.api.idempotency.store");
}

#[test]
fn non_atomic_ledger() {
    let f = only("non-atomic-ledger", 1, &["services.api.idempotency.atomic=false"]);
    assert_eq!(f[0]["field"], "services.api.idempotency.atomic");
}

#[test]
fn lease_never_or_too_short() {
    only("lease-too-short", 1, &["services.payments.idempotency.lease=never"]);
    // p99.9 of exp(20ms) is 138ms.
    let f = only("lease-too-short", 1, &["services.payments.idempotency.lease=50ms"]);
    assert!(f[0]["message"].as_str().unwrap().contains("shorter than the slowest execution (138.155ms"), "{f:?}");
    // api's slowest execution includes its call to payments (up to 1 s).
    only("lease-too-short", 1, &["services.api.idempotency.lease=500ms"]);
}

#[test]
fn unprotected_downstream_effect() {
    let f = only("unprotected-downstream-effect", 1, &["services.api.calls.payments.key=none"]);
    assert_eq!(f[0]["field"], "services.api.calls.payments.key");
    assert!(f[0]["message"].as_str().unwrap().contains("commits \"charge\""));
    // An outbox with consumer dedup protects it as well.
    let (_, _, report) = lint_cli(
        CLEAN,
        &[
            "--set",
            "services.api.calls.payments.key=none",
            "--set",
            "services.api.calls.payments.when=outbox",
            "--set",
            "services.api.calls.payments.dedup=true",
        ],
    );
    assert!(rules(&report).is_empty());
}

const THREE_LAYERS: &str = r#"
[experiment]
name = "three layers"
duration = "10s"

[[clients]]
name = "sdk"
rate = "10/s"
target = "gateway"
operation = "get"
policy = { max_attempts = 4, deadline = "10s" }

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "gateway"
service_time = { dist = "const", value = "1ms" }
[[services.calls]]
to = "orders"
policy = { max_attempts = 4, per_try_timeout = "1s" }

[[services]]
name = "orders"
service_time = { dist = "const", value = "1ms" }
[[services.calls]]
to = "db"
policy = { max_attempts = 4, per_try_timeout = "200ms" }

[[services]]
name = "db"
service_time = { dist = "const", value = "1ms" }
"#;

#[test]
fn three_layers_worst_case_is_64() {
    let (code, table, report) = lint_cli(THREE_LAYERS, &[]);
    assert_eq!(code, 0, "warnings only: {table}");
    let worst: Vec<u64> =
        report["paths"].as_array().unwrap().iter().map(|p| p["worst_case"].as_u64().unwrap()).collect();
    assert_eq!(worst, [4, 16, 64]);
    assert!(table.contains("sdk -> gateway -> orders -> db  4 x 4 x 4          64"), "{table}");
    let layered: Vec<&serde_json::Value> =
        report["findings"].as_array().unwrap().iter().filter(|f| f["rule"] == "layered-retries").collect();
    assert_eq!(layered.len(), 1);
    assert!(
        layered[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("3 layers retry on sdk -> gateway -> orders -> db: 4 x 4 x 4 = 64")
    );
}

#[test]
fn findings_name_the_policy_file_a_policy_came_from() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("policies")).unwrap();
    std::fs::write(
        dir.path().join("policies/retry.toml"),
        "max_attempts = 3\ndeadline = \"3s\"\nmax_retry_after = \"1s\"\n[backoff]\nkind = \"exponential\"\nbase = \"100ms\"\njitter = \"full\"\n",
    )
    .unwrap();
    let exp = CLEAN.replace(
        r#"policy = { max_attempts = 3, per_try_timeout = "500ms", deadline = "3s", retry_on = ["connect_error", "timeout", "503"], max_retry_after = "1s", backoff = { kind = "exponential", base = "100ms", cap = "1s", jitter = "full" }, budget = { kind = "token_bucket" } }"#,
        r#"policy = "policies/retry.toml""#,
    );
    let path = dir.path().join("exp.toml");
    std::fs::write(&path, &exp).unwrap();
    let loaded = load_experiment(&path, &[]).unwrap();
    let src = retrysim::analysis::lint::sources(&loaded, &loaded.variants[0].variant, &[]);
    let report = lint(&loaded.variants[0], &src);
    let f: Vec<_> = report.findings.iter().map(|f| (f.rule, f.file.as_str(), f.field.as_str())).collect();
    let policy = dir.path().join("policies/retry.toml").display().to_string();
    assert_eq!(f, [("no-budget", policy.as_str(), "budget")]);
    // An override of one of its fields makes the experiment the place to fix it.
    let src = retrysim::analysis::lint::sources(&loaded, "clean", &["clients.web.policy.max_attempts=3".into()]);
    let report = lint(&loaded.variants[0], &src);
    assert_eq!(report.findings[0].file, path.display().to_string());
    assert_eq!(report.findings[0].field, "clients.web.policy.budget");
}

#[test]
fn run_gets_one_line_per_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exp.toml");
    std::fs::write(&path, CLEAN).unwrap();
    let clean = load_experiment(&path, &[]).unwrap();
    assert!(warnings_for_run(&clean.variants[0]).is_empty());
    let bad = load_experiment(
        &path,
        &["clients.web.policy.budget.kind=none".into(), "services.api.idempotency.store=memory".into()],
    )
    .unwrap();
    let lines = warnings_for_run(&bad.variants[0]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains('\n')));
    assert!(
        lines[0].starts_with("lint warning [no-budget] variant \"clean\": clients.web.policy.budget: "),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("lint warning [memory-ledger] variant \"clean\": services.api.idempotency.store: "),
        "{lines:?}"
    );
    let _ = Sources::default();
}

#[test]
fn run_names_the_variants_of_each_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exp.toml");
    let exp = format!(
        "{CLEAN}\n[[variants]]\nname = \"memory\"\nset = {{ \"services.api.idempotency.store\" = \"memory\" }}\n\n[[variants]]\nname = \"memory, no budget\"\nset = {{ \"services.api.idempotency.store\" = \"memory\", \"clients.web.policy.budget.kind\" = \"none\" }}\n\n[[variants]]\nname = \"clean\"\n"
    );
    std::fs::write(&path, exp).unwrap();
    let loaded = load_experiment(&path, &[]).unwrap();
    let lines = warnings_for_variants(&loaded.variants);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(
            "lint warning [memory-ledger] variants \"memory\", \"memory, no budget\": services.api.idempotency.store: "
        ),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("lint warning [no-budget] variant \"memory, no budget\": "), "{lines:?}");
    // A finding every variant has says so.
    let all = load_experiment(&path, &["clients.web.policy.budget.kind=none".into()]).unwrap();
    let lines = warnings_for_variants(&all.variants);
    assert!(lines.iter().any(|l| l.starts_with("lint warning [no-budget] every variant: ")), "{lines:?}");
    // `run` prints them so.
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["run", path.to_str().unwrap(), "--replications", "1", "--no-plots", "--out"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("lint warning [memory-ledger] variants \"memory\", \"memory, no budget\": "), "{err}");
}

#[test]
fn every_variant_is_linted_and_each_finding_names_its_variant() {
    let with_variants = format!(
        "{CLEAN}\n[[variants]]\nname = \"as written\"\n\n[[variants]]\nname = \"memory\"\nset = {{ \"services.api.idempotency.store\" = \"memory\" }}\n\n[[variants]]\nname = \"tiny payments\"\nset = {{ \"services.payments.workers\" = 1 }}\n"
    );
    let (code, table, report) = lint_cli(&with_variants, &[]);
    assert_eq!(code, 1, "the over-capacity error of the third variant fails the lint: {table}");
    assert_eq!(report["variants"], serde_json::json!(["as written", "memory", "tiny payments"]));
    let found: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["variant"].as_str().unwrap().to_string(), f["rule"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        found,
        [("memory".to_string(), "memory-ledger".to_string()), ("tiny payments".into(), "over-capacity".into())]
    );
    assert!(table.contains("[services.api]  (variant \"memory\")"), "{table}");
    assert!(table.contains("[services.payments]  (variant \"tiny payments\")"), "{table}");
    // The paths are the same in every variant: one table.
    assert_eq!(table.matches("worst case").count(), 1, "{table}");
    assert_eq!(report["paths"][0]["variants"], serde_json::json!(["as written", "memory", "tiny payments"]));
}

/// The number of milliseconds written just after `before` in `text`.
fn millis_after(text: &str, before: &str) -> f64 {
    let rest = &text[text.find(before).unwrap_or_else(|| panic!("no {before:?} in {text}")) + before.len()..];
    rest[..rest.find("ms").unwrap()].parse().unwrap()
}

#[test]
fn over_capacity_before_any_fault() {
    // payments: 2 workers x 25 ms = 80/s for 100 intents/s, each calling it once.
    let f = only(
        "over-capacity",
        1,
        &["services.payments.workers=2", r#"services.payments.service_time={ dist = "exp", mean = "25ms" }"#],
    );
    assert_eq!(f[0]["field"], "services.payments.workers");
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.contains("payments gets 100 requests/s before any fault (clients.web 100/s x 1 request per intent) but serves at most 80/s (2 workers / 25ms per request"), "{m}");
    assert!(m.contains("125% utilisation"), "{m}");
    assert!(f[0]["fix"].as_str().unwrap().contains("at least 4 (80% utilisation)"), "{f:?}");
    // A spike in the rate schedule is a disturbance, not the steady load.
    only_in(
        CLEAN,
        "near-capacity",
        0,
        &[r#"clients.web.rate=[{ at = "0s", rate = "100/s" }, { at = "5s", rate = "1000/s" }]"#],
    );
}

#[test]
fn near_capacity_counts_the_time_a_worker_waits_for_its_downstream_call() {
    // api holds a worker 10 ms + 1 ms + 20 ms + 1 ms = 32 ms: 8 workers serve
    // 250/s, and 220/s is 88%; payments (20 ms) is at 55%.
    let f = only("near-capacity", 1, &["clients.web.rate=220/s"]);
    let m = f[0]["message"].as_str().unwrap();
    assert!(m.contains("api gets 220 requests/s"), "{m}");
    assert!(m.contains("serves at most 250/s (8 workers / 32ms per request, its own service time plus its synchronous downstream calls"), "{m}");
    assert!(m.contains("88% utilisation"), "{m}");
}

#[test]
fn timeout_below_the_callees_retry_window() {
    let retrying_call = r#"services.api.calls.payments.policy={ max_attempts = 3, per_try_timeout = "300ms", deadline = "2s", retry_on = ["connect_error", "503"], max_retry_after = "500ms", backoff = { kind = "exponential", base = "50ms", jitter = "full" }, budget = { kind = "token_bucket" } }"#;
    let f = only("timeout-below-callee-retries", 1, &["clients.web.policy.max_attempts=1", retrying_call]);
    assert_eq!(f[0]["field"], "clients.web.policy.per_try_timeout");
    let m = f[0]["message"].as_str().unwrap();
    assert!(
        m.contains("clients.web gives up on an attempt to api after 500ms (per_try_timeout), but services.api.calls.payments makes up to 3 attempts for up to 2s"),
        "{m}"
    );
    // A deadline the caller propagates ends the callee's retries with the caller.
    only(
        "timeout-below-callee-retries",
        0,
        &[
            "clients.web.policy.max_attempts=1",
            "clients.web.policy.deadline=500ms",
            retrying_call,
            "services.api.calls.payments.propagate_deadline=true",
        ],
    );
}

#[test]
fn timeout_below_the_modelled_p99_of_an_attempt() {
    let f = only("timeout-below-p99", 1, &["clients.web.policy.per_try_timeout=20ms"]);
    let m = f[0]["message"].as_str().unwrap();
    // An attempt: 4 x 1 ms of network plus exp(10 ms) + exp(20 ms), whose
    // survival is 2 e^(-x/20) - e^(-x/10): the p99 is 20 ln(1 / (1 - sqrt(0.99)))
    // = 105.87 ms, so 109.87 ms in all. 20 000 draws estimate it with a
    // standard error of sqrt(0.99 x 0.01 / 20000) / f(p99) = 1.41 ms.
    let p99 = millis_after(m, "the modelled p99 latency of an attempt to api (");
    let exact = 4.0 + 20.0 * (1.0 / (1.0 - 0.99f64.sqrt())).ln();
    assert!((p99 - exact).abs() < 3.0 * 1.41, "p99 {p99} ms vs {exact} ms: {m}");
    assert!(m.contains("after 20ms (per_try_timeout)"), "{m}");
    // 200 ms is above it.
    only("timeout-below-p99", 0, &["clients.web.policy.per_try_timeout=200ms"]);
}

#[test]
fn formats_variants_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exp.toml");
    let with_variants = format!(
        "{CLEAN}\n[[variants]]\nname = \"as written\"\nset = {{}}\n\n[[variants]]\nname = \"memory\"\nset = {{ \"services.api.idempotency.store\" = \"memory\" }}\n"
    );
    std::fs::write(&path, with_variants).unwrap();
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).arg("lint").arg(&path).args(args).output().unwrap();
        (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (code, out, err) = cli(&["--variant", "memory", "--format", "markdown"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("| severity | rule | variants | file: field | at | finding | fix |"), "{out}");
    assert!(out.contains("| warning | `memory-ledger` |"), "{out}");
    assert!(out.contains("| web | web -> api -> payments | 3 x 1 | 3 |"), "{out}");
    assert!(err.contains("lint of \"memory\": 0 errors, 1 warning\n"), "{err}");
    let (code, out, _) = cli(&["--variant", "memory", "--format", "csv", "-q"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("variant,severity,rule,file,field,at,message,fix\nmemory,warning,memory-ledger,"), "{out}");
    let (code, _, err) = cli(&["--variant", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("as written, memory"), "{err}");
    let (code, _, err) = cli(&["--set", "services.api.workers=zero"]);
    assert_eq!(code, 2, "{err}");
    assert!(Path::new(&path).exists());
}

/// The rule ids `retrysim lint` finds in a shipped experiment, and the
/// findings' count per variant.
fn shipped_rules(name: &str) -> (Vec<String>, usize) {
    let exp = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments").join(name);
    let out =
        Command::new(env!("CARGO_BIN_EXE_retrysim")).arg("lint").arg(&exp).args(["--format", "json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    let mut rules: Vec<String> = findings.iter().map(|f| f["rule"].as_str().unwrap().to_string()).collect();
    rules.dedup();
    (rules, findings.len())
}

#[test]
fn run_quiet_still_prints_every_lint_finding_and_runs() {
    // lost-response-duplicates.toml has an error (unsafe-retry) and warnings.
    let (rules, _) = shipped_rules("lost-response-duplicates.toml");
    assert!(rules.iter().any(|r| r == "unsafe-retry"), "{rules:?}");
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let exp = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/lost-response-duplicates.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("run")
        .arg(&exp)
        .args(["-q", "--replications", "1", "--no-plots", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "the run goes ahead despite the error: {err}");
    for rule in &rules {
        assert!(err.contains(&format!("[{rule}]")), "-q hid the finding {rule}: {err}");
    }
    // The count first, equal to the lines that follow; no "(s)".
    let lines: Vec<&str> =
        err.lines().filter(|l| l.starts_with("lint error [") || l.starts_with("lint warning [")).collect();
    let errors = lines.iter().filter(|l| l.starts_with("lint error")).count();
    let warnings = lines.len() - errors;
    let plural = |n: usize, w: &str| if n == 1 { format!("1 {w}") } else { format!("{n} {w}s") };
    let head = format!("lint of 4 variants: {}, {}", plural(errors, "error"), plural(warnings, "warning"));
    assert_eq!(err.lines().next(), Some(head.as_str()), "{err}");
    assert!(!err.contains("(s)"), "{err}");
    for file in ["summary.json", "summary.csv", "timeseries.csv", "experiment.toml"] {
        assert!(out_dir.join(file).exists(), "{file} not written: {err}");
    }
    assert!(!String::from_utf8(out.stdout).unwrap().is_empty());
}

#[test]
fn the_lint_total_counts_the_findings_printed() {
    // brownout.toml: 4 variants sharing most findings.
    let exp = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/brownout.toml");
    let (_, per_variant) = shipped_rules("brownout.toml");
    let lint = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_retrysim")).arg("lint").arg(&exp).args(args).output().unwrap();
        (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
    };
    let plural = |n: usize, w: &str| if n == 1 { format!("1 {w}") } else { format!("{n} {w}s") };
    let printed = |out: &str, sev: &str| out.lines().filter(|l| l.starts_with(&format!("{sev} "))).count();
    let (out, err) = lint(&[]);
    let (errors, warnings) = (printed(&out, "error"), printed(&out, "warning"));
    assert!(warnings > 0 && errors + warnings < per_variant, "{out}");
    let total =
        format!("{}, {} ({per_variant} across the 4 variants", plural(errors, "error"), plural(warnings, "warning"));
    assert!(err.contains(&total), "want {total:?} in: {err}");
    assert!(!err.contains("(s)"), "{err}");
    // One variant: nothing shared, nothing to add.
    let (out, err) = lint(&["--variant", "both layers retry"]);
    let line = format!(
        "lint of \"both layers retry\": {}, {}\n",
        plural(printed(&out, "error"), "error"),
        plural(printed(&out, "warning"), "warning")
    );
    assert!(err.ends_with(&line), "want {line:?} in: {err}");
}

#[test]
fn a_client_that_never_learns_what_a_timed_out_write_did_is_warned_and_a_status_query_clears_it() {
    let f = only("unknown-outcome-unresolved", 1, &["clients.web.idempotency_key=false"]);
    assert_eq!(f[0]["field"], "clients.web.policy.on_unknown");
    let (_, table, report) =
        lint_cli(CLEAN, &set_args(&["clients.web.idempotency_key=false", "clients.web.policy.on_unknown=\"query\""]));
    assert!(rules(&report).is_empty(), "{table}");
}

/// [`CLEAN`] whose order service publishes a confirmation through a queue
/// (visibility 30 s, 5 receives, consumer dedup) to a mailer whose p99 is
/// well below 30 s.
fn with_queue() -> String {
    CLEAN.to_string()
        + r#"
[[services.calls]]
to = "mailer"
when = "outbox"
via = "emails"
dedup = true
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[services]]
name = "mailer"
workers = 64
service_time = { dist = "lognormal", mean = "200ms", p99 = "2s" }
commits = "email"

[[queues]]
name = "emails"
visibility_timeout = "30s"
max_receives = 5
"#
}

#[test]
fn a_visibility_timeout_below_the_consumers_p99_and_a_queue_without_max_receives_are_warned() {
    // The queue's call hangs off `payments` (the last service before it).
    let toml = with_queue();
    let (_, table, report) = lint_cli(&toml, &[]);
    assert!(rules(&report).is_empty(), "the queue as written is clean:\n{table}");
    let f = only_in(&toml, "visibility-below-p99", 1, &["queues.emails.visibility_timeout=\"1s\""]);
    assert_eq!(f[0]["field"], "queues.emails.visibility_timeout");
    assert!(f[0]["message"].as_str().unwrap().contains("2s"), "{}", f[0]["message"]);
    only_in(&toml.replace("max_receives = 5\n", ""), "no-max-receives", 1, &[]);
}
