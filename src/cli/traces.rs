//! `retrysim import-traces`: an experiment from OpenTelemetry traces; and
//! the traces side of `retrysim run --compare-traces`.

use super::EXIT_OK;
use crate::error::InputError;
use crate::traces::{self, emit, infer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `retrysim import-traces`.
#[derive(clap::Args, Debug, Clone)]
pub struct ImportTracesArgs {
    /// Trace files: OTLP/JSON (one ExportTraceServiceRequest a line, as the
    /// Collector's file exporter writes) or Jaeger JSON exports.
    #[arg(required = true, value_name = "TRACES")]
    pub traces: Vec<PathBuf>,
    /// The experiment to write; its empirical data files go into
    /// `<stem>.traces/` beside it.
    #[arg(long, value_name = "EXP.toml")]
    pub out: PathBuf,
    /// A service's capacity, instead of the highest concurrency seen: SERVICE=N (repeatable).
    #[arg(long = "workers", value_name = "SERVICE=N")]
    pub workers: Vec<String>,
    /// The experiment's name [default: "imported from traces"].
    #[arg(long)]
    pub name: Option<String>,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The most workers a service may have (as `services.NAME.workers`).
const MAX_WORKERS: u32 = 10_000_000;

fn parse_workers(list: &[String]) -> Result<BTreeMap<String, u32>, InputError> {
    let mut out = BTreeMap::new();
    for w in list {
        let bad = || {
            InputError::file(
                format!("--workers {w}"),
                format!("expected SERVICE=N, N a whole number from 1 to {MAX_WORKERS}"),
            )
        };
        let (s, n) = w.split_once('=').ok_or_else(bad)?;
        let n: u32 = n.trim().parse().ok().filter(|&n| (1..=MAX_WORKERS).contains(&n)).ok_or_else(bad)?;
        if out.insert(s.trim().to_string(), n).is_some() {
            return Err(InputError::file(format!("--workers {w}"), "given twice for this service"));
        }
    }
    Ok(out)
}

/// Reads `paths` and infers the model.
pub fn model_of(
    paths: &[PathBuf],
    workers: &BTreeMap<String, u32>,
) -> Result<(infer::Model, traces::Traces), InputError> {
    let t = traces::load(paths)?;
    // A service is named as in the traces or as in the experiment written.
    let names = traces::names::service_names(
        t.graph.spans.iter().filter(|s| s.kind == traces::span::Kind::Server).map(|s| s.service.as_str()),
    );
    let mut by_trace_name = BTreeMap::new();
    for (name, &n) in workers {
        let Some(trace_name) = names
            .get_key_value(name)
            .map(|(k, _)| k)
            .or_else(|| names.iter().find(|(_, m)| *m == name).map(|(k, _)| k))
        else {
            let known: Vec<&str> = names.values().map(String::as_str).collect();
            return Err(InputError::file(
                format!("--workers {name}=…"),
                format!("no service of that name in the traces; they have: {}", known.join(", ")),
            ));
        };
        by_trace_name.insert(trace_name.clone(), n);
    }
    let m = infer::infer(&t.graph, &by_trace_name);
    let files = || paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let (first, last) = (t.graph.roots.first(), t.graph.roots.last());
    if let (Some(&a), Some(&b)) = (first, last)
        && t.graph.spans[b].start - t.graph.spans[a].start > traces::span::MAX_SPAN_NS
    {
        let at = |i: usize| {
            let s = &t.graph.spans[i];
            format!(
                "{}:{} at {}",
                paths.get(s.at.0).map(|p| p.display().to_string()).unwrap_or_default(),
                s.at.1,
                emit::utc(s.start)
            )
        };
        return Err(InputError::file(
            files(),
            format!(
                "the root spans start over more than 36500 days (the first {}, the last {}), longer than an experiment can last: are some timestamps wrong?",
                at(a),
                at(b)
            ),
        ));
    }
    if m.services.is_empty() {
        return Err(InputError::file(
            files(),
            "no SERVER span: the importer needs span kinds (SERVER for a request served, CLIENT for one sent); spans without a kind cannot be told apart",
        ));
    }
    if m.clients.is_empty() {
        return Err(InputError::file(
            files(),
            "no trace with one root span: no arrivals to model (are the entry spans sampled away?)",
        ));
    }
    Ok((m, t))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// A folder of its own under the system's temporary folder, removed when dropped.
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Loads the experiment `text` with its data `files` from a staging folder
/// before anything is written beside `--out`: an experiment that would not
/// load is an error that names the trace files, and nothing is left behind.
fn validate_before_writing(text: &str, files: &[emit::DataFile], traces: &[PathBuf]) -> Result<(), InputError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "retrysim-import-traces-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let staging = Staging(dir);
    let shown = traces.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let fail = |what: String| InputError::file(&shown, what);
    let write = |rel: &str, body: &str| -> Result<(), InputError> {
        let p = staging.0.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| fail(format!("cannot stage the experiment in {}: {e}", parent.display())))?;
        }
        std::fs::write(&p, body).map_err(|e| fail(format!("cannot stage the experiment in {}: {e}", p.display())))
    };
    for (rel, body) in files {
        write(rel, body)?;
    }
    write("experiment.toml", text)?;
    crate::config::load_experiment(&staging.0.join("experiment.toml"), &[]).map_err(|e| {
        fail(format!(
            "the experiment inferred from these traces would not load, so nothing was written (please report this with the traces): {}",
            e.to_string().replace(&*staging.0.to_string_lossy(), "")
        ))
    })?;
    Ok(())
}

