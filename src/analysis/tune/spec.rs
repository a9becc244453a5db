//! The `[tune]` table, read strictly: every key, type and value is checked
//! before anything runs, and a mistake is an error that names the file, the
//! field and what is allowed (never a silent default).

use crate::error::{InputError, InputResult};
use crate::metrics::METRICS;
use std::path::{Path, PathBuf};
use toml::Value;

use super::range::parse_range;
pub use super::range::{Range, RangeKind, duration_text};

/// The keys `[tune]` takes.
const KEYS: [&str; 6] = ["edge", "edges", "objective", "constraints", "scenarios", "space"];

/// The objective when `[tune]` has none.
pub const DEFAULT_OBJECTIVE: &str = "maximize success_rate";

/// A comparison operator of a constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Ge,
    Gt,
    Eq,
}

impl Op {
    /// The operator as written.
    pub fn label(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Eq => "==",
        }
    }

    /// An upper limit (`<=`, `<`): the upper CI bound is checked.
    pub fn is_upper(self) -> bool {
        matches!(self, Op::Le | Op::Lt)
    }
}

/// One constraint: `METRIC OP NUMBER`, checked on every scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    pub metric: String,
    pub op: Op,
    pub value: f64,
    /// As written.
    pub text: String,
}

/// What one field of the space may take.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// A list of values, each written as TOML.
    List(Vec<Value>),
    /// A range searched by the optimizer.
    Range(Range),
}

/// One field of `[tune.space]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    /// The key as written in `[tune.space]`.
    pub key: String,
    /// The override key it sets (`clients.web.policy.backoff.base`).
    pub target: String,
    pub domain: Domain,
}

impl Dim {
    /// The candidate value `x` (a list index, or a range value) as an
    /// override writes it.
    pub fn render(&self, x: f64) -> String {
        self.value(x).to_string()
    }

    /// The candidate value `x` as a TOML value.
    pub fn value(&self, x: f64) -> Value {
        match &self.domain {
            Domain::List(values) => values[x as usize].clone(),
            Domain::Range(r) => r.value(x),
        }
    }

    /// The number of values of a list; `None` for a range.
    pub fn count(&self) -> Option<usize> {
        match &self.domain {
            Domain::List(v) => Some(v.len()),
            Domain::Range(_) => None,
        }
    }
}

/// The `[tune]` table.
#[derive(Debug, Clone)]
pub struct TuneSpec {
    /// The tune file as shown in messages.
    pub file: String,
    /// The override keys of the tuned policies (`clients.web.policy`), one
    /// per edge, in the order written.
    pub edges: Vec<String>,
    pub maximize: bool,
    pub objective: String,
    pub constraints: Vec<Constraint>,
    /// Scenario experiment files (absolute, or relative to the working directory).
    pub scenarios: Vec<PathBuf>,
    /// The fields, in alphabetical order of their keys.
    pub space: Vec<Dim>,
}

impl TuneSpec {
    /// `maximize` or `minimize`.
    pub fn direction(&self) -> &'static str {
        if self.maximize { "maximize" } else { "minimize" }
    }

    /// Whether any field is a range (searched by the optimizer).
    pub fn has_ranges(&self) -> bool {
        self.space.iter().any(|d| matches!(d.domain, Domain::Range(_)))
    }

    /// The constraints as written, joined.
    pub fn constraints_text(&self) -> String {
        if self.constraints.is_empty() {
            "none".into()
        } else {
            self.constraints.iter().map(|c| c.text.clone()).collect::<Vec<_>>().join(", ")
        }
    }

    /// The metrics every run must keep: the objective, the constraints',
    /// and those the output shows.
    pub fn tracked_metrics(&self) -> Vec<String> {
        let mut out: Vec<String> = ["success_rate", "amplification", "latency_p99_s"].map(String::from).to_vec();
        for m in std::iter::once(&self.objective).chain(self.constraints.iter().map(|c| &c.metric)) {
            if !out.contains(m) {
                out.push(m.clone());
            }
        }
        out
    }
}

