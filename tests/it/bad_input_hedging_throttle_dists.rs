//! Bad input in the policy additions (`[hedging]`, `[throttle]`, breaker
//! kinds, `throttling_base`, `retry_after_clamp`) and in the heavy-tailed
//! distributions (`pareto`, `mixture`, `empirical`): exit 2, the file and
//! the field named, what is allowed said, no output written, no panic.

use crate::support::bad_input_case;

use bad_input_case::Case;
use std::path::Path;

/// Every run here writes no plots.
const NO_PLOTS: &[&str] = &["--no-plots"];

const EXPERIMENT: &str = r#"[experiment]
name = "t"
duration = "3s"
replications = 1

[[clients]]
name = "web"
rate = "100/s"
target = "api"
policy = "p.toml"

[[services]]
name = "api"
workers = 4
service_time = { dist = "exp", mean = "5ms" }
"#;

const POLICY: &str = "per_try_timeout = \"100ms\"\n";

fn names(stderr: &str, file: &Path, field: &str, says: &str) {
    let want = format!("{}: field `{}`:", file.display(), field);
    assert!(stderr.contains(&want), "want {want:?} in:\n{stderr}");
    assert!(stderr.contains(says), "want {says:?} in:\n{stderr}");
}

fn policy_case(policy: &str, field: &str, says: &str) {
    let case = Case::with(EXPERIMENT, policy);
    names(&case.refused(NO_PLOTS), &case.path("p.toml"), field, says);
}

