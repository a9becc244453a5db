//! `[budget]`: each kind's fields, defaults from its source system, and
//! fields that belong to another kind rejected.

use super::first_extra;
use crate::budget::{BudgetKind, BudgetScope, BudgetSpec};
use crate::error::{InputError, InputResult};
use crate::raw::BudgetRaw;
use crate::units::parse_duration;

/// Validates a `[budget]` table; `None` for `kind = "none"`.
pub fn budget(raw: &BudgetRaw, file: &str, field: &str) -> InputResult<Option<BudgetSpec>> {
    let err = |name: &str, msg: String| InputError::field(file, format!("{field}.{name}"), msg);
    let kind_name = raw.kind.as_deref().unwrap_or("none");
    let present = [
        ("max_tokens", raw.max_tokens.is_some()),
        ("token_ratio", raw.token_ratio.is_some()),
        ("initial", raw.initial.is_some()),
        ("retry_cost", raw.retry_cost.is_some()),
        ("timeout_cost", raw.timeout_cost.is_some()),
        ("throttling_cost", raw.throttling_cost.is_some()),
        ("success_refund", raw.success_refund.is_some()),
        ("ratio", raw.ratio.is_some()),
        ("min_per_sec", raw.min_per_sec.is_some()),
        ("ttl", raw.ttl.is_some()),
        ("budget_percent", raw.budget_percent.is_some()),
        ("min_retry_concurrency", raw.min_retry_concurrency.is_some()),
    ];
    let only = |allowed: &[&str]| -> InputResult<()> {
        match first_extra(&present, allowed) {
            Some(extra) => {
                Err(err(extra, format!("not a field of kind = \"{kind_name}\" (it takes {})", allowed.join(", "))))
            }
            None => Ok(()),
        }
    };
    let non_neg = |name: &str, v: Option<f64>, default: f64| -> InputResult<f64> {
        let x = v.unwrap_or(default);
        if !(x.is_finite() && x >= 0.0) {
            return Err(err(name, format!("must be a non-negative number, got {x}")));
        }
        Ok(x)
    };
    let kind = match kind_name {
        "none" => {
            only(&[])?;
            return Ok(None);
        }
        "token_bucket" => {
            only(&["max_tokens", "token_ratio"])?;
            let max_tokens = non_neg("max_tokens", raw.max_tokens, 10.0)?;
            if !(max_tokens > 0.0 && max_tokens <= 1000.0) {
                return Err(err(
                    "max_tokens",
                    format!("must be in (0, 1000] as in gRPC's retryThrottling, got {max_tokens}"),
                ));
            }
            let token_ratio = non_neg("token_ratio", raw.token_ratio, 0.1)?;
            if token_ratio <= 0.0 {
                return Err(err("token_ratio", "must be greater than 0".into()));
            }
            BudgetKind::TokenBucket { max_tokens, token_ratio }
        }
        "quota" => {
            only(&["initial", "retry_cost", "timeout_cost", "throttling_cost", "success_refund"])?;
            BudgetKind::Quota {
                initial: non_neg("initial", raw.initial, 500.0)?,
                retry_cost: non_neg("retry_cost", raw.retry_cost, 5.0)?,
                timeout_cost: non_neg("timeout_cost", raw.timeout_cost, 10.0)?,
                throttling_cost: non_neg("throttling_cost", raw.throttling_cost, 5.0)?,
                success_refund: non_neg("success_refund", raw.success_refund, 1.0)?,
            }
        }
        "ratio" => {
            only(&["ratio", "min_per_sec", "ttl"])?;
            let ttl = match &raw.ttl {
                None => 10_000_000_000,
                Some(s) => parse_duration(s).map_err(|m| err("ttl", m))?,
            };
            if ttl == 0 {
                return Err(err("ttl", "must be longer than 0".into()));
            }
            BudgetKind::Ratio {
                ratio: non_neg("ratio", raw.ratio, 0.2)?,
                min_per_sec: non_neg("min_per_sec", raw.min_per_sec, 10.0)?,
                ttl,
            }
        }
        "concurrency" => {
            only(&["budget_percent", "min_retry_concurrency"])?;
            let pct = non_neg("budget_percent", raw.budget_percent, 20.0)?;
            if pct > 100.0 {
                return Err(err("budget_percent", format!("must be from 0 to 100, got {pct}")));
            }
            let min = raw.min_retry_concurrency.unwrap_or(3);
            if !(0..=1_000_000).contains(&min) {
                return Err(err("min_retry_concurrency", format!("must be an integer from 0 to 1000000, got {min}")));
            }
            BudgetKind::Concurrency { budget_percent: pct, min_retry_concurrency: min as u32 }
        }
        other => {
            return Err(err(
                "kind",
                format!("unknown budget \"{other}\": allowed are none, token_bucket, quota, ratio, concurrency"),
            ));
        }
    };
    let scope = match raw.scope.as_deref().unwrap_or("client") {
        "client" => BudgetScope::Client,
        "shared" => BudgetScope::Shared,
        other => {
            return Err(err(
                "scope",
                format!(
                    "unknown scope \"{other}\": allowed are client (one per client instance) and shared (one per client class)"
                ),
            ));
        }
    };
    Ok(Some(BudgetSpec { kind, scope }))
}