fn type_of(v: &Value) -> String {
    match v {
        Value::Array(_) => "a list".into(),
        Value::Table(_) => "a table".into(),
        Value::Integer(_) => format!("the integer {v}"),
        Value::Float(_) => format!("the number {v}"),
        Value::Boolean(_) => format!("the boolean {v}"),
        Value::String(_) => format!("the string {v}"),
        Value::Datetime(_) => format!("the date {v}"),
    }
}

fn metric_name(file: &str, field: &str, m: &str) -> InputResult<String> {
    if METRICS.contains(&m) {
        Ok(m.to_string())
    } else {
        Err(InputError::field(file, field, format!("unknown metric \"{m}\"; allowed: {}", METRICS.join(", "))))
    }
}

/// Whether `key` has the shape of a policy's override key.
fn edge_shape(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    matches!(parts.as_slice(), ["clients", n, "policy"] if !n.is_empty())
        || matches!(parts.as_slice(), ["services", s, "calls", t, "policy"] if !s.is_empty() && !t.is_empty())
}

const EDGE_HELP: &str = "the override key of a policy: clients.NAME.policy or services.NAME.calls.CALLEE.policy (such as \"clients.web.policy\")";

fn parse_edges(file: &str, tune: &toml::Table) -> InputResult<Vec<String>> {
    let one = |field: &str, v: &Value| -> InputResult<String> {
        match v.as_str() {
            Some(s) if edge_shape(s) => Ok(s.to_string()),
            Some(s) => Err(InputError::field(file, field, format!("\"{s}\" is not {EDGE_HELP}"))),
            None => Err(InputError::field(file, field, format!("expected a string, {EDGE_HELP}; got {}", type_of(v)))),
        }
    };
    match (tune.get("edge"), tune.get("edges")) {
        (Some(_), Some(_)) => Err(InputError::field(
            file,
            "tune.edges",
            "give either edge (one policy) or edges (several, tuned together), not both",
        )),
        (None, None) => {
            Err(InputError::field(file, "tune.edge", format!("required: {EDGE_HELP}; or edges = [...] for several")))
        }
        (Some(e), None) => Ok(vec![one("tune.edge", e)?]),
        (None, Some(Value::Array(list))) if !list.is_empty() => {
            let mut out: Vec<String> = Vec::new();
            for (i, v) in list.iter().enumerate() {
                let e = one(&format!("tune.edges[{i}]"), v)?;
                if out.contains(&e) {
                    return Err(InputError::field(
                        file,
                        format!("tune.edges[{i}]"),
                        format!("\"{e}\" is listed twice"),
                    ));
                }
                out.push(e);
            }
            Ok(out)
        }
        (None, Some(v)) => Err(InputError::field(
            file,
            "tune.edges",
            format!(
                "expected a non-empty list of policy keys such as [\"clients.web.policy\", \"services.api.calls.payments.policy\"], got {}",
                type_of(v)
            ),
        )),
    }
}

fn parse_objective(file: &str, tune: &toml::Table) -> InputResult<(bool, String)> {
    let help =
        format!("expected \"maximize METRIC\" or \"minimize METRIC\" with METRIC one of: {}", METRICS.join(", "));
    let text = match tune.get("objective") {
        None => DEFAULT_OBJECTIVE,
        Some(Value::String(s)) => s.as_str(),
        Some(v) => return Err(InputError::field(file, "tune.objective", format!("{help}; got {}", type_of(v)))),
    };
    let mut words = text.split_whitespace();
    let (Some(dir), Some(metric), None) = (words.next(), words.next(), words.next()) else {
        return Err(InputError::field(file, "tune.objective", format!("{help}; got \"{text}\"")));
    };
    let maximize = match dir {
        "maximize" => true,
        "minimize" => false,
        _ => return Err(InputError::field(file, "tune.objective", format!("{help}; got \"{text}\""))),
    };
    Ok((maximize, metric_name(file, "tune.objective", metric)?))
}

