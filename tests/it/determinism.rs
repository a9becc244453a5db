//! Determinism through the real binary (DESIGN §4, §5): the same experiment
//! and seed give byte-identical outputs with any `--jobs`; variants are
//! compared under common random numbers; `summary.json` has the documented
//! shape.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use tempfile::TempDir;

const QUICKSTART: &str = "experiments/quickstart.toml";
const OUTPUTS: [&str; 3] = ["summary.json", "summary.csv", "timeseries.csv"];

fn crate_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Starts `retrysim run EXP --out OUT -q ARGS...` from `cwd`.
fn spawn(cwd: &Path, exp: &str, out: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(cwd)
        .arg("run")
        .arg(exp)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to start retrysim")
}

/// Waits for a run and asserts that it succeeded.
fn finish(child: Child, what: &str) {
    let o = child.wait_with_output().expect("wait for retrysim");
    assert!(
        o.status.success(),
        "{what}: retrysim exited with {:?}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
}

fn read_json(dir: &Path) -> Value {
    serde_json::from_slice(&read(dir, "summary.json")).expect("summary.json is valid JSON")
}

/// Runs several configurations of the same experiment in parallel (each is
/// single-threaded or has its own `--jobs`), each into its own folder.
fn run_all(cwd: &Path, exp: &str, configs: &[(&str, &[&str])]) -> (TempDir, Vec<PathBuf>) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let outs: Vec<PathBuf> = (0..configs.len()).map(|i| tmp.path().join(format!("out{i}"))).collect();
    let children: Vec<Child> = configs.iter().zip(&outs).map(|((_, args), out)| spawn(cwd, exp, out, args)).collect();
    for (child, (what, _)) in children.into_iter().zip(configs) {
        finish(child, what);
    }
    (tmp, outs)
}

#[test]
fn same_seed_gives_identical_bytes_with_any_jobs_and_another_seed_does_not() {
    let configs: &[(&str, &[&str])] = &[
        ("seed 7, jobs 1", &["--replications", "3", "--seed", "7", "--jobs", "1"]),
        ("seed 7, jobs 1, again", &["--replications", "3", "--seed", "7", "--jobs", "1"]),
        ("seed 7, jobs 2", &["--replications", "3", "--seed", "7", "--jobs", "2"]),
        ("seed 7, default jobs", &["--replications", "3", "--seed", "7"]),
        ("seed 8, jobs 2", &["--replications", "3", "--seed", "8", "--jobs", "2"]),
    ];
    let (_tmp, outs) = run_all(crate_root(), QUICKSTART, configs);

    for file in OUTPUTS {
        let reference = read(&outs[0], file);
        assert!(!reference.is_empty(), "{file} is empty");
        for (i, (what, _)) in configs.iter().enumerate().take(4).skip(1) {
            assert!(read(&outs[i], file) == reference, "{file} differs between \"{}\" and \"{what}\"", configs[0].0);
        }
    }

    // Another seed must change the simulation itself, not just the seed
    // recorded in summary.json: otherwise the checks above prove nothing.
    assert_ne!(
        read(&outs[4], "timeseries.csv"),
        read(&outs[0], "timeseries.csv"),
        "timeseries.csv is the same under --seed 7 and --seed 8"
    );
    let intents = |j: &Value| j["variants"][0]["metrics"]["intents"]["values"].clone();
    assert_ne!(
        intents(&read_json(&outs[4])),
        intents(&read_json(&outs[0])),
        "intents per replication are the same under --seed 7 and --seed 8"
    );
    assert_ne!(read(&outs[4], "summary.csv"), read(&outs[0], "summary.csv"));
}

/// An experiment whose variants differ only in the `web` client's retry
/// policy, with a load spike that overloads `api` so that retries happen.
const CRN_EXPERIMENT: &str = r#"[experiment]
name = "crn"
duration = "20s"
warmup = "2s"
seed = 3
replications = 3
bin = "100ms"

[[clients]]
name = "web"
count = 200
rate = [{ at = "0s", rate = "500/s" }, { at = "5s", rate = "1500/s" }, { at = "7s", rate = "500/s" }]
target = "api"
operation = "search"
policy = "none.toml"

