//! `retrysim import-traces` on synthetic OTLP/JSON and Jaeger files whose
//! truth is known: int64 values as strings or numbers, missing parents,
//! clock skew, unknown fields, redirects counted by
//! `http.request.resend_count`, retries and the inferred policy, bad
//! input (exit 2, naming the file), and help examples that name the
//! sample traces shipped in experiments/traces/.

use retrysim::cli::execute;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// How the synthetic system writes its spans.
#[derive(Clone, Copy)]
struct Opts {
    /// int64 values as JSON numbers instead of strings.
    numbers: bool,
    /// Nanoseconds added to every backend timestamp.
    skew: i64,
    /// Drop the api SERVER span of every 10th trace (as a lost export).
    lose_every: Option<u64>,
    /// The first backend attempt of every 5th trace answers 302, then resends.
    redirects: bool,
    /// api calls backend twice per request.
    twice: bool,
}

const OPTS: Opts = Opts { numbers: false, skew: 0, lose_every: None, redirects: false, twice: false };

fn int(v: i64, o: Opts) -> Value {
    if o.numbers { json!(v) } else { json!(v.to_string()) }
}

fn attr(k: &str, v: Value) -> Value {
    json!({ "key": k, "value": v })
}

#[allow(clippy::too_many_arguments)]
fn span(
    o: Opts,
    trace: u64,
    id: u64,
    parent: Option<u64>,
    name: &str,
    kind: i64,
    start: i64,
    end: i64,
    mut attrs: Vec<Value>,
) -> Value {
    attrs.push(attr("custom.unknown", json!({ "kvlistValue": { "values": [] } })));
    json!({
        "traceId": format!("{trace:032x}"),
        "spanId": format!("{id:016x}"),
        "parentSpanId": parent.map(|p| format!("{p:016x}")).unwrap_or_default(),
        "name": name, "kind": kind,
        "startTimeUnixNano": int(start, o), "endTimeUnixNano": int(end, o),
        "attributes": attrs, "status": {}, "droppedEventsCount": 0, "links": [],
    })
}

fn status(code: i64, o: Opts) -> Value {
    attr("http.response.status_code", json!({ "intValue": int(code, o) }))
}

/// One line (one ExportTraceServiceRequest) per service: 400 requests at
/// 20/s; loadgen → api (self time 3 ms) → backend (service time 10 ms +
/// 1 ms per (i mod 10)); every 4th request's first backend attempt answers
/// 503 and is retried after 30 ms; 1 ms one-way network latency.
fn write_system(dir: &Path, o: Opts) -> Vec<PathBuf> {
    let (mut lg, mut api, mut be) = (Vec::new(), Vec::new(), Vec::new());
    let ms = 1_000_000i64;
    let t0 = 1_700_000_000_000_000_000i64;
    for i in 0..400u64 {
        let trace = i + 1;
        let id = |k: u64| trace * 100 + k;
        let start = t0 + i as i64 * 50 * ms;
        let st = (10 + (i % 10) as i64) * ms;
        let retry = i % 4 == 0;
        let redirect = o.redirects && i % 5 == 1;
        // api: 3 ms self, then the backend call.
        let api_start = start + ms;
        let mut t = api_start + 3 * ms;
        for rep in 0..if o.twice { 2 } else { 1 } {
            let mut attempts = Vec::new();
            if retry {
                attempts.push((503, 0));
            }
            if redirect {
                attempts.push((302, 0));
            }
            attempts.push((200, st));
            let n = attempts.len();
            for (k, (code, work)) in attempts.into_iter().enumerate() {
                let c_start = t;
                let c_end = c_start + 2 * ms + work + ms / 10;
                let c_id = id(10 + rep * 40 + k as u64);
                let mut a = vec![
                    attr("http.request.method", json!({ "stringValue": "GET" })),
                    attr("server.address", json!({ "stringValue": "backend.internal" })),
                    status(code, o),
                ];
                if k > 0 {
                    a.push(attr("http.request.resend_count", json!({ "intValue": int(k as i64, o) })));
                }
                api.push(span(o, trace, c_id, Some(id(2)), "GET", 3, c_start, c_end, a));
                be.push(span(
                    o,
                    trace,
                    id(30 + rep * 40 + k as u64),
                    Some(c_id),
                    "GET /work",
                    2,
                    c_start + ms + o.skew,
                    c_end - ms + o.skew,
                    vec![status(code, o)],
                ));
                t = c_end;
                if code == 503 && k + 1 < n {
                    t += 30 * ms;
                }
            }
        }
        let api_end = t;
        if o.lose_every.is_none_or(|e| i % e != 3) {
            api.push(span(o, trace, id(2), Some(id(1)), "GET /checkout", 2, api_start, api_end, vec![status(200, o)]));
        }
        lg.push(span(
            o,
            trace,
            id(1),
            None,
            "GET",
            3,
            start,
            api_end + ms,
            vec![
                status(200, o),
                attr("http.request.method", json!({ "stringValue": "GET" })),
                attr("server.address", json!({ "stringValue": "api.internal" })),
            ],
        ));
    }
    let mut paths = Vec::new();
    for (svc, spans) in [("loadgen", lg), ("api", api), ("backend", be)] {
        // Two requests per file, as a batching exporter writes them.
        let half = spans.len() / 2;
        let mut text = String::new();
        for chunk in [&spans[..half], &spans[half..]] {
            let req = json!({ "resourceSpans": [{ "resource": { "attributes": [attr("service.name", json!({ "stringValue": svc }))] },
                "scopeSpans": [{ "scope": { "name": "test" }, "spans": chunk }] }] });
            text.push_str(&serde_json::to_string(&req).unwrap());
            text.push('\n');
        }
        let p = dir.join(format!("{svc}.jsonl"));
        std::fs::write(&p, text).unwrap();
        paths.push(p);
    }
    paths
}

