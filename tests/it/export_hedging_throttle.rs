//! `retrysim export` of hedging, client-side throttles and the retry
//! details of DESIGN §8.1: gRPC `hedgingPolicy` (with retryThrottling
//! applying to hedges), Envoy `hedge_policy` plus an `admission_control`
//! filter for the SRE throttle, in DESIGN §8.4's document order, and AWS
//! `retry_mode = adaptive`, each parsed back; and what cannot be carried is
//! named.

use crate::support::exported;

use exported::{inline, lost, preset, yaml_docs};
use retrysim::output::export::{Target, export};

#[test]
fn grpc_hedging_becomes_a_hedging_policy_with_retry_throttling() {
    let x = export(&preset("grpc-hedging"), Target::Grpc);
    let v: serde_json::Value = serde_json::from_str(&x.text).unwrap();
    let mc = &v["methodConfig"][0];
    assert!(mc.get("retryPolicy").is_none(), "a method has a retryPolicy or a hedgingPolicy, never both");
    let h = &mc["hedgingPolicy"];
    assert_eq!(h["maxAttempts"], 3);
    assert_eq!(h["hedgingDelay"], "0.100s");
    assert_eq!(h["nonFatalStatusCodes"], serde_json::json!(["INTERNAL", "UNAVAILABLE"]));
    assert_eq!(mc["timeout"], "2s");
    assert_eq!(v["retryThrottling"]["maxTokens"], 10.0);
    assert!(lost(&x).is_empty(), "{:?}", x.losses);
    assert!(x.notes.iter().any(|n| n.contains("grpcio")), "{:?}", x.notes);
}

#[test]
fn a_learnt_hedging_delay_and_an_extra_load_cap_are_named_as_losses() {
    let x = export(&preset("finagle-backup-requests"), Target::Grpc);
    let v: serde_json::Value = serde_json::from_str(&x.text).unwrap();
    assert!(v["methodConfig"][0].get("hedgingPolicy").is_none());
    let mut l = lost(&x);
    l.sort_unstable();
    assert_eq!(l, ["hedging.delay", "hedging.max_extra_load", "per_try_timeout"]);
    let x = export(&preset("finagle-backup-requests"), Target::Envoy);
    assert!(lost(&x).contains(&"hedging.delay"));
    assert!(!x.text.contains("hedge_policy"));
}

#[test]
fn envoy_hedges_on_per_try_timeout_in_document_order() {
    let x = export(&preset("envoy-hedge"), Target::Envoy);
    let docs: Vec<serde_yaml_ng::Value> = yaml_docs(&x);
    assert_eq!(docs.len(), 1, "{}", x.text);
    let route = &docs[0];
    // RouteAction fields: retry_policy, then hedge_policy.
    let (rp, hp) = (x.text.find("retry_policy:").unwrap(), x.text.find("hedge_policy:").unwrap());
    assert!(rp < hp);
    assert_eq!(route["hedge_policy"]["hedge_on_per_try_timeout"], true);
    assert_eq!(route["retry_policy"]["per_try_timeout"], "0.100s", "the hedging delay");
    assert_eq!(route["retry_policy"]["num_retries"], 1, "hedges count against num_retries");
    let on = route["retry_policy"]["retry_on"].as_str().unwrap();
    assert!(on.split(',').any(|c| c == "reset"), "a per-try timeout must be retriable to hedge: {on}");
    assert!(lost(&x).contains(&"hedging"));
}

#[test]
fn the_sre_throttle_becomes_an_admission_control_filter_after_the_cluster_fields() {
    let p = inline(
        r#"
name = "sre-envoy"
max_attempts = 3
per_try_timeout = "1s"
retry_on = ["503"]
backoff = { kind = "exponential", base = "25ms", jitter = "full" }
budget = { kind = "concurrency", budget_percent = 20, min_retry_concurrency = 3 }
throttle = { kind = "sre", k = 4.0, window = "30s" }
"#,
    );
    let x = export(&p, Target::Envoy);
    let docs: Vec<serde_yaml_ng::Value> = yaml_docs(&x);
    assert_eq!(docs.len(), 3, "route, cluster, filter:\n{}", x.text);
    assert!(docs[0].get("retry_policy").is_some());
    assert!(docs[1].get("circuit_breakers").is_some());
    let f = &docs[2];
    assert_eq!(f["name"], "envoy.filters.http.admission_control");
    let c = &f["typed_config"];
    assert_eq!(c["@type"], "type.googleapis.com/envoy.extensions.filters.http.admission_control.v3.AdmissionControl");
    assert_eq!(c["sr_threshold"]["default_value"]["value"].as_f64(), Some(25.0), "1/k in percent");
    assert_eq!(c["aggression"]["default_value"].as_f64(), Some(1.0));
    assert_eq!(c["max_rejection_probability"]["default_value"]["value"].as_f64(), Some(100.0));
    assert_eq!(c["sampling_window"], "30s");
    let ranges = c["success_criteria"]["http_criteria"]["http_success_status"].as_sequence().unwrap();
    assert_eq!(ranges.len(), 2);
    assert!(lost(&x).contains(&"throttle.scope"));
    // AWS adaptive has no Envoy form.
    let x = export(&preset("aws-adaptive"), Target::Envoy);
    assert!(lost(&x).contains(&"throttle"));
    assert!(!x.text.contains("admission_control"));
}

#[test]
fn aws_adaptive_becomes_retry_mode_adaptive_with_its_2026_details_carried() {
    let x = export(&preset("aws-adaptive"), Target::Aws);
    assert!(x.text.lines().any(|l| l == "retry_mode = adaptive"), "{}", x.text);
    assert!(x.text.lines().any(|l| l == "max_attempts = 3"));
    assert_eq!(lost(&x), ["per_try_timeout", "deadline"], "{:?}", x.losses);
    // An SRE throttle has no AWS form: standard mode, and a loss.
    let x = export(&preset("sre-throttle"), Target::Aws);
    assert!(x.text.lines().any(|l| l == "retry_mode = standard"));
    assert!(lost(&x).contains(&"throttle"));
    // Hedging has no AWS form.
    assert!(lost(&export(&preset("grpc-hedging"), Target::Aws)).contains(&"hedging"));
}

#[test]
fn throttling_base_and_retry_after_clamp_are_losses_where_no_key_carries_them() {
    let x = export(&preset("aws-adaptive"), Target::Grpc);
    let l = lost(&x);
    assert!(
        l.contains(&"backoff.throttling_base") && l.contains(&"retry_after_clamp") && l.contains(&"throttle"),
        "{l:?}"
    );
    let x = export(&preset("aws-adaptive"), Target::Envoy);
    let l = lost(&x);
    assert!(l.contains(&"backoff.throttling_base") && l.contains(&"retry_after_clamp"), "{l:?}");
}
