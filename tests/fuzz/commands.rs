//! The fuzz cases of the commands that read something other than an
//! experiment: `vectors` (a policy), `import` (a config of every target),
//! `import-traces` and `run --compare-traces` (OTLP/JSON lines), `report`
//! and `plot` (a finished run's folder, with one file spoiled).

use super::corpus::{Case, Fixture, VALUES, mutate};
use super::traces::mutate_trace;
use std::path::{Path, PathBuf};

/// A case's command line, the file it wrote for the case, and that file's text.
pub struct Built {
    pub args: Vec<String>,
    pub case_path: PathBuf,
    pub written: String,
}

fn s(x: &str) -> String {
    x.to_string()
}

/// `c`'s flag value `v` from `list`.
fn pick(list: &[&str], v: usize) -> String {
    list[v % list.len()].to_string()
}

/// `vectors` on a mutated shipped policy.
pub fn vectors(f: &Fixture, c: &Case, exp_dir: &Path) -> Built {
    let (_, text) = &f.policies[c.base % f.policies.len()];
    let text = c.mutations.iter().fold(text.clone(), |t, &m| mutate(&t, m));
    let case_path = exp_dir.join("case.toml");
    std::fs::write(&case_path, &text).unwrap();
    let mut args = vec![s("retrysim"), s("vectors"), case_path.display().to_string()];
    if let Some(&(_, v)) = c.flags.first() {
        args.extend([s("--cases"), pick(&["1", "46", "60", "0", "10001", "x", "-1"], v)]);
    }
    Built { args, case_path, written: text }
}

/// `import --from X` on a mutated export of a shipped policy (the `--from`
/// sometimes another target's, sometimes resilience4j, which `import` does
/// not read).
pub fn import(f: &Fixture, c: &Case, exp_dir: &Path) -> Built {
    let (from, text) = &f.configs[c.base % f.configs.len()];
    let mut text = c.mutations.iter().fold(text.clone(), |t, &m| mutate(&t, m));
    // A YAML or JSON value replaced: the text mutation replaces after '=' only.
    if let Some(&(k, v)) = c.sets.first() {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        if !lines.is_empty() {
            let i = k % lines.len();
            if let Some((key, _)) = lines[i].split_once(':') {
                lines[i] = format!("{key}: {}", VALUES[v % VALUES.len()]);
            }
            text = lines.join("\n") + "\n";
        }
    }
    let case_path = exp_dir.join("case.cfg");
    std::fs::write(&case_path, &text).unwrap();
    let from = match c.flags.first() {
        Some(&(_, v)) if v % 5 == 0 => {
            pick(&["grpc", "envoy", "aws", "istio", "gateway-api", "linkerd", "resilience4j"], v)
        }
        _ => from.clone(),
    };
    let args = vec![s("retrysim"), s("import"), case_path.display().to_string(), s("--from"), from];
    Built { args, case_path, written: text }
}

/// The fixture's traces with `c`'s mutations: line operations and hostile spans.
fn traces(f: &Fixture, c: &Case) -> String {
    let mut text = f.traces.clone();
    for &(kind, a, b) in &c.mutations {
        text = if kind < 2 { mutate(&text, (kind * 2, a, b)) } else { mutate_trace(&text, (kind, a, b)) };
    }
    for &(k, v) in &c.sets {
        text = mutate_trace(&text, ((k % 8) as u8, k, v));
    }
    text
}

/// `import-traces` on mutated traces, into `out/exp.toml`.
pub fn import_traces(f: &Fixture, c: &Case, exp_dir: &Path, out: &Path) -> Built {
    let text = traces(f, c);
    let case_path = exp_dir.join("case.jsonl");
    std::fs::write(&case_path, &text).unwrap();
    let mut args = vec![
        s("retrysim"),
        s("import-traces"),
        case_path.display().to_string(),
        s("--out"),
        out.join("exp.toml").display().to_string(),
        s("-q"),
    ];
    for &(flag, v) in &c.flags {
        match flag % 3 {
            0 => args.extend([
                s("--workers"),
                pick(&["api=4", "backend=10000001", "a.b=2", "nope=1", "api=0", "api", "backend=2"], v),
            ]),
            1 => args.extend([s("--name"), pick(&["", "x\ny", "\u{202e}", "ok"], v)]),
            _ => {}
        }
    }
    Built { args, case_path, written: text }
}

