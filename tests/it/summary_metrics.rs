//! The numbers of summary.json that a design review reads (DESIGN §8.3):
//! amplification at one service for every variant, the latency of every
//! intent beside that of the successful ones, intervals inside each
//! metric's range, `recovered_fraction` of a system that was never healthy,
//! burst completion and goodput, and the metrics of each client class.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `retrysim run` on `experiment` with `args` into a fresh folder;
/// returns (the folder's guard, summary.json, stdout).
fn run(experiment: &Path, args: &[&str]) -> (tempfile::TempDir, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("run")
        .arg(experiment)
        .args(args)
        .args(["--no-plots", "-q", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap()).unwrap();
    (dir, summary, String::from_utf8(out.stdout).unwrap())
}

/// Writes `toml` into a fresh folder and returns the folder and the file.
fn write(toml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exp.toml");
    std::fs::write(&path, toml).unwrap();
    (dir, path)
}

fn variant<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["variants"].as_array().unwrap().iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("no {name}"))
}

fn values(m: &Value) -> Vec<f64> {
    m["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn amplification_is_taken_at_the_baselines_busiest_service_in_every_variant() {
    let (_d, s, table) = run(&root().join("experiments/brownout.toml"), &["--replications", "2"]);
    // The baseline sends most requests to payments; every variant is measured there.
    for v in s["variants"].as_array().unwrap() {
        assert_eq!(v["amplification_service"], "payments", "{}", v["name"]);
        assert_eq!(
            values(&v["metrics"]["amplification"]),
            values(&v["services"]["payments"]["requests_per_intent"]),
            "{}",
            v["name"]
        );
    }
    // The breaker halves the load on payments (below 1 request per intent),
    // where the busiest service of its own would have been checkout.
    let breaker = variant(&s, "breaker on the payments call");
    let amp = breaker["metrics"]["amplification"]["mean"].as_f64().unwrap();
    let checkout = breaker["services"]["checkout"]["requests_per_intent"]["mean"].as_f64().unwrap();
    assert!(amp < 1.0 && checkout > amp, "payments {amp}, checkout {checkout}");
    // The paired difference is between the same service's numbers.
    let base = values(&variant(&s, "both layers retry")["metrics"]["amplification"]);
    let diff = values(&breaker["vs_baseline"]["amplification"]);
    let mine = values(&breaker["metrics"]["amplification"]);
    for r in 0..2 {
        assert!((diff[r] - (mine[r] - base[r])).abs() < 1e-12);
    }
    assert!(table.contains("(payments)") && !table.contains("(checkout)"), "{table}");
}

/// Half of the answers are lost: those intents fail at the 300 ms per-try
/// timeout, the others succeed in 3 ms (1 ms each way and 1 ms of work).
const LOSSY: &str = r#"
[experiment]
name = "lossy"
duration = "20s"
replications = 3

[[clients]]
name = "web"
rate = "200/s"
target = "api"
operation = "get"
policy = { max_attempts = 1, per_try_timeout = "300ms" }

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "api"
workers = 50
service_time = { dist = "const", value = "1ms" }

[[faults]]
kind = "response_loss"
target = "api"
probability = 0.5

[[variants]]
name = "one retry"
set = { "clients.web.policy.max_attempts" = 2, "clients.web.policy.retry_on" = ["timeout"] }

[[variants]]
name = "no retry"
"#;

#[test]
fn latency_of_every_intent_counts_the_failed_ones_to_when_their_client_gave_up() {
    let (_d, path) = write(LOSSY);
    let (_o, s, table) = run(&path, &[]);
    let none = &variant(&s, "no retry")["metrics"];
    // Successful intents: 3 ms; about half fail, each after exactly 300 ms.
    let p99 = none["latency_p99_s"]["mean"].as_f64().unwrap();
    let all_p99 = none["latency_all_p99_s"]["mean"].as_f64().unwrap();
    assert!((p99 - 0.003).abs() < 0.003 * 0.002, "p99 of successes {p99}");
    assert!((all_p99 - 0.300).abs() < 0.300 * 0.002, "p99 of every intent {all_p99}");
    let success = none["success_rate"]["mean"].as_f64().unwrap();
    assert!((success - 0.5).abs() < 0.02, "{success}");
    // About half at each: every replication's median is one of the two.
    for m in values(&none["latency_all_p50_s"]) {
        assert!((m - 0.003).abs() < 1e-5 || (m - 0.300).abs() < 1e-3, "median {m}");
    }
    for m in ["latency_all_p50_s", "latency_all_p99_s", "latency_all_p999_s"] {
        assert!(none[m]["ci95"].is_array(), "{m} has the shape of every metric: {}", none[m]);
    }
    // Without the retry the successful intents look 100 times faster; the
    // vs-baseline block says what it costs.
    let block = &table[table.find("vs baseline").unwrap_or_else(|| panic!("{table}"))..];
    let row = block.lines().find(|l| l.starts_with("no retry ")).unwrap_or_else(|| panic!("{table}"));
    let p99_cell = &row[row.find("(-99%)").unwrap_or_else(|| panic!("{row}"))..];
    assert!(p99_cell.starts_with("(-99%) with success -"), "{row}");
    assert!(table.contains("p99 all"), "{table}");
}

/// Every metric object under `v` (metrics, clients, services, edges,
/// effects): its interval lies inside the metric's range.
fn check_ranges(what: &str, metrics: &Value) {
    for (name, m) in metrics.as_object().unwrap() {
        let Some(ci) = m["ci95"].as_array() else { continue };
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        let share = name.ends_with("_fraction") || name.ends_with("_rate") || name == "utilization";
        assert!(lo >= 0.0, "{what}.{name}: lower bound {lo}");
        if share {
            assert!(hi <= 1.0, "{what}.{name}: upper bound {hi}");
        }
        let mean = m["mean"].as_f64().unwrap();
        assert!(lo <= mean && mean <= hi, "{what}.{name}: mean {mean} outside [{lo}, {hi}]");
    }
}

#[test]
fn every_interval_stays_inside_its_metrics_range() {
    // Few replications make wide intervals: shares near 0 and 1 and counts near 0.
    for (exp, reps) in [("brownout", "3"), ("capacity-cliff", "3"), ("crash-recovery", "2")] {
        let (_d, s, _) = run(&root().join(format!("experiments/{exp}.toml")), &["--replications", reps]);
        for v in s["variants"].as_array().unwrap() {
            let name = format!("{exp}: {}", v["name"]);
            check_ranges(&name, &v["metrics"]);
            for group in ["clients", "services", "edges", "effects"] {
                for (item, ms) in v[group].as_object().unwrap() {
                    check_ranges(&format!("{name}.{group}.{item}"), ms);
                }
            }
            // Differences of shares stay within [-1, 1].
            if let Some(vs) = v["vs_baseline"].as_object() {
                for (k, d) in vs {
                    if let Some(ci) = d["ci95"].as_array()
                        && (k.ends_with("_fraction") || k.ends_with("_rate"))
                    {
                        assert!(ci[0].as_f64().unwrap() >= -1.0 && ci[1].as_f64().unwrap() <= 1.0, "{name}: {k}");
                    }
                }
            }
        }
    }
}

#[test]
fn a_system_overloaded_before_the_disturbance_was_never_healthy() {
    let quickstart = root().join("experiments/quickstart.toml");
    let (_d, s, table) = run(&quickstart, &["--replications", "2", "--set", "experiment.load_scale=1.5"]);
    for v in s["variants"].as_array().unwrap() {
        let rf = &v["metrics"]["recovered_fraction"];
        assert!(rf["mean"].is_null() && rf["ci95"].is_null(), "{}: {rf}", v["name"]);
        assert_eq!(rf["reason"], "never_healthy", "{}", v["name"]);
        assert_eq!(v["metrics"]["recovery_time_s"]["reason"], "never_healthy");
        assert!(v["vs_baseline"].is_null() || v["vs_baseline"]["recovered_fraction"]["mean"].is_null());
    }
    assert!(table.contains("never healthy"), "{table}");
    // At the load it was written for, the quick start is healthy and recovers.
    let (_d, s, _) = run(&quickstart, &["--replications", "2"]);
    for v in s["variants"].as_array().unwrap() {
        let rf = &v["metrics"]["recovered_fraction"];
        assert_eq!(rf["mean"], 1.0, "{}", v["name"]);
        assert!(rf.get("reason").is_none());
    }
}

#[test]
fn a_burst_is_measured_until_its_last_intent_ended() {
    let (_d, s, table) = run(&root().join("experiments/occ-contention.toml"), &["--replications", "4"]);
    for v in s["variants"].as_array().unwrap() {
        let m = &v["metrics"];
        let done = values(&m["burst_completion_s"]);
        let goodput = values(&m["goodput_per_s"]);
        let ok: Vec<f64> =
            values(&m["intents"]).iter().zip(values(&m["success_rate"])).map(|(n, s)| (n * s).round()).collect();
        for r in 0..4 {
            // Goodput is the successful intents over the time the burst took.
            assert!((goodput[r] * done[r] - ok[r]).abs() < 1e-6 * ok[r], "{}: replication {r}", v["name"]);
            assert!(done[r] > 0.0);
        }
        // Every writer starts at 0 s: the last one's latency is the completion time.
        let p999 = m["latency_all_p999_s"]["mean"].as_f64().unwrap();
        let mean_done = m["burst_completion_s"]["mean"].as_f64().unwrap();
        assert!(mean_done >= p999 * 0.99, "{}: done {mean_done} < p99.9 {p999}", v["name"]);
    }
    // Exponential backoff without jitter takes far longer than full jitter.
    let exp = variant(&s, "exponential")["metrics"]["burst_completion_s"]["mean"].as_f64().unwrap();
    let full = variant(&s, "full jitter")["metrics"]["burst_completion_s"]["mean"].as_f64().unwrap();
    assert!(exp > 10.0 * full, "exponential {exp} s, full jitter {full} s");
    assert!(table.contains("burst done"), "{table}");
}

const TWO_CLIENTS: &str = r#"
[experiment]
name = "two clients"
duration = "20s"
replications = 3

[[clients]]
name = "readers"
rate = "300/s"
target = "api"
operation = "get"

[[clients]]
name = "writers"
rate = "100/s"
target = "flaky"
operation = "get"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "api"
workers = 20
service_time = { dist = "exp", mean = "5ms" }

[[services]]
name = "flaky"
workers = 20
service_time = { dist = "exp", mean = "5ms" }

[[faults]]
kind = "error"
target = "flaky"
probability = 0.25
"#;

#[test]
fn each_client_class_has_the_metrics_of_its_own_intents() {
    let (_d, path) = write(TWO_CLIENTS);
    let (_o, s, _) = run(&path, &[]);
    let v = &s["variants"][0];
    let readers = &v["clients"]["readers"];
    let writers = &v["clients"]["writers"];
    // The same names and shape as `metrics`.
    for name in v["metrics"].as_object().unwrap().keys() {
        for c in [readers, writers] {
            let m = &c[name.as_str()];
            assert!(m.get("mean").is_some() && m.get("ci95").is_some() && m.get("values").is_some(), "{name}: {m}");
        }
    }
    assert!(readers["success_rate"]["values"].as_array().unwrap().iter().all(|x| x == 1.0));
    let w = writers["success_rate"]["mean"].as_f64().unwrap();
    assert!((w - 0.75).abs() < 0.02, "writers fail 25% at the error fault: {w}");
    // Per replication the classes add up to the whole.
    let total = values(&v["metrics"]["intents"]);
    let (r, wr) = (values(&readers["intents"]), values(&writers["intents"]));
    let ok = |c: &Value| -> Vec<f64> {
        values(&c["intents"]).iter().zip(values(&c["success_rate"])).map(|(n, s)| n * s).collect()
    };
    let all_ok = ok(&v["metrics"]);
    for i in 0..3 {
        assert_eq!(r[i] + wr[i], total[i]);
        assert!((ok(readers)[i] + ok(writers)[i] - all_ok[i]).abs() < 1e-6);
    }
    // Each class's amplification at the one service: readers never reach flaky.
    assert_eq!(v["amplification_service"], "api");
    assert_eq!(readers["amplification"]["mean"], 1.0);
    assert_eq!(writers["amplification"]["mean"], 0.0);
    // Not counted per class: null, never 0.
    assert!(readers["recovered_fraction"]["mean"].is_null());
}
