//! The corpus of the fuzz harness: the shipped files copied into a
//! fixture, the pools of odd values and keys, the drawn cases and the text
//! mutations.

use proptest::prelude::*;
use retrysim::output::export::{Target, export};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Odd and ordinary values for overrides and text mutations.
pub const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "3",
    "7",
    "64",
    "1000000",
    "99999999999999999999",
    "1.5",
    "-0.5",
    "0.999",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "true",
    "false",
    "\"\"",
    "\"x\"",
    "never",
    "\"never\"",
    "0s",
    "1ms",
    "250ms",
    "2s",
    "30s",
    "5M",
    "2w",
    "1y",
    "1hr",
    "\"2s 2s\"",
    "\"1h 30m\"",
    "1e3ms",
    "36501d",
    "10/s",
    "800/s",
    "1e9/s",
    "1e307/s",
    "-5/s",
    "0/s",
    "[]",
    "[1, 2]",
    "[\"timeout\", \"503\"]",
    "[\"400\"]",
    "{}",
    "{ dist = \"exp\", mean = \"5ms\" }",
    "{ dist = \"const\", value = \"0s\" }",
    "{ dist = \"lognormal\", mean = \"10ms\", p99 = \"5ms\" }",
    "{ dist = \"gamma\", mean = \"1ms\", shape = 0 }",
    "1979-05-27",
    "07:32:00",
    "\"fifo\"",
    "\"codel\"",
    "\"lifo\"",
    "\"none\"",
    "\"full\"",
    "\"equal\"",
    "\"exponential\"",
    "\"decorrelated\"",
    "\"token_bucket\"",
    "\"quota\"",
    "\"ratio\"",
    "\"concurrency\"",
    "\"shared\"",
    "\"durable\"",
    "\"memory\"",
    "\"wait\"",
    "\"conflict\"",
    "\"closed\"",
    "\"burst\"",
    "\"open\"",
    "\"before_commit\"",
    "\"after_commit\"",
    "\"outbox\"",
    "\"derive\"",
    "\"forward\"",
    "../policies/grpc-default.toml",
    "../policies/immediate-retries.toml",
    "/dev/zero",
    "nonexistent.toml",
    "case.toml",
    "\"503\"",
    "503",
    "429",
    "99",
    "{ status = 429, retry_after = \"1s\" }",
    "{ rate = \"100/s\", burst = 5 }",
    "{ limit = 0 }",
    "{ store = \"memory\", atomic = false }",
];

/// Policy fields to override under a client's or call's `policy`.
pub const POLICY_KEYS: &[&str] = &[
    "max_attempts",
    "per_try_timeout",
    "deadline",
    "min_attempt_time",
    "retry_on",
    "retry_unknown_without_key",
    "respect_retry_after",
    "max_retry_after",
    "backoff",
    "backoff.kind",
    "backoff.base",
    "backoff.cap",
    "backoff.multiplier",
    "backoff.jitter",
    "backoff.jitter_ratio",
    "budget",
    "budget.kind",
    "budget.scope",
    "budget.max_tokens",
    "budget.ratio",
    "budget.ttl",
    "circuit_breaker",
    "circuit_breaker.window",
    "circuit_breaker.failure_ratio",
    "name",
    "unknown_key",
];

/// Keys every experiment has, or that are worth trying on any.
pub const COMMON_KEYS: &[&str] = &[
    "experiment.duration",
    "experiment.warmup",
    "experiment.bin",
    "experiment.seed",
    "experiment.replications",
    "experiment.load_scale",
    "experiment.drain_limit",
    "experiment.name",
    "experiment.typo",
    "network.latency",
    "faults.0.start",
    "faults.0.kind",
    "nothing.here",
    "clients",
    "services",
    "variants",
];

/// Every scalar value of a document by its key (the last path segment),
/// written as an override value: plausible values for other experiments.
pub fn observed(v: &toml::Value, key: &str, out: &mut BTreeMap<String, Vec<String>>) {
    match v {
        toml::Value::Table(t) => t.iter().for_each(|(k, x)| observed(x, k, out)),
        toml::Value::Array(items) if items.iter().all(|i| i.is_table()) => {
            items.iter().for_each(|x| observed(x, key, out))
        }
        other => out.entry(key.to_string()).or_default().push(other.to_string()),
    }
}

/// The leaf paths of a document, as overrides address them.
pub fn leaves(v: &toml::Value, path: &str, out: &mut Vec<String>) {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                if path.is_empty() && k == "variants" {
                    continue;
                }
                leaves(x, &join(k), out);
            }
            if !path.is_empty() {
                out.push(path.to_string());
            }
        }
        toml::Value::Array(items) if items.iter().all(|i| i.is_table()) && !items.is_empty() => {
            for (i, x) in items.iter().enumerate() {
                let label = x
                    .get("name")
                    .or_else(|| x.get("to"))
                    .and_then(toml::Value::as_str)
                    .map_or_else(|| i.to_string(), str::to_string);
                let here = join(&label);
                if here.ends_with(".policy") || x.get("policy").is_some() {
                    for k in POLICY_KEYS {
                        out.push(format!("{here}.policy.{k}"));
                    }
                }
                leaves(x, &here, out);
            }
        }
        _ => out.push(path.to_string()),
    }
}