fn import(files: &[PathBuf], out: &Path, extra: &[&str]) -> retrysim::cli::Outcome {
    let mut args: Vec<String> = vec!["retrysim".into(), "import-traces".into(), "-q".into()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    execute(args)
}

fn imported(o: Opts, extra: &[&str]) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let files = write_system(dir.path(), o);
    let out = dir.path().join("exp.toml");
    let r = import(&files, &out, extra);
    assert_eq!(r.code, 0, "{:?}", r.error);
    (std::fs::read_to_string(&out).unwrap(), dir)
}

/// The experiment without its comments (the evidence lines name files).
fn values(text: &str) -> String {
    text.lines()
        .map(|l| l.split('#').next().unwrap().trim_end())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn data(dir: &Path, name: &str) -> Vec<f64> {
    std::fs::read_to_string(dir.join("exp.traces").join(name))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.parse().unwrap())
        .collect()
}

#[test]
fn the_model_of_a_known_system() {
    let (text, dir) = imported(OPTS, &[]);
    let v = values(&text);
    // 400 arrivals 50 ms apart: 399 gaps over 19.95 s = 20/s.
    assert!(v.contains("rate = \"20.000/s\""), "{text}");
    assert!(v.contains("duration = \"20s\""), "{text}");
    assert!(v.contains("name = \"loadgen\"\nrate"), "{text}");
    assert!(v.contains("[[services]]\nname = \"api\""), "{text}");
    // The api → backend edge: 2 attempts at most, 503 retried, 30 ms constant wait, no jitter.
    assert!(v.contains("to = \"backend\"\noperation = \"GET_work\""), "{text}");
    assert!(v.contains("max_attempts = 2"), "{text}");
    assert!(v.contains("retry_on = [\"503\"]"), "{text}");
    assert!(v.contains("base = \"30ms\""), "{text}");
    assert!(v.contains("jitter = \"none\""), "{text}");
    // 100 of 500 backend SERVER spans answered 503 with nothing below: an error fault.
    assert!(v.contains("target = \"backend\"\nstatus = 503\nprobability = 0.2000"), "{text}");
    // GET is idempotent.
    assert!(v.contains("name = \"GET_work\"\nidempotent = true"), "{text}");
    // Backend service times: 10.1..19.1 ms, 40 of each; api self time 3 ms (+ the 30 ms waits are in the call).
    let mut st = data(dir.path(), "backend.service_time.csv");
    st.sort_by(f64::total_cmp);
    assert_eq!(st.len(), 400);
    assert!((st[0] - 0.0101).abs() < 1e-9 && (st[399] - 0.0191).abs() < 1e-9, "{:?}", &st[..3]);
    let api = data(dir.path(), "api.service_time.csv");
    assert!(api.iter().all(|x| (x - 0.003).abs() < 1e-9), "{api:?}");
    // Network: (client − server) / 2 = 1 ms on every answered attempt.
    let net = data(dir.path(), "api-backend.latency.csv");
    assert!(net.iter().all(|x| (x - 0.001).abs() < 1e-9), "{net:?}");
    assert!(text.contains("# Nothing was dropped."), "{text}");
    // And it runs.
    let out = dir.path().join("out");
    let r = execute([
        "retrysim",
        "run",
        "-q",
        "--no-plots",
        "--replications",
        "2",
        dir.path().join("exp.toml").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{:?}", r.error);
}

#[test]
fn int64_values_as_numbers_give_the_same_model_as_strings() {
    let (a, _d1) = imported(OPTS, &[]);
    let (b, _d2) = imported(Opts { numbers: true, ..OPTS }, &[]);
    assert_eq!(values(&a), values(&b));
}

#[test]
fn clock_skew_is_reported_and_does_not_change_the_model() {
    let (a, _d1) = imported(OPTS, &[]);
    let (b, d2) = imported(Opts { skew: 250_000_000, ..OPTS }, &[]);
    assert_eq!(values(&a), values(&b));
    assert!(b.contains("clock skew: backend's clock reads 250ms ahead of api's"), "{b}");
    let net = data(d2.path(), "api-backend.latency.csv");
    assert!(net.iter().all(|x| (x - 0.001).abs() < 1e-9));
}

#[test]
fn spans_with_missing_parents_are_counted_and_set_aside() {
    let (text, _d) = imported(Opts { lose_every: Some(10), ..OPTS }, &[]);
    // 40 api SERVER spans lost: their traces' 40 api CLIENT spans (and the 10 retries among them) are orphans.
    assert!(text.contains("# Dropped or set aside:"), "{text}");
    assert!(text.contains("whose parent is not in the files"), "{text}");
    // Arrivals still count every root (the loadgen spans are roots).
    assert!(values(&text).contains("rate = \"20.000/s\""), "{text}");
}

#[test]
fn redirects_counted_by_resend_count_are_no_retries() {
    let (text, _d) = imported(Opts { redirects: true, ..OPTS }, &[]);
    assert!(
        text.contains("requests after a 3xx answer left out: http.request.resend_count counts redirects"),
        "{text}"
    );
    // Still at most 2 attempts (503 then ok), not 3, and 302 is not retried after.
    let v = values(&text);
    assert!(v.contains("max_attempts = 2") && v.contains("retry_on = [\"503\"]"), "{text}");
}

#[test]
fn two_calls_per_request_are_one_call_in_the_model_and_say_so() {
    let (text, _d) = imported(Opts { twice: true, ..OPTS }, &[]);
    assert!(text.contains("800 calls in 400 requests of api in complete traces: 2.000 per request (the model makes one call to a callee on every request)"), "{text}");
    assert_eq!(text.matches("[[services.calls]]").count(), 1, "{text}");
}

#[test]
fn workers_can_be_given_and_a_second_import_replaces_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_system(dir.path(), OPTS);
    let out = dir.path().join("exp.toml");
    assert_eq!(import(&files, &out, &[]).code, 0);
    let r = import(&files, &out, &["--workers", "backend=7"]);
    assert_eq!(r.code, 0, "{:?}", r.error);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("workers = 7   # 7 from --workers"), "{text}");
}

