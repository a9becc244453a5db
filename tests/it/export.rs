//! `retrysim export`: policy TOML -> gRPC JSON / Envoy YAML / AWS config ->
//! parsed back. Every mapped field is checked against the policy, and every
//! reported loss against the list of fields that the target cannot carry,
//! for the shipped presets and for policies that use what no target has.

use crate::support::exported;

use exported::{inline, lost, preset, why, yaml_docs};
use retrysim::engine::NEVER;
use retrysim::output::export::{Exported, Target, export, proto_duration};
use retrysim::policy::Policy;
use std::collections::BTreeMap;
use std::process::Command;

fn secs(d: &str) -> f64 {
    d.strip_suffix('s').unwrap_or_else(|| panic!("{d} is not a proto3 duration")).parse().unwrap()
}

// ---------------------------------------------------------------- gRPC --

fn grpc(p: &Policy) -> (Exported, serde_json::Value) {
    let x = export(p, Target::Grpc);
    let v: serde_json::Value = serde_json::from_str(&x.text).unwrap_or_else(|e| panic!("not JSON: {e}\n{}", x.text));
    (x, v)
}

/// The checks that hold for every policy with retries.
fn check_grpc_common(p: &Policy, v: &serde_json::Value) {
    let mc = &v["methodConfig"].as_array().unwrap()[0];
    assert_eq!(mc["name"], serde_json::json!([{}]), "all methods");
    if p.deadline == NEVER {
        assert!(mc.get("timeout").is_none());
    } else {
        assert_eq!(secs(mc["timeout"].as_str().unwrap()), p.deadline as f64 / 1e9);
    }
    let rp = &mc["retryPolicy"];
    assert_eq!(rp["maxAttempts"].as_u64().unwrap(), p.max_attempts.min(5) as u64);
    assert_eq!(rp["initialBackoff"].as_str().unwrap(), proto_duration(p.backoff.base));
    let initial = secs(rp["initialBackoff"].as_str().unwrap());
    let max = secs(rp["maxBackoff"].as_str().unwrap());
    assert!(initial > 0.0 && max >= initial, "A6: both > 0, max >= initial");
    assert!(rp["backoffMultiplier"].as_f64().unwrap() > 0.0);
    assert!(!rp["retryableStatusCodes"].as_array().unwrap().is_empty());
}

