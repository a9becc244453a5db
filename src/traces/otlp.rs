//! OTLP/JSON (the OpenTelemetry protocol's JSON encoding, as the
//! Collector's file exporter writes it: one `ExportTraceServiceRequest` a
//! line, hex trace and span ids, integer enums).
//!
//! These are serde structs for the fields the importer reads, rather than
//! the `opentelemetry-proto` crate's generated types: that crate's serde
//! types exist only with its prost messages and pull in `opentelemetry_sdk`,
//! which brings a second major version of `rand` into the tree (the project
//! keeps one), `futures` and `prost-derive`, to read a text file. Unknown
//! fields are ignored, as the OTLP/JSON rules require of receivers.
//!
//! OTLP/JSON writes 64-bit integers (`startTimeUnixNano`, `intValue`) as
//! decimal strings, as protobuf's JSON mapping does, but receivers must
//! also take JSON numbers, which many producers write: [`de_i64`] takes
//! both. Span kinds and status codes are integers, or the enum names.

use super::span::{Kind, RawChecks, Span, answer_of, grpc_answer, one_line};
use serde::{Deserialize, Deserializer, de};

/// An `ExportTraceServiceRequest`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Request {
    pub resource_spans: Vec<ResourceSpans>,
}

/// Spans of one resource (one service instance).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSpans {
    pub resource: Resource,
    /// `scopeSpans`; before OTLP 0.19 it was `instrumentationLibrarySpans`.
    #[serde(alias = "instrumentationLibrarySpans")]
    pub scope_spans: Vec<ScopeSpans>,
}

/// A resource: its attributes hold `service.name`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Resource {
    pub attributes: Vec<KeyValue>,
}

/// Spans of one instrumentation scope.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScopeSpans {
    pub spans: Vec<OtlpSpan>,
}

/// One span as OTLP/JSON writes it.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OtlpSpan {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub name: String,
    pub kind: Enum,
    #[serde(deserialize_with = "de_i64")]
    pub start_time_unix_nano: i64,
    #[serde(deserialize_with = "de_i64")]
    pub end_time_unix_nano: i64,
    pub attributes: Vec<KeyValue>,
    pub status: Status,
}

/// A span's status: code 0 unset, 1 ok, 2 error.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Status {
    pub code: Enum,
    pub message: String,
}

/// An attribute.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeyValue {
    pub key: String,
    pub value: AnyValue,
}

/// An attribute value; arrays, maps and bytes are not read.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AnyValue {
    pub string_value: Option<String>,
    #[serde(deserialize_with = "de_opt_i64")]
    pub int_value: Option<i64>,
    pub double_value: Option<f64>,
    pub bool_value: Option<bool>,
}

impl AnyValue {
    /// The value as an integer: an `intValue`, an integral `doubleValue`, or
    /// a `stringValue` holding an integer.
    pub fn as_i64(&self) -> Option<i64> {
        self.int_value
            .or_else(|| self.double_value.filter(|d| d.fract() == 0.0 && d.abs() < 9e15).map(|d| d as i64))
            .or_else(|| self.string_value.as_deref().and_then(|s| s.trim().parse().ok()))
    }

    /// The value as text.
    pub fn as_string(&self) -> Option<String> {
        if let Some(s) = &self.string_value {
            return Some(s.clone());
        }
        self.int_value
            .map(|i| i.to_string())
            .or_else(|| self.double_value.map(|d| d.to_string()))
            .or_else(|| self.bool_value.map(|b| b.to_string()))
    }
}

/// An enum written as an integer or as its name (`SPAN_KIND_SERVER`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Enum {
    #[default]
    Absent,
    Int(i64),
    Name(String),
}

impl<'de> Deserialize<'de> for Enum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match v {
            serde_json::Value::Null => Ok(Enum::Absent),
            serde_json::Value::Number(n) => {
                n.as_i64().map(Enum::Int).ok_or_else(|| de::Error::custom(format!("enum value {n} is not an integer")))
            }
            serde_json::Value::String(s) => Ok(Enum::Name(s)),
            other => Err(de::Error::custom(format!("an enum is an integer or its name, got {other}"))),
        }
    }
}

