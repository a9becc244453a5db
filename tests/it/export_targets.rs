//! `retrysim export --to gateway-api|istio|linkerd|resilience4j`: each
//! output parsed back, every mapped field checked against the policy and
//! the losses against what the target cannot carry. (The real-client
//! suite, tests/clients, validates the same outputs against the CRDs.)

use crate::support::exported;

use exported::{inline, lost, preset, yaml_docs};
use retrysim::config::load_policy_file;
use retrysim::output::export::{Exported, Target, export, gep_duration, k8s_name};
use serde_json::Value;
use std::path::Path;

fn docs(x: &Exported) -> Vec<Value> {
    yaml_docs(x)
}

#[test]
fn durations_and_names_for_kubernetes() {
    assert_eq!(gep_duration(1_500_000_000), "1s500ms");
    assert_eq!(gep_duration(90_000_000_000), "1m30s");
    assert_eq!(gep_duration(3_600_000_000_000), "1h");
    assert_eq!(gep_duration(1), "1ms", "rounded up to whole milliseconds");
    assert_eq!(gep_duration(0), "0s");
    assert_eq!(k8s_name("Tuned Policy_2"), "tuned-policy-2");
    assert_eq!(k8s_name("..."), "retrysim-policy");
    assert_eq!(k8s_name(&"a".repeat(80)).len(), 63);
}

#[test]
fn gateway_api_route_and_retry_budget() {
    let p = preset("finagle-budget");
    let x = export(&p, Target::GatewayApi);
    let d = docs(&x);
    assert_eq!(d.len(), 2, "HTTPRoute and XBackendTrafficPolicy");
    assert_eq!(d[0]["kind"], "HTTPRoute");
    let rule = &d[0]["spec"]["rules"][0];
    assert_eq!(
        rule["retry"]["attempts"].as_u64(),
        Some(p.max_attempts as u64 - 1),
        "GEP-1731: retries beyond the first"
    );
    assert_eq!(rule["retry"]["backoff"], "100ms");
    assert_eq!(rule["retry"]["codes"], serde_json::json!([503]));
    assert_eq!(rule["timeouts"]["request"], "10s");
    assert_eq!(rule["timeouts"]["backendRequest"], "1s");
    let rc = &d[1]["spec"]["retryConstraint"];
    assert_eq!(d[1]["kind"], "XBackendTrafficPolicy");
    assert_eq!((rc["budget"]["percent"].as_u64(), rc["budget"]["interval"].as_str()), (Some(20), Some("10s")));
    assert_eq!(rc["minRetryRate"]["count"].as_u64(), Some(10));
    assert_eq!(
        lost(&x),
        ["retry_on", "retry_unknown_without_key", "respect_retry_after", "backoff", "budget.scope"],
        "{:?}",
        x.losses
    );
    // A constant backoff on statuses only, without Retry-After: nothing lost.
    let p = inline(
        "name = \"gw\"\nmax_attempts = 3\ndeadline = \"2s\"\nretry_on = [\"503\", \"504\"]\nretry_unknown_without_key = true\nrespect_retry_after = false\n[backoff]\nkind = \"constant\"\nbase = \"50ms\"\n",
    );
    let x = export(&p, Target::GatewayApi);
    assert!(x.losses.is_empty(), "{:?}", x.losses);
    assert!(docs(&x)[0]["spec"]["rules"][0]["timeouts"].get("backendRequest").is_none());
}

#[test]
fn istio_virtual_service_and_destination_rule() {
    let p = preset("istio-default");
    let x = export(&p, Target::Istio);
    let d = docs(&x);
    assert_eq!(d.len(), 1, "no DestinationRule without a budget or breaker");
    let route = &d[0]["spec"]["http"][0];
    assert_eq!(route["retries"]["attempts"].as_u64(), Some(2));
    assert_eq!(route["retries"]["retryOn"], "connect-failure,reset,503");
    assert_eq!(route["retries"]["backoff"], "25ms");
    assert_eq!(route["timeout"], "10s");
    assert_eq!(lost(&x), ["backoff.multiplier"], "Istio's own default comes back but for Envoy's growth");
    // No retries: an explicit attempts 0, or Istio would retry twice.
    let x = export(&preset("no-retries"), Target::Istio);
    assert_eq!(docs(&x)[0]["spec"]["http"][0]["retries"]["attempts"].as_u64(), Some(0));
    // A concurrency budget and a consecutive breaker go in a DestinationRule.
    let p = inline(
        "max_attempts = 3\ndeadline = \"2s\"\n[budget]\nkind = \"concurrency\"\nbudget_percent = 20\nmin_retry_concurrency = 3\n[circuit_breaker]\nkind = \"consecutive\"\nconsecutive_failures = 5\nopen_for = \"30s\"\nhalf_open_probes = 1\n",
    );
    let x = export(&p, Target::Istio);
    let d = docs(&x);
    assert_eq!(d[1]["kind"], "DestinationRule");
    assert_eq!(d[1]["spec"]["trafficPolicy"]["connectionPool"]["http"]["maxRetries"].as_u64(), Some(3));
    assert_eq!(d[1]["spec"]["trafficPolicy"]["outlierDetection"]["consecutive5xxErrors"].as_u64(), Some(5));
    assert!(lost(&x).contains(&"budget.budget_percent") && lost(&x).contains(&"circuit_breaker"));
}