/// Parses `"METRIC OP NUMBER"`.
fn parse_constraint(file: &str, field: &str, text: &str) -> InputResult<Constraint> {
    let help = "expected \"METRIC OP NUMBER\" with OP one of <=, <, >=, >, == (such as \"amplification <= 1.5\")";
    let at = text
        .find(['<', '>', '=', '!'])
        .ok_or_else(|| InputError::field(file, field, format!("{help}; got \"{text}\"")))?;
    let (m, rest) = text.split_at(at);
    let (op, v) = [(Op::Le, "<="), (Op::Ge, ">="), (Op::Eq, "=="), (Op::Lt, "<"), (Op::Gt, ">")]
        .into_iter()
        .find_map(|(op, s)| rest.strip_prefix(s).map(|v| (op, v)))
        .ok_or_else(|| InputError::field(file, field, format!("{help}; got \"{text}\"")))?;
    let metric = m.trim();
    if metric.is_empty() {
        return Err(InputError::field(file, field, format!("{help}; the metric is missing in \"{text}\"")));
    }
    let metric = metric_name(file, field, metric)?;
    let value: f64 =
        v.trim().parse().ok().filter(|x: &f64| x.is_finite()).ok_or_else(|| {
            InputError::field(file, field, format!("{help}; \"{}\" is not a finite number", v.trim()))
        })?;
    Ok(Constraint { metric, op, value, text: text.trim().to_string() })
}

fn parse_constraints(file: &str, tune: &toml::Table) -> InputResult<Vec<Constraint>> {
    let list = match tune.get("constraints") {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(v) => {
            return Err(InputError::field(
                file,
                "tune.constraints",
                format!(
                    "expected a list of strings such as [\"amplification <= 1.5\", \"latency_p99_s <= 3.0\"], got {}",
                    type_of(v)
                ),
            ));
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, c)| {
            let field = format!("tune.constraints[{i}]");
            match c.as_str() {
                Some(text) => parse_constraint(file, &field, text),
                None => Err(InputError::field(
                    file,
                    &field,
                    format!("each constraint is a string such as \"amplification <= 1.5\"; got {}", type_of(c)),
                )),
            }
        })
        .collect()
}

fn parse_scenarios(file: &str, exp_path: &Path, tune: &toml::Table) -> InputResult<Vec<PathBuf>> {
    let base = exp_path.parent().map(Path::to_path_buf).unwrap_or_default();
    match tune.get("scenarios") {
        None => Ok(vec![exp_path.to_path_buf()]),
        Some(Value::Array(list)) if !list.is_empty() => list
            .iter()
            .enumerate()
            .map(|(i, s)| match s.as_str() {
                Some(p) if !p.trim().is_empty() => Ok(base.join(p)),
                _ => Err(InputError::field(
                    file,
                    format!("tune.scenarios[{i}]"),
                    format!(
                        "each scenario is the path of an experiment file (relative to the tune file's folder); got {}",
                        type_of(s)
                    ),
                )),
            })
            .collect(),
        Some(v) => Err(InputError::field(
            file,
            "tune.scenarios",
            format!(
                "expected a non-empty list of experiment files such as [\"normal-day.toml\", \"bad-day-spike.toml\"] (leave it out to judge on the tune file itself), got {}",
                type_of(v)
            ),
        )),
    }
}

