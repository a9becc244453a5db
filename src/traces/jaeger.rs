//! Jaeger's JSON export (the UI's "Download JSON" and the query API's
//! `/api/traces` answer): `{"data": [{"traceID", "spans", "processes"}]}`,
//! times in microseconds, the span kind and HTTP status in tags.

use super::otlp::de_i64;
use super::span::{Kind, RawChecks, Span, answer_of, grpc_answer, one_line};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The file: a list of traces.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct File {
    pub data: Vec<Trace>,
}

/// One trace with its processes (services).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Trace {
    pub spans: Vec<JSpan>,
    pub processes: BTreeMap<String, Process>,
}

/// A process: the service that emitted spans.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Process {
    pub service_name: String,
}

/// One span.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct JSpan {
    #[serde(rename = "traceID")]
    pub trace_id: String,
    #[serde(rename = "spanID")]
    pub span_id: String,
    #[serde(rename = "operationName")]
    pub operation_name: String,
    pub references: Vec<Reference>,
    /// Microseconds since the epoch.
    #[serde(rename = "startTime", deserialize_with = "de_i64")]
    pub start_time: i64,
    /// Microseconds.
    #[serde(deserialize_with = "de_i64")]
    pub duration: i64,
    pub tags: Vec<Tag>,
    #[serde(rename = "processID")]
    pub process_id: String,
    /// Some exports inline the process instead of naming it.
    pub process: Option<Process>,
}

/// A reference to another span: `CHILD_OF` is the parent.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Reference {
    #[serde(rename = "refType")]
    pub ref_type: String,
    #[serde(rename = "spanID")]
    pub span_id: String,
}

/// A tag: key, type and value (a string, number or bool).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Tag {
    pub key: String,
    pub value: serde_json::Value,
}

fn tag<'a>(tags: &'a [Tag], key: &str) -> Option<&'a serde_json::Value> {
    tags.iter().find(|t| t.key == key).map(|t| &t.value)
}

fn as_i64(v: &serde_json::Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
        .or_else(|| v.as_str()?.trim().parse().ok())
}

fn as_string(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The spans of a Jaeger file; spans that cannot be used come back as
/// refusals, with why.
pub fn spans_of(file: File, file_index: usize) -> (Vec<Span>, Vec<String>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for (ti, t) in file.data.into_iter().enumerate() {
        for s in t.spans {
            if s.trace_id.trim().is_empty() || s.span_id.trim().is_empty() {
                refused.push("a span without traceID or spanID".into());
                continue;
            }
            let service = s
                .process
                .as_ref()
                .map(|p| p.service_name.clone())
                .or_else(|| t.processes.get(&s.process_id).map(|p| p.service_name.clone()))
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| "unknown_service".into());
            let parent = s
                .references
                .iter()
                .find(|r| r.ref_type.eq_ignore_ascii_case("CHILD_OF"))
                .map(|r| r.span_id.to_ascii_lowercase());
            let kind = tag(&s.tags, "span.kind")
                .and_then(as_string)
                .and_then(|k| Kind::from_name(&k))
                .unwrap_or(Kind::Unspecified);
            let http_tag = tag(&s.tags, "http.response.status_code").or_else(|| tag(&s.tags, "http.status_code"));
            let grpc_tag = tag(&s.tags, "rpc.grpc.status_code");
            let resend_tag = tag(&s.tags, "http.request.resend_count");
            let start = s.start_time.saturating_mul(1000);
            let checks = RawChecks {
                start,
                end: start.saturating_add(s.duration.saturating_mul(1000)),
                http_status: http_tag.map(as_i64),
                grpc_status: grpc_tag.map(as_i64),
                resend_count: resend_tag.map(as_i64),
            };
            if let Some(why) = checks.refusal() {
                refused.push(why);
                continue;
            }
            let http_status = http_tag.and_then(as_i64);
            let error = tag(&s.tags, "error").is_some_and(|v| v.as_bool() == Some(true) || v.as_str() == Some("true"))
                || tag(&s.tags, "otel.status_code").and_then(|v| v.as_str()) == Some("ERROR");
            let error_type = tag(&s.tags, "error.type").and_then(as_string);
            let peer = tag(&s.tags, "peer.service").and_then(as_string).or_else(|| {
                let host =
                    tag(&s.tags, "server.address").or_else(|| tag(&s.tags, "net.peer.name")).and_then(as_string)?;
                Some(match tag(&s.tags, "server.port").or_else(|| tag(&s.tags, "net.peer.port")).and_then(as_i64) {
                    Some(p) => format!("{host}:{p}"),
                    None => host,
                })
            });
            out.push(Span {
                trace: s.trace_id.to_ascii_lowercase(),
                id: s.span_id.to_ascii_lowercase(),
                parent,
                service: one_line(service),
                name: one_line(s.operation_name),
                kind,
                start,
                end: start.saturating_add(s.duration.saturating_mul(1000)),
                answer: match (http_status, grpc_tag.and_then(as_i64)) {
                    (None, Some(code)) if error_type.is_none() => grpc_answer(code),
                    _ => answer_of(http_status, error_type.as_deref(), error),
                },
                resend_count: resend_tag.and_then(as_i64).and_then(|n| u32::try_from(n).ok()),
                method: tag(&s.tags, "http.request.method").or_else(|| tag(&s.tags, "http.method")).and_then(as_string),
                peer,
                at: (file_index, ti + 1),
            });
        }
    }
    (out, refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::span::Answer;

    #[test]
    fn a_jaeger_export_loads() {
        let text = r#"{"data":[{"traceID":"abc","spans":[
          {"traceID":"abc","spanID":"1","operationName":"GET /","references":[],"startTime":1000,"duration":500,
           "tags":[{"key":"span.kind","type":"string","value":"server"},{"key":"http.status_code","type":"int64","value":503},{"key":"error","type":"bool","value":true}],"processID":"p1"},
          {"traceID":"abc","spanID":"2","operationName":"GET","references":[{"refType":"CHILD_OF","traceID":"abc","spanID":"1"}],
           "startTime":"1100","duration":100,"tags":[{"key":"span.kind","type":"string","value":"client"}],"processID":"p1"}],
          "processes":{"p1":{"serviceName":"api","tags":[]}}}]}"#;
        let (spans, refused) = spans_of(serde_json::from_str(text).unwrap(), 0);
        assert!(refused.is_empty());
        assert_eq!(spans[0].kind, Kind::Server);
        assert_eq!(spans[0].answer, Answer::Status(503));
        assert_eq!(spans[0].duration(), 500_000);
        assert_eq!(spans[1].parent.as_deref(), Some("1"));
        assert_eq!(spans[1].start, 1_100_000);
        assert_eq!(spans[1].service, "api");
    }
}
