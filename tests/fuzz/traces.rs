//! The trace corpus of the fuzz harness: a small traced system as OTLP/JSON
//! lines (and as a Jaeger export), and mutations that make spans hostile:
//! their own parent, a parent cycle, a duplicate id, odd names, statuses,
//! resend counts and timestamps.

use serde_json::{Value, json};

fn attr(k: &str, v: Value) -> Value {
    json!({ "key": k, "value": v })
}

fn span(trace: u64, id: u64, parent: Option<u64>, kind: i64, start: i64, end: i64, attrs: Vec<Value>) -> Value {
    json!({
        "traceId": format!("{trace:032x}"),
        "spanId": format!("{id:016x}"),
        "parentSpanId": parent.map(|p| format!("{p:016x}")).unwrap_or_default(),
        "name": if kind == 2 { "GET /work" } else { "GET" },
        "kind": kind,
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": end.to_string(),
        "attributes": attrs,
        "status": {},
    })
}

/// 60 requests at 20/s: loadgen → api (2 ms own work) → backend (5 ms);
/// every 4th request's first backend attempt answers 503 and is retried
/// after 20 ms. One OTLP request per service and half, as a batching
/// exporter writes them.
pub fn system_jsonl() -> String {
    let ms = 1_000_000i64;
    let t0 = 1_700_000_000_000_000_000i64;
    let (mut lg, mut api, mut be) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..60u64 {
        let trace = i + 1;
        let id = |k: u64| trace * 100 + k;
        let start = t0 + i as i64 * 50 * ms;
        let mut t = start + 3 * ms;
        let attempts: &[i64] = if i % 4 == 0 { &[503, 200] } else { &[200] };
        for (k, &code) in attempts.iter().enumerate() {
            let end = t + 7 * ms;
            let mut a = vec![
                attr("http.request.method", json!({ "stringValue": "POST" })),
                attr("server.address", json!({ "stringValue": "backend" })),
                attr("http.response.status_code", json!({ "intValue": code.to_string() })),
            ];
            if k > 0 {
                a.push(attr("http.request.resend_count", json!({ "intValue": k.to_string() })));
            }
            api.push(span(trace, id(10 + k as u64), Some(id(2)), 3, t, end, a));
            be.push(span(
                trace,
                id(30 + k as u64),
                Some(id(10 + k as u64)),
                2,
                t + ms,
                end - ms,
                vec![attr("http.response.status_code", json!({ "intValue": code.to_string() }))],
            ));
            t = end + if code == 503 { 20 * ms } else { 0 };
        }
        api.push(span(trace, id(2), Some(id(1)), 2, start + ms, t, vec![]));
        lg.push(span(
            trace,
            id(1),
            None,
            3,
            start,
            t + ms,
            vec![
                attr("server.address", json!({ "stringValue": "api" })),
                attr("http.response.status_code", json!({ "intValue": "200" })),
            ],
        ));
    }
    let mut out = String::new();
    for (svc, spans) in [("loadgen", lg), ("api", api), ("backend", be)] {
        let half = spans.len() / 2;
        for chunk in [&spans[..half], &spans[half..]] {
            let req = json!({ "resourceSpans": [{
                "resource": { "attributes": [attr("service.name", json!({ "stringValue": svc }))] },
                "scopeSpans": [{ "scope": { "name": "fuzz" }, "spans": chunk }] }] });
            out.push_str(&req.to_string());
            out.push('\n');
        }
    }
    out
}

/// Odd values a span field may be given.
const ODD: &[&str] = &[
    "\"\"",
    "\"a.b\"",
    "\"c d\"",
    "\"x->y\"",
    "\"é\"",
    "\"api\"",
    "\"loadgen\"",
    "\"\\u202e\"",
    "\"line\\nbreak\"",
    "-5",
    "0",
    "\"-1\"",
    "\"9223372036854775807\"",
    "\"abc\"",
    "999",
    "\"999\"",
    "-503",
    "1e300",
    "null",
    "[]",
    "{}",
    "true",
    "7",
    "\"0000000000000000\"",
];

/// Mutates one span of line `a` (of the JSON lines in `text`): its parent
/// becomes itself or another span's id, its id another's, or one of its
/// fields or attributes an odd value. Lines that are not JSON are left.
pub fn mutate_trace(text: &str, (kind, a, b): (u8, usize, usize)) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return text.to_string();
    }
    let li = a % lines.len();
    let Ok(mut doc) = serde_json::from_str::<Value>(&lines[li]) else { return text.to_string() };
    let Some(spans) =
        doc.pointer_mut("/resourceSpans/0/scopeSpans/0/spans").and_then(Value::as_array_mut).filter(|s| !s.is_empty())
    else {
        return text.to_string();
    };
    let n = spans.len();
    let (i, j) = (b % n, (b / 7) % n);
    let odd: Value = serde_json::from_str(ODD[(a / 3 + b) % ODD.len()]).unwrap();
    let id_j = spans[j]["spanId"].clone();
    let s = &mut spans[i];
    match kind % 8 {
        0 => s["parentSpanId"] = s["spanId"].clone(),
        1 => s["parentSpanId"] = id_j,
        2 => s["spanId"] = id_j,
        3 => {
            let keys = ["startTimeUnixNano", "endTimeUnixNano", "kind", "name", "traceId", "status"];
            s[keys[b % keys.len()]] = odd;
        }
        4 => {
            let keys = ["http.response.status_code", "http.request.resend_count", "rpc.grpc.status_code", "error.type"];
            let key = keys[b % keys.len()];
            let value = if odd.is_string() { json!({ "stringValue": odd }) } else { json!({ "intValue": odd }) };
            if let Some(attrs) = s["attributes"].as_array_mut() {
                attrs.push(json!({ "key": key, "value": value }));
            }
        }
        5 => {
            if let Some(v) = doc.pointer_mut("/resourceSpans/0/resource/attributes/0/value") {
                *v = json!({ "stringValue": odd.as_str().map_or_else(|| odd.to_string(), str::to_string) });
            }
        }
        6 => s["parentSpanId"] = json!(""),
        _ => {
            if let Some(attrs) = s["attributes"].as_array_mut() {
                attrs.clear();
            }
        }
    }
    lines[li] = doc.to_string();
    lines.join("\n") + "\n"
}
