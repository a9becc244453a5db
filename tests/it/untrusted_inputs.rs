//! Inputs a user or a tool wrote that are odd, hostile or huge: every
//! command answers them with a result that loads or with a clear refusal
//! (exit 2 naming the file, the field or the flag), never with a panic, a
//! hang, unbounded memory or a silent default.
//!
//! Each case runs the real binary with a deadline, and kills it (SIGKILL)
//! when it has not ended by then, so that a hang fails the test instead of
//! stalling the suite.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a run of the binary gave.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `retrysim ARGS` in `dir`, killing it after `secs` seconds.
fn retrysim_in(dir: &Path, secs: u64, args: &[&str]) -> Ran {
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(dir)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes on threads, so a chatty child never blocks on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut s).ok();
        s
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(secs) {
            child.kill().ok();
            child.wait().ok();
            panic!("retrysim {args:?} did not end within {secs} s (a hang)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
    }
}

/// Policy names with characters Rust's debug format escapes in its own way
/// (`\u{202e}`), which is no TOML or YAML.
const ODD_NAMES: &[&str] =
    &["a\u{202e}b", "zero\u{200b}width", "soft\u{ad}hyphen", "bell\u{7}", "\u{301}combining", "quote\"back\\slash"];

#[test]
fn policy_names_with_any_character_are_written_as_toml_and_yaml_read_them() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in ODD_NAMES.iter().enumerate() {
        let policy =
            format!("name = {}\nmax_attempts = 3\nper_try_timeout = \"1s\"\n", toml::Value::String(name.to_string()));
        let file = dir.path().join(format!("p{i}.toml"));
        std::fs::write(&file, &policy).unwrap();
        let f = file.to_str().unwrap();
        // vectors re-writes the policy for every case, and must read it back.
        let r = retrysim_in(dir.path(), 60, &["vectors", f]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let text = doc["cases"][0]["policy"].as_str().unwrap();
        let back: toml::Table = text.parse().unwrap_or_else(|e| panic!("{name:?}: {e}\n{text}"));
        assert_eq!(back["name"].as_str(), Some(*name));
        // Every export that carries the name carries it exactly: the
        // Linkerd annotation, read back by the import.
        let r = retrysim_in(dir.path(), 30, &["export", f, "--to", "linkerd"]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{}", r.stdout));
        assert_eq!(yaml["metadata"]["annotations"]["retrysim.io/policy"].as_str(), Some(*name), "{}", r.stdout);
        let exported = dir.path().join(format!("p{i}.linkerd.yaml"));
        std::fs::write(&exported, &r.stdout).unwrap();
        let r = retrysim_in(dir.path(), 30, &["import", exported.to_str().unwrap(), "--from", "linkerd"]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let back: toml::Table = r.stdout.parse().unwrap_or_else(|e| panic!("{name:?}: {e}\n{}", r.stdout));
        assert_eq!(back["name"].as_str(), Some(*name));
        // An Istio VirtualService whose metadata.name is odd imports as a
        // policy file that loads.
        let vs = format!(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata:\n  name: {}\nspec:\n  hosts: [backend]\n  http:\n  - route:\n    - destination: {{ host: backend }}\n    retries: {{ attempts: 2, perTryTimeout: 1s, retryOn: \"5xx\" }}\n",
            serde_json::Value::String(name.to_string())
        );
        let vs_file = dir.path().join(format!("vs{i}.yaml"));
        std::fs::write(&vs_file, vs).unwrap();
        let r = retrysim_in(dir.path(), 30, &["import", vs_file.to_str().unwrap(), "--from", "istio"]);
        assert_eq!(r.code, 0, "{name:?}: {}", r.stderr);
        let back: toml::Table = r.stdout.parse().unwrap_or_else(|e| panic!("{name:?}: {e}\n{}", r.stdout));
        assert_eq!(back["name"].as_str(), Some(*name));
    }
}

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `retrysim ARGS` run from the repository, with a deadline.
fn retrysim(secs: u64, args: &[&str]) -> Ran {
    retrysim_in(Path::new(ROOT), secs, args)
}

/// Asserts an exit-2 refusal whose message holds every one of `words`.
fn refused(r: &Ran, words: &[&str]) {
    assert_eq!(r.code, 2, "{}", r.stderr);
    for w in words {
        assert!(r.stderr.contains(w), "{w:?} not in: {}", r.stderr);
    }
}

/// The quick start with `extra` appended, in `dir`.
fn quickstart_with(dir: &Path, extra: &str) -> String {
    let text = std::fs::read_to_string(format!("{ROOT}/experiments/quickstart.toml"))
        .unwrap()
        .replace("\"../policies/", &format!("\"{ROOT}/policies/"));
    let p = dir.join("exp.toml");
    std::fs::write(&p, format!("{text}\n{extra}")).unwrap();
    p.display().to_string()
}

#[cfg(unix)]
fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

#[test]
#[cfg(unix)]
fn devices_and_fifos_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    // The experiment, a policy, a trace, an imported config: a FIFO would block in open().
    refused(&retrysim(30, &["run", f]), &["fifo", "not a regular file"]);
    refused(&retrysim(30, &["export", f, "--to", "grpc"]), &["fifo", "not a regular file"]);
    refused(&retrysim(30, &["import", f, "--from", "envoy"]), &["fifo", "not a regular file"]);
    refused(&retrysim(30, &["import", "/dev/zero", "--from", "envoy"]), &["/dev/zero", "not a regular file"]);
    let out = dir.path().join("x.toml");
    refused(&retrysim(30, &["import-traces", f, "--out", out.to_str().unwrap()]), &["fifo", "not a regular file"]);
    // An empirical data file.
    for data in ["/dev/zero", f] {
        let exp = quickstart_with(dir.path(), "");
        let r = retrysim(
            30,
            &[
                "lint",
                &exp,
                "--set",
                &format!("services.api.service_time={{ dist = \"empirical\", file = \"{data}\" }}"),
            ],
        );
        refused(&r, &["services.api.service_time.file", "not a regular file"]);
    }
}

#[test]
fn vectors_cases_are_bounded() {
    refused(
        &retrysim(30, &["vectors", "policies/grpc-default.toml", "--cases", "1000000"]),
        &["--cases", "1 to 10000"],
    );
}

#[test]
fn outlier_sweeps_have_a_floor_and_collapse_rate_splitting_stops_at_max_hours() {
    let r = retrysim(
        30,
        &["lint", "experiments/bad-host.toml", "--set", "services.api.outlier_detection.interval=\"1ns\""],
    );
    refused(&r, &["services.api.outlier_detection.interval", "at least 1ms"]);
    // A first level no run reaches: splitting gives up after --max-hours.
    let out = tempfile::tempdir().unwrap();
    let r = retrysim(
        240,
        &[
            "collapse-rate",
            "experiments/collapse-rate.toml",
            "--set",
            "experiment.duration=40s",
            "--method",
            "splitting",
            "--levels",
            "100000",
            "--hours",
            "0.01",
            "--max-hours",
            "0.05",
            "-q",
            "--no-plots",
            "--out",
            out.path().to_str().unwrap(),
        ],
    );
    refused(&r, &["queue 100000", "--max-hours is 0.05"]);
    // A system that is never healthy (every request fails): no healthy time
    // grows, and the search used to go on for ever. Now it stops at
    // --max-hours of simulated time, or says every run collapsed at once.
    for (method, words) in [
        ("direct", &["normal-day.toml", "collapsed at once"][..]),
        ("splitting", &["normal-day.toml", "--max-hours is 0.002"]),
        ("auto", &["normal-day.toml", "collapsed at once"]),
    ] {
        let r = retrysim(
            240,
            &[
                "collapse-rate",
                "experiments/normal-day.toml",
                "--method",
                method,
                "--hours",
                "0.001",
                "--max-hours",
                "0.002",
                "--trials",
                "10",
                "--set",
                "faults.background-errors.probability=1.0",
                "--set",
                "experiment.duration=35s",
                "--set",
                "experiment.warmup=0s",
                "--set",
                "experiment.load_scale=0.05",
                "-q",
                "--no-plots",
                "--out",
                out.path().to_str().unwrap(),
            ],
        );
        refused(&r, words);
    }
}

#[test]
fn deeply_nested_yaml_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("deep.yaml");
    std::fs::write(&p, format!("retry_policy: {}{}\n", "{a: ".repeat(100_000), "}".repeat(100_000))).unwrap();
    refused(&retrysim(30, &["import", p.to_str().unwrap(), "--from", "envoy"]), &["deep.yaml", "nested more than 128"]);
}

#[test]
fn report_and_plot_name_the_file_they_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let r =
        retrysim(120, &["run", "experiments/quickstart.toml", "--replications", "1", "-q", "--no-plots", "--out", o]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ts = out.join("timeseries.csv");
    let whole = std::fs::read_to_string(&ts).unwrap();
    // Cut short in the middle of a row.
    std::fs::write(&ts, &whole[..whole.len() / 2]).unwrap();
    for cmd in ["plot", "report"] {
        refused(&retrysim(60, &[cmd, o]), &["timeseries.csv", "cut short"]);
    }
    // A cell that is no number.
    let mut lines: Vec<String> = whole.lines().map(str::to_string).collect();
    let mut cells: Vec<&str> = lines[3].split(',').collect();
    let last = cells.len() - 1;
    cells[last] = "abc";
    lines[3] = cells.join(",");
    std::fs::write(&ts, lines.join("\n") + "\n").unwrap();
    refused(&retrysim(60, &["plot", o]), &["timeseries.csv:4", "is not a number"]);
    std::fs::write(&ts, &whole).unwrap();
    // A summary field of the wrong type.
    let summary = out.join("summary.json");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    doc["variants"][0]["metrics"]["success_rate"]["mean"] = "high".into();
    std::fs::write(&summary, doc.to_string()).unwrap();
    for cmd in ["plot", "report"] {
        refused(
            &retrysim(60, &[cmd, o]),
            &["summary.json", "variants[0].metrics.success_rate.mean", "got the string \"high\""],
        );
    }
}

#[test]
fn hedging_quantiles_are_p1_to_p99_99_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let policy = std::fs::read_to_string(format!("{ROOT}/policies/grpc-hedging.toml")).unwrap();
    for q in ["p0.5", "p0.001", "p99.999"] {
        let p = dir.path().join("h.toml");
        let text = policy
            .lines()
            .map(|l| if l.trim_start().starts_with("delay") { format!("delay = \"{q}\"") } else { l.to_string() })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&p, text).unwrap();
        let f = p.to_str().unwrap();
        for args in [vec!["export", f, "--to", "grpc"], vec!["vectors", f]] {
            refused(&retrysim(30, &args), &["hedging.delay", "p1 to p99.99"]);
        }
        let exp = quickstart_with(dir.path(), "");
        refused(&retrysim(30, &["lint", &exp, "--set", &format!("clients.web.policy={f:?}")]), &["p1 to p99.99"]);
    }
    for q in ["p1", "p99.99"] {
        let p = dir.path().join("ok.toml");
        let text = policy
            .lines()
            .map(|l| if l.trim_start().starts_with("delay") { format!("delay = \"{q}\"") } else { l.to_string() })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&p, text).unwrap();
        assert_eq!(retrysim(30, &["export", p.to_str().unwrap(), "--to", "grpc"]).code, 0, "{q}");
    }
}