/// Runs `import-traces`.
pub fn run(args: &ImportTracesArgs) -> anyhow::Result<i32> {
    let workers = parse_workers(&args.workers)?;
    let (model, t) = model_of(&args.traces, &workers)?;
    let out = &args.out;
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "imported".into());
    let dir = format!("{stem}.traces");
    let base = out.parent().map(Path::to_path_buf).unwrap_or_default();
    let sources: Vec<String> = args
        .traces
        .iter()
        .zip(&t.loaded.formats)
        .map(|(p, (f, n))| {
            format!("{} ({f}, {n} spans)", p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
        })
        .collect();
    let sources = format!(
        "{}: {} spans in {} traces, {} complete",
        sources.join(", "),
        t.graph.spans.len(),
        t.graph.traces,
        t.graph.complete_traces
    );
    let name = args.name.clone().unwrap_or_else(|| "imported from traces".into());
    let (text, files) = emit::experiment(&model, &t.loaded.dropped, &sources, &dir, &name);
    // Never over a trace file, nor over a file this command did not write.
    let mut targets: Vec<PathBuf> = vec![out.clone()];
    targets.extend(files.iter().map(|(rel, _)| base.join(rel)));
    for p in &targets {
        if args.traces.iter().any(|tr| same_file(tr, p)) {
            return Err(InputError::file(
                p.display().to_string(),
                "is one of the trace files being read: choose another --out",
            )
            .into());
        }
        if !emit::replaceable(p) {
            return Err(InputError::file(
                p.display().to_string(),
                "exists and was not written by import-traces: not overwritten (choose another --out or remove it)",
            )
            .into());
        }
    }
    validate_before_writing(&text, &files, &args.traces)?;
    std::fs::create_dir_all(base.join(&dir)).map_err(|e| {
        InputError::file(base.join(&dir).display().to_string(), format!("cannot create the data folder: {e}"))
    })?;
    for (rel, body) in &files {
        crate::output::write_atomic(&base.join(rel), body.as_bytes(), &args.traces)?;
    }
    crate::output::write_atomic(out, text.as_bytes(), &args.traces)?;
    if !args.quiet {
        let edges: usize = model.services.iter().map(|s| s.calls.len()).sum();
        eprintln!(
            "wrote {} ({} services, {} call edges, {} clients; {} data files in {})",
            out.display(),
            model.services.len(),
            edges,
            model.clients.len(),
            files.len(),
            base.join(&dir).display()
        );
        for (why, (n, ex)) in &t.loaded.dropped.reasons {
            let ex = if ex.is_empty() { String::new() } else { format!(" (first: {ex})") };
            eprintln!("dropped {n} x {why}{ex}");
        }
        for n in &model.notes {
            eprintln!("note: {n}");
        }
    }
    Ok(EXIT_OK)
}
