//! The fuzz harness: generated and mutated experiments, policies, configs,
//! traces, output folders, overrides and flags, driven through the command
//! line's entry point (`retrysim::cli::execute`, what the binary runs) in
//! this process, for every command (docs/reliability.md, section 11).
//!
//! Every case starts from a shipped experiment or policy, an exported
//! config, a small traced system (`fuzz/traces.rs`) or a finished run,
//! mutates it and adds overrides and flags drawn from pools of odd values
//! (huge, negative, NaN, "never", wrong types, dates, bad units, paths to
//! inputs, folders and devices), and asserts:
//!
//! - no panic (an abort, such as a stack overflow, ends this test binary);
//! - the exit status is 0, 1 or 2;
//! - an exit-2 message names where the bad input is (a file and usually a
//!   field, or a flag) and speaks the file format, not the program's types;
//! - no input file changed;
//! - after a successful `run`, the metrics in `summary.json` obey their
//!   invariants (shares in [0, 1], at least one attempt per intent, goodput
//!   at most the intents, intervals around their means);
//! - an experiment `import-traces` wrote loads, and a refusal leaves
//!   nothing behind; a policy `import` printed loads;
//! - no case runs for more than five minutes (a watchdog ends the harness).
//!
//! Cases are seeded, so a failure reproduces. `RETRYSIM_FUZZ_CASES` sets the
//! number of cases (default 2000), `RETRYSIM_FUZZ_SEED` the seed (default
//! 15); `RETRYSIM_FUZZ_KEEP_GOING=1` records failures and goes on (without
//! shrinking them) instead of stopping at the first. For a long local run,
//! with the figures printed at the end:
//!
//! ```sh
//! RETRYSIM_FUZZ_CASES=100000 RETRYSIM_FUZZ_SEED=7 cargo test --test fuzz -- --nocapture 2>&1 >/dev/null | grep '^fuzz:'
//! ```
//!
//! A case whose runs the estimate puts above a fraction of a second is
//! linted instead of run (`lint` still loads and validates everything), to
//! keep the harness at a few milliseconds per case.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use retrysim::config::messages::names_program_types;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

#[path = "fuzz/commands.rs"]
mod commands;
#[path = "fuzz/corpus.rs"]
mod corpus;
#[path = "fuzz/traces.rs"]
mod traces;

use corpus::{Fixture, VALUES, case, mutate};
use retrysim::output::export::Target;

/// What the harness saw, for the figures printed at the end.
#[derive(Default)]
struct Figures {
    cases: u64,
    by_code: BTreeMap<i32, u64>,
    by_command: BTreeMap<(String, i32), u64>,
    linted_for_time: u64,
    message_kinds: BTreeMap<String, u64>,
    /// With RETRYSIM_FUZZ_KEEP_GOING: failed cases, and the first 50 of them.
    failures: u64,
    failed: Vec<String>,
}

/// The kind of an exit-2 message, for the figures: where it points.
fn message_kind(msg: &str) -> String {
    let rest = msg.trim_start_matches("error: ");
    let source = rest.split(": ").next().unwrap_or("");
    let source = if source.starts_with("--") {
        source.split([' ', '=']).next().unwrap_or(source).to_string()
    } else if source.ends_with(".toml") {
        "file".into()
    } else if source.contains("/run/") || source.ends_with("/run") {
        "output folder".into()
    } else if source.ends_with(".jsonl") || source.ends_with(".cfg") {
        "input file".into()
    } else {
        source.chars().take(24).collect()
    };
    let field = if rest.contains("field `") { "+field" } else { "" };
    format!("{source}{field}")
}

