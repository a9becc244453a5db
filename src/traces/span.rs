//! One span as the importer sees it, whatever file format it came from.

use std::fmt;

/// OpenTelemetry span kinds (the OTLP integer enum: 0 unspecified, 1
/// internal, 2 server, 3 client, 4 producer, 5 consumer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Unspecified,
    Internal,
    Server,
    Client,
    Producer,
    Consumer,
}

impl Kind {
    /// The kind of the OTLP integer, `None` when out of range.
    pub fn from_otlp(n: i64) -> Option<Kind> {
        Some(match n {
            0 => Kind::Unspecified,
            1 => Kind::Internal,
            2 => Kind::Server,
            3 => Kind::Client,
            4 => Kind::Producer,
            5 => Kind::Consumer,
            _ => return None,
        })
    }

    /// The kind of a name: `SPAN_KIND_SERVER` (the enum's name, as protobuf
    /// JSON may write it) or Jaeger's `span.kind` tag value (`server`).
    pub fn from_name(s: &str) -> Option<Kind> {
        let s = s.trim().to_ascii_lowercase();
        let s = s.strip_prefix("span_kind_").unwrap_or(&s);
        Some(match s {
            "unspecified" => Kind::Unspecified,
            "internal" => Kind::Internal,
            "server" => Kind::Server,
            "client" => Kind::Client,
            "producer" => Kind::Producer,
            "consumer" => Kind::Consumer,
            _ => return None,
        })
    }
}

/// What a span says happened to its request.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Answer {
    /// Answered without an error.
    Ok,
    /// An HTTP status of 300 or more.
    Status(u16),
    /// The caller gave up waiting (`error.type` names a timeout).
    Timeout,
    /// The connection could not be made (`error.type` names a refused or
    /// failed connection).
    ConnectError,
    /// Any other error without an HTTP status (the span's status is ERROR).
    Error,
}

impl Answer {
    /// Whether the answer is a success.
    pub fn is_ok(&self) -> bool {
        matches!(self, Answer::Ok) || matches!(self, Answer::Status(s) if *s < 300)
    }

    /// Whether it is a redirect (3xx): `http.request.resend_count` counts
    /// the request that follows one, though it is no retry.
    pub fn is_redirect(&self) -> bool {
        matches!(self, Answer::Status(s) if (300..400).contains(s))
    }

    /// The outcome's name in a policy's `retry_on` (DESIGN §2): a status
    /// as a string, `timeout`, `connect_error`; other errors without a
    /// status are taken as `reset`.
    pub fn retry_label(&self) -> String {
        match self {
            Answer::Ok => "ok".into(),
            Answer::Status(s) => s.to_string(),
            Answer::Timeout => "timeout".into(),
            Answer::ConnectError => "connect_error".into(),
            Answer::Error => "reset".into(),
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.retry_label())
    }
}

/// One span, normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Trace id, lower-case hex as written (OTLP/JSON) or as Jaeger writes it.
    pub trace: String,
    pub id: String,
    /// The parent's span id; `None` for a root.
    pub parent: Option<String>,
    /// `service.name` of the resource (Jaeger: the process's serviceName).
    pub service: String,
    pub name: String,
    pub kind: Kind,
    /// Start and end, nanoseconds since the epoch on the emitting host's clock.
    pub start: i64,
    pub end: i64,
    pub answer: Answer,
    /// `http.request.resend_count` (retries and redirects before this request).
    pub resend_count: Option<u32>,
    /// `http.request.method` (or the older `http.method`).
    pub method: Option<String>,
    /// `peer.service`, or `server.address:server.port` of a CLIENT span.
    pub peer: Option<String>,
    /// Where it was read: file index and line (1-based).
    pub at: (usize, usize),
}

impl Span {
    /// Duration in nanoseconds.
    pub fn duration(&self) -> i64 {
        self.end - self.start
    }
}

