//! Models from the system you run: experiments built from OpenTelemetry
//! traces (`retrysim import-traces`), and simulated runs checked against
//! the traces they came from (`retrysim run --compare-traces`).
//!
//! [`read`] takes OTLP/JSON lines ([`otlp`]) and Jaeger exports
//! ([`jaeger`]) into [`span::Span`]s; [`graph`] joins them into traces and
//! groups CLIENT spans into calls; [`infer`] (with [`policy`]) reads the
//! model; [`emit`] writes it as an experiment; [`observed`] and
//! [`compare`] put the traces beside a simulated run. docs/traces.md says
//! what is inferred from what.

pub mod compare;
pub mod emit;
pub mod graph;
pub mod infer;
pub mod jaeger;
pub mod names;
pub mod observed;
pub mod otlp;
pub mod policy;
pub mod read;
pub mod span;

use crate::error::InputError;
use std::path::PathBuf;

/// Trace files read and joined.
pub struct Traces {
    pub graph: graph::Graph,
    pub loaded: read::Loaded,
}

/// Reads and joins `paths`.
pub fn load(paths: &[PathBuf]) -> Result<Traces, InputError> {
    let mut loaded = read::load(paths)?;
    let spans = std::mem::take(&mut loaded.spans);
    if spans.is_empty() {
        return Err(InputError::file(
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            "no span in the trace files",
        ));
    }
    let graph = graph::Graph::build(spans, &loaded.files, &mut loaded.dropped);
    Ok(Traces { graph, loaded })
}
