//! What the terminal table and the report show: `[experiment] show`
//! (validated), the business and recovery metrics whenever they have
//! something to say, variants whose numbers are identical, and findings
//! that state costs and non-results as well as gains.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `retrysim ARGS`: (exit code, stdout, stderr).
fn retrysim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).current_dir(root()).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// The header line of the terminal table (after the question, if any).
fn header(table: &str) -> &str {
    table.lines().find(|l| l.starts_with("variant ")).unwrap()
}

#[test]
fn show_adds_columns_and_rejects_unknown_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let (code, table, err) = retrysim(&[
        "run",
        "experiments/quickstart.toml",
        "--replications",
        "2",
        "--no-plots",
        "-q",
        "--out",
        out,
        "--set",
        r#"experiment.show=["collapse_time_s", "latency_all_p999_s"]"#,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(header(&table).ends_with("collapse_time_s  latency_all_p999_s"), "{table}");
    let summary = std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap();
    assert!(
        summary.contains("\"show\": [\n      \"collapse_time_s\",\n      \"latency_all_p999_s\"\n    ]"),
        "{summary}"
    );
    // The report shows them too.
    let (code, _, err) = retrysim(&["report", out, "-q"]);
    assert_eq!(code, 0, "{err}");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("| collapse_time_s | latency_all_p999_s |"), "{md}");

    let (code, _, err) = retrysim(&[
        "run",
        "experiments/quickstart.toml",
        "--out",
        out,
        "--set",
        r#"experiment.show=["lost_effects", "speed"]"#,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("experiment.show[1]"), "{err}");
    assert!(err.contains("unknown metric \"speed\"; allowed: intents, success_rate,"), "{err}");
}

#[test]
fn business_and_recovery_metrics_appear_when_they_have_something_to_say() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    let (code, table, err) = retrysim(&[
        "run",
        "experiments/brownout.toml",
        "--replications",
        "2",
        "--no-plots",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // The baseline's orphan charges and the recovery after the brownout.
    let h = header(&table);
    assert!(h.contains("orphans") && h.contains("recovery") && h.contains("recovered"), "{table}");
    assert!(!h.contains("duplicates") && !h.contains("lost effects"), "all zero: {table}");
    retrysim(&["report", out.to_str().unwrap(), "-q"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| orphans/run |") && md.contains("| recovered |"), "{md}");
    // The report writes the same cells as the table: the Kaplan–Meier median
    // with recovered/replications, recovered as k/n with the exact interval
    // of the share (2 of 2: from 0.025^(1/2) = 16%).
    assert!(md.contains(" (2/2) |") && md.contains("| 2/2 (16–100%) |"), "{md}");
    assert!(table.contains(" (2/2)  ") && table.contains("2/2 (16–100%)"), "{table}");
    assert!(md.contains("\"both layers retry\" left 9"), "the orphans are a finding: {md}");

    // No disturbance and no business anomaly: the headline columns only.
    let (code, table, err) = retrysim(&[
        "run",
        "experiments/normal-day.toml",
        "--replications",
        "2",
        "--no-plots",
        "-q",
        "--out",
        dir.path().join("n").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let h = header(&table);
    assert!(!h.contains("recover") && !h.contains("orphans") && !h.contains("duplicates"), "{table}");
    // The answer's columns first: success, attempts/intent, p99.
    assert!(h.starts_with("variant") && h.contains("success  attempts/intent"), "{table}");
}

#[test]
fn identical_variants_get_a_line_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp.toml");
    // A backoff for a policy that never retries changes nothing at all.
    let text = std::fs::read_to_string(root().join("experiments/quickstart.toml"))
        .unwrap()
        .replace("../policies/", &format!("{}/policies/", root().display()));
    let text = format!(
        "{text}\n[[variants]]\nname = \"no retries, with a backoff\"\nset = {{ \"clients.web.policy.backoff\" = {{ kind = \"exponential\", base = \"100ms\" }} }}\n"
    );
    std::fs::write(&exp, text).unwrap();
    let (code, table, err) = retrysim(&[
        "run",
        exp.to_str().unwrap(),
        "--replications",
        "2",
        "--no-plots",
        "-q",
        "--wide",
        "--out",
        dir.path().join("o").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("identical: \"no retries\" and \"no retries, with a backoff\" have identical metrics in every replication, to the last digit: "),
        "{table}"
    );
    // Backoff and immediate retries after a collapse: the same successes,
    // failures that take longer to fail.
    let (code, table, err) = retrysim(&[
        "run",
        "experiments/metastable-spike.toml",
        "--replications",
        "2",
        "--variant",
        "immediate retries",
        "--variant",
        "backoff + full jitter",
        "--no-plots",
        "-q",
        "--wide",
        "--out",
        dir.path().join("m").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("identical: \"immediate retries\" and \"backoff + full jitter\" have identical metrics in every replication, to the last digit, except the latency of every intent (p99 all)"),
        "{table}"
    );
}

#[test]
fn findings_state_costs_and_non_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    let out = out.to_str().unwrap();
    let (code, _, err) = retrysim(&["run", "experiments/quickstart.toml", "--replications", "3", "-q", "--out", out]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = retrysim(&["report", out, "-q"]);
    assert_eq!(code, 0, "{err}");
    let md = std::fs::read_to_string(dir.path().join("q/report.md")).unwrap();
    // Immediate retries do nothing for success: a non-result, with its interval.
    assert!(md.contains("\"immediate retries\" makes no significant difference to success ("), "{md}");
    // Backoff without jitter buys success with seconds of waiting.
    assert!(md.contains("Cost: \"backoff, no jitter\" raises the p99 latency of successful intents by +"), "{md}");
    assert!(md.contains("amplification at api by"), "{md}");

    // A budget that never refuses a retry changes nothing, and the report says so.
    let exp = dir.path().join("budget.toml");
    let policy = root().join("policies/immediate-retries.toml").display().to_string();
    let text = std::fs::read_to_string(root().join("experiments/quickstart.toml")).unwrap();
    let text = format!(
        "{}\n[[variants]]\nname = \"immediate retries\"\nset = {{ \"clients.web.policy\" = \"{policy}\" }}\n\n[[variants]]\nname = \"with a roomy budget\"\nset = {{ \"clients.web.policy\" = \"{policy}\", \"clients.web.policy.budget\" = {{ kind = \"token_bucket\", max_tokens = 1000 }} }}\n",
        &text[..text.find("[[variants]]").unwrap()].replace("../policies/", &format!("{}/policies/", root().display()))
    );
    std::fs::write(&exp, text).unwrap();
    let out2 = dir.path().join("b");
    let (code, _, err) = retrysim(&[
        "run",
        exp.to_str().unwrap(),
        "--replications",
        "2",
        "-q",
        "--no-plots",
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("summary.json")).unwrap()).unwrap();
    let findings = retrysim::output::report::findings(&summary);
    assert!(
        findings.iter().any(|f| f
            == "The budget of \"with a roomy budget\" never refused a retry (0 refusals per replication): it changes nothing in this scenario."),
        "{findings:?}"
    );
    assert!(
        findings.iter().any(|f| f.starts_with(
            "\"with a roomy budget\" makes no significant difference to success (no change in any replication)"
        )),
        "{findings:?}"
    );
}

#[test]
fn a_never_healthy_baseline_is_named_in_the_report_and_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let (code, _, err) = retrysim(&[
        "run",
        "experiments/quickstart.toml",
        "--replications",
        "2",
        "--variant",
        "no retries",
        "--set",
        "experiment.load_scale=1.5",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    retrysim(&["report", out.to_str().unwrap(), "-q"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("\"no retries\" was already overloaded before the first disturbance (never healthy)"), "{md}");
    assert!(md.contains("never healthy |"), "{md}");
    let (code, table, err) = retrysim(&[
        "sweep",
        "experiments/quickstart.toml",
        "--param",
        "experiment.load_scale=1,1.5",
        "--variant",
        "no retries",
        "--replications",
        "2",
        "-q",
        "--no-plots",
        "--out",
        dir.path().join("s").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let line = table.lines().find(|l| l.trim_start().starts_with("1.5")).unwrap_or_else(|| panic!("{table}"));
    assert!(line.ends_with("never healthy"), "{table}");
    let sweep = std::fs::read_to_string(dir.path().join("s/sweep.json")).unwrap();
    assert!(sweep.contains("\"reason\": \"never_healthy\""), "{sweep}");
}

/// Every shipped experiment's table, as it runs by default, leads with its
/// answer and fits 120 characters up to its first blank line (legend
/// included).
#[test]
fn every_shipped_table_leads_with_its_answer_and_fits_120_characters() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = std::fs::read_dir(root().join("experiments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for file in files {
        let name = file.file_stem().unwrap().to_str().unwrap().to_string();
        let out = dir.path().join(&name);
        let (code, table, err) =
            retrysim(&["run", file.to_str().unwrap(), "--no-plots", "-q", "--out", out.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        for line in table.lines().take_while(|l| !l.is_empty()) {
            assert!(line.chars().count() <= 120, "{name}: {} characters: {line}", line.chars().count());
        }
        // The answer's headers come right after `variant`, in order.
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        let answer: Vec<String> = summary["experiment"]["answer"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| retrysim::output::answer::PathColumn::of(p.as_str().unwrap()).header)
            .collect();
        let cells: Vec<&str> = header(&table).split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
        assert_eq!(&cells[1..=answer.len()], answer.as_slice(), "{name}: {table}");
        assert!(table.starts_with("question: "), "{name}: {table}");
    }
}

#[test]
fn an_unknown_answer_path_is_refused_naming_the_field_and_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = retrysim(&[
        "run",
        "experiments/priority-shedding.toml",
        "--out",
        dir.path().join("o").to_str().unwrap(),
        "--set",
        r#"experiment.answer=["success_rate", "clients.nobody.success_rate"]"#,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("experiment.answer[1]") && err.contains("\"clients.nobody.success_rate\""), "{err}");
    assert!(err.contains("clients.NAME.METRIC with NAME one of user, background"), "{err}");
    assert!(!dir.path().join("o").exists(), "nothing is written");
    // --wide prints every column: wider than 120, the answer still first.
    let (code, table, err) = retrysim(&[
        "run",
        "experiments/priority-shedding.toml",
        "--replications",
        "2",
        "--no-plots",
        "-q",
        "--wide",
        "--out",
        dir.path().join("w").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let h = header(&table);
    assert!(h.starts_with("variant") && h.contains("user success  background success") && h.contains("p99.9"), "{h}");
    assert!(h.chars().count() > 120, "{h}");
}
