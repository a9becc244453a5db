//! [`Policy::builder`]: a policy in code, checked by the same rules and
//! with the same messages as a policy file.

use crate::error::PolicyError;
use crate::file::duration;
use crate::raw::{BackoffRaw, BreakerRaw, BudgetRaw, HedgingRaw, PolicyRaw};
use crate::time::{NEVER, nanos};
use crate::{BackoffKind, Jitter, Policy};
use std::time::Duration;

/// Builds a [`Policy`] field by field; [`PolicyBuilder::build`] checks it
/// as a policy file is checked, and errors name the field as the file
/// format does (`backoff.base`).
///
/// ```
/// use retrysim_policy::{BackoffKind, Jitter, Policy};
/// use std::time::Duration;
/// let policy = Policy::builder()
///     .max_attempts(3)
///     .per_try_timeout(Duration::from_millis(500))
///     .deadline(Duration::from_secs(2))
///     .retry_on(["503", "timeout", "connect_error"])
///     .backoff(BackoffKind::Exponential, Duration::from_millis(100), Duration::from_secs(1))
///     .jitter(Jitter::Full)
///     .token_bucket_budget(10.0, 0.1)
///     .build()?;
/// assert_eq!(policy.max_attempts, 3);
/// assert_eq!(policy.per_try_timeout(), Some(Duration::from_millis(500)));
///
/// let err = Policy::builder().max_attempts(0).build().unwrap_err();
/// assert_eq!(err.field.as_deref(), Some("max_attempts"));
/// # Ok::<(), retrysim_policy::PolicyError>(())
/// ```
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Debug, Clone)]
pub struct PolicyBuilder {
    raw: PolicyRaw,
}

/// A duration as the file format writes it.
fn text(d: Duration) -> String {
    duration(nanos(d))
}

impl Policy {
    /// A builder for a policy in code. With nothing set, `build` refuses it
    /// as a file without `per_try_timeout` or `deadline` is refused.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder {
            raw: PolicyRaw {
                name: None,
                max_attempts: None,
                per_try_timeout: None,
                deadline: None,
                min_attempt_time: None,
                retry_on: None,
                retry_unknown_without_key: None,
                on_unknown: None,
                respect_retry_after: None,
                max_retry_after: None,
                backoff: None,
                budget: None,
                circuit_breaker: None,
                hedging: None,
                throttle: None,
                cancel_on_timeout: None,
                retry_after_clamp: None,
            },
        }
    }
}

impl PolicyBuilder {
    /// Checks the policy as a policy file is checked.
    pub fn build(self) -> Result<Policy, PolicyError> {
        let mut raw = self.raw;
        raw.name.get_or_insert_with(|| "builder".into());
        crate::validate::policy(&raw, "builder", "")
    }

