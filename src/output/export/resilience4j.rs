//! resilience4j: the policy as a Spring Boot `application.yml` instance of
//! `resilience4j.retry`, `resilience4j.circuitbreaker` and
//! `resilience4j.timelimiter` (resilience4j-spring-boot3 2.x keys).
//!
//! Backoff: `waitDuration` is the base; exponential growth is
//! `enableExponentialBackoff` with `exponentialBackoffMultiplier` and
//! `exponentialMaxWaitDuration` (the cap); `enableRandomizedWait` with
//! `randomizedWaitFactor` r waits `limit * U(1-r, 1+r)`, retrysim's
//! proportional jitter. Breakers: `failure_ratio` is a TIME_BASED window
//! of whole seconds with `failureRateThreshold`; `slow_call` adds
//! `slowCallDurationThreshold` and `slowCallRateThreshold`; `consecutive`
//! n is a COUNT_BASED window of n calls that opens when all n failed
//! (`failureRateThreshold` 100, `minimumNumberOfCalls` n).

use super::*;
use crate::policy::breaker::BreakerKind;

/// Java exceptions of each retried outcome without a status.
const EXCEPTIONS: [(&str, &str); 3] = [
    ("connect_error", "java.net.ConnectException"),
    ("timeout", "java.util.concurrent.TimeoutException"),
    ("reset", "java.net.SocketException"),
];

