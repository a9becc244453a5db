//! Values that used to be accepted silently (or with a message in the
//! program's words) are bad input: exit 2, naming the file or flag, the
//! field and what is allowed, in the words of the file format.

use retrysim::config::load_experiment;
use retrysim::config::messages::names_program_types;
use std::path::Path;
use std::process::Command;

const QUICKSTART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml");
const CRASH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/crash-recovery.toml");

fn load_err(exp: &str, set: &str) -> retrysim::InputError {
    match load_experiment(Path::new(exp), &[set.to_string()]) {
        Ok(_) => panic!("--set {set} was accepted"),
        Err(e) => e,
    }
}

fn retrysim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn never_is_refused_where_a_finite_duration_is_needed() {
    for (exp, set, field) in [
        (QUICKSTART, "experiment.bin=never", "experiment.bin"),
        (QUICKSTART, "experiment.warmup=never", "experiment.warmup"),
        (QUICKSTART, "experiment.drain_limit=never", "experiment.drain_limit"),
        (CRASH, "faults.restart.start=never", "faults.restart.start"),
        (QUICKSTART, "clients.web.policy.min_attempt_time=never", "clients.web.policy.min_attempt_time"),
        (QUICKSTART, "services.api.overload.retry_after=never", "services.api.overload.retry_after"),
    ] {
        let e = load_err(exp, set);
        assert_eq!(e.file, format!("--set {set}"), "{e}");
        assert_eq!(e.field.as_deref(), Some(field), "{set}: {e}");
        assert!(e.message.contains("\"never\" is not allowed here"), "{set}: {e}");
    }
    // An override of an array the experiment does not have is refused too
    // (it used to be made up as a table, and the file was blamed).
    let e = load_err(QUICKSTART, "faults.0.start=1s");
    assert!(e.file.starts_with("--set") && e.message.contains("`faults` has no entries"), "{e}");
    for set in ["services.api.queue.target=never", "services.api.queue.interval=never"] {
        let sets = ["services.api.queue.discipline=\"codel\"".to_string(), set.to_string()];
        let e = load_experiment(Path::new(QUICKSTART), &sets).unwrap_err();
        assert!(e.message.contains("\"never\" is not allowed here"), "{set}: {e}");
    }
    // Where the format gives "never" a meaning, it stays.
    for set in [
        "clients.web.policy.deadline=never",
        "clients.web.policy.max_retry_after=never",
        "services.orders.idempotency.lease=never",
        "services.orders.idempotency.ttl=never",
    ] {
        let exp = if set.contains("orders") { CRASH } else { QUICKSTART };
        let mut sets = vec![set.to_string()];
        if set.contains("deadline") {
            sets.push("clients.web.policy.per_try_timeout=\"1s\"".into());
        }
        load_experiment(Path::new(exp), &sets).unwrap_or_else(|e| panic!("{set}: {e}"));
    }
}

#[test]
fn durations_have_exactly_one_number_and_a_documented_unit() {
    for value in ["5M", "2w", "1y", "1hr", "2s 2s", "1h 30m", "1e3ms", "5 s"] {
        let set = format!("clients.web.policy.deadline=\"{value}\"");
        let e = load_err(QUICKSTART, &set);
        assert_eq!(e.field.as_deref(), Some("clients.web.policy.deadline"), "{value}: {e}");
        assert!(e.message.contains("units: ns, us, ms, s, m, h, d"), "{value}: {e}");
    }
}

#[test]
fn toml_dates_are_not_names() {
    for set in ["clients.web.name=1979-05-27", "experiment.name=1979-05-27T07:32:00Z", "services.api.name=07:32:00"] {
        let e = load_err(QUICKSTART, set);
        assert_eq!(e.file, format!("--set {set}"), "{e}");
        assert!(e.message.contains("TOML date or time"), "{e}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dated.toml");
    let text = std::fs::read_to_string(QUICKSTART).unwrap().replace("name = \"web\"", "name = 2024-01-01");
    std::fs::write(&path, text.replace("\"../policies/", &format!("\"{}/../policies/", env!("CARGO_MANIFEST_DIR"))))
        .unwrap();
    let e = load_experiment(&path, &[]).unwrap_err();
    assert!(e.file.ends_with("dated.toml") && e.message.contains("TOML date or time"), "{e}");
    assert!(e.field.as_deref().is_some_and(|f| f.starts_with("clients")), "{e}");
}

#[test]
fn flags_given_twice_or_alone_are_refused() {
    let cases: [(&[&str], &str); 5] = [
        (&["sweep", QUICKSTART, "--param", "experiment.load_scale=1,2", "--knee", "success_rate>=nan"], "--knee"),
        (&["sweep", QUICKSTART, "--param", "services.api.workers=8", "--param", "services.api.workers=16"], "--param"),
        (&["run", QUICKSTART, "--trace-sample", "0.5"], "--trace-sample"),
        (&["run", QUICKSTART, "--variant", "no retries", "--variant", "no retries"], "--variant"),
        (
            &[
                "sweep",
                QUICKSTART,
                "--param",
                "experiment.load_scale=1,2",
                "--variant",
                "no retries",
                "--variant",
                "no retries",
            ],
            "--variant",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for (args, flag) in cases {
        let mut args = args.to_vec();
        args.extend(["-q", "--no-plots", "--out", out.to_str().unwrap()]);
        let (code, err) = retrysim(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(&format!("error: {flag}")), "{args:?}: {err}");
    }
    assert!(!out.exists());
}

#[test]
fn type_errors_speak_the_format_and_blame_the_override() {
    for (set, wanted) in [
        ("experiment.seed=\"x\"", "expected an integer, got the string \"x\""),
        ("experiment.load_scale=[1]", "expected a number, got an array"),
        ("services.api.service_time=5", "expected a table such as { dist = \"exp\""),
        ("services.api.queue=3", "expected a table such as { limit = 64"),
        ("clients.web.idempotency_key=1", "expected true or false"),
        ("services.api.calls=5", "expected an array"),
        ("experiment=5", "expected the table [experiment]"),
        ("clients.web.policy.backoff=5", "expected a table such as { kind = \"exponential\""),
        ("clients.web.count=1.5", "expected an integer, got the number 1.5"),
    ] {
        let e = load_err(QUICKSTART, set);
        assert!(e.message.contains(wanted), "{set}: {e}");
        assert!(!names_program_types(&e.to_string()), "{set}: {e}");
        assert_eq!(e.file, format!("--set {set}"), "{e}");
    }
    // An element of a list set on the command line is the override's fault.
    let e = load_err(QUICKSTART, "clients.web.policy.retry_on=[5]");
    assert_eq!(e.file, "--set clients.web.policy.retry_on=[5]", "{e}");
}

#[test]
fn an_integer_beyond_64_bits_in_a_file_is_named_in_the_formats_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.toml");
    std::fs::write(&path, "[experiment]\nseed = 99999999999999999999\n").unwrap();
    let e = load_experiment(&path, &[]).unwrap_err();
    assert!(e.message.contains("the integer 99999999999999999999 is out of range"), "{e}");
    assert!(!names_program_types(&e.to_string()), "{e}");
}