[[clients]]
name = "mobile"
rate = "100/s"
target = "api"
operation = "search"
policy = "none.toml"

[[operations]]
name = "search"
idempotent = true

[[services]]
name = "api"
workers = 4
queue = { limit = 16 }
service_time = { dist = "exp", mean = "6ms" }

[[variants]]
name = "no-retries"

[[variants]]
name = "immediate"
set = { "clients.web.policy" = "immediate.toml" }

[[variants]]
name = "backoff"
set = { "clients.web.policy" = "backoff.toml" }

[[variants]]
name = "short-timeout"
set = { "clients.web.policy" = "short.toml" }
"#;

const CRN_POLICIES: [(&str, &str); 4] = [
    ("none.toml", "max_attempts = 1\nper_try_timeout = \"1s\"\n"),
    (
        "immediate.toml",
        "max_attempts = 5\nper_try_timeout = \"1s\"\nretry_on = [\"connect_error\", \"timeout\", \"503\"]\n",
    ),
    (
        "backoff.toml",
        r#"max_attempts = 5
per_try_timeout = "1s"
deadline = "5s"
retry_on = ["connect_error", "timeout", "503"]
[backoff]
kind = "exponential"
base = "50ms"
cap = "1s"
jitter = "full"
"#,
    ),
    (
        "short.toml",
        r#"max_attempts = 3
per_try_timeout = "15ms"
retry_on = ["connect_error", "timeout", "503"]
[backoff]
kind = "constant"
base = "10ms"
jitter = "equal"
"#,
    ),
];

/// `(replication, t_s)` → `offered_per_s` (as written), per variant, in file order.
type Offered = BTreeMap<(String, String), String>;

fn offered_by_variant(timeseries: &[u8]) -> Vec<(String, Offered)> {
    let mut rdr = csv::Reader::from_reader(timeseries);
    let headers = rdr.headers().expect("timeseries.csv header").clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("timeseries.csv has no column {name}: {headers:?}"))
    };
    let (v, r, t, o) = (col("variant"), col("replication"), col("t_s"), col("offered_per_s"));
    let mut out: Vec<(String, Offered)> = Vec::new();
    for rec in rdr.records() {
        let rec = rec.expect("timeseries.csv record");
        let variant = rec[v].to_string();
        if out.last().map(|(n, _)| n != &variant).unwrap_or(true) {
            assert!(out.iter().all(|(n, _)| n != &variant), "rows of variant {variant} are not contiguous");
            out.push((variant.clone(), Offered::new()));
        }
        let prev = out.last_mut().unwrap().1.insert((rec[r].to_string(), rec[t].to_string()), rec[o].to_string());
        assert!(prev.is_none(), "two rows for variant {variant}, replication {}, t_s {}", &rec[r], &rec[t]);
    }
    out
}

fn is_zero(s: &str) -> bool {
    s.parse::<f64>().map(|x| x == 0.0).unwrap_or(false)
}