fn codes(v: &serde_json::Value) -> Vec<&str> {
    v["methodConfig"][0]["retryPolicy"]["retryableStatusCodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect()
}

#[test]
fn grpc_default_round_trips_to_its_a6_source() {
    let p = preset("grpc-default");
    let (x, v) = grpc(&p);
    check_grpc_common(&p, &v);
    let rp = &v["methodConfig"][0]["retryPolicy"];
    // The A6 example the preset comes from.
    assert_eq!(rp["maxAttempts"], 4);
    assert_eq!(rp["initialBackoff"], "0.100s");
    assert_eq!(rp["maxBackoff"], "1s");
    assert_eq!(rp["backoffMultiplier"], 2.0);
    assert_eq!(codes(&v), ["UNAVAILABLE"]);
    assert_eq!(v["retryThrottling"]["maxTokens"].as_u64(), Some(10), "an unsigned integer, as grpcio requires");
    assert_eq!(v["retryThrottling"]["tokenRatio"], 0.1);
    assert_eq!(v["methodConfig"][0]["timeout"], "5s");
    // ±20% jitter is gRPC's own; only the breadth of UNAVAILABLE is lost.
    assert_eq!(lost(&x), ["retry_on"]);
    assert!(why(&x, "retry_on")[0].contains("UNAVAILABLE also stands for reset, 502"));
    assert!(x.notes.iter().any(|n| n.contains("every method")));
}

#[test]
fn aws_standard_to_grpc() {
    let p = preset("aws-standard");
    let (x, v) = grpc(&p);
    check_grpc_common(&p, &v);
    let rp = &v["methodConfig"][0]["retryPolicy"];
    assert_eq!((rp["maxAttempts"].as_u64(), rp["maxBackoff"].as_str()), (Some(3), Some("20s")));
    assert_eq!(codes(&v), ["UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "INTERNAL"]);
    assert!(v.get("retryThrottling").is_none(), "a quota is no token bucket");
    assert_eq!(lost(&x), ["backoff.jitter", "retry_on", "per_try_timeout", "respect_retry_after", "budget.kind"]);
    assert!(why(&x, "retry_on")[0].starts_with("timeout: gRPC never retries"));
    assert!(why(&x, "budget.kind")[0].starts_with("quota"));
}

#[test]
fn envoy_default_to_grpc() {
    let p = preset("envoy-default");
    let (x, v) = grpc(&p);
    check_grpc_common(&p, &v);
    assert_eq!(v["methodConfig"][0]["retryPolicy"]["maxBackoff"], "0.250s");
    assert_eq!(codes(&v), ["UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"]);
    // per_try_timeout = deadline: nothing lost there.
    assert_eq!(lost(&x), ["backoff.jitter", "respect_retry_after", "budget.kind"]);
}

#[test]
fn exponential_full_jitter_to_grpc() {
    let p = preset("exponential-full-jitter");
    let (x, v) = grpc(&p);
    check_grpc_common(&p, &v);
    assert_eq!(v["methodConfig"][0]["retryPolicy"]["maxAttempts"], 5, "clamped to gRPC's 5");
    assert_eq!(codes(&v), ["UNAVAILABLE", "DEADLINE_EXCEEDED"]);
    assert_eq!(lost(&x), ["max_attempts", "backoff.jitter", "retry_on", "retry_on", "retry_on", "per_try_timeout"]);
    let r = why(&x, "retry_on");
    assert!(r[0].contains("UNAVAILABLE also stands for reset, 502"));
    assert!(r[1].contains("DEADLINE_EXCEEDED also stands for 504"));
    assert!(r[2].starts_with("timeout"));
    assert!(why(&x, "max_attempts")[0].contains("exported 5 instead of 6"));
}

#[test]
fn grpc_names_everything_it_cannot_carry() {
    let p = inline(
        r#"
        max_attempts = 3
        per_try_timeout = "500ms"
        min_attempt_time = "50ms"
        retry_on = ["500", "418", "507"]
        respect_retry_after = false
        [backoff]
        kind = "decorrelated"
        base = "10ms"
        cap = "1s"
        [budget]
        kind = "ratio"
        [circuit_breaker]
        failure_ratio = 0.5
        window = "10s"
        min_requests = 20
        open_for = "5s"
        half_open_probes = 3
        "#,
    );
    let (x, v) = grpc(&p);
    let rp = &v["methodConfig"][0]["retryPolicy"];
    assert!(v["methodConfig"][0].get("timeout").is_none(), "no deadline, no timeout");
    assert_eq!((rp["initialBackoff"].as_str(), rp["maxBackoff"].as_str()), (Some("0.010s"), Some("1s")));
    assert_eq!(rp["backoffMultiplier"], 3.0);
    assert_eq!(codes(&v), ["INTERNAL", "UNKNOWN"]);
    assert_eq!(
        lost(&x),
        [
            "backoff.kind",
            "retry_on",
            "retry_on",
            "retry_unknown_without_key",
            "per_try_timeout",
            "min_attempt_time",
            "respect_retry_after",
            "budget.kind",
            "circuit_breaker"
        ]
    );
    assert!(why(&x, "retry_on")[0].starts_with("507 mapped to UNKNOWN"));
    assert!(why(&x, "retry_on")[1].starts_with("418 have no gRPC status code"));
}

#[test]
fn grpc_without_retries_has_no_retry_policy() {
    let p = preset("no-retries");
    let (_, v) = grpc(&p);
    assert!(v["methodConfig"][0].get("retryPolicy").is_none());
    assert!(v.get("retryThrottling").is_none());
    let (x, docs) = envoy(&p);
    check_envoy_common(&p, &docs, &x.text);
    assert_eq!(docs[0]["retry_policy"]["num_retries"], 0);
    assert_eq!(lost(&x), ["deadline"], "nothing about retries is lost when there are none");
}

#[test]
fn grpc_immediate_and_constant_backoff() {
    let p = inline("max_attempts = 2\ndeadline = \"1s\"\n");
    let (x, v) = grpc(&p);
    let rp = &v["methodConfig"][0]["retryPolicy"];
    // 5 ms, not 1 ms: grpcio stalls retries scheduled 1 ms ahead.
    assert_eq!((rp["initialBackoff"].as_str(), rp["maxBackoff"].as_str()), (Some("0.005s"), Some("0.005s")));
    assert!(why(&x, "backoff.kind")[0].starts_with("none"));
    assert!(why(&x, "backoff.kind")[0].contains("grpcio"));
    let p = inline(
        "max_attempts = 2
deadline = \"1s\"\n[backoff]\nkind = \"exponential\"\nbase = \"1ms\"\ncap = \"1s\"\n",
    );
    let (x, v) = grpc(&p);
    assert_eq!(v["methodConfig"][0]["retryPolicy"]["initialBackoff"], "0.005s");
    assert!(why(&x, "backoff.base")[0].contains("grpcio"), "{:?}", x.losses);
    let p = inline(
        "max_attempts = 2\ndeadline = \"1s\"\n[backoff]\nkind = \"constant\"\nbase = \"200ms\"\njitter = \"proportional\"\n",
    );
    let (x, v) = grpc(&p);
    let rp = &v["methodConfig"][0]["retryPolicy"];
    assert_eq!((rp["initialBackoff"].as_str(), rp["maxBackoff"].as_str()), (Some("0.200s"), Some("0.200s")));
    assert_eq!(rp["backoffMultiplier"], 1.0);
    // Proportional 0.2 is gRPC's own jitter; the default retry_on's UNAVAILABLE is broader.
    assert_eq!(lost(&x), ["backoff.kind", "retry_on"]);
}

// --------------------------------------------------------------- Envoy --

/// The fragment's YAML documents: the route's retry_policy, then the cluster's circuit_breakers, if any.
fn envoy(p: &Policy) -> (Exported, Vec<serde_yaml_ng::Value>) {
    let x = export(p, Target::Envoy);
    let docs = yaml_docs(&x);
    (x, docs)
}

fn y_str<'a>(v: &'a serde_yaml_ng::Value, path: &[&str]) -> &'a str {
    let mut n = v;
    for k in path {
        n = &n[*k];
    }
    n.as_str().unwrap_or_else(|| panic!("{path:?} is not a string: {n:?}"))
}

fn check_envoy_common(p: &Policy, docs: &[serde_yaml_ng::Value], text: &str) {
    let rp = &docs[0]["retry_policy"];
    assert_eq!(rp["num_retries"].as_u64().unwrap(), p.max_attempts as u64 - 1);
    if p.per_try_timeout == NEVER {
        assert!(rp.get("per_try_timeout").is_none());
    } else {
        assert_eq!(secs(y_str(rp, &["per_try_timeout"])), p.per_try_timeout as f64 / 1e9);
    }
    let on: Vec<&str> = y_str(rp, &["retry_on"]).split(',').collect();
    assert_eq!(on.contains(&"connect-failure"), p.retry_on.connect_error);
    assert_eq!(on.contains(&"retriable-status-codes"), !p.retry_on.statuses.is_empty());
    let listed: Vec<u16> = rp["retriable_status_codes"]
        .as_sequence()
        .map(|s| s.iter().map(|c| c.as_u64().unwrap() as u16).collect())
        .unwrap_or_default();
    assert_eq!(listed, p.retry_on.statuses);
    // Envoy's smallest base_interval is 1 ms.
    let base = p.backoff.base.max(1_000_000) as f64 / 1e9;
    assert_eq!(secs(y_str(rp, &["retry_back_off", "base_interval"])), base);
    assert!(secs(y_str(rp, &["retry_back_off", "max_interval"])) >= p.backoff.base as f64 / 1e9);
    let rl = &rp["rate_limited_retry_back_off"];
    assert_eq!(!rl.is_null(), p.respect_retry_after && p.max_attempts > 1);
    if p.respect_retry_after && p.max_attempts > 1 {
        assert_eq!(y_str(&rl["reset_headers"][0], &["name"]), "Retry-After");
    }
    let per_try = p.per_try_timeout != NEVER && p.per_try_timeout < p.deadline;
    assert_eq!(on.contains(&"reset"), p.retry_on.reset || (p.retry_on.timeout && per_try));
    if p.deadline != NEVER {
        assert_eq!(y_str(&docs[0], &["timeout"]), proto_duration(p.deadline), "the route timeout beside retry_policy");
        assert!(text.contains(&format!("timeout: \"{}\"", proto_duration(p.deadline))));
    } else {
        assert!(docs[0].get("timeout").is_none());
    }
}

#[test]
fn envoy_default_round_trips_to_its_source() {
    let p = preset("envoy-default");
    let (x, docs) = envoy(&p);
    check_envoy_common(&p, &docs, &x.text);
    assert_eq!(docs.len(), 2, "retry_policy and circuit_breakers");
    let rp = &docs[0]["retry_policy"];
    assert_eq!(y_str(rp, &["retry_on"]), "connect-failure,reset,retriable-status-codes");
    assert_eq!(rp["num_retries"], 1);
    assert_eq!(y_str(rp, &["per_try_timeout"]), "15s");
    assert_eq!(y_str(rp, &["retry_back_off", "base_interval"]), "0.025s");
    assert_eq!(y_str(rp, &["retry_back_off", "max_interval"]), "0.250s");
    assert!(rp.get("rate_limited_retry_back_off").is_none());
    let t = &docs[1]["circuit_breakers"]["thresholds"][0];
    assert_eq!(y_str(t, &["priority"]), "DEFAULT");
    assert_eq!(t["retry_budget"]["budget_percent"]["value"].as_f64(), Some(0.0));
    assert_eq!(t["retry_budget"]["min_retry_concurrency"].as_u64(), Some(3));
    assert_eq!(y_str(&docs[0], &["timeout"]), "15s");
    assert!(lost(&x).is_empty(), "{:?}", x.losses);
}

#[test]
fn aws_standard_to_envoy() {
    let p = preset("aws-standard");
    let (x, docs) = envoy(&p);
    check_envoy_common(&p, &docs, &x.text);
    assert_eq!(docs.len(), 1);
    let rp = &docs[0]["retry_policy"];
    assert_eq!(y_str(rp, &["retry_on"]), "connect-failure,reset,retriable-status-codes");
    assert_eq!(rp["num_retries"], 2);
    assert_eq!(y_str(rp, &["per_try_timeout"]), "1s");
    assert_eq!(y_str(rp, &["retry_back_off", "max_interval"]), "20s");
    assert_eq!(lost(&x), ["backoff.multiplier", "budget.kind"]);
    let mut q = p.clone();
    q.retry_on.statuses.clear();
    q.respect_retry_after = false;
    let (_, docs) = envoy(&q);
    check_envoy_like(&q, &docs);
}

/// check_envoy_common without the Retry-After part.
fn check_envoy_like(p: &Policy, docs: &[serde_yaml_ng::Value]) {
    let rp = &docs[0]["retry_policy"];
    assert_eq!(rp["num_retries"].as_u64().unwrap(), p.max_attempts as u64 - 1);
    assert!(rp.get("retriable_status_codes").is_none());
    assert_eq!(y_str(rp, &["retry_on"]), "connect-failure,reset");
}

#[test]
fn grpc_default_to_envoy() {
    let p = preset("grpc-default");
    let (x, docs) = envoy(&p);
    check_envoy_common(&p, &docs, &x.text);
    let rp = &docs[0]["retry_policy"];
    assert_eq!(y_str(rp, &["retry_on"]), "connect-failure,retriable-status-codes");
    assert_eq!(rp["retriable_status_codes"][0], 503);
    assert!(rp.get("per_try_timeout").is_none());
    let rl = &rp["rate_limited_retry_back_off"];
    assert_eq!(y_str(&rl["reset_headers"][0], &["name"]), "Retry-After");
    assert_eq!(y_str(&rl["reset_headers"][0], &["format"]), "SECONDS");
    assert_eq!(y_str(rl, &["max_interval"]), "5s", "max_retry_after unset = the deadline");
    assert_eq!(lost(&x), ["backoff.multiplier", "backoff.jitter", "respect_retry_after", "budget.kind"]);
}

#[test]
fn exponential_full_jitter_to_envoy() {
    let p = preset("exponential-full-jitter");
    let (x, docs) = envoy(&p);
    check_envoy_common(&p, &docs, &x.text);
    let rp = &docs[0]["retry_policy"];
    assert_eq!(y_str(rp, &["retry_on"]), "connect-failure,reset,retriable-status-codes");
    assert_eq!(rp["num_retries"], 5);
    assert_eq!(y_str(rp, &["retry_back_off", "max_interval"]), "5s");
    assert_eq!(y_str(&rp["rate_limited_retry_back_off"], &["max_interval"]), "10s");
    assert_eq!(
        lost(&x),
        ["retry_on", "backoff.multiplier", "respect_retry_after", "retry_unknown_without_key", "budget"]
    );
    assert!(why(&x, "retry_on")[0].contains("retries connection resets too"));
}

#[test]
fn envoy_names_everything_it_cannot_carry() {
    let p = inline(
        r#"
        max_attempts = 3
        per_try_timeout = "500ms"
        min_attempt_time = "50ms"
        retry_on = ["reset", "429"]
        max_retry_after = "never"
        [backoff]
        kind = "exponential"
        base = "10ms"
        multiplier = 3.0
        jitter = "equal"
        [budget]
        kind = "concurrency"
        scope = "shared"
        budget_percent = 20
        [circuit_breaker]
        failure_ratio = 0.5
        window = "10s"
        min_requests = 20
        open_for = "5s"
        half_open_probes = 3
        "#,
    );
    let (x, docs) = envoy(&p);
    let rp = &docs[0]["retry_policy"];
    assert_eq!(y_str(rp, &["retry_on"]), "reset,retriable-status-codes");
    // Uncapped: max_interval is the largest limit the policy reaches, 10ms * 3^1.
    assert_eq!(y_str(rp, &["retry_back_off", "max_interval"]), "0.030s");
    assert!(rp["rate_limited_retry_back_off"].get("max_interval").is_none());
    assert_eq!(docs[1]["circuit_breakers"]["thresholds"][0]["retry_budget"]["budget_percent"]["value"], 20.0);
    assert_eq!(
        lost(&x),
        [
            "retry_on",
            "deadline",
            "backoff.multiplier",
            "backoff.jitter",
            "max_retry_after",
            "respect_retry_after",
            "min_attempt_time",
            "retry_unknown_without_key",
            "budget.scope",
            "circuit_breaker"
        ]
    );
    assert!(why(&x, "deadline")[0].contains("defaults to 15s"));
}

// ----------------------------------------------------------------- AWS --

/// Parses the INI text: section -> key -> value.
fn ini(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut section = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = Some(s.to_string());
            out.entry(s.to_string()).or_default();
        } else {
            let (k, v) = line.split_once('=').unwrap_or_else(|| panic!("not key = value: {line}"));
            out.get_mut(section.as_ref().expect("a key before any section"))
                .unwrap()
                .insert(k.trim().into(), v.trim().into());
        }
    }
    out
}

