//! Every shipped experiment states its question and the metrics that answer
//! it (`[experiment] question`, `answer`), and the numbers its header
//! quotes are the numbers the tool prints: each experiment's header has a
//! block
//!
//! ```text
//! # Answer (checked by tests/it/experiment_headers.rs against `retrysim run` of this file):
//! #   "shed by priority": clients.user.success_rate = 100%, clients.background.success_rate = 30.6%
//! ```
//!
//! and this test runs the file as it is and requires every quoted value to
//! lie within the variant's 95% interval of that metric, widened by the
//! rounding of the quoted figure. A header can then never drift from what
//! the tool prints.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const MARK: &str = "# Answer (checked by tests/it/experiment_headers.rs";

/// One quoted number: variant, metric path, value (in the metric's unit:
/// shares as fractions, times in seconds) and the rounding of the figure.
#[derive(Debug, Clone, PartialEq)]
struct Quote {
    variant: String,
    path: String,
    value: f64,
    rounding: f64,
    text: String,
}

/// `100%`, `30.6%`, `1.47`, `1.85s`, `28ms`, `850µs`: the value and half
/// its last digit.
fn parse_value(text: &str) -> Option<(f64, f64)> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix('%') {
        (n, 0.01)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("µs") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let x: f64 = number.parse().ok()?;
    let decimals = number.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    Some((x * scale, 0.5 * 10f64.powi(-decimals) * scale))
}

fn quotes(text: &str, file: &Path) -> Vec<Quote> {
    let mut out = Vec::new();
    let mut lines = text.lines().skip_while(|l| !l.starts_with(MARK));
    assert!(lines.next().is_some(), "{}: no \"{MARK}…\" block in the header", file.display());
    for line in lines {
        let Some(body) = line.strip_prefix("#   \"") else { break };
        let (variant, rest) = body.split_once("\": ").unwrap_or_else(|| panic!("{}: {line}", file.display()));
        for item in rest.split(", ") {
            let (path, value) = item.split_once(" = ").unwrap_or_else(|| panic!("{}: {item}", file.display()));
            let (value, rounding) =
                parse_value(value).unwrap_or_else(|| panic!("{}: cannot read {value:?} in {line}", file.display()));
            out.push(Quote { variant: variant.into(), path: path.trim().into(), value, rounding, text: item.into() });
        }
    }
    out
}

/// The metric object at `path` of a variant of summary.json.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    for group in ["clients", "services", "edges", "effects"] {
        if let Some((name, metric)) =
            path.strip_prefix(group).and_then(|r| r.strip_prefix('.')).and_then(|r| r.rsplit_once('.'))
        {
            return &v[group][name][metric];
        }
    }
    &v["metrics"][path]
}

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_numbers_every_header_quotes_are_the_numbers_the_tool_prints() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in shipped() {
        let text = std::fs::read_to_string(&file).unwrap();
        let table: toml::Table = text.parse().unwrap();
        let exp = table["experiment"].as_table().unwrap();
        assert!(exp.get("question").and_then(|q| q.as_str()).is_some(), "{}: no experiment.question", file.display());
        let answer = exp.get("answer").and_then(|a| a.as_array()).map_or(0, Vec::len);
        assert!(answer > 0, "{}: no experiment.answer", file.display());
        let quoted = quotes(&text, &file);
        assert!(!quoted.is_empty(), "{}: the answer block quotes no number", file.display());
        let out = tempfile::tempdir().unwrap();
        let run = Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .arg("run")
            .arg(&file)
            .args(["--format", "json", "-q", "--no-plots", "--out"])
            .arg(out.path())
            .output()
            .unwrap();
        assert!(run.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&run.stderr));
        let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
        let variants = summary["variants"].as_array().unwrap();
        for q in quoted {
            let v = variants
                .iter()
                .find(|v| v["name"] == q.variant.as_str())
                .unwrap_or_else(|| panic!("{}: no variant \"{}\"", file.display(), q.variant));
            let m = at(v, &q.path);
            let Some(mean) = m["mean"].as_f64() else {
                failures.push(format!("{}: \"{}\" has no value of {}", file.display(), q.variant, q.path));
                continue;
            };
            let half = m["ci95"].as_array().map_or(0.0, |c| {
                let (lo, hi) = (c[0].as_f64().unwrap_or(mean), c[1].as_f64().unwrap_or(mean));
                (mean - lo).max(hi - mean)
            });
            if (q.value - mean).abs() > half + q.rounding + 1e-12 {
                failures.push(format!(
                    "{}: \"{}\" {} quoted, the run prints mean {mean} (95% interval ±{half})",
                    file.display(),
                    q.variant,
                    q.text
                ));
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "headers that drifted from the output:\n{}", failures.join("\n"));
    assert!(checked >= 23, "only {checked} quoted numbers checked");
}

#[test]
fn quoted_values_are_read_with_their_rounding() {
    assert_eq!(parse_value("100%"), Some((1.0, 0.005)));
    let (x, r) = parse_value("30.6%").unwrap();
    assert!((x - 0.306).abs() < 1e-12 && (r - 0.0005).abs() < 1e-12);
    let (x, r) = parse_value("28ms").unwrap();
    assert!((x - 0.028).abs() < 1e-12 && (r - 0.0005).abs() < 1e-12);
    assert_eq!(parse_value("1.47").map(|v| v.0), Some(1.47));
    assert_eq!(parse_value("abc"), None);
}
