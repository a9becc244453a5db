//! Bad input through the real binary: every mistake exits with status 2,
//! names the offending file (the experiment, or the policy file when the
//! mistake is inside one) and the field, writes no output and never panics.

use crate::support::bad_input_case;

use bad_input_case::Case;
use std::path::Path;

const EXPERIMENT: &str = r#"[experiment]
name = "t"
duration = "5s"
replications = 2

[[clients]]
name = "web"
rate = "100/s"
target = "api"
policy = "p.toml"

[[services]]
name = "api"
workers = 2
service_time = { dist = "exp", mean = "5ms" }
"#;

const POLICY: &str = r#"max_attempts = 3
per_try_timeout = "100ms"
[backoff]
kind = "exponential"
base = "10ms"
cap = "1s"
"#;

/// The minimal case, and the minimal one edited.
impl Case {
    fn new() -> Self {
        Self::with(EXPERIMENT, POLICY)
    }

    /// A case whose experiment is the minimal one with `from` replaced by `to`.
    fn experiment_edit(from: &str, to: &str) -> Self {
        assert!(EXPERIMENT.contains(from), "test bug: {from:?} not in EXPERIMENT");
        Self::with(&EXPERIMENT.replacen(from, to, 1), POLICY)
    }

    /// A case whose policy file is the minimal one with `from` replaced by `to`.
    fn policy_edit(from: &str, to: &str) -> Self {
        assert!(POLICY.contains(from), "test bug: {from:?} not in POLICY");
        Self::with(EXPERIMENT, &POLICY.replacen(from, to, 1))
    }
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// Asserts that stderr has `FILE: field `FIELD`:` for the given file and field.
fn assert_names(stderr: &str, file: &Path, field: &str) {
    let want = format!("{}: field `{}`:", shown(file), field);
    assert!(stderr.contains(&want), "stderr should name the file and the field as {want:?}, got:\n{stderr}");
}

/// Asserts that the message does not blame `file` as the offending file.
fn assert_not_blamed(stderr: &str, file: &Path) {
    let wrong = format!("error: {}:", shown(file));
    assert!(!stderr.contains(&wrong), "the error should not be reported against {}:\n{stderr}", shown(file));
}

#[test]
fn the_minimal_experiment_runs() {
    // The negative cases below are edits of this experiment: it must run,
    // so that each of them fails only for the reason it introduces.
    let case = Case::new();
    let o = case.run(&[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{stderr}");
    for f in ["summary.json", "summary.csv", "timeseries.csv", "faults.csv"] {
        assert!(case.out().join(f).is_file(), "{f} was not written");
    }
    // And the same with every flag the negative cases use, set validly.
    let o = case.run(&["--set", "services.api.workers=3", "--variant", "t"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr:\n{stderr}");
}

#[test]
fn broken_toml_syntax() {
    let case = Case::with("[experiment\nname = 1\n", POLICY);
    let stderr = case.refused(&[]);
    let exp = case.path("exp.toml");
    assert!(stderr.contains(&format!("error: {}:", shown(&exp))), "stderr should name the experiment file:\n{stderr}");
    // No field can be named for a syntax error; the position is.
    assert!(
        stderr.contains("TOML") && stderr.contains("line 1"),
        "stderr should say the TOML is broken and where:\n{stderr}"
    );
}

#[test]
fn broken_toml_syntax_in_a_policy_file() {
    let case = Case::with(EXPERIMENT, "max_attempts = = 3\n");
    let stderr = case.refused(&[]);
    assert!(
        stderr.contains(&format!("error: {}:", shown(&case.path("p.toml")))),
        "stderr should name the policy file:\n{stderr}"
    );
    assert!(stderr.contains("line 1"), "{stderr}");
}

#[test]
fn unknown_key_in_a_service() {
    let case = Case::experiment_edit("workers = 2\n", "workers = 2\nwrokers = 4\n");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "services.api.wrokers");
    // What is allowed.
    assert!(stderr.contains("`workers`"), "{stderr}");
}

#[test]
fn unknown_key_in_experiment_table() {
    let case = Case::experiment_edit("replications = 2\n", "replications = 2\nsed = 3\n");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "experiment.sed");
}

#[test]
fn unknown_key_in_a_policy_file() {
    let case = Case::policy_edit("max_attempts = 3\n", "max_attempts = 3\nmax_atempts = 4\n");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("p.toml"), "max_atempts");
    assert_not_blamed(&stderr, &case.path("exp.toml"));
}

#[test]
fn unknown_key_in_a_policy_files_backoff_table() {
    let case = Case::policy_edit("cap = \"1s\"\n", "cap = \"1s\"\njiter = \"full\"\n");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("p.toml"), "backoff.jiter");
    assert_not_blamed(&stderr, &case.path("exp.toml"));
}

#[test]
fn negative_rate() {
    let case = Case::experiment_edit("rate = \"100/s\"", "rate = \"-5/s\"");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "clients.web.rate");
    assert!(stderr.contains("negative"), "{stderr}");
}

#[test]
fn backoff_cap_below_base_in_a_policy_file() {
    let case = Case::policy_edit("cap = \"1s\"", "cap = \"5ms\"");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("p.toml"), "backoff.cap");
    assert_not_blamed(&stderr, &case.path("exp.toml"));
}

#[test]
fn missing_policy_file() {
    let case = Case::experiment_edit("policy = \"p.toml\"", "policy = \"nope.toml\"");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "clients.web.policy");
    assert!(stderr.contains("nope.toml"), "{stderr}");
}

#[test]
fn client_target_names_an_unknown_service() {
    let case = Case::experiment_edit("target = \"api\"", "target = \"apx\"");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "clients.web.target");
    assert!(
        stderr.contains("apx") && stderr.contains("api"),
        "should name the unknown service and list the known ones:\n{stderr}"
    );
}