fn aws(p: &Policy) -> (Exported, BTreeMap<String, String>) {
    let x = export(p, Target::Aws);
    let mut sections = ini(&x.text);
    assert_eq!(sections.len(), 1, "{}", x.text);
    (x, sections.remove("default").expect("[default]"))
}

#[test]
fn aws_standard_round_trips_to_its_source() {
    let p = preset("aws-standard");
    let (x, keys) = aws(&p);
    assert_eq!(keys["retry_mode"], "standard");
    assert_eq!(keys["max_attempts"], "3");
    assert_eq!(keys.len(), 2);
    // The SDKs' own backoff, retryable errors and quota: only the timeouts are lost.
    assert_eq!(lost(&x), ["per_try_timeout", "deadline"]);
}

#[test]
fn aws_standard_2026_is_botocore_1_44() {
    let p = preset("aws-standard-2026");
    let (x, keys) = aws(&p);
    assert_eq!(keys["retry_mode"], "standard");
    // From botocore 1.44.0 the 2026 behaviour is always on: no opt-in, and
    // the export names the versions that behave so.
    assert!(!x.text.contains("AWS_NEW_RETRIES_2026"));
    assert!(x.text.contains("botocore >= 1.44.0 (checked with botocore 1.44.8"), "{}", x.text);
    assert!(x.notes.iter().any(|n| n.contains("botocore >= 1.44.0")));
    // throttling_base 1s and retry_after_clamp 5s are what those SDKs do.
    assert_eq!(lost(&x), ["per_try_timeout", "deadline"]);
    let mut q = p.clone();
    q.retry_after_clamp = None;
    q.backoff.throttling_base = None;
    let x = export(&q, Target::Aws);
    assert!(lost(&x).contains(&"respect_retry_after") && lost(&x).contains(&"backoff"), "{:?}", x.losses);
    let (x, _) = aws(&preset("aws-standard"));
    assert!(x.text.contains("botocore < 1.44"), "{}", x.text);
}

