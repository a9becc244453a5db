//! Reading trace files: OTLP/JSON lines or one JSON document (a Jaeger
//! export, or one pretty-printed OTLP request), into spans, with every
//! line or span that could not be used counted with why.

use super::span::Span;
use super::{jaeger, otlp};
use crate::error::InputError;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What was left out of the model and why: reason → (count, first example).
#[derive(Debug, Default, Clone)]
pub struct Dropped {
    pub reasons: BTreeMap<String, (u64, String)>,
}

impl Dropped {
    /// Counts one thing dropped for `why`, keeping the first `example`.
    pub fn add(&mut self, why: impl Into<String>, example: impl FnOnce() -> String) {
        let e = self.reasons.entry(why.into()).or_insert_with(|| (0, example()));
        e.0 += 1;
    }

    /// Counts `n` at once.
    pub fn add_n(&mut self, why: impl Into<String>, n: u64, example: String) {
        if n > 0 {
            let e = self.reasons.entry(why.into()).or_insert((0, example));
            e.0 += n;
        }
    }
}

/// The spans of every file, and what could not be read.
#[derive(Debug, Default)]
pub struct Loaded {
    pub files: Vec<PathBuf>,
    pub spans: Vec<Span>,
    pub dropped: Dropped,
    /// Per file: its format (`OTLP/JSON` or `Jaeger JSON`) and spans read.
    pub formats: Vec<(&'static str, usize)>,
}

/// Reads every file in `paths`. A file that cannot be read, or in which no
/// line is OTLP/JSON or Jaeger JSON, is an error; a bad line among good
/// ones is dropped and counted.
pub fn load(paths: &[PathBuf]) -> Result<Loaded, InputError> {
    let mut out = Loaded { files: paths.to_vec(), ..Loaded::default() };
    for (fi, path) in paths.iter().enumerate() {
        let text = crate::config::read::read_text(path, crate::config::read::MAX_DATA_BYTES)
            .map_err(|e| InputError::file(path.display().to_string(), format!("cannot read the trace file: {e}")))?;
        let before = out.spans.len();
        let format = read_text(&text, fi, path, &mut out)?;
        out.formats.push((format, out.spans.len() - before));
    }
    Ok(out)
}

fn read_text(text: &str, fi: usize, path: &Path, out: &mut Loaded) -> Result<&'static str, InputError> {
    let name = || path.display().to_string();
    let push = |spans: Vec<Span>, refused: Vec<String>, line: usize, out: &mut Loaded| {
        out.spans.extend(spans);
        for why in refused {
            out.dropped.add(why, || format!("{}:{line}", name()));
        }
    };
    // One document: a Jaeger export or a single (maybe pretty) OTLP request.
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(text) {
        if doc.get("data").is_some() {
            let file: jaeger::File = serde_json::from_value(doc)
                .map_err(|e| InputError::file(name(), format!("not a Jaeger JSON export: {e}")))?;
            let (spans, refused) = jaeger::spans_of(file, fi);
            push(spans, refused, 1, out);
            return Ok("Jaeger JSON");
        }
        if doc.get("resourceSpans").is_some() {
            let req: otlp::Request = serde_json::from_value(doc)
                .map_err(|e| InputError::file(name(), format!("not an OTLP/JSON ExportTraceServiceRequest: {e}")))?;
            let (spans, refused) = otlp::spans_of(req, (fi, 1));
            push(spans, refused, 1, out);
            return Ok("OTLP/JSON");
        }
        if text.lines().filter(|l| !l.trim().is_empty()).count() <= 1 {
            return Err(InputError::file(
                name(),
                "neither OTLP/JSON (an object with `resourceSpans`, one a line) nor a Jaeger export (an object with `data`)",
            ));
        }
    }
    // JSON Lines: one ExportTraceServiceRequest a line (the Collector's file exporter).
    let mut good = 0;
    let mut first_error = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<otlp::Request>(line) {
            Ok(req) if !req.resource_spans.is_empty() || line.contains("resourceSpans") => {
                good += 1;
                let (spans, refused) = otlp::spans_of(req, (fi, n));
                push(spans, refused, n, out);
            }
            Ok(_) => {
                out.dropped.add("a line that is JSON but no ExportTraceServiceRequest (no resourceSpans)", || {
                    format!("{}:{n}", name())
                });
            }
            Err(e) => {
                first_error.get_or_insert_with(|| format!("line {n}: {e}"));
                out.dropped.add("a line that is not OTLP/JSON (cut short, or another format)", || {
                    format!("{}:{n}: {e}", name())
                });
            }
        }
    }
    if good == 0 {
        return Err(InputError::file(
            name(),
            format!(
                "no line is an OTLP/JSON ExportTraceServiceRequest and the file is no Jaeger export{}",
                first_error.map(|e| format!(" ({e})")).unwrap_or_default()
            ),
        ));
    }
    Ok("OTLP/JSON")
}
