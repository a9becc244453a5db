//! `retrysim frontier`: the analytic recovery boundary μ/(1+R) of immediate
//! retries, a boundary that falls as load rises and as the trigger gets
//! longer for every shipped defence, and shards that merge into the
//! unsharded files byte for byte; `plot` and `report` on its folder.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const FRONTIER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/frontier.toml");

fn retrysim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn frontier(args: &[&str], out: &Path) -> Value {
    let mut all: Vec<&str> = vec!["frontier"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-q", "--no-plots", "--out", out.to_str().unwrap()]);
    let (code, _, err) = retrysim(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&std::fs::read_to_string(out.join("frontier.json")).unwrap()).unwrap()
}

/// The capacity-cliff service without its stall: 1000 requests/s of
/// capacity, 100 intents/s at load_scale 1, 3 immediate retries on timeout.
const CLIFF: &str = r#"# Question: where is the recovery boundary of immediate retries?
[experiment]
name = "cliff"
duration = "60s"
warmup = "5s"
seed = 3
replications = 5

[[clients]]
name = "web"
count = 1000
rate = "100/s"
target = "api"
operation = "search"
policy = { max_attempts = 4, per_try_timeout = "300ms", retry_on = ["timeout"] }

[[operations]]
name = "search"
idempotent = true

[[services]]
name = "api"
workers = 10
service_time = { dist = "exp", mean = "10ms" }
"#;

fn rows(doc: &Value) -> Vec<Value> {
    doc["rows"].as_array().unwrap().clone()
}

#[test]
fn immediate_retries_recover_from_any_spike_below_capacity_over_one_plus_retries_and_not_above() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("cliff.toml");
    std::fs::write(&exp, CLIFF).unwrap();
    // μ = 1000/s, R = 3: the boundary load is 250/s = load_scale 2.5. At
    // 150/s a spike of up to 12x (1800/s for 5 s, far past capacity) must
    // leave no boundary; at 300/s a finite one, above no trigger at all.
    let doc = frontier(
        &[exp.to_str().unwrap(), "--trigger", "spike", "--size", "1..12:12", "--length", "5s", "--load", "1.5,3"],
        &dir.path().join("out"),
    );
    assert_eq!(doc["schema"], "retrysim.frontier/1");
    let r = rows(&doc);
    assert_eq!(r.len(), 2);
    assert!(r[0]["boundary"].is_null(), "150/s must recover from every spike: {}", r[0]);
    assert!(r[0]["thresholds"].as_array().unwrap().iter().all(Value::is_null), "{}", r[0]);
    let b = r[1]["boundary"].as_f64().expect("300/s has a finite boundary");
    assert!(b > 1.0 && b <= 12.0, "{}", r[1]);
    let csv = std::fs::read_to_string(dir.path().join("out/frontier.csv")).unwrap();
    assert!(
        csv.starts_with("variant,load_scale,length_s,trigger,utilization,boundary,boundary_lo,boundary_hi,"),
        "{csv}"
    );
    // Sentences name the load as a share of capacity.
    assert!(r[1]["sentence"].as_str().unwrap().starts_with("at 30% load (load_scale 3), a spike of"), "{}", r[1]);
}

/// `a` is not above `b` within the intervals: a's boundary is at most b's
/// upper bound (an empty boundary is infinite).
fn not_above(a: &Value, b: &Value) -> bool {
    let inf = |v: &Value| v.as_f64().unwrap_or(f64::INFINITY);
    inf(&a["boundary"]) <= inf(&b["boundary_hi"]).max(inf(&b["boundary"]))
}