#[test]
fn other_presets_to_aws() {
    for (name, expected) in [
        ("grpc-default", vec!["retry_on", "backoff", "respect_retry_after", "deadline", "budget.kind"]),
        ("envoy-default", vec!["retry_on", "backoff", "per_try_timeout", "deadline", "budget.kind"]),
        (
            "exponential-full-jitter",
            vec![
                "retry_on",
                "retry_unknown_without_key",
                "backoff",
                "respect_retry_after",
                "per_try_timeout",
                "deadline",
                "budget",
            ],
        ),
    ] {
        let p = preset(name);
        let (x, keys) = aws(&p);
        assert_eq!(keys["retry_mode"], "standard", "{name}");
        assert_eq!(keys["max_attempts"], p.max_attempts.to_string(), "{name}");
        assert_eq!(lost(&x), expected, "{name}");
    }
    let x = export(&preset("grpc-default"), Target::Aws);
    assert!(why(&x, "retry_on")[0].contains("they also retry timeout, reset, 429, 500, 502, 504"));
}

#[test]
fn aws_quota_other_than_the_sdk_constants_is_lost() {
    let mut p = preset("aws-standard");
    let (_, keys) = aws(&p);
    assert_eq!(keys["max_attempts"], "3");
    if let Some(b) = p.budget.as_mut()
        && let retrysim::policy::budget::BudgetKind::Quota { initial, .. } = &mut b.kind
    {
        *initial = 100.0;
    }
    let (x, _) = aws(&p);
    assert_eq!(lost(&x), ["per_try_timeout", "deadline", "budget"]);
}