    /// The display name (default "builder").
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.raw.name = Some(name.into());
        self
    }

    /// Attempts including the first, 1 to 1000 (default 1: no retries).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.raw.max_attempts = Some(i64::from(attempts));
        self
    }

    /// Give up one attempt after this long.
    pub fn per_try_timeout(mut self, timeout: Duration) -> Self {
        self.raw.per_try_timeout = Some(text(timeout));
        self
    }

    /// The time the whole call may take, waits included.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.raw.deadline = Some(text(deadline));
        self
    }

    /// Do not start an attempt with less deadline left than this.
    pub fn min_attempt_time(mut self, time: Duration) -> Self {
        self.raw.min_attempt_time = Some(text(time));
        self
    }

    /// The outcomes that may be retried, as a policy file names them:
    /// status codes (`"503"`), classes (`"5xx"`), `"timeout"`, `"reset"`,
    /// `"connect_error"`.
    pub fn retry_on<S: AsRef<str>>(mut self, outcomes: impl IntoIterator<Item = S>) -> Self {
        let list = outcomes.into_iter().map(|o| toml::Value::String(o.as_ref().to_string())).collect();
        self.raw.retry_on = Some(list);
        self
    }

    /// Retry outcomes that may have executed on non-idempotent operations
    /// sent without an idempotency key (default false).
    pub fn retry_unknown_without_key(mut self, yes: bool) -> Self {
        self.raw.retry_unknown_without_key = Some(yes);
        self
    }

    /// What follows an outcome that may have executed (default
    /// [`crate::OnUnknown::Retry`]): with [`crate::OnUnknown::Query`] the next attempt
    /// asks the target whether the call committed.
    pub fn on_unknown(mut self, what: crate::OnUnknown) -> Self {
        self.raw.on_unknown = Some(what.label().to_string());
        self
    }

    /// Wait what a 429 or 503's Retry-After says instead of the backoff (default true).
    pub fn respect_retry_after(mut self, yes: bool) -> Self {
        self.raw.respect_retry_after = Some(yes);
        self
    }

    /// Give up instead of waiting a Retry-After longer than this; `None`
    /// waits any Retry-After (the default gives up past the deadline).
    pub fn max_retry_after(mut self, limit: Option<Duration>) -> Self {
        self.raw.max_retry_after = Some(limit.map_or_else(|| duration(NEVER), text));
        self
    }

    /// Clamp a respected Retry-After to `[backoff, backoff + clamp]`, as the AWS SDKs do.
    pub fn retry_after_clamp(mut self, clamp: Duration) -> Self {
        self.raw.retry_after_clamp = Some(text(clamp));
        self
    }

    /// A per-try timeout or the deadline cancels the attempt at the server (default false).
    pub fn cancel_on_timeout(mut self, yes: bool) -> Self {
        self.raw.cancel_on_timeout = Some(yes);
        self
    }

    fn backoff_raw(&mut self) -> &mut BackoffRaw {
        self.raw.backoff.get_or_insert(BackoffRaw {
            kind: None,
            base: None,
            cap: None,
            multiplier: None,
            jitter: None,
            jitter_ratio: None,
            throttling_base: None,
        })
    }

    /// The wait between attempts: its kind, its base and its cap.
    pub fn backoff(mut self, kind: BackoffKind, base: Duration, cap: Duration) -> Self {
        let b = self.backoff_raw();
        b.kind = Some(
            match kind {
                BackoffKind::None => "none",
                BackoffKind::Constant => "constant",
                BackoffKind::Exponential => "exponential",
                BackoffKind::Decorrelated => "decorrelated",
            }
            .into(),
        );
        b.base = Some(text(base));
        b.cap = Some(text(cap));
        self
    }

    /// The exponential backoff's growth per retry (default 2).
    pub fn multiplier(mut self, multiplier: f64) -> Self {
        self.backoff_raw().multiplier = Some(multiplier);
        self
    }

    /// How the wait is randomised below its limit (default none).
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        let b = self.backoff_raw();
        let (name, ratio) = match jitter {
            Jitter::None => ("none", None),
            Jitter::Full => ("full", None),
            Jitter::Equal => ("equal", None),
            Jitter::Proportional(r) => ("proportional", Some(r)),
        };
        b.jitter = Some(name.into());
        b.jitter_ratio = ratio;
        self
    }

    fn budget_raw(kind: &str) -> BudgetRaw {
        BudgetRaw {
            kind: Some(kind.into()),
            scope: None,
            max_tokens: None,
            token_ratio: None,
            initial: None,
            retry_cost: None,
            timeout_cost: None,
            throttling_cost: None,
            success_refund: None,
            ratio: None,
            min_per_sec: None,
            ttl: None,
            budget_percent: None,
            min_retry_concurrency: None,
        }
    }

    /// A gRPC-style token bucket: a retry needs more than half of
    /// `max_tokens`; a failure takes one token, a success gives back
    /// `token_ratio`.
    pub fn token_bucket_budget(mut self, max_tokens: f64, token_ratio: f64) -> Self {
        let mut b = Self::budget_raw("token_bucket");
        b.max_tokens = Some(max_tokens);
        b.token_ratio = Some(token_ratio);
        self.raw.budget = Some(b);
        self
    }

    /// A Finagle-style budget: retries at most `ratio` of the requests sent
    /// over `ttl`, plus `min_per_sec`.
    pub fn ratio_budget(mut self, ratio: f64, min_per_sec: f64, ttl: Duration) -> Self {
        let mut b = Self::budget_raw("ratio");
        b.ratio = Some(ratio);
        b.min_per_sec = Some(min_per_sec);
        b.ttl = Some(text(ttl));
        self.raw.budget = Some(b);
        self
    }

    /// A circuit breaker that opens after `failures` consecutive failures,
    /// stays open for `open_for`, then lets `probes` calls through and
    /// closes when they all succeed.
    pub fn consecutive_breaker(mut self, failures: u32, open_for: Duration, probes: u32) -> Self {
        self.raw.circuit_breaker = Some(BreakerRaw {
            kind: Some("consecutive".into()),
            retries_only: None,
            consecutive_failures: Some(i64::from(failures)),
            slow_call_duration: None,
            slow_call_ratio: None,
            failure_ratio: None,
            window: None,
            min_requests: None,
            open_for: Some(text(open_for)),
            half_open_probes: Some(i64::from(probes)),
        });
        self
    }

    /// Hedged requests instead of retries: up to `max_attempts` copies, the
    /// next one `delay` after the previous; the first final answer wins.
    pub fn hedging(mut self, max_attempts: u32, delay: Duration) -> Self {
        self.raw.hedging = Some(HedgingRaw {
            max_attempts: Some(i64::from(max_attempts)),
            delay: Some(text(delay)),
            max_extra_load: None,
            non_fatal: None,
            cancel: None,
        });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicyErrorKind;

    #[test]
    fn a_built_policy_is_the_policy_its_file_describes() {
        let built = Policy::builder()
            .name("p")
            .max_attempts(4)
            .per_try_timeout(Duration::from_millis(250))
            .deadline(Duration::from_secs(3))
            .retry_on(["503", "timeout"])
            .backoff(BackoffKind::Exponential, Duration::from_millis(50), Duration::from_secs(2))
            .multiplier(3.0)
            .jitter(Jitter::Proportional(0.2))
            .ratio_budget(0.1, 10.0, Duration::from_secs(10))
            .consecutive_breaker(5, Duration::from_secs(30), 2)
            .build()
            .unwrap();
        let file = Policy::from_toml(
            r#"name = "p"
max_attempts = 4
per_try_timeout = "250ms"
deadline = "3s"
retry_on = ["503", "timeout"]
[backoff]
kind = "exponential"
base = "50ms"
cap = "2s"
multiplier = 3.0
jitter = "proportional"
jitter_ratio = 0.2
[budget]
kind = "ratio"
ratio = 0.1
min_per_sec = 10.0
ttl = "10s"
[circuit_breaker]
kind = "consecutive"
consecutive_failures = 5
open_for = "30s"
half_open_probes = 2
"#,
            "file",
        )
        .unwrap();
        assert_eq!(built, file);
    }

    #[test]
    fn a_builder_is_checked_as_a_file_is() {
        let e = Policy::builder().max_attempts(3).build().unwrap_err();
        assert_eq!((e.kind, e.file.as_str()), (PolicyErrorKind::Invalid, "builder"));
        assert!(e.message.contains("per_try_timeout"), "{e}");
        let e = Policy::builder()
            .per_try_timeout(Duration::from_secs(1))
            .jitter(Jitter::Proportional(1.5))
            .build()
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("backoff.jitter_ratio"), "{e}");
        let e = Policy::builder().per_try_timeout(Duration::ZERO).build().unwrap_err();
        assert_eq!(e.field.as_deref(), Some("per_try_timeout"), "{e}");
    }
}