#[test]
fn variants_are_compared_under_common_random_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("exp.toml"), CRN_EXPERIMENT).unwrap();
    for (name, text) in CRN_POLICIES {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = dir.path().join("out");
    finish(spawn(dir.path(), "exp.toml", &out, &[]), "CRN experiment");

    // Arrivals: offered_per_s per (replication, bin) is the same in every
    // variant. Runs may drain for different lengths after `duration`, so a
    // bin that only one variant has must show no arrivals.
    let offered = offered_by_variant(&read(&out, "timeseries.csv"));
    let names: Vec<&str> = offered.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["no-retries", "immediate", "backoff", "short-timeout"]);
    let (base_name, base) = &offered[0];
    let bins_before_end = base.keys().filter(|(_, t)| t.parse::<f64>().unwrap() < 20.0);
    assert_eq!(bins_before_end.count(), 3 * 200, "3 replications × 200 bins of 100 ms");
    for (name, other) in &offered[1..] {
        for key in base.keys().chain(other.keys()) {
            match (base.get(key), other.get(key)) {
                (Some(a), Some(b)) => assert_eq!(
                    a, b,
                    "offered_per_s differs between {base_name} and {name} at replication {}, t_s {}",
                    key.0, key.1
                ),
                (Some(x), None) | (None, Some(x)) => assert!(
                    is_zero(x),
                    "replication {}, t_s {}: offered {x} in one of {base_name}, {name} and no row in the other",
                    key.0,
                    key.1
                ),
                (None, None) => unreachable!(),
            }
        }
    }
    // Replications are seeded differently: their arrivals differ.
    let series = |rep: &str| -> Vec<&String> { base.iter().filter(|((r, _), _)| r == rep).map(|(_, v)| v).collect() };
    assert_ne!(series("0"), series("1"), "replications 0 and 1 have the same arrivals");

    // Intents per replication are identical across variants, attempts are not.
    let json = read_json(&out);
    let variants = json["variants"].as_array().expect("variants array");
    assert_eq!(variants.len(), 4);
    let metric = |i: usize, m: &str| -> Vec<f64> {
        variants[i]["metrics"][m]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("{m}.values of variant {i} is not an array"))
            .iter()
            .map(|x| x.as_f64().unwrap_or_else(|| panic!("{m} value {x} is not a number")))
            .collect()
    };
    let intents = metric(0, "intents");
    assert_eq!(intents.len(), 3);
    assert!(intents.iter().all(|&n| n > 0.0), "{intents:?}");
    assert_ne!(intents[0], intents[1], "replications have the same intents");
    for i in 1..variants.len() {
        assert_eq!(
            metric(i, "intents"),
            intents,
            "intents differ between {} and {}",
            variants[0]["name"],
            variants[i]["name"]
        );
    }
    // The variants really are different: retries add attempts.
    let attempts: Vec<Vec<f64>> = (0..variants.len()).map(|i| metric(i, "attempts_per_intent")).collect();
    assert!(attempts[0].iter().all(|&a| a == 1.0), "no retries: one attempt per intent, got {:?}", attempts[0]);
    for (i, a) in attempts.iter().enumerate().skip(1) {
        assert!(
            a.iter().all(|&x| x > 1.05),
            "variant {} should retry under this overload: attempts/intent {a:?}",
            variants[i]["name"]
        );
        for b in &attempts[..i] {
            assert_ne!(a, b, "two variants have identical attempts/intent");
        }
    }
}

/// Metrics of DESIGN §5.
const METRICS: [&str; 15] = [
    "intents",
    "success_rate",
    "goodput_per_s",
    "attempts_per_intent",
    "amplification",
    "latency_p50_s",
    "latency_p99_s",
    "latency_p999_s",
    "wasted_fraction",
    "duplicate_intents",
    "orphan_commits",
    "lost_effects",
    "retries_denied_budget",
    "recovery_time_s",
    "recovered_fraction",
];

/// Metrics this version of the model does not produce: null, never 0.
/// (`retries_denied_budget` is null because the quick start has no budget.)
const NOT_PRODUCED: [&str; 1] = ["retries_denied_budget"];

/// Checks one metric object `{ mean, ci95: [lo, hi], values: [...] }`.
fn check_metric(what: &str, m: &Value, replications: usize) {
    let obj = m.as_object().unwrap_or_else(|| panic!("{what} is not an object: {m}"));
    for key in ["mean", "ci95", "values"] {
        assert!(obj.contains_key(key), "{what} has no `{key}`: {m}");
    }
    let mean = &obj["mean"];
    let ci = &obj["ci95"];
    let values = &obj["values"];
    assert!(mean.is_null() || mean.is_number(), "{what}.mean is {mean}");
    if let Some(vs) = values.as_array() {
        assert_eq!(vs.len(), replications, "{what}.values: one per replication");
        assert!(vs.iter().all(|v| v.is_null() || v.is_number()), "{what}.values: {values}");
        if vs.iter().all(Value::is_null) {
            assert!(mean.is_null(), "{what}: no values but a mean {mean}");
        } else {
            assert!(mean.is_number(), "{what}: values but no mean");
        }
    } else {
        assert!(values.is_null(), "{what}.values is {values}");
        assert!(mean.is_null(), "{what}: values null but mean {mean}");
    }
    if mean.is_null() {
        assert!(ci.is_null(), "{what}: mean null but ci95 {ci}");
    } else if !ci.is_null() {
        let pair = ci.as_array().expect("ci95 is an array");
        assert_eq!(pair.len(), 2, "{what}.ci95: [lo, hi]");
        let (lo, hi, x) =
            (pair[0].as_f64().expect("ci95 lo"), pair[1].as_f64().expect("ci95 hi"), mean.as_f64().unwrap());
        let eps = 1e-9 * x.abs().max(1.0);
        assert!(lo <= x + eps && x <= hi + eps, "{what}: mean {x} outside ci95 [{lo}, {hi}]");
    }
}