#[test]
fn the_boundary_falls_as_load_rises_and_as_the_trigger_gets_longer_for_every_shipped_defence() {
    let dir = tempfile::tempdir().unwrap();
    let doc = frontier(
        &[
            FRONTIER,
            "--trigger",
            "spike",
            "--size",
            "1..4:13",
            "--length",
            "3s,10s",
            "--load",
            "0.8,1",
            "--at",
            "15s",
            "--stop-collapsed",
            "20s",
            "--replications",
            "5",
        ],
        dir.path(),
    );
    let r = rows(&doc);
    let variants = doc["experiment"]["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 6);
    assert_eq!(r.len(), 6 * 2 * 2);
    let mut finite = 0;
    for v in variants {
        let mine: Vec<&Value> = r.iter().filter(|x| x["variant"] == *v).collect();
        let at = |load: f64, length: f64| {
            *mine.iter().find(|x| x["load_scale"] == load && x["length_s"] == length).expect("row")
        };
        for length in [3.0, 10.0] {
            assert!(not_above(at(1.0, length), at(0.8, length)), "{v}: higher load, higher boundary: {mine:?}");
        }
        for load in [0.8, 1.0] {
            assert!(not_above(at(load, 10.0), at(load, 3.0)), "{v}: longer trigger, higher boundary: {mine:?}");
        }
        finite += mine.iter().filter(|x| x["boundary"].as_f64().is_some_and(|b| b > 0.0)).count();
    }
    // Immediate retries at 70% load have a finite boundary (the test is not vacuous).
    let immediate = r.iter().find(|x| x["variant"] == "immediate retries" && x["load_scale"] == 1.0).unwrap();
    assert!(immediate["boundary"].as_f64().is_some_and(|b| b > 1.0), "{immediate}");
    assert!(finite >= 4, "only {finite} finite boundaries");
}

#[test]
fn shards_merge_into_the_unsharded_frontier_byte_for_byte_and_plot_and_report_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        FRONTIER,
        "--trigger",
        "outage",
        "--size",
        "0s..8s:9",
        "--load",
        "0.9,1",
        "--variant",
        "immediate retries",
        "--variant",
        "LIFO queue",
        "--at",
        "15s",
        "--horizon",
        "60s",
        "--replications",
        "3",
    ];
    let whole = dir.path().join("whole");
    frontier(&args, &whole);
    let mut shards = Vec::new();
    for k in 1..=3 {
        let out = dir.path().join(format!("shard{k}"));
        let mut a = args.to_vec();
        let shard = format!("{k}/3");
        a.extend_from_slice(&["--shard", &shard, "--jobs", "1"]);
        frontier(&a, &out);
        assert!(out.join("shard.json").is_file());
        shards.push(out.to_str().unwrap().to_string());
    }
    let merged = dir.path().join("merged");
    let mut m: Vec<&str> = vec!["merge"];
    m.extend(shards.iter().map(String::as_str));
    m.extend_from_slice(&["--out", merged.to_str().unwrap(), "-q"]);
    let (code, _, err) = retrysim(&m);
    assert_eq!(code, 0, "{err}");
    for f in ["frontier.json", "frontier.csv"] {
        assert_eq!(std::fs::read(whole.join(f)).unwrap(), std::fs::read(merged.join(f)).unwrap(), "{f}");
    }
    assert!(merged.join("frontier.png").is_file() && merged.join("frontier.svg").is_file());
    // An incomplete set is refused.
    let (code, _, err) =
        retrysim(&["merge", &shards[0], &shards[1], "--out", dir.path().join("bad").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("missing 3/3"), "{err}");
    // plot and report work on the folder.
    let (code, _, err) = retrysim(&["plot", whole.to_str().unwrap(), "-q"]);
    assert_eq!(code, 0, "{err}");
    assert!(whole.join("frontier.png").is_file());
    let (code, _, err) = retrysim(&["report", whole.to_str().unwrap(), "-q"]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(whole.join("report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("does not recover"), "report without chart or sentences");
}

#[test]
fn bad_frontier_input_is_refused_with_the_flag_named() {
    let cliff = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/capacity-cliff.toml");
    let (code, _, err) =
        retrysim(&["frontier", cliff, "--trigger", "spike", "--no-plots", "-q", "--out", "/nonexistent/x"]);
    assert_eq!(code, 2);
    assert!(err.contains("fault or a change of arrival rate"), "{err}");
    let (code, _, err) = retrysim(&["frontier", FRONTIER, "--trigger", "brownout", "--size", "0..2:3"]);
    assert_eq!(code, 2);
    assert!(err.contains("--size 0..2:3") && err.contains("from 0 to 1"), "{err}");
    let (code, _, err) = retrysim(&["frontier", FRONTIER, "--trigger", "spike", "--at", "1s"]);
    assert_eq!(code, 2);
    assert!(err.contains("--at 1s"), "{err}");
    let (code, _, err) = retrysim(&["frontier", FRONTIER, "--trigger", "burst", "--size", "10,12.5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--size 10,12.5") && err.contains("whole numbers"), "{err}");
    // A burst may arrive at once; a spike may not.
    let (code, _, err) = retrysim(&["frontier", FRONTIER, "--trigger", "spike", "--length", "0s"]);
    assert_eq!(code, 2);
    assert!(err.contains("--length 0s") && err.contains("longer than 0s"), "{err}");
}

#[test]
fn the_anatomy_of_a_boundary_collapse_names_abandoned_work_as_what_keeps_it_down() {
    let dir = tempfile::tempdir().unwrap();
    let doc = frontier(
        &[
            FRONTIER,
            "--trigger",
            "spike",
            "--size",
            "1.25,1.5,2",
            "--variant",
            "immediate retries",
            "--at",
            "15s",
            "--replications",
            "6",
            "--anatomy",
            "60s",
        ],
        dir.path(),
    );
    let row = &rows(&doc)[0];
    // Half the replications stop recovering between 1.25x and 1.5x: the grid
    // says 1.5x, the fitted crossing lies inside that cell.
    assert_eq!(row["median_threshold"].as_f64(), Some(1.5), "{row}");
    let b = row["boundary"].as_f64().unwrap();
    assert!(b > 1.25 && b <= 1.5, "{row}");
    assert_eq!(row["grid_step"].as_f64(), Some(0.25), "{row}");
    let a = row["anatomy"].as_array().expect("anatomy");
    let get = |m: &str| a.iter().find(|c| c["switched_off"] == m).unwrap_or_else(|| panic!("{m}: {a:?}"));
    let as_is = a.iter().find(|c| c["switched_off"].is_null()).unwrap();
    // As it is, the collapse holds: retries keep 3 extra attempts per intent.
    assert!(as_is["recovered_after_s"].is_null(), "{as_is}");
    assert!(as_is["excess_per_s"].as_f64().unwrap() > 1000.0, "{as_is}");
    // Without retries there is no excess load at all.
    assert!(get("retries")["share_of_excess"].as_f64().unwrap() > 0.95);
    // Cancelling abandoned attempts empties the queue of wasted work: it recovers.
    assert!(get("wasted_work")["recovered_after_s"].as_f64().is_some(), "{a:?}");
}

/// The bisection takes each replication's outcome to change once along the
/// sizes. A spike's arrivals are thinned from the largest size's, so every
/// size shares the same candidate arrivals and every intent its random
/// numbers; on sample replications a full grid of sizes agrees with the
/// bisection: every size below the threshold recovers, every size from it on
/// does not. The curve of frontier.json is then the share of replications
/// whose threshold is at or below each size.
#[test]
fn a_full_grid_of_sizes_agrees_with_the_bisection_on_sample_replications() {
    use retrysim::analysis::frontier::{Judging, Threshold, Trigger, TriggerKind, Verdict, judge, search};
    use retrysim::config::load_experiment;
    let exp = load_experiment(Path::new(FRONTIER), &[]).unwrap();
    let judging = Judging { horizon: 60_000_000_000, stop_collapsed: 15_000_000_000 };
    let sizes: Vec<f64> = (0..9).map(|i| 1.0 + 0.5 * i as f64).collect();
    let mut disagreements = Vec::new();
    for variant in ["immediate retries", "shared retry budget", "LIFO queue"] {
        let s = exp.variants.iter().find(|v| v.variant == variant).unwrap();
        for rep in 0..2u32 {
            let trigger = Trigger {
                kind: TriggerKind::Spike,
                target: 0,
                at: 35_000_000_000,
                length: 10_000_000_000,
                size: 1.0,
                ceiling: 5.0,
            };
            let found = search(s, trigger, &sizes, rep, judging);
            let collapses: Vec<bool> = sizes
                .iter()
                .map(|&size| {
                    let t = Trigger { size, ..trigger };
                    judge(&t.apply(s, judging.horizon), rep, t.window(), judging).0 != Verdict::Recovered
                })
                .collect();
            let threshold = found.threshold.value();
            for (&size, &c) in sizes.iter().zip(&collapses) {
                if c != (size >= threshold) {
                    disagreements.push(format!("{variant} rep {rep} size {size}: grid {c}, threshold {threshold}"));
                }
            }
            if let Threshold::At(t) = found.threshold {
                assert!(sizes.contains(&t));
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    // The curve in frontier.json.
    let dir = tempfile::tempdir().unwrap();
    let doc = frontier(
        &[FRONTIER, "--trigger", "spike", "--size", "1..5:9", "--variant", "LIFO queue", "--replications", "4"],
        dir.path(),
    );
    let row = &rows(&doc)[0];
    let curve = row["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 9);
    let thresholds: Vec<f64> =
        row["thresholds"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap_or(f64::INFINITY)).collect();
    for p in curve {
        let size = p["size"].as_f64().unwrap();
        let k = thresholds.iter().filter(|&&t| t <= size).count() as f64;
        assert_eq!(p["p_no_recovery"].as_f64().unwrap(), k / 4.0, "{p}");
        let ci = p["ci95"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= k / 4.0 && k / 4.0 <= ci[1].as_f64().unwrap());
    }
}

#[test]
fn out_is_the_folder_the_files_go_into_and_the_help_names_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out/frontier");
    let (code, _, err) = retrysim(&[
        "frontier",
        FRONTIER,
        "--trigger",
        "spike",
        "--size",
        "1,2",
        "--set",
        "experiment.replications=2",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for file in ["frontier.json", "frontier.csv", "frontier.png"] {
        assert!(out.join(file).is_file(), "no {file} in --out");
    }
    assert!(!out.join("frontier").exists(), "a folder nested in --out");
    // Without --out: out/<experiment-stem>/frontier/, as the help says, and
    // out/frontier/ (not out/frontier/frontier/) for frontier.toml.
    let (_, help, _) = retrysim(&["frontier", "--help"]);
    let help: String = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("[default: out/<experiment-stem>/frontier/; out/frontier/ for frontier.toml]"), "{help}");
    use retrysim::cli::run::default_out_of;
    assert_eq!(default_out_of(Path::new("experiments/frontier.toml"), "frontier"), Path::new("out/frontier"));
    assert_eq!(default_out_of(Path::new("x/metastable.toml"), "frontier"), Path::new("out/metastable/frontier"));
}

/// One host with one worker (exponential service, rate μ), Poisson arrivals
/// (λ), every answer reset with probability e and retried at once, a memory
/// limit of M queued requests and no restart: the number of requests at the
/// host is a birth–death chain (up at λ, down at μ(1 − e)) absorbed at
/// U = M + 2 in the host (M + 1 queued: the crash, never recovered) and,
/// in effect, at 0 (drained: recovered).
const RUIN: &str = r#"# Question: does a burst of k intents crash the host as often as gambler's ruin says?
[experiment]
name = "ruin"
duration = "60s"
warmup = "5s"
seed = 7
replications = 2000

[[clients]]
name = "users"
rate = "40/s"
target = "db"
operation = "write"
policy = { max_attempts = 12, per_try_timeout = "1h", retry_on = ["reset"] }

[[operations]]
name = "write"
idempotent = true

[[services]]
name = "db"
workers = 1
service_time = { dist = "exp", mean = "10ms" }
memory_limit = 23
restart_after = "never"

[[faults]]
kind = "reset"
target = "db"
probability = 0.2

[network]
latency = { dist = "const", value = "0ms" }
"#;

/// P(no recovery | a burst of k): the host holds n₀ requests at the burst,
/// from the chain's stationary law (1 − ρ)ρ^n₀ with ρ = λ / μ(1 − e); the
/// burst takes it to j = n₀ + k, and from j the chain reaches U before 0
/// with the gambler's-ruin probability (r^j − 1)/(r^U − 1), r = 1/ρ (1 from
/// U on). A cap of 12 attempts ends an intent early with probability
/// e^11 ≈ 2·10⁻⁸, and the stationary chain reaches U before the burst or
/// within the horizon with probability about 10⁻⁴: both are left out.
fn gamblers_ruin(k: u32) -> f64 {
    let (lambda, mu, e, m) = (40.0f64, 100.0f64, 0.2f64, 23u32);
    let rho = lambda / (mu * (1.0 - e));
    let u = m + 2;
    let r = 1.0 / rho;
    let ruin = |j: u32| if j >= u { 1.0 } else { (r.powi(j as i32) - 1.0) / (r.powi(u as i32) - 1.0) };
    (0..200).map(|n0| (1.0 - rho) * rho.powi(n0 as i32) * ruin(n0 + k)).sum()
}

#[test]
fn the_share_of_bursts_not_recovered_from_is_gamblers_ruin_at_three_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("ruin.toml");
    std::fs::write(&exp, RUIN).unwrap();
    let doc = frontier(
        &[exp.to_str().unwrap(), "--trigger", "burst", "--size", "20..25:6", "--at", "15s", "--horizon", "20s"],
        &dir.path().join("out"),
    );
    let row = &rows(&doc)[0];
    let curve = row["curve"].as_array().unwrap();
    for k in [22u32, 23, 24] {
        let point = curve.iter().find(|p| p["size"].as_f64() == Some(k as f64)).unwrap();
        let (p, lo, hi) = (
            point["p_no_recovery"].as_f64().unwrap(),
            point["ci95"][0].as_f64().unwrap(),
            point["ci95"][1].as_f64().unwrap(),
        );
        let exact = gamblers_ruin(k);
        assert_eq!(point["runs"].as_u64(), Some(2000));
        assert!(lo <= exact && exact <= hi, "burst of {k}: P(no recovery) {p} (95% {lo}–{hi}), gambler's ruin {exact}");
    }
    // The exact values the interval has to hold: 5/16, 1/2, 3/4.
    assert!((gamblers_ruin(22) - 0.3125).abs() < 1e-6 && (gamblers_ruin(24) - 0.75).abs() < 1e-6);
    let sentence = row["sentence"].as_str().unwrap();
    assert!(sentence.contains("a burst of 2") && sentence.contains(" intents to db at once"), "{sentence}");
}