#[test]
fn bad_input_is_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_system(dir.path(), OPTS);
    let out = dir.path().join("exp.toml");
    let junk = dir.path().join("junk.jsonl");
    std::fs::write(&junk, "not json\n{\"a\": 1}\n").unwrap();
    let r = import(std::slice::from_ref(&junk), &out, &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.error.as_deref().unwrap().contains("junk.jsonl")
            && r.error.as_deref().unwrap().contains("no line is an OTLP/JSON"),
        "{:?}",
        r.error
    );
    let r = import(&files, &out, &["--workers", "nosuch=3"]);
    assert_eq!(r.code, 2);
    assert!(r.error.as_deref().unwrap().contains("no service of that name"), "{:?}", r.error);
    let r = import(&files, &out, &["--workers", "backend=0"]);
    assert_eq!(r.code, 2);
    // Spans without kinds cannot be modelled.
    let kindless = dir.path().join("kindless.jsonl");
    std::fs::write(
        &kindless,
        std::fs::read_to_string(&files[1])
            .unwrap()
            .replace("\"kind\":2", "\"kind\":0")
            .replace("\"kind\":3", "\"kind\":0"),
    )
    .unwrap();
    let r = import(std::slice::from_ref(&kindless), &out, &[]);
    assert_eq!(r.code, 2);
    assert!(r.error.as_deref().unwrap().contains("no SERVER span"), "{:?}", r.error);
    // Never over a trace file, nor over a file someone else wrote.
    let r = import(&files, &files[0], &[]);
    assert_eq!(r.code, 2, "{:?}", r.error);
    let mine = dir.path().join("mine.toml");
    std::fs::write(&mine, "# my notes\n").unwrap();
    let r = import(&files, &mine, &[]);
    assert_eq!(r.code, 2);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "# my notes\n");
    // A bad line among good ones is dropped and said.
    let mut text = std::fs::read_to_string(&files[2]).unwrap();
    text.push_str("{\"resourceSpans\": [ cut short\n");
    std::fs::write(&files[2], text).unwrap();
    assert_eq!(import(&files, &out, &[]).code, 0);
    assert!(std::fs::read_to_string(&out).unwrap().contains("a line that is not OTLP/JSON"));
}