fn service_time_case(service_time: &str, field: &str, says: &str) -> Case {
    let exp = EXPERIMENT.replace(r#"service_time = { dist = "exp", mean = "5ms" }"#, service_time);
    let case = Case::with(&exp, POLICY);
    names(&case.refused(NO_PLOTS), &case.path("exp.toml"), field, says);
    case
}

#[test]
fn the_additions_run_when_valid() {
    let policy = r#"per_try_timeout = "100ms"
cancel_on_timeout = true
[hedging]
max_attempts = 2
delay = "p90"
non_fatal = ["503"]
[throttle]
kind = "sre"
[circuit_breaker]
kind = "slow_call"
slow_call_duration = "50ms"
slow_call_ratio = 0.5
window = "10s"
min_requests = 10
open_for = "1s"
half_open_probes = 2
retries_only = true
"#;
    let exp = EXPERIMENT.replace(
        r#"service_time = { dist = "exp", mean = "5ms" }"#,
        r#"service_time = { dist = "mixture", parts = [{ weight = 0.9, dist = "pareto", scale = "1ms", shape = 2.5 }, { weight = 0.1, dist = "empirical", file = "data/slow.txt" }] }"#,
    );
    let case = Case::with(&exp, policy);
    std::fs::create_dir(case.path("data")).unwrap();
    std::fs::write(case.path("data/slow.txt"), "# seconds\n0.05\n0.08\n120ms\n").unwrap();
    let o = case.run(NO_PLOTS);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(case.path("out/summary.json").is_file());
}

#[test]
fn hedging_mistakes() {
    policy_case(
        "per_try_timeout = \"1s\"\nmax_attempts = 3\n[hedging]\ndelay = \"10ms\"\n",
        "max_attempts",
        "does not retry",
    );
    policy_case("per_try_timeout = \"1s\"\n[hedging]\nmax_attempts = 2\n", "hedging.delay", "required");
    policy_case("per_try_timeout = \"1s\"\n[hedging]\ndelay = \"p150\"\n", "hedging.delay", "not a quantile");
    policy_case("per_try_timeout = \"1s\"\n[hedging]\ndelay = \"soon\"\n", "hedging.delay", "");
    policy_case(
        "per_try_timeout = \"1s\"\n[hedging]\ndelay = \"5ms\"\nmax_attempts = 1\n",
        "hedging.max_attempts",
        "from 2 to 100",
    );
    policy_case(
        "per_try_timeout = \"1s\"\n[hedging]\ndelay = \"5ms\"\nnon_fatal = [\"timeout\"]\n",
        "hedging.non_fatal",
        "status codes",
    );
    policy_case(
        "per_try_timeout = \"1s\"\n[hedging]\ndelay = \"5ms\"\nmax_extra_load = 0\n",
        "hedging.max_extra_load",
        "above 0",
    );
    policy_case(
        "per_try_timeout = \"1s\"\n[hedging]\ndelay = \"5ms\"\ncopies = 2\n",
        "hedging.copies",
        "unknown key `copies`; allowed keys: `max_attempts`, `delay`",
    );
}

#[test]
fn throttle_mistakes() {
    policy_case("per_try_timeout = \"1s\"\n[throttle]\nk = 2.0\n", "throttle.kind", "sre or aws_adaptive");
    policy_case(
        "per_try_timeout = \"1s\"\n[throttle]\nkind = \"cubic\"\n",
        "throttle.kind",
        "allowed are sre, aws_adaptive",
    );
    policy_case("per_try_timeout = \"1s\"\n[throttle]\nkind = \"sre\"\nk = 0.5\n", "throttle.k", "at least 1");
    policy_case(
        "per_try_timeout = \"1s\"\n[throttle]\nkind = \"aws_adaptive\"\nwindow = \"1m\"\n",
        "throttle.window",
        "not used",
    );
    policy_case(
        "per_try_timeout = \"1s\"\n[throttle]\nkind = \"sre\"\nscope = \"global\"\n",
        "throttle.scope",
        "client, shared",
    );
}

#[test]
fn breaker_and_backoff_mistakes() {
    let cb = "per_try_timeout = \"1s\"\n[circuit_breaker]\n";
    policy_case(
        &format!("{cb}kind = \"consecutive\"\nopen_for = \"1s\"\nhalf_open_probes = 1\n"),
        "circuit_breaker.consecutive_failures",
        "required",
    );
    policy_case(
        &format!(
            "{cb}kind = \"consecutive\"\nconsecutive_failures = 3\nfailure_ratio = 0.5\nopen_for = \"1s\"\nhalf_open_probes = 1\n"
        ),
        "circuit_breaker.failure_ratio",
        "not used by kind = \"consecutive\"",
    );
    policy_case(
        &format!(
            "{cb}kind = \"slow_call\"\nslow_call_duration = \"1s\"\nwindow = \"10s\"\nmin_requests = 5\nopen_for = \"1s\"\nhalf_open_probes = 1\n"
        ),
        "circuit_breaker.slow_call_ratio",
        "required",
    );
    policy_case(&format!("{cb}kind = \"rolling\"\n"), "circuit_breaker.kind", "failure_ratio, consecutive, slow_call");
    policy_case(
        "per_try_timeout = \"1s\"\n[backoff]\nthrottling_base = \"1s\"\n",
        "backoff.throttling_base",
        "other than \"none\"",
    );
    policy_case(
        "per_try_timeout = \"1s\"\n[backoff]\nkind = \"exponential\"\nbase = \"10ms\"\ncap = \"100ms\"\nthrottling_base = \"1s\"\n",
        "backoff.throttling_base",
        "at most `cap`",
    );
    policy_case(
        "per_try_timeout = \"1s\"\nretry_after_clamp = \"never\"\n",
        "retry_after_clamp",
        "\"never\" is not allowed here",
    );
}

#[test]
fn distribution_mistakes() {
    service_time_case(
        r#"service_time = { dist = "pareto", scale = "1ms", shape = 1.0 }"#,
        "services.api.service_time.shape",
        "above 1",
    );
    service_time_case(
        r#"service_time = { dist = "pareto", shape = 2.0 }"#,
        "services.api.service_time",
        "needs `scale`",
    );
    service_time_case(
        r#"service_time = { dist = "pareto", scale = "1ms", shape = 2.0, mean = "3ms" }"#,
        "services.api.service_time.mean",
        "not a parameter",
    );
    service_time_case(r#"service_time = { dist = "mixture" }"#, "services.api.service_time.parts", "required");
    service_time_case(
        r#"service_time = { dist = "mixture", parts = [{ dist = "exp", mean = "1ms" }] }"#,
        "services.api.service_time.parts[0].weight",
        "required",
    );
    service_time_case(
        r#"service_time = { dist = "mixture", parts = [{ weight = 1.0, dist = "exp" }] }"#,
        "services.api.service_time.parts[0]",
        "needs `mean`",
    );
    service_time_case(
        r#"service_time = { dist = "exp", mean = "1ms", weight = 0.5 }"#,
        "services.api.service_time.weight",
        "only a part",
    );
    service_time_case(r#"service_time = { dist = "empirical" }"#, "services.api.service_time", "needs `file`");
    let case = service_time_case(
        r#"service_time = { dist = "empirical", file = "missing.csv" }"#,
        "services.api.service_time.file",
        "cannot read",
    );
    let _ = case;
    // A file with a bad line: the line is named.
    let exp = EXPERIMENT.replace(
        r#"service_time = { dist = "exp", mean = "5ms" }"#,
        r#"service_time = { dist = "empirical", file = "lat.csv" }"#,
    );
    let case = Case::with(&exp, POLICY);
    std::fs::write(case.path("lat.csv"), "quantile,value\n0,0.001\n0.5,0.002\n0.9,fast\n1,0.1\n").unwrap();
    let stderr = case.refused(NO_PLOTS);
    names(&stderr, &case.path("exp.toml"), "services.api.service_time.file", "line 4");
    assert!(stderr.contains("lat.csv"), "{stderr}");
}
