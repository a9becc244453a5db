//! `retrysim audit` passes a durable, atomic, keyed design and fails, with
//! exit status 1 and a counterexample trace, a memory ledger, a missing
//! key, a lease of "never" and a ttl shorter than a caller's retry window.

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
    let (code, out) = audit(&[]);
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
        &["--set", "services.orders.idempotency.ttl=10s"],
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