#[test]
fn a_jaeger_export_imports() {
    let dir = tempfile::tempdir().unwrap();
    let mut spans = Vec::new();
    for i in 0..50u64 {
        let t = 1_700_000_000_000_000 + i as i64 * 100_000;
        let tags = |kind: &str, code: i64| {
            json!([{ "key": "span.kind", "type": "string", "value": kind },
            { "key": "http.status_code", "type": "int64", "value": code }, { "key": "http.method", "type": "string", "value": "GET" }])
        };
        spans.push(json!({ "traceID": format!("{i:x}"), "spanID": format!("a{i:x}"), "operationName": "GET /", "references": [],
            "startTime": t, "duration": 5000, "tags": tags("server", match i % 10 { 0 => 503, 5 => 500, 7 => 302, _ => 200 }), "processID": "p1" }));
    }
    let file =
        json!({ "data": [{ "traceID": "x", "spans": spans, "processes": { "p1": { "serviceName": "front" } } }] });
    let path = dir.path().join("jaeger.json");
    std::fs::write(&path, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    let out = dir.path().join("exp.toml");
    let r = import(&[path], &out, &[]);
    assert_eq!(r.code, 0, "{:?}", r.error);
    let text = std::fs::read_to_string(&out).unwrap();
    let v = values(&text);
    // Untraced callers of the root SERVER spans; 5 of 50 answered 500 and 5
    // answered 503: the second fault sees what the first lets through
    // (0.1 / 0.9); a 302 is an answer, not an error.
    assert!(v.contains("name = \"front-callers\""), "{text}");
    assert!(v.contains("status = 500\nprobability = 0.1000"), "{text}");
    assert!(v.contains("status = 503\nprobability = 0.1111"), "{text}");
    assert!(!v.contains("status = 302"), "{text}");
    assert!(v.contains("rate = \"10.000/s\""), "{text}");
}

#[test]
fn compare_traces_puts_the_run_beside_the_traces() {
    let (_, dir) = imported(OPTS, &[]);
    let files: Vec<String> = ["loadgen", "api", "backend"]
        .iter()
        .map(|s| dir.path().join(format!("{s}.jsonl")).display().to_string())
        .collect();
    let out = dir.path().join("out");
    let mut args: Vec<String> =
        ["retrysim", "run", "-q", "--replications", "3"].iter().map(|s| s.to_string()).collect();
    args.push(dir.path().join("exp.toml").display().to_string());
    args.extend(["--out".into(), out.display().to_string(), "--compare-traces".into()]);
    args.extend(files.iter().cloned());
    let r = execute(args);
    assert_eq!(r.code, 0, "{:?}", r.error);
    let cmp: Value = serde_json::from_str(&std::fs::read_to_string(out.join("compare-traces.json")).unwrap()).unwrap();
    assert_eq!(cmp["schema"], "retrysim.compare_traces/1");
    assert!(out.join("compare-traces.png").exists() && out.join("compare-traces.svg").exists());
    let rows = cmp["variants"][0]["rows"].as_array().unwrap();
    let find =
        |name: &str, metric: &str| rows.iter().find(|r| r["name"] == name && r["metric"] == metric).unwrap().clone();
    // Observed exactly: every 4th of 400 calls had two attempts.
    let a = find("api->backend", "attempts_per_call");
    assert_eq!(a["observed"]["value"], json!(1.25));
    // The model makes 20% of backend attempts 503 (100 of 500 SERVER spans), i.i.d.: 1.2 per call.
    let sim = a["simulated"]["value"].as_f64().unwrap();
    assert!((sim - 1.2).abs() < 0.03, "{sim}");
    // Every observed call succeeds in the end (a 503 is always followed by
    // an ok), but the model's independent 503s fail 0.2² = 4% of calls: the
    // comparison says so.
    let s = find("api->backend", "success_rate");
    assert_eq!(s["observed"]["value"], json!(1.0));
    let sim = s["simulated"]["value"].as_f64().unwrap();
    assert!((sim - 0.96).abs() < 0.02, "{sim}");
    assert_eq!(s["verdict"], "DIFFERS");
    // Each scope is there; a service row has no attempts per call.
    for (scope, name) in [("end-to-end", "loadgen->api"), ("edge", "api->backend"), ("service", "backend")] {
        assert!(rows.iter().any(|r| r["scope"] == scope && r["name"] == name), "{scope} {name}");
    }
    assert!(!rows.iter().any(|r| r["scope"] == "service" && r["metric"] == "attempts_per_call"));
    // Bad trace files fail before anything runs.
    let r = execute([
        "retrysim",
        "run",
        "-q",
        dir.path().join("exp.toml").to_str().unwrap(),
        "--compare-traces",
        "/nonexistent.jsonl",
    ]);
    assert_eq!(r.code, 2);
    assert!(r.error.unwrap().contains("/nonexistent.jsonl"));
}

/// Runs `f` on a thread and fails the test if it has not returned within
/// `secs` (a hang would otherwise stall the whole suite).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs)).expect("did not end: a hang")
}