/// `run --compare-traces` of the experiment imported from the unmutated
/// traces, against mutated traces.
pub fn compare_traces(f: &Fixture, c: &Case, exp_dir: &Path, out: &Path) -> Built {
    let clean = out.join("clean.jsonl");
    std::fs::write(&clean, &f.traces).unwrap();
    let exp = out.join("exp.toml");
    let r = retrysim::cli::execute(
        ["retrysim", "import-traces", "-q", &clean.display().to_string(), "--out", &exp.display().to_string()]
            .map(String::from),
    );
    assert_eq!(r.code, 0, "the clean traces import: {:?}", r.error);
    let text = traces(f, c);
    let case_path = exp_dir.join("case.jsonl");
    std::fs::write(&case_path, &text).unwrap();
    let args = vec![
        s("retrysim"),
        s("run"),
        exp.display().to_string(),
        s("--compare-traces"),
        case_path.display().to_string(),
        s("--replications"),
        s("1"),
        s("-q"),
        s("--no-plots"),
        s("--out"),
        out.join("run").display().to_string(),
    ];
    Built { args, case_path, written: text }
}

/// `report` or `plot` on a copy of the fixture's run with one file spoiled:
/// cut short, a value replaced, or removed.
pub fn report_or_plot(command: &str, f: &Fixture, c: &Case, out: &Path) -> Built {
    let dir = out.join("run");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&f.run).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
    }
    let files = ["timeseries.csv", "summary.json", "summary.csv", "experiment.toml"];
    let name = files[c.base % files.len()];
    let case_path = dir.join(name);
    let mut text = std::fs::read_to_string(&case_path).unwrap_or_default();
    for &(kind, a, b) in &c.mutations {
        text = if name == "summary.json" && kind >= 3 { spoil_json(&text, a, b) } else { mutate(&text, (kind, a, b)) };
    }
    if c.mutations.is_empty() && c.base.is_multiple_of(7) {
        std::fs::remove_file(&case_path).unwrap();
        text = String::new();
    } else {
        std::fs::write(&case_path, &text).unwrap();
    }
    let mut args = vec![s("retrysim"), s(command), dir.display().to_string()];
    if command == "plot"
        && let Some(&(_, v)) = c.flags.first()
    {
        args.extend([s("--variant"), pick(&["no retries", "nope", "immediate retries"], v)]);
    }
    Built { args, case_path, written: text }
}

/// A summary with one value somewhere replaced by an odd one.
fn spoil_json(text: &str, a: usize, b: usize) -> String {
    use serde_json::{Value, json};
    let Ok(mut doc) = serde_json::from_str::<Value>(text) else { return text.to_string() };
    let odd = [json!("x"), json!(null), json!([]), json!({}), json!(-1), json!(1e300)];
    // Walk down `a`'s choices (up to six levels) to a JSON pointer.
    let (mut pointer, mut at, mut k) = (String::new(), &doc, a);
    for _ in 0..6 {
        let step = match at {
            Value::Object(m) if !m.is_empty() => m.keys().nth(k % m.len()).cloned(),
            Value::Array(v) if !v.is_empty() => Some((k % v.len()).to_string()),
            _ => None,
        };
        let Some(step) = step else { break };
        at = match at {
            Value::Object(m) => &m[&step],
            Value::Array(v) => &v[step.parse::<usize>().unwrap()],
            _ => unreachable!(),
        };
        pointer.push('/');
        pointer.push_str(&step.replace('~', "~0").replace('/', "~1"));
        k /= 3;
    }
    if let Some(v) = doc.pointer_mut(&pointer) {
        *v = odd[b % odd.len()].clone();
    }
    doc.to_string()
}