/// The policy as resilience4j Spring Boot YAML.
pub fn to_resilience4j(p: &Policy) -> Exported {
    let mut x = Exported::new();
    let name = k8s_name(&p.name);
    let retries = p.max_attempts > 1;
    let mut y = String::new();
    y.push_str(&format!(
        "# resilience4j (Spring Boot application.yml) exported by retrysim from policy {:?}.\n",
        p.name
    ));
    y.push_str("resilience4j:\n  retry:\n    instances:\n");
    y.push_str(&format!("      {name}:\n"));
    y.push_str(&format!("        maxAttempts: {}\n", p.max_attempts));
    let b = &p.backoff;
    let ms = |ns: Nanos| format!("{}ms", ns.div_ceil(1_000_000));
    match b.kind {
        BackoffKind::None => y.push_str("        waitDuration: 0ms\n"),
        kind => {
            y.push_str(&format!("        waitDuration: {}\n", ms(b.base)));
            if !b.base.is_multiple_of(1_000_000) {
                x.lose("backoff.base", format!("{}: exported in whole milliseconds", human(b.base)));
            }
            if matches!(kind, BackoffKind::Exponential | BackoffKind::Decorrelated) {
                if kind == BackoffKind::Decorrelated && retries {
                    x.lose(
                        "backoff.kind",
                        "decorrelated: resilience4j has exponential backoff; exported base, multiplier 3 and cap",
                    );
                }
                let m = if kind == BackoffKind::Decorrelated { 3.0 } else { b.multiplier };
                y.push_str(&format!(
                    "        enableExponentialBackoff: true\n        exponentialBackoffMultiplier: {m:?}\n"
                ));
                if b.cap != NEVER {
                    y.push_str(&format!("        exponentialMaxWaitDuration: {}\n", ms(b.cap)));
                }
            } else if b.cap < b.base {
                x.lose("backoff.cap", format!("{}: a constant wait has no cap in resilience4j", human(b.cap)));
            }
            match b.jitter {
                Jitter::None => {}
                Jitter::Proportional(r) if r < 1.0 => {
                    y.push_str(&format!("        enableRandomizedWait: true\n        randomizedWaitFactor: {r:?}\n"));
                }
                j if retries => {
                    // The widest randomisation resilience4j allows.
                    y.push_str("        enableRandomizedWait: true\n        randomizedWaitFactor: 0.99\n");
                    x.lose(
                        "backoff.jitter",
                        format!(
                            "{}: resilience4j randomizes as limit * U(1-f, 1+f) with f < 1; exported f = 0.99",
                            jitter_label(j)
                        ),
                    );
                }
                _ => {}
            }
        }
    }
    let r = &p.retry_on;
    let exceptions: Vec<&str> = EXCEPTIONS
        .iter()
        .filter(|(e, _)| match *e {
            "connect_error" => r.connect_error,
            "timeout" => r.timeout,
            _ => r.reset,
        })
        .map(|(_, class)| *class)
        .collect();
    if !exceptions.is_empty() {
        y.push_str("        retryExceptions:\n");
        for e in &exceptions {
            y.push_str(&format!("        - {e}\n"));
        }
    }
    if !r.statuses.is_empty() {
        let list: Vec<String> = r.statuses.iter().map(u16::to_string).collect();
        y.push_str(&format!(
            "        # Retried statuses {}: resilience4j retries results through a Predicate class, which the\n        # application writes (resultPredicate); these statuses are what it must match.\n",
            list.join(", ")
        ));
        y.push_str("        resultPredicate: io.retrysim.RetryOnStatus\n");
        if retries {
            x.lose(
                "retry_on",
                format!(
                    "{}: resilience4j matches results with a Predicate class the application provides (resultPredicate io.retrysim.RetryOnStatus, a placeholder)",
                    list.join(", ")
                ),
            );
        }
    }
    if retries {
        if p.respect_retry_after {
            x.lose(
                "respect_retry_after",
                "true: resilience4j does not read Retry-After (an intervalBiFunction bean could)",
            );
        }
        if let Some(m) = p.max_retry_after {
            x.lose("max_retry_after", format!("{}: resilience4j does not read Retry-After", human(m)));
        }
        if !p.retry_unknown_without_key && !unknown_outcomes(p).is_empty() {
            x.lose(
                "retry_unknown_without_key",
                "false: resilience4j retries what the instance names whatever the call; use the instance only for idempotent or keyed calls",
            );
        }
        if p.min_attempt_time > 0 {
            x.lose("min_attempt_time", format!("{}: resilience4j has no such key", human(p.min_attempt_time)));
        }
        if let Some(t) = b.throttling_base {
            x.lose("backoff.throttling_base", format!("{}: one wait for every failure", human(t)));
        }
        if let Some(c) = p.retry_after_clamp {
            x.lose("retry_after_clamp", format!("{}: resilience4j does not read Retry-After", human(c)));
        }
    }
    if p.deadline != NEVER {
        x.lose(
            "deadline",
            format!(
                "{}: resilience4j has no deadline over all attempts; a TimeLimiter decorating the whole retry would be one",
                human(p.deadline)
            ),
        );
    }

    if let Some(c) = &p.breaker {
        y.push_str("  circuitbreaker:\n    instances:\n");
        y.push_str(&format!("      {name}:\n"));
        match c.kind {
            BreakerKind::Consecutive { failures } => {
                y.push_str(&format!(
                    "        slidingWindowType: COUNT_BASED\n        slidingWindowSize: {failures}\n        minimumNumberOfCalls: {failures}\n        failureRateThreshold: 100\n"
                ));
            }
            kind => {
                let secs = c.window.div_ceil(1_000_000_000).max(1);
                if !c.window.is_multiple_of(1_000_000_000) {
                    x.lose(
                        "circuit_breaker.window",
                        format!("{}: a TIME_BASED window is whole seconds; exported {secs}s", human(c.window)),
                    );
                }
                y.push_str(&format!(
                    "        slidingWindowType: TIME_BASED\n        slidingWindowSize: {secs}\n        minimumNumberOfCalls: {}\n",
                    c.min_requests.max(1)
                ));
                let failure = c.failure_ratio.unwrap_or(1.0) * 100.0;
                y.push_str(&format!("        failureRateThreshold: {failure:?}\n"));
                if let BreakerKind::SlowCall { duration, ratio } = kind {
                    y.push_str(&format!(
                        "        slowCallDurationThreshold: {}\n        slowCallRateThreshold: {:?}\n",
                        ms(duration),
                        ratio * 100.0
                    ));
                }
            }
        }
        y.push_str(&format!(
            "        waitDurationInOpenState: {}\n        permittedNumberOfCallsInHalfOpenState: {}\n",
            ms(c.open_for),
            c.half_open_probes
        ));
        y.push_str("        automaticTransitionFromOpenToHalfOpenEnabled: true\n");
        if !exceptions.is_empty() {
            y.push_str("        recordExceptions:\n");
            for e in &exceptions {
                y.push_str(&format!("        - {e}\n"));
            }
        }
        if c.retries_only {
            x.lose(
                "circuit_breaker.retries_only",
                "true: a resilience4j breaker guards every call; put it inside the retry (Retry(CircuitBreaker(call))) for it to stop first attempts too",
            );
        }
    }
    if p.per_try_timeout != NEVER && p.per_try_timeout < p.deadline {
        y.push_str("  timelimiter:\n    instances:\n");
        y.push_str(&format!(
            "      {name}:\n        timeoutDuration: {}\n        cancelRunningFuture: {}\n",
            ms(p.per_try_timeout),
            p.cancel_on_timeout
        ));
    }
    if let Some(bs) = p.budget.filter(|_| retries) {
        x.lose(
            "budget",
            format!(
                "{}: resilience4j has no retry budget (a Bulkhead limits calls in flight, a RateLimiter calls per period)",
                budget_kind_label(&bs.kind)
            ),
        );
    }
    if p.hedging.is_some() {
        x.lose("hedging", "resilience4j has no hedged requests");
    }
    if p.throttle.is_some() {
        x.lose("throttle", "resilience4j has no adaptive client-side throttle");
    }
    x.text = y;
    x
}