#[test]
fn spans_in_parent_cycles_are_counted_and_never_hang() {
    for (name, links) in [("self", vec![("0a", "0a")]), ("pair", vec![("0a", "0b"), ("0b", "0a")])] {
        let dir = tempfile::tempdir().unwrap();
        let files = write_system(dir.path(), OPTS);
        // CLIENT spans of api towards the backend whose parents loop.
        let spans: Vec<Value> = links
            .iter()
            .map(|(id, parent)| {
                json!({ "traceId": "00000000000000000000000000000abc", "spanId": id, "parentSpanId": parent,
                    "name": "GET", "kind": 3, "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000001000000",
                    "attributes": [attr("server.address", json!({ "stringValue": "backend.internal" }))] })
            })
            .collect();
        let line = json!({ "resourceSpans": [{ "resource": { "attributes": [attr("service.name", json!({ "stringValue": "api" }))] },
            "scopeSpans": [{ "spans": spans }] }] });
        let mut text = std::fs::read_to_string(&files[1]).unwrap();
        text.push_str(&format!("{line}\n"));
        std::fs::write(&files[1], text).unwrap();
        let out = dir.path().join("exp.toml");
        let (f, o) = (files.clone(), out.clone());
        let r = within(60, move || import(&f, &o, &[]));
        assert_eq!(r.code, 0, "{name}: {:?}", r.error);
        let written = std::fs::read_to_string(&out).unwrap();
        assert!(written.contains("its own ancestor"), "{name}: {written}");
        assert!(written.contains(&format!("{} x a span that is its own ancestor", links.len())), "{name}: {written}");
        // The rest of the model is the known system's.
        assert!(values(&written).contains("rate = \"20.000/s\""), "{name}: {written}");
        // The comparison reads the same traces.
        let (f, o) = (files.clone(), out.clone());
        let r = within(120, move || {
            let mut args: Vec<String> =
                ["retrysim", "run", "-q", "--no-plots", "--replications", "1"].map(String::from).to_vec();
            args.push(o.display().to_string());
            args.extend(["--out".into(), o.with_extension("out").display().to_string(), "--compare-traces".into()]);
            args.extend(f.iter().map(|p| p.display().to_string()));
            execute(args)
        });
        assert_eq!(r.code, 0, "{name}: {:?}", r.error);
    }
}

