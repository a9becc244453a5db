//! What `tune` can search: several edges tuned together, continuous
//! ranges searched by the optimizer, constraints on recovery; and how it
//! measures amplification (at one service per scenario for every candidate).

use crate::support::tune_run;

use retrysim::analysis::run_all;
use retrysim::config::load_experiment;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A client, an api and a payments service that the api calls; errors at
/// both services. As written, only the api retries (3 attempts), so
/// payments is the busiest service.
const TWO_LAYERS: &str = r#"
[experiment]
name = "two layers"
duration = "20s"
warmup = "2s"
seed = 5
replications = 2

[[clients]]
name = "web"
count = 100
rate = "300/s"
target = "api"
operation = "read"
policy = { max_attempts = 1, per_try_timeout = "1s", retry_on = ["connect_error", "timeout", "503"], backoff = { kind = "exponential", base = "20ms", cap = "1s", jitter = "full" } }

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
workers = 64
service_time = { dist = "exp", mean = "2ms" }

[[services.calls]]
to = "payments"
policy = { max_attempts = 3, per_try_timeout = "500ms", retry_on = ["connect_error", "timeout", "503"], backoff = { kind = "exponential", base = "10ms", cap = "1s", jitter = "full" } }

[[services]]
name = "payments"
workers = 64
service_time = { dist = "exp", mean = "2ms" }

[[faults]]
name = "api-errors"
kind = "error"
target = "api"
probability = 0.1

[[faults]]
name = "payments-errors"
kind = "error"
target = "payments"
probability = 0.25
"#;

fn write(dir: &Path, tune: &str) -> PathBuf {
    let path = dir.join("tune.toml");
    std::fs::write(&path, format!("{TWO_LAYERS}\n[tune]\n{tune}\n")).unwrap();
    path
}

/// Runs `tune` with JSON output; (exit code, the JSON object or null,
/// stderr and stdout).
fn tune_json(path: &Path, dir: &Path, extra: &[&str]) -> (i32, Value, String) {
    let (code, stdout, stderr) = tune_run::tune_json(path, dir, extra);
    (code, serde_json::from_str(&stdout).unwrap_or(Value::Null), stderr + &stdout)
}

const EDGES: &str = "edges = [\"clients.web.policy\", \"services.api.calls.payments.policy\"]\n";

#[test]
fn several_edges_are_tuned_together_and_each_gets_its_policy_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        &format!(
            "{EDGES}constraints = [\"amplification <= 1.25\"]\n[tune.space]\n\"clients.web.policy.max_attempts\" = [1, 3]\n\"services.api.calls.payments.policy.max_attempts\" = [1, 3]\n"
        ),
    );
    let (code, j, err) = tune_json(&path, tmp.path(), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["search"]["candidates"], 4);
    let w = &j["winner"]["values"];
    let files = j["winner"]["emitted"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    let client = retrysim::config::load_policy_file(&tmp.path().join("tuned.clients.web.toml")).unwrap();
    let call = retrysim::config::load_policy_file(&tmp.path().join("tuned.services.api.calls.payments.toml")).unwrap();
    assert_eq!(client.max_attempts as i64, w["clients.web.policy.max_attempts"].as_i64().unwrap());
    assert_eq!(call.max_attempts as i64, w["services.api.calls.payments.policy.max_attempts"].as_i64().unwrap());
    // Retrying at both layers multiplies: only the api's retries fit the
    // limit at payments (about 1.18 requests per intent there, against
    // 1.29 for the client's and 1.32 for both).
    assert_eq!((client.max_attempts, call.max_attempts), (1, 3));
}

#[test]
fn amplification_is_taken_at_the_scenarios_busiest_service_as_written_for_every_candidate() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        &format!(
            "{EDGES}objective = \"minimize latency_p99_s\"\n[tune.space]\n\"clients.web.policy.max_attempts\" = [1, 4]\n\"services.api.calls.payments.policy.max_attempts\" = [1]\n"
        ),
    );
    let (code, j, err) = tune_json(&path, tmp.path(), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["scenarios"][0]["amplification_service"], "payments");
    // The candidate that retries at the client only is busiest at the api,
    // yet its amplification is read at payments, like every candidate's.
    let front = j["front"].as_array().unwrap();
    let mut checked = 0;
    for c in front.iter().chain(std::iter::once(&j["winner"])) {
        let sets: Vec<String> =
            c["overrides"].as_array().unwrap().iter().map(|o| o.as_str().unwrap().to_string()).collect();
        let exp = load_experiment(&path, &sets).unwrap();
        let set = run_all(&exp.variants, None, 1).unwrap();
        let mean = |service: &str| {
            let runs = &set.variants[0].runs;
            runs.iter()
                .map(|r| r.services.iter().find(|s| s.0 == service).unwrap().1["requests_per_intent"].unwrap())
                .sum::<f64>()
                / runs.len() as f64
        };
        let amp = c["worst"]["amplification"].as_f64().unwrap();
        assert!((amp - mean("payments")).abs() < 1e-12, "{amp} vs payments {}", mean("payments"));
        if c["values"]["clients.web.policy.max_attempts"] == 4 {
            assert!(mean("api") > mean("payments"), "the api is this candidate's busiest");
            checked += 1;
        }
    }
    assert!(checked > 0, "the client-retrying candidate was looked at");
}

