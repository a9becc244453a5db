//! Hosts, balancers, caches and the new faults as a user meets them in
//! files: per-host entries in summary.json and columns in timeseries.csv,
//! host addressing in fault targets and overrides, clear errors for bad
//! input, and the lint rules about hosts and caches.

use std::path::Path;
use std::process::Command;

const BASE: &str = r#"
[experiment]
name = "hosts"
duration = "20s"
warmup = "2s"
seed = 1
replications = 2

[[clients]]
name = "web"
rate = "300/s"
target = "api"
operation = "get"
policy = { max_attempts = 1, per_try_timeout = "200ms" }

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "api"
replicas = 3
workers = 4
balancer = "least_request"
outlier_detection = { consecutive_5xx = 5, max_ejection_percent = 50 }
service_time = { dist = "exp", mean = "5ms" }

[[faults]]
name = "down"
kind = "host_down"
target = "api[1]"
start = "5s"
duration = "5s"
"#;

fn retrysim(dir: &Path, toml: &str, args: &[&str]) -> std::process::Output {
    let path = dir.join("exp.toml");
    std::fs::write(&path, toml).unwrap();
    Command::new(env!("CARGO_BIN_EXE_retrysim")).arg(args[0]).arg(&path).args(&args[1..]).output().unwrap()
}