/// A 64-bit integer written as a JSON number or as a decimal string.
pub fn de_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    de_opt_i64(d).map(|v| v.unwrap_or(0))
}

/// [`de_i64`] for an optional field (`null` is absent).
pub fn de_opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    struct V;
    impl<'de> de::Visitor<'de> for V {
        type Value = Option<i64>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a 64-bit integer, as a JSON number or a decimal string")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            i64::try_from(v).map(Some).map_err(|_| E::custom(format!("{v} is beyond a signed 64-bit integer")))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            if v.fract() == 0.0 && v.abs() < 9.2e18 {
                Ok(Some(v as i64))
            } else {
                Err(E::custom(format!("{v} is not an integer")))
            }
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
            s.trim().parse::<i64>().map(Some).or_else(|_| {
                s.trim()
                    .parse::<u64>()
                    .map_err(|_| E::custom(format!("\"{s}\" is not a decimal integer")))
                    .and_then(|u| self.visit_u64(u))
            })
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(V)
        }
    }
    d.deserialize_any(V)
}

/// The attribute `key` among `attrs`.
fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a AnyValue> {
    attrs.iter().find(|kv| kv.key == key).map(|kv| &kv.value)
}

/// A span id as written, `None` when empty or all zeros (no parent).
fn id(s: &str) -> Option<String> {
    let s = s.trim();
    if s.is_empty() || s.bytes().all(|b| b == b'0') { None } else { Some(s.to_ascii_lowercase()) }
}

/// Why a span of a request could not be used.
pub type Refusal = String;