#[test]
fn a_range_is_searched_by_the_optimizer_within_its_bounds_and_deterministically() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "edge = \"clients.web.policy\"\n[tune.space]\nmax_attempts = [2]\n\"backoff.base\" = \"5ms..500ms\"\n",
    );
    let run = |jobs: &str| {
        let (code, j, err) =
            tune_json(&path, tmp.path(), &["--candidates", "12", "--jobs", jobs, "--replications", "1"]);
        assert_eq!(code, 0, "{err}");
        j
    };
    let (a, b) = (run("1"), run("2"));
    assert_eq!(a["search"]["method"], "tpe");
    assert_eq!(a["search"]["candidates"], 12);
    assert_eq!(a["winner"], b["winner"], "the same winner with any --jobs");
    assert_eq!(a["front"], b["front"]);
    let base = a["winner"]["values"]["backoff.base"].as_str().unwrap();
    let ns = retrysim::config::units::parse_duration(base).unwrap() as f64;
    assert!((5e6..=5e8).contains(&ns), "{base}");
    // Rounded to three significant digits, as a person would write it.
    let digits: String = base.chars().filter(char::is_ascii_digit).collect();
    assert!(digits.trim_end_matches('0').len() <= 3, "{base}");
}

/// A spike that tips immediate retries into a metastable failure
/// (experiments/metastable-spike.toml, shortened): with one attempt the
/// service recovers within seconds; with four it never does.
const SPIKE: &str = r#"
[experiment]
name = "spike"
duration = "60s"
warmup = "5s"
seed = 1
replications = 2

[[clients]]
name = "web"
count = 2000
rate = [{ at = "0s", rate = "700/s" }, { at = "20s", rate = "1500/s" }, { at = "25s", rate = "700/s" }]
target = "api"
operation = "search"
policy = { max_attempts = 4, per_try_timeout = "300ms", retry_on = ["connect_error", "timeout", "503"] }

[[operations]]
name = "search"
idempotent = true

[[services]]
name = "api"
workers = 10
service_time = { dist = "exp", mean = "10ms" }

[network]
latency = { dist = "const", value = "1ms" }

[tune]
edge = "clients.web.policy"
objective = "maximize goodput_per_s"
constraints = ["recovery_time_s <= 20"]

[tune.space]
max_attempts = [1, 4]
"#;

#[test]
fn a_recovery_constraint_fails_a_candidate_that_never_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("spike.toml");
    std::fs::write(&path, SPIKE).unwrap();
    let (code, j, err) = tune_json(&path, tmp.path(), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["winner"]["values"]["max_attempts"], 1);
    let rec = &j["scenarios"][0]["metrics"]["recovery_time_s"];
    // As written (4 attempts) neither replication recovers.
    assert_eq!(rec["as_written"]["not_recovered"], 2, "{rec}");
    assert!(rec["winner"]["mean"].as_f64().unwrap() <= 20.0, "{rec}");
    assert_eq!(j["scenarios"][0]["measures_recovery"], true);
}

#[test]
fn tune_writes_only_where_it_is_told() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("cwd");
    std::fs::create_dir_all(&work).unwrap();
    let path = write(tmp.path(), "edge = \"clients.web.policy\"\n[tune.space]\nmax_attempts = [1, 2]\n");
    let out = tmp.path().join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(&work)
        .arg("tune")
        .arg(&path)
        .args(["-q", "--replications", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", String::from_utf8_lossy(&status.stderr));
    let mut written: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    written.sort();
    assert_eq!(written, ["charts.json", "pareto.png", "pareto.svg", "tune.json", "tuned-policy.toml"]);
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "nothing in the working directory");
}