/// `relative`: keys follow the edge (`edge = ...`); else each starts with
/// one of `edges` (`edges = [...]`).
fn parse_space(file: &str, tune: &toml::Table, edges: &[String], relative: bool) -> InputResult<Vec<Dim>> {
    let table = match tune.get("space") {
        Some(Value::Table(t)) => t,
        None => {
            return Err(InputError::field(
                file,
                "tune.space",
                "required: a [tune.space] table of candidate values per policy field, such as max_attempts = [1, 2, 3]",
            ));
        }
        Some(v) => {
            return Err(InputError::field(
                file,
                "tune.space",
                format!(
                    "expected a table of candidate values per policy field, such as max_attempts = [1, 2, 3]; got {}",
                    type_of(v)
                ),
            ));
        }
    };
    if table.is_empty() {
        return Err(InputError::field(
            file,
            "tune.space",
            "at least one policy field to tune, such as max_attempts = [1, 2, 3]",
        ));
    }
    let mut space = Vec::new();
    for (key, v) in table {
        let field = format!("tune.space.\"{key}\"");
        let target = if relative {
            format!("{}.{key}", edges[0])
        } else {
            // The longest edge the key starts with.
            let edge = edges.iter().filter(|e| key.starts_with(&format!("{e}."))).max_by_key(|e| e.len());
            match edge {
                Some(_) => key.clone(),
                None => {
                    return Err(InputError::field(
                        file,
                        &field,
                        format!(
                            "with several edges each key starts with the edge it tunes, such as \"{}.max_attempts\"; edges: {}",
                            edges[0],
                            edges.join(", ")
                        ),
                    ));
                }
            }
        };
        if target.split('.').any(str::is_empty) {
            return Err(InputError::field(
                file,
                &field,
                "a policy field such as max_attempts or \"backoff.base\" (no empty path segment)",
            ));
        }
        let domain = match v {
            Value::Array(values) if !values.is_empty() => {
                for (i, x) in values.iter().enumerate() {
                    if x.is_datetime() {
                        return Err(InputError::field(
                            file,
                            format!("{field}[{i}]"),
                            format!(
                                "a candidate value is a number, a string, a boolean, a list or a table; got {}",
                                type_of(x)
                            ),
                        ));
                    }
                    if values[..i].contains(x) {
                        return Err(InputError::field(
                            file,
                            format!("{field}[{i}]"),
                            format!("the value {x} is listed twice"),
                        ));
                    }
                }
                Domain::List(values.clone())
            }
            Value::String(s) if s.contains("..") => Domain::Range(parse_range(file, &field, s)?),
            other => {
                return Err(InputError::field(
                    file,
                    &field,
                    format!(
                        "a non-empty list of candidate values such as [1, 2, 3] or [\"25ms\", \"100ms\"], or a range \"LO..HI\" such as \"10ms..1s\"; got {}",
                        type_of(other)
                    ),
                ));
            }
        };
        space.push(Dim { key: key.clone(), target, domain });
    }
    Ok(space)
}