#[test]
fn summary_json_has_the_documented_shape() {
    let (_tmp, outs) = run_all(crate_root(), QUICKSTART, &[("quickstart", &["--replications", "3", "--jobs", "2"])]);
    let json = read_json(&outs[0]);
    assert_eq!(json["schema"], "retrysim.summary/1");
    // Written straight from the summaries, it is still the canonical form:
    // keys sorted, pretty printed as serde_json prints its own tree.
    let text = read(&outs[0], "summary.json");
    let canonical = serde_json::to_string_pretty(&json).unwrap() + "\n";
    assert!(text == canonical.as_bytes(), "summary.json differs from its canonical form");
    let variants = json["variants"].as_array().expect("variants is an array");
    assert_eq!(variants.len(), 4, "quickstart has four variants");
    for v in variants {
        let name = v["name"].as_str().expect("variant name is a string");
        let metrics = v["metrics"].as_object().unwrap_or_else(|| panic!("{name}: metrics is not an object"));
        for m in METRICS {
            assert!(metrics.contains_key(m), "{name}: metric {m} missing");
        }
        for (m, obj) in metrics {
            check_metric(&format!("{name}: metrics.{m}"), obj, 3);
        }
        for m in NOT_PRODUCED {
            let obj = &metrics[m];
            assert!(obj["mean"].is_null(), "{name}: {m}.mean is {} (want null)", obj["mean"]);
            assert!(obj["ci95"].is_null(), "{name}: {m}.ci95 is {} (want null)", obj["ci95"]);
            let values_null =
                obj["values"].is_null() || obj["values"].as_array().is_some_and(|a| a.iter().all(Value::is_null));
            assert!(values_null, "{name}: {m}.values is {} (want null)", obj["values"]);
        }
        // Produced metrics have a value in every replication.
        for m in ["intents", "success_rate", "attempts_per_intent", "amplification"] {
            let vs = metrics[m]["values"].as_array().unwrap();
            assert!(vs.iter().all(Value::is_number), "{name}: {m} = {vs:?}");
        }
        assert!(v["amplification_service"].is_string(), "{name}: amplification_service missing");
        for group in ["edges", "services"] {
            let items =
                v[group].as_object().unwrap_or_else(|| panic!("{name}: {group} is not an object: {}", v[group]));
            assert!(!items.is_empty(), "{name}: {group} is empty");
            for (item, ms) in items {
                let ms = ms.as_object().unwrap_or_else(|| panic!("{name}: {group}.{item} is not an object"));
                for (m, obj) in ms {
                    check_metric(&format!("{name}: {group}.{item}.{m}"), obj, 3);
                }
            }
        }
        assert!(v["latency_cdf"].as_array().is_some_and(|a| !a.is_empty()), "{name}: latency_cdf is missing or empty");
    }

    // timeseries.csv columns (DESIGN §5), for quickstart's one service `api`.
    let ts = read(&outs[0], "timeseries.csv");
    let mut rdr = csv::Reader::from_reader(ts.as_slice());
    let headers: Vec<String> = rdr.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(
        headers,
        [
            "variant",
            "replication",
            "t_s",
            "offered_per_s",
            "attempts_per_s",
            "goodput_per_s",
            "p99_s",
            "queue_len",
            "utilization",
            "wasted_per_s",
            "api.queue_len",
            "api.utilization",
            "api.wasted_per_s",
        ]
    );
}