/// The answer of a span from its attributes: the HTTP status
/// (`http.response.status_code`, or the older `http.status_code`), the
/// `error.type` (a name holding "timeout" or "deadline" is a timeout, one
/// holding "refused" or "connect" a connection error) and whether the span's
/// status is ERROR.
pub fn answer_of(http_status: Option<i64>, error_type: Option<&str>, status_error: bool) -> Answer {
    let kind = error_type.map(|e| e.to_ascii_lowercase());
    if let Some(e) = &kind {
        if e.contains("timeout") || e.contains("timed out") || e.contains("deadline") {
            return Answer::Timeout;
        }
        if e.contains("refused") || e.contains("connect") {
            return Answer::ConnectError;
        }
    }
    match http_status {
        Some(s) if (300..=999).contains(&s) => Answer::Status(s as u16),
        Some(_) => Answer::Ok,
        None if status_error || kind.is_some() => Answer::Error,
        None => Answer::Ok,
    }
}

/// The longest span the importer takes: 36 500 days, the longest duration
/// an experiment can hold.
pub const MAX_SPAN_NS: i64 = 36_500 * 86_400 * 1_000_000_000;

/// The raw values of a span that must be in range for the span to be used.
/// Each `Option<Option<i64>>` is `None` without the attribute, `Some(None)`
/// when it is there but no integer.
pub struct RawChecks {
    pub start: i64,
    pub end: i64,
    pub http_status: Option<Option<i64>>,
    pub grpc_status: Option<Option<i64>>,
    pub resend_count: Option<Option<i64>>,
}

impl RawChecks {
    /// Why the span cannot be used, if it cannot: a time before 1970, a
    /// span longer than 36 500 days, an HTTP status outside 100 to 599, a
    /// gRPC status outside 0 to 16, a resend count outside 0 to 1000.
    pub fn refusal(&self) -> Option<String> {
        let out = |v: &Option<Option<i64>>, range: std::ops::RangeInclusive<i64>| {
            v.as_ref().is_some_and(|x| !x.is_some_and(|x| range.contains(&x)))
        };
        if self.start <= 0 || self.end <= 0 {
            Some("a span with a start or end time at or before 1970-01-01 (0 or negative)".into())
        } else if self.end.saturating_sub(self.start) > MAX_SPAN_NS {
            Some("a span longer than 36500 days".into())
        } else if out(&self.http_status, 100..=599) {
            Some("a span whose HTTP status (http.response.status_code) is not a number from 100 to 599".into())
        } else if out(&self.grpc_status, 0..=16) {
            Some("a span whose rpc.grpc.status_code is not a number from 0 to 16".into())
        } else if out(&self.resend_count, 0..=1000) {
            Some("a span whose http.request.resend_count is not a count from 0 to 1000".into())
        } else {
            None
        }
    }
}

/// `s` with control characters (a newline, a tab, BEL) as `?`: names and
/// span names go into comments of one line.
pub fn one_line(s: String) -> String {
    if s.chars().any(char::is_control) { s.chars().map(|c| if c.is_control() { '?' } else { c }).collect() } else { s }
}

/// The answer of a gRPC span from `rpc.grpc.status_code`: OK, and the
/// codes a retry policy treats as HTTP statuses do: DEADLINE_EXCEEDED (4)
/// a timeout, UNAVAILABLE (14) as 503, RESOURCE_EXHAUSTED (8) as 429,
/// INTERNAL (13) as 500; any other code is an error without a status.
pub fn grpc_answer(code: i64) -> Answer {
    match code {
        0 => Answer::Ok,
        4 => Answer::Timeout,
        8 => Answer::Status(429),
        13 => Answer::Status(500),
        14 => Answer::Status(503),
        _ => Answer::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_follow_status_and_error_type() {
        assert_eq!(answer_of(Some(200), None, false), Answer::Ok);
        assert_eq!(answer_of(Some(503), Some("503"), true), Answer::Status(503));
        assert_eq!(answer_of(None, Some("timeout"), true), Answer::Timeout);
        assert_eq!(answer_of(None, Some("java.net.SocketTimeoutException"), true), Answer::Timeout);
        assert_eq!(answer_of(None, Some("ConnectionRefusedError"), true), Answer::ConnectError);
        assert_eq!(answer_of(None, None, true), Answer::Error);
        assert!(Answer::Status(302).is_redirect() && !Answer::Status(302).is_ok());
        assert_eq!(Kind::from_name("SPAN_KIND_CLIENT"), Some(Kind::Client));
        assert_eq!(Kind::from_name("server"), Some(Kind::Server));
        assert_eq!(Kind::from_otlp(7), None);
        assert_eq!(grpc_answer(14), Answer::Status(503));
        assert_eq!(grpc_answer(4), Answer::Timeout);
    }
}