/// A small system named by the caller: `a` serves roots and calls `b`
/// (CLIENT spans with `peer.service`), 30 requests at 20/s; `extra` adds
/// attributes to every CLIENT span and `starts` sets the roots' starts.
fn named_system(dir: &Path, a: &str, b: &str, client_attrs: Vec<Value>, starts: &dyn Fn(u64) -> i64) -> PathBuf {
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    let ms = 1_000_000i64;
    for i in 0..30u64 {
        let start = starts(i);
        let mut attrs = vec![attr("peer.service", json!({ "stringValue": b }))];
        attrs.extend(client_attrs.iter().cloned());
        sa.push(span(OPTS, i + 1, i * 10 + 1, None, "GET /a", 2, start, start + 5 * ms, vec![]));
        sa.push(span(OPTS, i + 1, i * 10 + 2, Some(i * 10 + 1), "GET", 3, start + ms, start + 4 * ms, attrs));
        sb.push(span(OPTS, i + 1, i * 10 + 3, Some(i * 10 + 2), "GET /b", 2, start + 2 * ms, start + 3 * ms, vec![]));
    }
    let mut text = String::new();
    for (svc, spans) in [(a, sa), (b, sb)] {
        let req = json!({ "resourceSpans": [{ "resource": { "attributes": [attr("service.name", json!({ "stringValue": svc }))] },
            "scopeSpans": [{ "spans": spans }] }] });
        text.push_str(&format!("{req}\n"));
    }
    let p = dir.join("t.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

fn every_50ms(i: u64) -> i64 {
    1_700_000_000_000_000_000 + i as i64 * 50_000_000
}

/// The experiment written loads (lint exits 0 or 1, not 2).
fn loads(out: &Path) {
    let r = execute(["retrysim", "lint", "-q", out.to_str().unwrap()].map(String::from).to_vec());
    assert_ne!(r.code, 2, "{:?}\n{}", r.error, std::fs::read_to_string(out).unwrap());
}

#[test]
fn any_service_name_becomes_an_experiment_that_loads() {
    let long = "s".repeat(300);
    for (a, b) in [("a.b", "c d"), ("x->y", "é"), ("", "b"), ("api", "api"), (long.as_str(), "b"), ("api", "api\nx")] {
        let dir = tempfile::tempdir().unwrap();
        let t = named_system(dir.path(), a, b, vec![], &every_50ms);
        let out = dir.path().join("exp.toml");
        let r = import(std::slice::from_ref(&t), &out, &[]);
        assert_eq!(r.code, 0, "{a:?} {b:?}: {:?}", r.error);
        loads(&out);
        let text = std::fs::read_to_string(&out).unwrap();
        if a == b {
            // A service calling itself would be a cycle: the call is left out and said.
            assert!(text.contains("close a cycle of calls"), "{text}");
        } else if a != "api" {
            assert!(text.contains("in this experiment (names are 1 to 63"), "{text}");
        }
    }
}

#[test]
fn an_ok_answer_sent_again_is_no_retry_on_entry() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_system(dir.path(), OPTS);
    // Every backend CLIENT span answered 200 that precedes another attempt:
    // make the 503 first attempts answer 200 instead.
    let text = std::fs::read_to_string(&files[1]).unwrap().replace("\"503\"", "\"200\"");
    std::fs::write(&files[1], text).unwrap();
    let out = dir.path().join("exp.toml");
    let r = import(&files, &out, &[]);
    assert_eq!(r.code, 0, "{:?}", r.error);
    loads(&out);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!values(&text).contains("\"ok\""), "{text}");
    assert!(text.contains("attempts answered ok were followed by another attempt"), "{text}");
}