/// Checks the metric invariants of a `summary.json`.
fn check_summary(path: &Path) -> Result<(), TestCaseError> {
    let text = std::fs::read_to_string(path).map_err(|e| TestCaseError::fail(format!("{}: {e}", path.display())))?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let window =
        doc["experiment"]["duration_s"].as_f64().unwrap_or(0.0) - doc["experiment"]["warmup_s"].as_f64().unwrap_or(0.0);
    for v in doc["variants"].as_array().into_iter().flatten() {
        let m = &v["metrics"];
        for (name, metric) in m.as_object().into_iter().flatten() {
            let mean = &metric["mean"];
            prop_assert!(mean.is_null() || mean.as_f64().is_some_and(f64::is_finite), "{name} mean {mean}");
            if let (Some(x), Some([lo, hi])) = (
                mean.as_f64(),
                metric["ci95"]
                    .as_array()
                    .map(|a| [a[0].as_f64().unwrap_or(f64::NAN), a[1].as_f64().unwrap_or(f64::NAN)]),
            ) {
                prop_assert!(lo <= x + 1e-9 && x <= hi + 1e-9, "{name}: {lo} <= {x} <= {hi}");
            }
        }
        let get = |k: &str| m[k]["mean"].as_f64();
        let intents = get("intents").unwrap_or(0.0);
        if intents > 0.0 {
            for share in ["success_rate", "wasted_fraction"] {
                if let Some(s) = get(share) {
                    prop_assert!((-1e-9..=1.0 + 1e-9).contains(&s), "{share} {s}");
                }
            }
            if let Some(a) = get("attempts_per_intent") {
                // Every intent sends a first attempt, unless a client-side
                // throttle refuses it or an open breaker fails it fast.
                let throttled = get("throttled_per_intent").unwrap_or(0.0);
                let reps = v["replications"].as_f64().unwrap_or(1.0).max(1.0);
                let fast = v["failures"]["breaker_open (failed fast)"].as_f64().unwrap_or(0.0) / reps;
                prop_assert!(
                    a + throttled + fast / intents >= 1.0 - 1e-9,
                    "attempts per intent {a}, throttled {throttled}, failed fast {fast} of {intents}"
                );
            }
            // Goodput is over the window, or for burst-only experiments over
            // the burst's completion time: per replication, either way, at
            // most the intents that arrived.
            let values = |k: &str| -> Vec<Option<f64>> {
                m[k]["values"].as_array().map(|a| a.iter().map(|x| x.as_f64()).collect()).unwrap_or_default()
            };
            let (goodput, arrived, completion) =
                (values("goodput_per_s"), values("intents"), values("burst_completion_s"));
            for (r, (g, n)) in goodput.iter().zip(&arrived).enumerate() {
                let (Some(g), Some(n)) = (*g, *n) else { continue };
                let over = |t: f64| g * t <= n * (1.0 + 1e-9) + 1e-6;
                let burst = completion.get(r).copied().flatten();
                prop_assert!(
                    (window > 0.0 && over(window)) || burst.is_some_and(over),
                    "replication {r}: goodput {g}/s over {window} s (burst completion {burst:?} s), {n} intents"
                );
            }
            if let Some(d) = get("duplicate_intents") {
                prop_assert!(d <= intents + 1e-9, "{d} duplicates of {intents} intents");
            }
        }
    }
    Ok(())
}

/// The case running and since when, for the watchdog.
static RUNNING: Mutex<Option<(std::time::Instant, Vec<String>)>> = Mutex::new(None);

/// A hang is a failure: a case that runs for more than five minutes ends
/// the harness, naming its command line.
fn watchdog() {
    std::thread::spawn(|| {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(5));
            if let Some((since, args)) = RUNNING.lock().unwrap().as_ref()
                && since.elapsed() > std::time::Duration::from_secs(300)
            {
                eprintln!("fuzz: HANG: {args:?} has run for {:.0} s", since.elapsed().as_secs_f64());
                std::process::abort();
            }
        }
    });
}