#[test]
fn bad_duration() {
    let case = Case::experiment_edit("duration = \"5s\"", "duration = \"10 parsecs\"");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "experiment.duration");
    assert!(stderr.contains("10 parsecs"), "{stderr}");
}

#[test]
fn bad_duration_in_a_policy_file() {
    let case = Case::policy_edit("per_try_timeout = \"100ms\"", "per_try_timeout = \"100\"");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("p.toml"), "per_try_timeout");
}

#[test]
fn set_on_a_service_that_does_not_exist() {
    let case = Case::new();
    let stderr = case.refused(&["--set", "services.nope.workers=3"]);
    // The offending "file" is the command-line argument, which holds the field.
    assert!(stderr.contains("--set services.nope.workers=3"), "stderr should name the --set argument:\n{stderr}");
    assert!(
        stderr.contains("\"nope\"") && stderr.contains("api"),
        "should name the unknown service and list the known ones:\n{stderr}"
    );
}

#[test]
fn set_of_an_unknown_field() {
    let case = Case::new();
    let stderr = case.refused(&["--set", "services.api.wrokers=3"]);
    assert!(stderr.contains("wrokers"), "{stderr}");
    assert!(stderr.contains("services.api.wrokers"), "{stderr}");
}

#[test]
fn variant_that_does_not_exist() {
    let case = Case::new();
    let stderr = case.refused(&["--variant", "nope"]);
    assert!(stderr.contains("--variant nope"), "stderr should name the --variant argument:\n{stderr}");
    // What is allowed: the experiment's only variant, named after it.
    assert!(stderr.trim_end().ends_with(": t"), "{stderr}");
}

#[test]
fn policy_file_without_per_try_timeout_or_deadline() {
    let case = Case::policy_edit("per_try_timeout = \"100ms\"\n", "");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("p.toml"), "per_try_timeout");
    assert!(stderr.contains("deadline"), "{stderr}");
    assert_not_blamed(&stderr, &case.path("exp.toml"));
}

#[test]
fn inline_policy_without_per_try_timeout_or_deadline() {
    let case = Case::experiment_edit("policy = \"p.toml\"", "policy = { max_attempts = 2 }");
    let stderr = case.refused(&[]);
    let exp = case.path("exp.toml");
    let prefix = format!("{}: field `clients.web.policy", shown(&exp));
    assert!(stderr.contains(&prefix), "stderr should name the experiment file and the inline policy field:\n{stderr}");
    assert!(stderr.contains("per_try_timeout"), "{stderr}");
}

/// The minimal experiment with extra services appended.
fn with_services(extra: &str) -> Case {
    Case::with(&format!("{EXPERIMENT}{extra}"), POLICY)
}

#[test]
fn a_cycle_in_the_call_graph() {
    let case = Case::with(
        &(EXPERIMENT.replacen(
            "service_time = { dist = \"exp\", mean = \"5ms\" }\n",
            "service_time = { dist = \"exp\", mean = \"5ms\" }\n[[services.calls]]\nto = \"db\"\n",
            1,
        ) + "\n[[services]]\nname = \"db\"\nservice_time = { dist = \"exp\", mean = \"1ms\" }\n[[services.calls]]\nto = \"api\"\n"),
        POLICY,
    );
    let stderr = case.refused(&[]);
    assert!(stderr.contains("cycle") && stderr.contains("api -> db -> api"), "{stderr}");
    assert!(stderr.contains(&format!("{}: field `services.", shown(&case.path("exp.toml")))), "{stderr}");
}

#[test]
fn a_call_to_an_unknown_service() {
    let case = with_services("[[services.calls]]\nto = \"payments\"\n");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "services.api.calls.payments.to");
    assert!(stderr.contains("payments"), "{stderr}");
}

#[test]
fn an_outbox_only_field_on_a_direct_call() {
    let case = with_services(
        "[[services.calls]]\nto = \"db\"\ndedup = true\n\n[[services]]\nname = \"db\"\nservice_time = { dist = \"const\", value = \"1ms\" }\n",
    );
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "services.api.calls.db.dedup");
    assert!(stderr.contains("outbox"), "{stderr}");
}

#[test]
fn an_unknown_when_and_key_handling() {
    let extra = "\n[[services]]\nname = \"db\"\nservice_time = { dist = \"const\", value = \"1ms\" }\n";
    for (line, field, allowed) in [
        ("when = \"later\"", "services.api.calls.db.when", "before_commit"),
        ("key = \"random\"", "services.api.calls.db.key", "derive"),
    ] {
        let case = with_services(&format!("[[services.calls]]\nto = \"db\"\n{line}\n{extra}"));
        let stderr = case.refused(&[]);
        assert_names(&stderr, &case.path("exp.toml"), field);
        assert!(stderr.contains(allowed), "{stderr}");
    }
}

#[test]
fn a_memory_limit_needs_its_restart_delay_and_a_restart_delay_its_limit() {
    let case = Case::experiment_edit("workers = 2\n", "workers = 2\nmemory_limit = 100\n");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "services.api.restart_after");
    assert!(stderr.contains("required with memory_limit"), "{stderr}");
    let case = Case::experiment_edit("workers = 2\n", "workers = 2\nrestart_after = \"30s\"\n");
    assert_names(&case.refused(&[]), &case.path("exp.toml"), "services.api.restart_after");
    let case = Case::experiment_edit("workers = 2\n", "workers = 2\nmemory_limit = -1\nrestart_after = \"30s\"\n");
    let stderr = case.refused(&[]);
    assert_names(&stderr, &case.path("exp.toml"), "services.api.memory_limit");
    assert!(stderr.contains("from 0 to"), "{stderr}");
}