#[test]
fn out_of_range_values_are_dropped_and_counted() {
    for (attrs, why) in [
        (vec![status(999, OPTS)], "HTTP status (http.response.status_code) is not a number from 100 to 599"),
        (vec![status(-503, OPTS)], "not a number from 100 to 599"),
        (vec![attr("http.response.status_code", json!({ "stringValue": "abc" }))], "not a number from 100 to 599"),
        (vec![attr("http.request.resend_count", json!({ "intValue": "-1" }))], "resend_count is not a count"),
        (vec![attr("http.request.resend_count", json!({ "intValue": (1u64 << 62).to_string() }))], "resend_count"),
        (vec![attr("rpc.grpc.status_code", json!({ "intValue": "99" }))], "rpc.grpc.status_code is not a number"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let t = named_system(dir.path(), "api", "backend", attrs, &every_50ms);
        let out = dir.path().join("exp.toml");
        let r = import(std::slice::from_ref(&t), &out, &[]);
        assert_eq!(r.code, 0, "{why}: {:?}", r.error);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("30 x a span whose") && text.contains(why), "{why}: {text}");
        loads(&out);
    }
    // Times at or before 1970 are dropped; roots spread over more than
    // 36500 days are refused, naming the files, the first and last root,
    // and nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let t = named_system(dir.path(), "api", "backend", vec![], &|i| if i == 0 { -5 } else { every_50ms(i) });
    let out = dir.path().join("exp.toml");
    assert_eq!(import(std::slice::from_ref(&t), &out, &[]).code, 0);
    assert!(std::fs::read_to_string(&out).unwrap().contains("at or before 1970-01-01"));
    let dir = tempfile::tempdir().unwrap();
    let t = named_system(dir.path(), "api", "backend", vec![], &|i| if i == 0 { 1 } else { i64::MAX / 2 + i as i64 });
    let out = dir.path().join("exp.toml");
    let r = import(std::slice::from_ref(&t), &out, &[]);
    assert_eq!(r.code, 2);
    let e = r.error.unwrap();
    assert!(e.contains("t.jsonl") && e.contains("more than 36500 days") && e.contains("1970-01-01"), "{e}");
    assert!(!out.exists() && !dir.path().join("exp.traces").exists());
}

#[test]
fn workers_out_of_range_blame_the_flag_and_model_names_work() {
    let dir = tempfile::tempdir().unwrap();
    let t = named_system(dir.path(), "a.b", "backend", vec![], &every_50ms);
    let out = dir.path().join("exp.toml");
    let r = import(std::slice::from_ref(&t), &out, &["--workers", "backend=10000001"]);
    assert_eq!(r.code, 2);
    let e = r.error.unwrap();
    assert!(e.contains("--workers backend=10000001") && e.contains("1 to 10000000"), "{e}");
    assert!(!out.exists());
    // The service may be named as in the traces or as in the experiment.
    for w in ["a.b=7", "a_b=7"] {
        let r = import(std::slice::from_ref(&t), &out, &["--workers", w]);
        assert_eq!(r.code, 0, "{w}: {:?}", r.error);
        assert!(values(&std::fs::read_to_string(&out).unwrap()).contains("name = \"a_b\"\nworkers = 7"));
    }
}

#[test]
fn the_help_examples_name_trace_files_that_ship_and_import_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let help =
        std::process::Command::new(env!("CARGO_BIN_EXE_retrysim")).args(["import-traces", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let files: Vec<&str> = help.split_whitespace().filter(|w| w.ends_with(".jsonl")).collect();
    assert!(files.iter().any(|f| f.ends_with("loadgen.jsonl")), "{help}");
    for f in &files {
        match f.strip_suffix("*.jsonl") {
            Some(dir) => assert!(root.join(dir).join("api.jsonl").is_file(), "{f}: no such folder of traces"),
            None => assert!(root.join(f).is_file(), "the help names {f}, which does not exist:\n{help}"),
        }
    }
    // The second example imports.
    let dir = tempfile::tempdir().unwrap();
    let traces = ["loadgen", "api", "backend"].map(|n| root.join(format!("experiments/traces/{n}.jsonl")));
    let out = dir.path().join("exp.toml");
    let o = import(&traces, &out, &["--workers", "backend=4"]);
    assert_eq!(o.code, 0, "{:?}", o.error);
    assert!(std::fs::read_to_string(&out).unwrap().contains("[[services]]"));
}