#[test]
fn linkerd_annotations_and_service_profile() {
    let p = preset("finagle-budget");
    let x = export(&p, Target::Linkerd);
    let d = docs(&x);
    let a = &d[0]["metadata"]["annotations"];
    assert_eq!(a["retry.linkerd.io/http"], "503");
    assert_eq!(a["retry.linkerd.io/limit"], "5");
    assert_eq!(a["retry.linkerd.io/timeout"], "1s");
    assert_eq!(a["timeout.linkerd.io/request"], "10s");
    let rb = &d[1]["spec"]["retryBudget"];
    assert_eq!(d[1]["kind"], "ServiceProfile");
    assert_eq!(
        (rb["retryRatio"].as_f64(), rb["minRetriesPerSecond"].as_u64(), rb["ttl"].as_str()),
        (Some(0.2), Some(10), Some("10s"))
    );
    let l = lost(&x);
    for f in ["retry_on", "backoff", "respect_retry_after"] {
        assert!(l.contains(&f), "{f} in {l:?}");
    }
    assert!(x.losses.iter().any(|l| l.why.starts_with("connect_error: Linkerd does not retry connection errors")));
    assert!(x.notes.iter().any(|n| n.contains("annotation retries have no budget")));
}

#[test]
fn resilience4j_retry_breaker_and_time_limiter() {
    let p = inline(
        "name = \"orders\"\nmax_attempts = 4\nper_try_timeout = \"500ms\"\ndeadline = \"3s\"\nretry_on = [\"connect_error\", \"timeout\", \"503\"]\n[backoff]\nkind = \"exponential\"\nbase = \"100ms\"\ncap = \"2s\"\nmultiplier = 1.5\njitter = \"proportional\"\njitter_ratio = 0.3\n[circuit_breaker]\nkind = \"slow_call\"\nslow_call_duration = \"1s\"\nslow_call_ratio = 0.5\nwindow = \"10s\"\nmin_requests = 20\nopen_for = \"5s\"\nhalf_open_probes = 3\n",
    );
    let x = export(&p, Target::Resilience4j);
    let d = &docs(&x)[0]["resilience4j"];
    let r = &d["retry"]["instances"]["orders"];
    assert_eq!(r["maxAttempts"].as_u64(), Some(4));
    assert_eq!(r["waitDuration"], "100ms");
    assert_eq!(
        (r["enableExponentialBackoff"].as_bool(), r["exponentialBackoffMultiplier"].as_f64()),
        (Some(true), Some(1.5))
    );
    assert_eq!(r["exponentialMaxWaitDuration"], "2000ms");
    assert_eq!((r["enableRandomizedWait"].as_bool(), r["randomizedWaitFactor"].as_f64()), (Some(true), Some(0.3)));
    assert_eq!(
        r["retryExceptions"],
        serde_json::json!(["java.net.ConnectException", "java.util.concurrent.TimeoutException"])
    );
    let c = &d["circuitbreaker"]["instances"]["orders"];
    assert_eq!(c["slidingWindowType"], "TIME_BASED");
    assert_eq!(c["slidingWindowSize"].as_u64(), Some(10));
    assert_eq!(c["failureRateThreshold"].as_f64(), Some(100.0), "slow_call without failure_ratio");
    assert_eq!(
        (c["slowCallDurationThreshold"].as_str(), c["slowCallRateThreshold"].as_f64()),
        (Some("1000ms"), Some(50.0))
    );
    assert_eq!(d["timelimiter"]["instances"]["orders"]["timeoutDuration"], "500ms");
    assert_eq!(
        lost(&x),
        ["retry_on", "respect_retry_after", "retry_unknown_without_key", "deadline"],
        "{:?}",
        x.losses
    );
    // n consecutive failures: a count-based window of n calls, all failed.
    let p = inline(
        "max_attempts = 1\ndeadline = \"1s\"\n[circuit_breaker]\nkind = \"consecutive\"\nconsecutive_failures = 7\nopen_for = \"5s\"\nhalf_open_probes = 2\n",
    );
    let x = export(&p, Target::Resilience4j);
    let c = &docs(&x)[0]["resilience4j"]["circuitbreaker"]["instances"]["p"];
    assert_eq!(c["slidingWindowType"], "COUNT_BASED");
    assert_eq!((c["slidingWindowSize"].as_u64(), c["minimumNumberOfCalls"].as_u64()), (Some(7), Some(7)));
    assert_eq!(c["failureRateThreshold"].as_u64(), Some(100));
}

/// Every preset exports to every new target without a panic, as YAML, and
/// a target's losses name policy fields only.
#[test]
fn every_preset_exports_to_every_new_target() {
    let fields = [
        "max_attempts",
        "per_try_timeout",
        "deadline",
        "min_attempt_time",
        "retry_on",
        "retry_unknown_without_key",
        "respect_retry_after",
        "max_retry_after",
        "retry_after_clamp",
        "backoff",
        "budget",
        "circuit_breaker",
        "hedging",
        "throttle",
    ];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let p = load_policy_file(&path).unwrap();
        for t in [Target::GatewayApi, Target::Istio, Target::Linkerd, Target::Resilience4j] {
            let x = export(&p, t);
            assert!(!docs(&x).is_empty(), "{} to {}", p.name, t.label());
            for l in &x.losses {
                let top = l.field.split('.').next().unwrap();
                assert!(fields.contains(&top), "{} to {}: loss of {:?}", p.name, t.label(), l.field);
            }
        }
    }
}