/// Reads `[tune]` from the experiment's source text, checking every key and
/// type (the values themselves are checked against the policy by
/// [`super::check_values`]).
pub fn parse_spec(exp_path: &Path, source: &str) -> InputResult<TuneSpec> {
    let file = exp_path.display().to_string();
    let doc: toml::Table = source.parse().map_err(|e| InputError::file(&file, format!("not valid TOML: {e}")))?;
    let tune = match doc.get("tune") {
        Some(Value::Table(t)) => t,
        _ => {
            return Err(InputError::field(
                &file,
                "tune",
                "`retrysim tune` needs a [tune] table (edge or edges, objective, constraints, scenarios, [tune.space])",
            ));
        }
    };
    if let Some(k) = tune.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(InputError::field(
            &file,
            format!("tune.{k}"),
            format!("unknown key: [tune] takes {}", KEYS.join(", ")),
        ));
    }
    let edges = parse_edges(&file, tune)?;
    let (maximize, objective) = parse_objective(&file, tune)?;
    let constraints = parse_constraints(&file, tune)?;
    let scenarios = parse_scenarios(&file, exp_path, tune)?;
    let space = parse_space(&file, tune, &edges, tune.contains_key("edge"))?;
    Ok(TuneSpec { file, edges, maximize, objective, constraints, scenarios, space })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(tune: &str) -> InputResult<TuneSpec> {
        parse_spec(Path::new("t.toml"), &format!("[tune]\n{tune}"))
    }

    const SPACE: &str = "[tune.space]\nmax_attempts = [1, 2]\n";

    #[test]
    fn every_wrong_type_is_an_error_naming_the_field() {
        for (tune, field) in [
            ("edge = \"clients.web.policy\"\nobjective = []\n", "tune.objective"),
            ("edge = \"clients.web.policy\"\nobjective = 5\n", "tune.objective"),
            ("edge = \"clients.web.policy\"\nobjective = \"maximize\"\n", "tune.objective"),
            ("edge = \"clients.web.policy\"\nobjective = \"maximize success_rate please\"\n", "tune.objective"),
            ("edge = \"clients.web.policy\"\nconstraints = \"amplification <= 1\"\n", "tune.constraints"),
            ("edge = \"clients.web.policy\"\nconstraints = [\"amplification = 1\"]\n", "tune.constraints[0]"),
            ("edge = \"clients.web.policy\"\nconstraints = [\"amplification <= nan\"]\n", "tune.constraints[0]"),
            ("edge = \"clients.web.policy\"\nconstraints = [\"<= 1\"]\n", "tune.constraints[0]"),
            ("edge = \"clients.web.policy\"\nscenarios = []\n", "tune.scenarios"),
            ("edge = \"clients.web.policy\"\nscenarios = [3]\n", "tune.scenarios[0]"),
            ("edge = 3\n", "tune.edge"),
            ("edge = \"clients.web\"\n", "tune.edge"),
            ("edges = []\n", "tune.edges"),
            ("edge = \"clients.web.policy\"\nedges = [\"clients.web.policy\"]\n", "tune.edges"),
            ("edge = \"clients.web.policy\"\nspace = 3\n", "tune.space"),
        ] {
            let text = if tune.contains("space") { tune.to_string() } else { format!("{tune}{SPACE}") };
            let e = spec(&text).expect_err(tune);
            assert_eq!(e.field.as_deref(), Some(field), "{tune}: {e}");
            assert_eq!(e.file, "t.toml");
        }
    }

    #[test]
    fn space_values_are_lists_or_ranges() {
        let s = spec(
            "edge = \"clients.web.policy\"\n[tune.space]\n\"backoff.base\" = \"10ms..1s\"\nmax_attempts = [1, 2]\n",
        )
        .unwrap();
        let Domain::Range(r) = &s.space[0].domain else { panic!("a range") };
        assert_eq!((r.lo, r.hi, r.kind), (10e6, 1e9, RangeKind::Duration));
        assert!(r.log_scale());
        assert_eq!(r.render(r.at(0.5)), "\"100ms\"");
        assert_eq!(s.space[1].target, "clients.web.policy.max_attempts");
        for bad in [
            "max_attempts = []",
            "max_attempts = 3",
            "\"backoff.base\" = \"1s..10ms\"",
            "max_attempts = [1, 1]",
            "x = [1979-05-27]",
        ] {
            let e = spec(&format!("edge = \"clients.web.policy\"\n[tune.space]\n{bad}\n")).expect_err(bad);
            assert!(e.field.as_deref().is_some_and(|f| f.starts_with("tune.space.")), "{bad}: {e}");
        }
    }

    #[test]
    fn several_edges_take_keys_that_start_with_an_edge() {
        let s = spec(
            "edges = [\"clients.web.policy\", \"services.api.calls.db.policy\"]\n[tune.space]\n\"services.api.calls.db.policy.max_attempts\" = [1, 2]\n",
        )
        .unwrap();
        assert_eq!(s.space[0].target, "services.api.calls.db.policy.max_attempts");
        let e = spec("edges = [\"clients.web.policy\"]\n[tune.space]\nmax_attempts = [1]\n").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tune.space.\"max_attempts\""), "{e}");
    }
}