#[test]
fn envoy_fields_of_the_wrong_kind_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (yaml, field) in [
        ("retry_policy: { num_retries: 2, retry_back_off: \"100%\" }", "retry_policy.retry_back_off"),
        ("hedge_policy: abc\nretry_policy: { num_retries: 2 }", "hedge_policy"),
        ("retry_policy: null", "retry_policy"),
        ("retry_policy: { retry_on: 5 }", "retry_policy.retry_on"),
        ("retry_policy: { retriable_status_codes: 503 }", "retry_policy.retriable_status_codes"),
        ("retry_policy: { rate_limited_retry_back_off: [] }", "retry_policy.rate_limited_retry_back_off"),
        ("retry_policy: {}\nretry_budget: 5", "retry_budget"),
    ] {
        let p = dir.path().join("e.yaml");
        std::fs::write(&p, format!("{yaml}\n")).unwrap();
        refused(&retrysim(30, &["import", p.to_str().unwrap(), "--from", "envoy"]), &["e.yaml", &format!("`{field}`")]);
    }
}

#[test]
fn an_empirical_first_line_beyond_the_cap_is_an_error_not_a_header() {
    let dir = tempfile::tempdir().unwrap();
    for (data, words) in [("36501d\n0.01\n", &["line 1", "36500d"][..]), ("0.01\n1e300\n", &["line 2", "36500 days"])] {
        std::fs::write(dir.path().join("lat.csv"), data).unwrap();
        let exp = quickstart_with(dir.path(), "");
        let r = retrysim(
            30,
            &["lint", &exp, "--set", "services.api.service_time={ dist = \"empirical\", file = \"lat.csv\" }"],
        );
        refused(&r, words);
    }
}

#[test]
fn a_host_index_is_digits_only() {
    for target in ["api[ 0]", "api[+0]", "api[0 ]", "api[]"] {
        let r = retrysim(
            30,
            &["lint", "experiments/bad-host.toml", "--set", &format!("faults.black-hole.target={target:?}")],
        );
        refused(&r, &["faults.black-hole.target", "digits only"]);
    }
}

#[test]
fn a_range_without_its_number_of_points_says_so() {
    let r = retrysim(30, &["frontier", "experiments/frontier.toml", "--trigger", "spike", "--size", "1..6"]);
    refused(&r, &["--size 1..6", "LO..HI:N", "1..6:6"]);
    let r = retrysim(30, &["sweep", "experiments/quickstart.toml", "--param", "experiment.load_scale=0.5..1.5"]);
    refused(&r, &["LO..HI:N"]);
}