// ----------------------------------------------------------------- CLI --

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).arg("export").args(args).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn the_command_prints_the_translation_on_stdout_and_the_losses_on_stderr() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/aws-standard.toml");
    let (code, stdout, stderr) = cli(&[path, "--to", "grpc"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is only the JSON");
    assert_eq!(v["methodConfig"][0]["retryPolicy"]["maxAttempts"], 3);
    assert!(stderr.contains("5 fields not carried over"), "{stderr}");
    assert!(stderr.contains("  per_try_timeout: 1s: gRPC has no per-attempt timeout"), "{stderr}");

    let (code, stdout, stderr) = cli(&[path, "--to", "aws", "--strict", "-q"]);
    assert_eq!(code, 1, "--strict fails when something was lost");
    assert!(stderr.is_empty(), "-q: {stderr}");
    assert!(stdout.contains("retry_mode = standard"));

    let (code, _, stderr) = cli(&["/nonexistent/policy.toml", "--to", "envoy"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/nonexistent/policy.toml"));
    let (code, _, _) = cli(&[path, "--to", "kong"]);
    assert_eq!(code, 2);
    for t in ["gateway-api", "istio", "linkerd", "resilience4j"] {
        let (code, stdout, stderr) = cli(&[path, "--to", t]);
        assert_eq!(code, 0, "{t}: {stderr}");
        assert!(stdout.contains("exported by retrysim"), "{t}: {stdout}");
        assert!(stderr.contains("not carried over"), "{t}: {stderr}");
    }
}

/// A fractional max_tokens cannot be a gRPC maxTokens (an unsigned
/// integer): the export rounds it and `--strict` fails on the rounding.
#[test]
fn a_fractional_max_tokens_is_rounded_and_reported() {
    let p = inline(
        "max_attempts = 3\ndeadline = \"2s\"\nretry_on = [\"connect_error\", \"reset\", \"502\", \"503\"]\n[backoff]\nkind = \"exponential\"\nbase = \"20ms\"\ncap = \"200ms\"\njitter = \"proportional\"\n[budget]\nkind = \"token_bucket\"\nmax_tokens = 7.5\ntoken_ratio = 0.25\n",
    );
    let (x, v) = grpc(&p);
    assert_eq!(v["retryThrottling"]["maxTokens"].as_u64(), Some(8));
    assert_eq!(lost(&x), ["retry_unknown_without_key", "budget.max_tokens"]);
    assert!(why(&x, "budget.max_tokens")[0].contains("integer"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuned.toml");
    std::fs::write(&path, retrysim::policy::file::to_toml(&p)).unwrap();
    let (code, _, stderr) = cli(&[path.to_str().unwrap(), "--to", "grpc", "--strict"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("budget.max_tokens: 7.5"), "{stderr}");
}