/// The spans of one request, normalised; spans that cannot be used come
/// back as refusals (with why), the rest as spans.
pub fn spans_of(req: Request, at: (usize, usize)) -> (Vec<Span>, Vec<Refusal>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    for rs in req.resource_spans {
        let service = attr(&rs.resource.attributes, "service.name")
            .and_then(AnyValue::as_string)
            .unwrap_or_else(|| "unknown_service".into());
        for ss in rs.scope_spans {
            for s in ss.spans {
                let (Some(trace), Some(span_id)) = (id(&s.trace_id), id(&s.span_id)) else {
                    refused.push("a span without traceId or spanId".into());
                    continue;
                };
                let kind = match &s.kind {
                    Enum::Absent => Some(Kind::Unspecified),
                    Enum::Int(n) => Kind::from_otlp(*n),
                    Enum::Name(n) => Kind::from_name(n),
                };
                let Some(kind) = kind else {
                    refused.push(format!("a span whose kind {:?} is not an OTLP span kind", s.kind));
                    continue;
                };
                let a = &s.attributes;
                let http_attr = attr(a, "http.response.status_code").or_else(|| attr(a, "http.status_code"));
                let grpc_attr = attr(a, "rpc.grpc.status_code");
                let resend_attr = attr(a, "http.request.resend_count");
                let checks = RawChecks {
                    start: s.start_time_unix_nano,
                    end: s.end_time_unix_nano,
                    http_status: http_attr.map(AnyValue::as_i64),
                    grpc_status: grpc_attr.map(AnyValue::as_i64),
                    resend_count: resend_attr.map(AnyValue::as_i64),
                };
                if let Some(why) = checks.refusal() {
                    refused.push(why);
                    continue;
                }
                let http_status = http_attr.and_then(AnyValue::as_i64);
                let error_type = attr(a, "error.type").and_then(AnyValue::as_string);
                let status_error = matches!(&s.status.code, Enum::Int(2))
                    || matches!(&s.status.code, Enum::Name(n) if n.eq_ignore_ascii_case("STATUS_CODE_ERROR"));
                let error_type = error_type.or_else(|| {
                    (status_error && s.status.message.to_ascii_lowercase().contains("timeout"))
                        .then(|| s.status.message.clone())
                });
                let peer = attr(a, "peer.service").and_then(AnyValue::as_string).or_else(|| {
                    let host = attr(a, "server.address").or_else(|| attr(a, "net.peer.name"))?.as_string()?;
                    let port = attr(a, "server.port").or_else(|| attr(a, "net.peer.port")).and_then(AnyValue::as_i64);
                    Some(match port {
                        Some(p) => format!("{host}:{p}"),
                        None => host,
                    })
                });
                out.push(Span {
                    trace,
                    id: span_id,
                    parent: id(&s.parent_span_id),
                    service: one_line(service.clone()),
                    name: one_line(s.name),
                    kind,
                    start: s.start_time_unix_nano,
                    end: s.end_time_unix_nano,
                    answer: match (http_status, grpc_attr.and_then(AnyValue::as_i64)) {
                        (None, Some(code)) if error_type.is_none() => grpc_answer(code),
                        _ => answer_of(http_status, error_type.as_deref(), status_error),
                    },
                    resend_count: resend_attr.and_then(AnyValue::as_i64).and_then(|n| u32::try_from(n).ok()),
                    method: attr(a, "http.request.method")
                        .or_else(|| attr(a, "http.method"))
                        .and_then(AnyValue::as_string),
                    peer,
                    at,
                });
            }
        }
    }
    (out, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(start: &str, int: &str) -> String {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"api"}}}}]}},
            "scopeSpans":[{{"scope":{{"name":"x"}},"spans":[{{"traceId":"5B8EFFF798038103D269B633813FC60C",
            "spanId":"EEE19B7EC3C1B174","parentSpanId":"","name":"GET /a","kind":2,
            "startTimeUnixNano":{start},"endTimeUnixNano":"1544712660300000000","unknownField":{{"x":1}},
            "attributes":[{{"key":"http.response.status_code","value":{{"intValue":{int}}}}},
            {{"key":"custom","value":{{"arrayValue":{{"values":[]}}}}}}],"status":{{"code":2}}}}]}}]}}]}}"#
        )
    }

    #[test]
    fn int64_values_load_as_strings_or_numbers() {
        for (start, int) in
            [("\"1544712660000000000\"", "\"503\""), ("1544712660000000000", "503"), ("1544712660000000000", "\"503\"")]
        {
            let req: Request = serde_json::from_str(&line(start, int)).unwrap();
            let (spans, refused) = spans_of(req, (0, 1));
            assert!(refused.is_empty());
            let s = &spans[0];
            assert_eq!(s.start, 1_544_712_660_000_000_000);
            assert_eq!(s.duration(), 300_000_000);
            assert_eq!(s.answer, super::super::span::Answer::Status(503));
            assert_eq!(s.kind, Kind::Server);
            assert_eq!(s.trace, "5b8efff798038103d269b633813fc60c");
            assert_eq!(s.parent, None);
            assert_eq!(s.service, "api");
        }
    }

    #[test]
    fn enum_names_and_old_scope_field_load() {
        let text = r#"{"resourceSpans":[{"resource":{},"instrumentationLibrarySpans":[{"spans":[
            {"traceId":"01","spanId":"02","parentSpanId":"0000000000000000","kind":"SPAN_KIND_CLIENT",
             "startTimeUnixNano":"10","endTimeUnixNano":"20","status":{"code":"STATUS_CODE_ERROR","message":"deadline exceeded: timeout"}}]}]}]}"#;
        let (spans, _) = spans_of(serde_json::from_str(text).unwrap(), (0, 1));
        assert_eq!(spans[0].kind, Kind::Client);
        assert_eq!(spans[0].service, "unknown_service");
        assert_eq!(spans[0].answer, super::super::span::Answer::Timeout);
        assert_eq!(spans[0].parent, None);
    }

    #[test]
    fn bad_integers_are_errors_not_zeros() {
        let err = serde_json::from_str::<Request>(&line("\"12x\"", "1")).unwrap_err();
        assert!(err.to_string().contains("not a decimal integer"), "{err}");
    }
}