#[test]
fn every_host_has_its_metrics_columns_and_fault_rows() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = retrysim(dir.path(), BASE, &["run", "--out", out.to_str().unwrap(), "--no-plots", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let services = &summary["variants"][0]["services"];
    for name in ["api", "api[0]", "api[1]", "api[2]"] {
        for key in ["requests_per_intent", "utilization", "queue_len", "wasted_fraction", "success_rate"] {
            assert!(services[name][key]["mean"].is_number(), "{name}.{key}: {}", services[name]);
        }
    }
    // The host that was down refused a share of what was sent to it; the
    // others answered everything.
    let down = services["api[1]"]["success_rate"]["mean"].as_f64().unwrap();
    let up = services["api[0]"]["success_rate"]["mean"].as_f64().unwrap();
    assert!(down < 0.99 && up > 0.999, "api[1] {down}, api[0] {up}");
    assert!(services["api"]["ejections"]["mean"].as_f64().unwrap() >= 1.0);
    let shares: f64 =
        (0..3).map(|h| services[format!("api[{h}]")]["requests_per_intent"]["mean"].as_f64().unwrap()).sum();
    let total = services["api"]["requests_per_intent"]["mean"].as_f64().unwrap();
    assert!((shares - total).abs() < 1e-9, "hosts {shares} vs service {total}");

    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let header = ts.lines().next().unwrap();
    assert!(
        header.ends_with(
            "api.queue_len,api.utilization,api.wasted_per_s,api[0].queue_len,api[0].utilization,api[0].wasted_per_s,\
             api[1].queue_len,api[1].utilization,api[1].wasted_per_s,api[2].queue_len,api[2].utilization,api[2].wasted_per_s"
        ),
        "{header}"
    );
    let faults = std::fs::read_to_string(out.join("faults.csv")).unwrap();
    assert!(faults.contains(",down,host_down,api[1],5,10"), "{faults}");
}

#[test]
fn a_variant_with_fewer_hosts_leaves_their_columns_empty() {
    let toml = format!(
        "{BASE}\n[[variants]]\nname = \"three\"\n\n[[variants]]\nname = \"two\"\nset = {{ \"services.api.replicas\" = 2, \"faults.down.target\" = \"api[0]\" }}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = retrysim(dir.path(), &toml, &["run", "--out", out.to_str().unwrap(), "--no-plots", "-q"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ts = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let row = ts.lines().find(|l| l.starts_with("two,")).unwrap();
    assert!(row.ends_with(",,,"), "{row}");
    let three = ts.lines().find(|l| l.starts_with("three,")).unwrap();
    assert!(!three.ends_with(",,,"), "{three}");
}

#[test]
fn bad_host_settings_are_clear_errors() {
    let cases: [(&str, &str, &str); 9] = [
        ("faults.down.target=api[3]", "faults.down.target", "has 3 host(s), addressed api[0] to api[2]"),
        ("faults.down.target=api[x]", "faults.down.target", "service[index]"),
        (
            "services.api.balancer=fastest",
            "services.api.balancer",
            "allowed are round_robin, random, least_request, peak_ewma",
        ),
        ("services.api.replicas=0", "services.api.replicas", "from 1 to 10000"),
        ("services.api.outlier_detection.max_ejection_percent=150", "max_ejection_percent", "percentage"),
        (
            "services.api.concurrency_limit={ kind = \"aimd\", smoothing = 0.5 }",
            "concurrency_limit.smoothing",
            "not a field of kind = \"aimd\"",
        ),
        ("services.api.shed_by_priority={ sheddable = 1.5 }", "shed_by_priority.sheddable", "from 0 to 1"),
        ("clients.web.priority=urgent", "clients.web.priority", "critical, degraded, sheddable"),
        ("faults.down.kind=slowdown", "faults.down.factor", "required"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (set, field, says) in cases {
        let o = retrysim(dir.path(), BASE, &["lint", "--set", set, "-q"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(field) && err.contains(says), "{set}: {err}");
    }
    // per_inflight belongs to a service time only; cache_flush to a service with a cache.
    let latency = BASE.replace(
        "[[faults]]",
        "[network]\nlatency = { dist = \"const\", value = \"1ms\", per_inflight = \"1ms\" }\n\n[[faults]]",
    );
    let o = retrysim(dir.path(), &latency, &["lint", "-q"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(2) && err.contains("network.latency.per_inflight"), "{err}");
    let flush =
        BASE.replace("target = \"api[1]\"\nstart = \"5s\"\nduration = \"5s\"", "target = \"api\"\nstart = \"5s\"");
    let o = retrysim(dir.path(), &flush, &["lint", "--set", "faults.down.kind=cache_flush", "-q"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.code() == Some(2) && err.contains("has no call with a `cache`"), "{err}");
}

fn lint_rules(toml: &str, sets: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["lint", "--format", "json", "-q"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = retrysim(dir.path(), toml, &args);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    report["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap().to_string()).collect()
}

#[test]
fn lint_flags_hosts_without_ejection_retries_to_the_same_host_and_a_cache_the_callee_cannot_back() {
    assert!(lint_rules(BASE, &[]).is_empty(), "{:?}", lint_rules(BASE, &[]));
    assert_eq!(lint_rules(BASE, &["services.api.outlier_detection={}"]), Vec::<String>::new());
    let no_od = BASE.replace("outlier_detection = { consecutive_5xx = 5, max_ejection_percent = 50 }\n", "");
    assert_eq!(lint_rules(&no_od, &[]), vec!["no-outlier-detection"]);
    assert!(lint_rules(BASE, &["clients.web.policy.max_attempts=2"]).contains(&"retry-same-host".to_string()));
    assert!(
        !lint_rules(BASE, &["clients.web.policy.max_attempts=2", "services.api.retry_other_host=true"])
            .contains(&"retry-same-host".to_string())
    );
    // A cache in front of a database of 100/s, called by 300 requests/s.
    let cached = format!(
        "{}\n[[services.calls]]\nto = \"db\"\ncache = {{ keys = 1000, ttl = \"10s\" }}\n\n[[services]]\nname = \"db\"\nworkers = 1\nservice_time = {{ dist = \"const\", value = \"10ms\" }}\n",
        BASE.split("[[faults]]").next().unwrap()
    );
    assert_eq!(lint_rules(&cached, &[]), vec!["cold-cache-overload"]);
    assert!(lint_rules(&cached, &["services.db.workers=4"]).is_empty());
}