#[test]
fn fuzzed_inputs_never_crash_lose_inputs_or_break_invariants() {
    watchdog();
    let cases: u32 = std::env::var("RETRYSIM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let seed: u64 = std::env::var("RETRYSIM_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(15);
    let fixture = Fixture::new();
    let before = fixture.snapshot();
    let figures = Mutex::new(Figures::default());
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let exp_dir = fixture.dir.path().join("experiments");
    let started = std::time::Instant::now();
    let keep_going = std::env::var_os("RETRYSIM_FUZZ_KEEP_GOING").is_some();
    let result = runner.run(&case(), |c| {
        let outcome = (|| -> Result<(), TestCaseError> {
            let out = tempfile::tempdir().unwrap();
            let command = match c.command {
                0..40 => "run",
                40..48 => "lint",
                48..55 => "sweep",
                55..60 => "audit",
                60..66 => "export",
                66..68 => "tune",
                68..72 => "frontier",
                72..75 => "collapse-rate",
                75..81 => "import",
                81..87 => "import-traces",
                87..90 => "compare-traces",
                90..94 => "vectors",
                94..97 => "report",
                _ => "plot",
            };
            let mut args: Vec<String> = vec!["retrysim".into(), command.into()];
            let mut case_path = exp_dir.join("case.toml");
            let written: String;
            let built = match command {
                "vectors" => Some(commands::vectors(&fixture, &c, &exp_dir)),
                "import" => Some(commands::import(&fixture, &c, &exp_dir)),
                "import-traces" => Some(commands::import_traces(&fixture, &c, &exp_dir, out.path())),
                "compare-traces" => Some(commands::compare_traces(&fixture, &c, &exp_dir, out.path())),
                "report" | "plot" => Some(commands::report_or_plot(command, &fixture, &c, out.path())),
                _ => None,
            };
            if let Some(b) = built {
                args = b.args;
                case_path = b.case_path;
                written = b.written;
            } else if command == "export" {
                let (_, text) = &fixture.policies[c.base % fixture.policies.len()];
                let text = c.mutations.iter().fold(text.clone(), |t, &m| mutate(&t, m));
                std::fs::write(&case_path, &text).unwrap();
                written = text;
                args.push(case_path.display().to_string());
                args.push("--to".into());
                let targets = ["grpc", "envoy", "aws", "istio", "gateway-api", "linkerd", "resilience4j", "yaml"];
                args.push(targets[c.base % targets.len()].into());
                if c.flags.len() % 2 == 1 {
                    args.push("--strict".into());
                }
            } else {
                let (_, text, keys, variants) = if command == "tune" {
                    fixture.experiments.iter().find(|e| e.0 == "tune-sdk.toml").unwrap()
                } else {
                    &fixture.experiments[c.base % fixture.experiments.len()]
                };
                let text = c.mutations.iter().fold(text.clone(), |t, &m| mutate(&t, m));
                std::fs::write(&case_path, &text).unwrap();
                written = text;
                args.push(case_path.display().to_string());
                let mut sets: Vec<String> = c
                    .sets
                    .iter()
                    .map(|&(k, v)| {
                        let key = &keys[k % keys.len()];
                        // Half of the values are ones the shipped files use for this key.
                        let last = key.rsplit('.').next().unwrap_or(key);
                        let value = match fixture.observed.get(last) {
                            Some(seen) if v % 2 == 0 => seen[(v / 2) % seen.len()].clone(),
                            _ => VALUES[v % VALUES.len()].to_string(),
                        };
                        format!("{key}={value}")
                    })
                    .collect();
                for &(flag, v) in &c.flags {
                    let pick = |list: &[&str]| list[v % list.len()].to_string();
                    let variant = variants.get(v % variants.len().max(1)).cloned().unwrap_or_else(|| "nope".into());
                    let pair: Option<(&str, String)> = match (command, flag % 8) {
                        (_, 0) => Some(("--seed", pick(&["0", "1", "18446744073709551615", "-1", "x"]))),
                        ("run" | "sweep", 1) => Some(("--replications", pick(&["0", "1", "2", "3", "x"]))),
                        ("frontier", 1) => Some(("--trigger", pick(&["spike", "brownout", "slowdown", "outage", "x"]))),
                        ("frontier", 2) => {
                            Some(("--size", pick(&["1,2", "1..2:2", "0.5", "1..6", "x", "2,1", "0..1:2", "0s,5s"])))
                        }
                        ("frontier", 3) => Some(("--at", pick(&["1s", "0s", "-1s", "x", "100y"]))),
                        ("frontier", 4) => Some(("--variant", pick(&[&variant, "nope"]))),
                        ("frontier", 5) => Some(("--length", pick(&["1s", "0s", "1s,2s", "x"]))),
                        ("collapse-rate", 1) => Some(("--method", pick(&["direct", "splitting", "auto", "x"]))),
                        ("collapse-rate", 2) => Some(("--levels", pick(&["5,10", "10,5", "0", "x", "100000"]))),
                        ("collapse-rate", 3) => Some(("--trials", pick(&["10", "9", "x"]))),
                        ("collapse-rate", 4) => Some(("--check", pick(&["100ms", "0s", "x"]))),
                        ("collapse-rate", 5) => Some(("--variant", pick(&[&variant, "nope"]))),
                        ("run" | "sweep", 2) => Some(("--variant", pick(&[&variant, &variant, "nope"]))),
                        ("run", 3) => Some(("--trace", pick(&["T", "T", "case.toml", "O", "/dev/null"]))),
                        ("run", 4) => Some(("--trace-sample", pick(&["0.5", "1", "0", "2", "nan", "0.001"]))),
                        ("run", 5) => Some(("--baseline", pick(&[&variant, "nope"]))),
                        ("run", 6) => Some(("--precision", pick(&["0.5", "0", "2", "nan", "0.5pp", "100pp", "xpp"]))),
                        ("sweep", 3..=5) => {
                            let key = &keys[v % keys.len()];
                            let spec = match v % 5 {
                                0 => format!("{}..{}:2", VALUES[v % VALUES.len()], VALUES[(v / 7) % VALUES.len()]),
                                1 => "1..2:3".to_string(),
                                _ => format!("{},{}", VALUES[v % VALUES.len()], VALUES[(v / 3) % VALUES.len()]),
                            };
                            Some(("--param", format!("{key}={spec}")))
                        }
                        ("sweep", 6) => Some((
                            "--knee",
                            pick(&["success_rate>=0.9", "latency_p99_s<1", "success_rate>=nan", "x>1", "bad"]),
                        )),
                        ("sweep", 7) => Some(("--shard", pick(&["1/2", "2/2", "3/2", "0/1", "x"]))),
                        ("audit", 2) => Some(("--variant", variant)),
                        ("tune", 1) => Some(("--candidates", pick(&["1", "2", "0", "x"]))),
                        ("tune", 2) => Some((
                            "--emit",
                            pick(&["E", "E", "normal-day.toml", "case.toml", "../policies/grpc-default.toml", "O"]),
                        )),
                        ("tune", 3) => Some(("--halving", String::new())),
                        (_, 7) => Some(("--format", pick(&["json", "csv", "markdown", "table", "xml"]))),
                        (_, 6) => Some(("--jobs", pick(&["1", "2", "0", "100000"]))),
                        _ => None,
                    };
                    if let Some((name, value)) = pair {
                        let value = match value.as_str() {
                            "T" => out.path().join("trace.jsonl").display().to_string(),
                            "O" => out.path().display().to_string(),
                            "E" => out.path().join("tuned.toml").display().to_string(),
                            "case.toml" | "normal-day.toml" => exp_dir.join(&value).display().to_string(),
                            "../policies/grpc-default.toml" => exp_dir.join(&value).display().to_string(),
                            _ => value,
                        };
                        args.push(name.into());
                        if name != "--halving" {
                            args.push(value);
                        }
                    }
                }
                if command == "sweep" && !args.iter().any(|a| a == "--param") {
                    args.extend(["--param".into(), "experiment.load_scale=0.5,1".into()]);
                }
                if command == "frontier" {
                    sets.push("experiment.load_scale=0.05".into());
                    // A short trigger and horizon at a twentieth of the load.
                    for (flag, value) in [
                        ("--trigger", "spike"),
                        ("--size", "1,2"),
                        ("--length", "1s"),
                        ("--horizon", "5s"),
                        ("--stop-collapsed", "2s"),
                        ("--replications", "1"),
                    ] {
                        if !args.iter().any(|a| a == flag) {
                            args.extend([flag.into(), value.into()]);
                        }
                    }
                }
                if command == "collapse-rate" {
                    // One batch of short runs at a twentieth of the load.
                    args.extend(["--hours", "0.001", "--max-hours", "0.002"].map(String::from));
                    if !args.iter().any(|a| a == "--trials") {
                        args.extend(["--trials".into(), "10".into()]);
                    }
                    sets.extend(
                        ["experiment.duration=35s", "experiment.warmup=0s", "experiment.load_scale=0.05"]
                            .map(String::from),
                    );
                }
                if command == "tune" && !args.iter().any(|a| a == "--candidates") {
                    args.extend(["--candidates".into(), "2".into()]);
                }
                if matches!(command, "run" | "sweep" | "tune") && !args.iter().any(|a| a == "--replications") {
                    args.extend(["--replications".into(), "1".into()]);
                }
                if c.short && !matches!(command, "collapse-rate" | "frontier") {
                    // Short runs: 2 s, or, where rate schedules and faults are
                    // timed in the experiment's own minute, 5% of its load.
                    let timed = ["at = ", "scenarios"].iter().any(|w| written.contains(w));
                    let short: &[&str] = if timed {
                        &["experiment.load_scale=0.05", "experiment.drain_limit=20s"]
                    } else {
                        &["experiment.duration=2s", "experiment.warmup=0s", "experiment.drain_limit=20s"]
                    };
                    sets.extend(short.iter().map(|s| s.to_string()));
                }
                // A case the estimate puts above a fraction of a second is linted instead.
                if matches!(command, "run" | "sweep" | "audit" | "tune" | "frontier" | "collapse-rate")
                    && let Ok(exp) = retrysim::config::load_experiment(&case_path, &sets)
                {
                    let events: f64 = exp
                        .variants
                        .iter()
                        .map(|v| retrysim::analysis::estimate::estimate(v, 1.0).events * v.replications.min(3) as f64)
                        .sum();
                    let factor = match command {
                        "audit" => 12.0,
                        "sweep" => 8.0,
                        "tune" => 12.0,
                        "frontier" => 6.0,
                        "collapse-rate" => 40.0,
                        _ => 1.0,
                    };
                    if events.is_nan() || events * factor > 3e6 {
                        args[1] = "lint".into();
                        args.retain(|a| !a.starts_with("--") || a == "--set" || a == "--format");
                        args.truncate(3);
                        figures.lock().unwrap().linted_for_time += 1;
                    }
                }
                for s in sets {
                    args.push("--set".into());
                    args.push(s);
                }
                if matches!(args[1].as_str(), "run" | "sweep" | "audit" | "tune" | "frontier" | "collapse-rate") {
                    args.push("-q".into());
                    args.extend(["--out".into(), out.path().join("out").display().to_string()]);
                    if !c.plots && args[1] != "audit" {
                        args.push("--no-plots".into());
                    }
                }
            }
            *RUNNING.lock().unwrap() = Some((std::time::Instant::now(), args.clone()));
            let outcome = retrysim::cli::execute(args.clone());
            *RUNNING.lock().unwrap() = None;
            let code = outcome.code;
            {
                let mut f = figures.lock().unwrap();
                f.cases += 1;
                if f.cases.is_multiple_of(5000) {
                    eprintln!(
                        "fuzz: progress {} cases in {:.0} s; exit codes {:?}; failed {}",
                        f.cases,
                        started.elapsed().as_secs_f64(),
                        f.by_code,
                        f.failures
                    );
                }
                *f.by_code.entry(code).or_default() += 1;
                *f.by_command.entry((args[1].clone(), code)).or_default() += 1;
                if let Some(msg) = &outcome.error
                    && code == 2
                {
                    *f.message_kinds.entry(message_kind(msg)).or_default() += 1;
                }
            }
            prop_assert!([0, 1, 2].contains(&code), "exit {code} for {args:?}: {:?}", outcome.error);
            if code == 2 {
                let msg = outcome.error.clone().unwrap_or_default();
                let rest = msg.trim_start_matches("error: ");
                // Where the bad input is: a file (with a field unless the whole
                // file is bad), a flag, an output path, or the command whose
                // estimate refused.
                let names_source = rest.contains("field `")
                    || rest.starts_with("--")
                    || rest.starts_with('-')
                    || rest.starts_with("invalid value")
                    || rest.starts_with("unexpected argument")
                    || rest.starts_with("the argument")
                    || rest.starts_with("a value is required")
                    || rest.starts_with("unrecognized subcommand")
                    || rest.starts_with("the following required arguments")
                    || rest.starts_with("refusing to write")
                    || rest.starts_with("cannot write")
                    || ["run: ", "sweep: ", "audit: ", "tune: "].iter().any(|p| rest.starts_with(p))
                    || rest.starts_with(&*exp_dir.to_string_lossy())
                    || rest.starts_with(&*fixture.dir.path().to_string_lossy())
                    || rest.starts_with(&*out.path().to_string_lossy());
                prop_assert!(names_source, "exit 2 without a source for {args:?}: {msg}");
                if rest.starts_with(&*case_path.to_string_lossy())
                    && case_path.extension().is_some_and(|e| e == "toml")
                    && !rest.contains("field `")
                {
                    let whole = [
                        "missing",
                        "not valid TOML",
                        "cannot read",
                        "larger than",
                        "not UTF-8",
                        "is not",
                        "needs",
                        "has no",
                        "must",
                        "no ",
                        "variant \"",
                    ]
                    .iter()
                    .any(|w| rest.contains(w));
                    prop_assert!(whole, "a file-level message that names no field: {msg}");
                }
                prop_assert!(!names_program_types(&msg), "the program's types in {args:?}: {msg}");
            }
            if code == 0 && args[1] == "run" && command != "compare-traces" {
                check_summary(&out.path().join("out").join("summary.json"))?;
            }
            if command == "import-traces" {
                // What was written loads; a refusal leaves nothing behind.
                let exp = out.path().join("exp.toml");
                if code == 0 {
                    let loaded = retrysim::config::load_experiment(&exp, &[]);
                    prop_assert!(loaded.is_ok(), "the imported experiment does not load: {:?}", loaded.err());
                } else {
                    prop_assert!(
                        !exp.exists() && !out.path().join("exp.traces").exists(),
                        "a refused import left files behind: {args:?}"
                    );
                }
            }
            if command == "import" && code == 0 {
                // The policy printed (the library's import) loads as a policy file.
                let from = &args[4];
                let target = match from.as_str() {
                    "grpc" => Target::Grpc,
                    "envoy" => Target::Envoy,
                    "aws" => Target::Aws,
                    "istio" => Target::Istio,
                    "gateway-api" => Target::GatewayApi,
                    _ => Target::Linkerd,
                };
                let imported = retrysim::import::import(&written, target, "case.cfg", "case")
                    .map_err(|e| TestCaseError::fail(format!("import exit 0 but the library refuses: {e}")))?;
                let text = retrysim::policy::file::to_toml(&imported.policy);
                prop_assert!(
                    retrysim::policy::Policy::from_toml(&text, "printed").is_ok(),
                    "the printed policy does not load: {text}"
                );
            }
            let now = fixture.snapshot();
            for (path, bytes) in &before {
                if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("case.")) {
                    continue;
                }
                prop_assert!(now.get(path) == Some(bytes), "{} changed: {args:?}", path.display());
            }
            let case_now = std::fs::read(&case_path).unwrap_or_default();
            prop_assert!(case_now == written.as_bytes(), "the case's own file changed: {args:?}");
            Ok(())
        })();
        match outcome {
            Err(e) if keep_going => {
                let mut f = figures.lock().unwrap();
                f.failures += 1;
                if f.failed.len() < 50 {
                    f.failed.push(format!("{e} in {c:?}"));
                }
                Ok(())
            }
            other => other,
        }
    });
    let f = figures.lock().unwrap();
    eprintln!(
        "fuzz: {} cases (seed {seed}) in {:.1} s; exit codes {:?}; linted instead of run for time: {}",
        f.cases,
        started.elapsed().as_secs_f64(),
        f.by_code,
        f.linted_for_time
    );
    eprintln!("fuzz: by command and exit: {:?}", f.by_command);
    eprintln!("fuzz: exit-2 messages by source: {:?}", f.message_kinds);
    for failure in &f.failed {
        eprintln!("fuzz: FAILED {failure}");
    }
    assert_eq!(f.failures, 0, "{} cases failed (RETRYSIM_FUZZ_KEEP_GOING)", f.failures);
    if let Err(e) = result {
        panic!("{e}");
    }
}