/// The shipped files the cases start from, copied into a folder of their own.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    /// (file name, text, override keys, variant names)
    pub experiments: Vec<(String, String, Vec<String>, Vec<String>)>,
    pub policies: Vec<(String, String)>,
    /// Values seen in the shipped files, by key.
    pub observed: BTreeMap<String, Vec<String>>,
    /// Every shipped policy exported to every target `import` reads, and
    /// to resilience4j: (the `--from` name, the text).
    pub configs: Vec<(String, String)>,
    /// A small traced system as OTLP/JSON lines.
    pub traces: String,
    /// A finished run's output folder (the quick start at 5% of its load, 2 replications).
    pub run: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut experiments = Vec::new();
        let mut policies = Vec::new();
        let mut seen = BTreeMap::new();
        std::fs::create_dir(dir.path().join("experiments")).unwrap();
        std::fs::create_dir(dir.path().join("policies")).unwrap();
        for sub in ["experiments", "policies"] {
            let mut names: Vec<PathBuf> =
                std::fs::read_dir(Path::new(ROOT).join(sub)).unwrap().map(|e| e.unwrap().path()).collect();
            names.sort();
            for p in names.into_iter().filter(|p| p.extension().is_some_and(|x| x == "toml")) {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(&p).unwrap();
                std::fs::write(dir.path().join(sub).join(&name), &text).unwrap();
                let doc: toml::Table = text.parse().unwrap();
                observed(&toml::Value::Table(doc.clone()), "", &mut seen);
                if sub == "policies" {
                    policies.push((name, text));
                } else {
                    let mut keys = Vec::new();
                    leaves(&toml::Value::Table(doc.clone()), "", &mut keys);
                    keys.extend(COMMON_KEYS.iter().map(|k| k.to_string()));
                    let variants: Vec<String> = doc
                        .get("variants")
                        .and_then(toml::Value::as_array)
                        .map(|a| a.iter().filter_map(|v| v.get("name")?.as_str().map(str::to_string)).collect())
                        .unwrap_or_default();
                    experiments.push((name, text, keys, variants));
                }
            }
        }
        let mut configs = Vec::new();
        for (name, _) in &policies {
            let p = retrysim::config::load_policy_file(&dir.path().join("policies").join(name)).unwrap();
            for (from, target) in [
                ("grpc", Target::Grpc),
                ("envoy", Target::Envoy),
                ("aws", Target::Aws),
                ("istio", Target::Istio),
                ("gateway-api", Target::GatewayApi),
                ("linkerd", Target::Linkerd),
                ("resilience4j", Target::Resilience4j),
            ] {
                configs.push((from.to_string(), export(&p, target).text));
            }
        }
        let run = dir.path().join("run");
        let r = retrysim::cli::execute(
            [
                "retrysim",
                "run",
                &dir.path().join("experiments/quickstart.toml").display().to_string(),
                "--replications",
                "2",
                "--set",
                "experiment.load_scale=0.05",
                "-q",
                "--no-plots",
                "--out",
                &run.display().to_string(),
            ]
            .map(String::from),
        );
        assert_eq!(r.code, 0, "the fixture's run: {:?}", r.error);
        Self { dir, experiments, policies, observed: seen, configs, traces: super::traces::system_jsonl(), run }
    }

    /// Every file in the fixture with its contents: what must not change.
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut all = BTreeMap::new();
        for sub in ["experiments", "policies", "run"] {
            for e in std::fs::read_dir(self.dir.path().join(sub)).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    all.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        all
    }
}

/// One fuzz case, as drawn.
#[derive(Debug, Clone)]
pub struct Case {
    pub command: u8,
    pub base: usize,
    pub mutations: Vec<(u8, usize, usize)>,
    pub sets: Vec<(usize, usize)>,
    pub flags: Vec<(u8, usize)>,
    pub short: bool,
    pub plots: bool,
}

pub fn case() -> impl Strategy<Value = Case> {
    (
        0u8..100,
        0usize..1000,
        // Most cases keep the text as shipped, so that overrides and flags
        // reach validation and the simulation instead of the TOML parser.
        prop_oneof![
            7 => Just(Vec::new()),
            3 => prop::collection::vec((0u8..6, 0usize..10_000, 0usize..10_000), 1..3),
        ],
        prop_oneof![
            4 => Just(Vec::new()),
            6 => prop::collection::vec((0usize..10_000, 0usize..10_000), 1..4),
        ],
        prop_oneof![
            5 => Just(Vec::new()),
            5 => prop::collection::vec((0u8..16, 0usize..10_000), 1..4),
        ],
        prop::bool::weighted(0.9),
        prop::bool::weighted(0.03),
    )
        .prop_map(|(command, base, mutations, sets, flags, short, plots)| Case {
            command,
            base,
            mutations,
            sets,
            flags,
            short,
            plots,
        })
}

/// Applies a text mutation: delete, duplicate or swap lines, replace a
/// value, truncate, or insert a character.
pub fn mutate(text: &str, (kind, a, b): (u8, usize, usize)) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return text.to_string();
    }
    let (i, j) = (a % lines.len(), b % lines.len());
    match kind {
        0 => {
            lines.remove(i);
        }
        1 => lines.insert(j, lines[i].clone()),
        2 => lines.swap(i, j),
        3 => {
            if let Some((k, _)) = lines[i].split_once('=') {
                lines[i] = format!("{k}= {}", VALUES[b % VALUES.len()]);
            }
        }
        4 => {
            let cut = (a * 7919) % text.len().max(1);
            let cut = (0..=cut).rev().find(|&c| text.is_char_boundary(c)).unwrap_or(0);
            return text[..cut].to_string();
        }
        _ => {
            let chars = ['[', ']', '{', '}', '"', '=', '.', '\n', '#', ',', '\\', 'x', '0'];
            let at = lines[i].len();
            let at = (0..=(a % (at + 1))).rev().find(|&c| lines[i].is_char_boundary(c)).unwrap_or(0);
            lines[i].insert(at, chars[b % chars.len()]);
        }
    }
    lines.join("\n") + "\n"
}
