//! `retrysim audit` passes a durable, atomic, keyed design and fails, with
//! exit status 1 and a counterexample trace, a memory ledger, a missing
//! key, a lease of "never" and a ttl shorter than a caller's retry window;
//! without `--variant` it audits every variant, one section each.

use std::process::Command;

const EXP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/crash-recovery.toml");

fn audit(extra: &[&str]) -> (i32, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_retrysim")).arg("audit").arg(EXP).args(extra).arg("-q").output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

fn failing_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.contains("FAIL:")).collect()
}

#[test]
fn a_durable_atomic_keyed_design_passes_every_breakpoint() {
    let (code, out) = audit(&["--variant", "durable, atomic, 5 s lease"]);
    assert_eq!(code, 0, "{out}");
    for bp in [
        "response lost after commit",
        "crash after the placeholder",
        "two identical keys at once",
        "same key with a different body",
        "key resent just after its expiry",
        "Retry-After longer than the remaining deadline",
        "thousands of clients receive 503 together",
    ] {
        assert!(out.contains(bp), "breakpoint {bp} missing:\n{out}");
    }
    assert!(failing_lines(&out).is_empty(), "{out}");
}

/// Asserts a failed audit: exit 1, a failing line about `invariant` at
/// `breakpoint`, and (unless static) a counterexample trace of one intent.
fn assert_fails(extra: &[&str], breakpoint: &str, invariant: &str, traced: bool) {
    let (code, out) = audit(extra);
    assert_eq!(code, 1, "{extra:?}:\n{out}");
    let fails = failing_lines(&out);
    assert!(
        fails.iter().any(|l| l.contains(breakpoint) && l.contains(invariant)),
        "{extra:?}: no failure of {invariant} at {breakpoint}:\n{out}"
    );
    if traced {
        let header = format!("counterexample for \"{breakpoint}\"");
        let at = out.find(&header).unwrap_or_else(|| panic!("{extra:?}: no counterexample:\n{out}"));
        let rows: Vec<serde_json::Value> = out[at..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  {"))
            .map(|l| serde_json::from_str(l.trim()).unwrap())
            .collect();
        assert!(!rows.is_empty(), "{extra:?}: empty counterexample");
        let intent = &rows[0]["intent"];
        assert!(rows.iter().all(|r| &r["intent"] == intent), "one intent per counterexample");
        assert_eq!(rows[0]["attempt"], 1);
    }
}

#[test]
fn a_memory_ledger_fails_the_crash_breakpoint() {
    assert_fails(&["--variant", "memory"], "crash after the placeholder", "one effect of each kind per intent", true);
}

#[test]
fn a_missing_key_fails_the_lost_response_breakpoint() {
    assert_fails(
        &[
            "--set",
            "clients.checkout.idempotency_key=false",
            "--set",
            "clients.checkout.policy.retry_unknown_without_key=true",
        ],
        "response lost after commit",
        "one effect of each kind per intent",
        true,
    );
}

#[test]
fn a_lease_of_never_leaves_stuck_placeholders() {
    assert_fails(
        &["--variant", "durable, atomic, lease never"],
        "crash after the placeholder",
        "no placeholder stays in progress",
        true,
    );
}

#[test]
fn a_ttl_shorter_than_a_callers_retry_window_fails() {
    assert_fails(
        &["--set", "services.orders.idempotency.ttl=10s", "--variant", "durable, atomic, 5 s lease"],
        "key resent just after its expiry",
        "retry window outlasts",
        false,
    );
}

#[test]
fn a_non_atomic_ledger_fails_the_crash_between_write_and_record() {
    assert_fails(
        &["--variant", "durable, not atomic"],
        "crash between business write and ledger record",
        "one effect",
        true,
    );
}

/// The variants of crash-recovery.toml, in file order.
const VARIANTS: [&str; 4] =
    ["durable, atomic, 5 s lease", "memory", "durable, not atomic", "durable, atomic, lease never"];

#[test]
fn every_variant_is_audited_by_default_each_in_a_section_that_names_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).arg("audit").arg(EXP).output().unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert_eq!(out.status.code(), Some(1), "three variants fail a check:\n{stdout}");
    // The answer first: which variants fail, which pass.
    let first = stdout.lines().next().unwrap();
    assert!(first.starts_with("audit of 4 variants: \"memory\" fails 1 of "), "{first}");
    assert!(first.ends_with("; \"durable, atomic, 5 s lease\" passes all 10 checks"), "{first}");
    // One section per variant, in file order, each under its name and verdict.
    let mut at = 0;
    for v in VARIANTS {
        let header = format!("\nvariant \"{v}\" ");
        let found =
            stdout[at..].find(&header).unwrap_or_else(|| panic!("no section for {v} after byte {at}:\n{stdout}"));
        at += found + header.len();
    }
    assert!(stdout.contains("variant \"memory\" fails 1 of 10 checks:\nbreakpoint "), "{stdout}");
    assert!(stderr.contains("audit of 4 variants: "), "{stderr}");
    assert!(stderr.contains(" failed (\"memory\" 1, "), "{stderr}");
    // JSON: each finding names its variant; every variant is listed.
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("audit")
        .arg(EXP)
        .args(["--format", "json", "-q"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["passed"], false);
    let names: Vec<&str> = doc["variants"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, VARIANTS);
    for f in doc["findings"].as_array().unwrap() {
        assert!(VARIANTS.contains(&f["variant"].as_str().unwrap()), "{f}");
    }
    // --variant picks one; it is named too.
    let (code, out) = audit(&["--variant", "memory"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("variant \"memory\" fails 1 of 10 checks:\n"), "{out}");
    assert!(!out.contains("durable"), "{out}");
}

#[test]
fn a_lost_acknowledgement_duplicates_an_email_unless_the_consumer_deduplicates() {
    let exp = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/email-queue.toml");
    let run = |variant: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .args(["audit", exp, "-q", "--variant", variant])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = run("visibility 10s");
    let line = plain.lines().find(|l| l.starts_with("acknowledgement lost")).expect("the breakpoint is audited");
    assert!(line.contains("queues.emails") && line.contains("FAIL:"), "{plain}");
    let dedup = run("visibility 1s + dedup");
    let line = dedup.lines().find(|l| l.starts_with("acknowledgement lost")).expect("the breakpoint is audited");
    assert!(line.ends_with("pass"), "{dedup}");
}
