//! `retrysim import` of an `export` gives back the policy: over generated
//! policies whose fields the target carries exactly, `import(export(p)) ==
//! p` for gRPC, Envoy, AWS, Istio, Gateway API and Linkerd (and each `p`
//! is a valid policy file: written and loaded back first). Fields a target
//! does not carry are generated at what that target's import fills in.
//! The command itself: `retrysim import` prints a policy file that loads.

use proptest::prelude::*;
use retrysim::config::load_policy_file;
use retrysim::engine::{NEVER, Nanos};
use retrysim::import::import;
use retrysim::output::export::{Target, export};
use retrysim::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};
use retrysim::policy::file::to_toml;
use retrysim::policy::hedge::{HedgeDelay, HedgeSpec};
use retrysim::policy::throttle::{ThrottleKind, ThrottleSpec};
use retrysim::policy::{Backoff, BackoffKind, Jitter, Policy, RetryOn};
use std::path::Path;
use std::process::Command;

const MS: Nanos = 1_000_000;

/// The policy written as a policy file and loaded back: it is valid and
/// survives the file format.
fn valid(p: &Policy) -> Policy {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, to_toml(p)).unwrap();
    let q = load_policy_file(&path).unwrap_or_else(|e| panic!("generated policy is invalid: {e}\n{}", to_toml(p)));
    assert_eq!(&q, p, "the policy file round trip");
    q
}

fn round_trip(p: &Policy, target: Target) -> Result<(), TestCaseError> {
    let p = valid(p);
    let x = export(&p, target);
    let back = import(&x.text, target, "exported", &p.name)
        .unwrap_or_else(|e| panic!("import of the {} export failed: {e}\n{}", target.label(), x.text));
    prop_assert_eq!(&back.policy, &p, "{} export:\n{}", target.label(), x.text);
    Ok(())
}

fn none() -> RetryOn {
    RetryOn { connect_error: false, timeout: false, reset: false, statuses: Vec::new() }
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,6})?"
}

/// A subset of common retried statuses.
fn statuses() -> impl Strategy<Value = Vec<u16>> {
    proptest::sample::subsequence(vec![429u16, 500, 502, 503, 504], 0..=5)
}

fn ms(lo: u64, hi: u64) -> impl Strategy<Value = Nanos> {
    (lo..=hi).prop_map(|m| m * MS)
}

// ---------------------------------------------------------------- gRPC --

fn grpc_policy() -> impl Strategy<Value = Policy> {
    let retry = (
        name(),
        2u32..=5,
        ms(5, 2000),
        1u64..=20,
        prop_oneof![Just(1.0), Just(1.5), Just(2.0), Just(3.0)],
        proptest::sample::subsequence(vec![0usize, 1, 2, 3], 1..=4),
        ms(100, 60_000),
        proptest::option::of((1u32..=1000, 1u32..=1000)),
    )
        .prop_map(|(name, max_attempts, base, k, multiplier, groups, deadline, budget)| {
            let mut r = none();
            for g in groups {
                match g {
                    0 => {
                        r.connect_error = true;
                        r.reset = true;
                        r.statuses.extend([502, 503]);
                    }
                    1 => r.statuses.push(429),
                    2 => r.statuses.push(504),
                    _ => r.statuses.push(500),
                }
            }
            r.statuses.sort_unstable();
            Policy {
                name,
                max_attempts,
                deadline,
                retry_on: r,
                retry_unknown_without_key: true,
                respect_retry_after: true,
                backoff: Backoff {
                    kind: BackoffKind::Exponential,
                    base,
                    cap: base * k,
                    multiplier,
                    jitter: Jitter::Proportional(0.2),
                    throttling_base: None,
                },
                budget: budget.map(|(t, r)| BudgetSpec {
                    kind: BudgetKind::TokenBucket { max_tokens: t as f64, token_ratio: r as f64 / 1000.0 },
                    scope: BudgetScope::Client,
                }),
                ..Policy::default()
            }
        });
    let hedged =
        (name(), 2u32..=5, ms(1, 500), ms(100, 60_000), proptest::sample::subsequence(vec![0usize, 1, 2], 0..=3))
            .prop_map(|(name, copies, delay, deadline, groups)| {
                let mut non_fatal = none();
                for g in groups {
                    match g {
                        0 => non_fatal.statuses.extend([502, 503]),
                        1 => non_fatal.statuses.push(429),
                        _ => non_fatal.statuses.push(500),
                    }
                }
                non_fatal.statuses.sort_unstable();
                Policy {
                    name,
                    deadline,
                    retry_unknown_without_key: true,
                    hedging: Some(HedgeSpec {
                        max_attempts: copies,
                        delay: HedgeDelay::Fixed(delay),
                        max_extra_load: None,
                        non_fatal,
                        cancel: true,
                    }),
                    ..Policy::default()
                }
            });
    prop_oneof![3 => retry, 1 => hedged]
}

// --------------------------------------------------------------- Envoy --

fn envoy_policy() -> impl Strategy<Value = Policy> {
    (
        (name(), 1u32..=6, ms(200, 60_000), proptest::option::of(1u64..=100), any::<bool>(), any::<bool>()),
        (statuses(), ms(1, 500), 1u64..=20, any::<bool>(), proptest::option::of(ms(1, 30_000))),
        proptest::option::of((1u32..=100, 1u32..=10)),
        proptest::option::of((prop_oneof![Just(1.25), Just(2.0), Just(4.0), Just(5.0)], 1u64..=120)),
    )
        .prop_map(|((name, max_attempts, deadline, per_try_share, connect, reset), rest, budget, throttle)| {
            let (statuses, base, k, respect, max_retry_after) = rest;
            let retries = max_attempts > 1;
            let per_try_timeout = per_try_share.map_or(NEVER, |s| (deadline * s / 101).max(MS) / MS * MS);
            let per_try = per_try_timeout != NEVER && per_try_timeout < deadline;
            let respect = respect && retries;
            Policy {
                name,
                max_attempts,
                per_try_timeout,
                deadline,
                retry_on: RetryOn { connect_error: connect, timeout: reset && per_try, reset, statuses },
                retry_unknown_without_key: true,
                respect_retry_after: respect,
                max_retry_after: max_retry_after.filter(|&m| respect && m != deadline),
                backoff: Backoff {
                    kind: BackoffKind::Exponential,
                    base,
                    cap: base * k,
                    multiplier: 2.0,
                    jitter: Jitter::Full,
                    throttling_base: None,
                },
                budget: budget.filter(|_| retries).map(|(pct, min)| BudgetSpec {
                    kind: BudgetKind::Concurrency { budget_percent: pct as f64, min_retry_concurrency: min },
                    scope: BudgetScope::Client,
                }),
                throttle: throttle.map(|(k, w)| ThrottleSpec {
                    kind: ThrottleKind::Sre { k, window: w * 1_000_000_000 },
                    scope: BudgetScope::Client,
                }),
                ..Policy::default()
            }
        })
}

// ----------------------------------------------------------------- AWS --

/// What botocore >= 1.44 does (aws-standard-2026), with the carried
/// fields varied: attempts and the retry mode.
fn aws_policy() -> impl Strategy<Value = Policy> {
    (name(), 1u32..=10, any::<bool>()).prop_map(|(name, max_attempts, adaptive)| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/aws-standard-2026.toml");
        let preset = load_policy_file(&dir).unwrap();
        Policy {
            name,
            max_attempts,
            per_try_timeout: 60_000_000_000,
            deadline: NEVER,
            throttle: adaptive.then_some(ThrottleSpec { kind: ThrottleKind::AwsAdaptive, scope: BudgetScope::Client }),
            ..preset
        }
    })
}

// --------------------------------------------------------------- Istio --

fn istio_policy() -> impl Strategy<Value = Policy> {
    (
        name(),
        1u32..=6,
        ms(200, 60_000),
        proptest::option::of(1u64..=100),
        any::<bool>(),
        any::<bool>(),
        statuses(),
        ms(1, 500),
    )
        .prop_map(|(name, max_attempts, deadline, per_try_share, connect, reset, statuses, base)| {
            let per_try_timeout = per_try_share.map_or(NEVER, |s| (deadline * s / 101).max(MS) / MS * MS);
            let per_try = per_try_timeout != NEVER && per_try_timeout < deadline;
            let mut r = RetryOn { connect_error: connect, timeout: reset && per_try, reset, statuses };
            let mut base = base;
            if r == none() {
                r.connect_error = true;
            }
            if max_attempts == 1 {
                // Not exported without retries: Istio's default retryOn and backoff come back.
                r = RetryOn { connect_error: true, timeout: false, reset: true, statuses: vec![503] };
                base = 25 * MS;
            }
            Policy {
                name,
                max_attempts,
                per_try_timeout: if max_attempts == 1 { NEVER } else { per_try_timeout },
                deadline,
                retry_on: r,
                retry_unknown_without_key: true,
                respect_retry_after: false,
                backoff: Backoff {
                    kind: BackoffKind::Exponential,
                    base,
                    cap: base * 10,
                    multiplier: 2.0,
                    jitter: Jitter::Full,
                    throttling_base: None,
                },
                ..Policy::default()
            }
        })
}

// --------------------------------------------------------- Gateway API --

fn gateway_policy() -> impl Strategy<Value = Policy> {
    (
        (name(), 1u32..=6, ms(200, 60_000), proptest::option::of(1u64..=100), statuses()),
        proptest::option::of(ms(1, 2000)),
        proptest::option::of((1u32..=100, 1u32..=100, 1u64..=3600)),
    )
        .prop_map(|((name, max_attempts, deadline, per_try_share, statuses), base, budget)| {
            let retries = max_attempts > 1;
            let per_try_timeout = per_try_share.map_or(NEVER, |s| (deadline * s / 101).max(MS) / MS * MS);
            Policy {
                name,
                max_attempts,
                per_try_timeout: if per_try_timeout < deadline { per_try_timeout } else { NEVER },
                deadline,
                retry_on: RetryOn { statuses: if retries { statuses } else { Vec::new() }, ..none() },
                retry_unknown_without_key: true,
                respect_retry_after: false,
                backoff: match base.filter(|_| retries) {
                    Some(base) => Backoff { kind: BackoffKind::Constant, base, ..Backoff::default() },
                    None => Backoff::default(),
                },
                budget: budget.filter(|_| retries).map(|(pct, min, ttl)| BudgetSpec {
                    kind: BudgetKind::Ratio {
                        ratio: pct as f64 / 100.0,
                        min_per_sec: min as f64,
                        ttl: ttl * 1_000_000_000,
                    },
                    scope: BudgetScope::Shared,
                }),
                ..Policy::default()
            }
        })
}

// ------------------------------------------------------------- Linkerd --

fn linkerd_policy() -> impl Strategy<Value = Policy> {
    (
        (name(), 1u32..=6, ms(200, 60_000), proptest::option::of(1u64..=100), statuses()),
        proptest::option::of((0.01f64..0.99, 1u32..=100, ms(1000, 60_000))),
    )
        .prop_map(|((name, max_attempts, deadline, per_try_share, statuses), budget)| {
            let retries = max_attempts > 1;
            let per_try_timeout = per_try_share.map_or(NEVER, |s| (deadline * s / 101).max(MS) / MS * MS);
            let per_try_timeout = if retries && per_try_timeout < deadline { per_try_timeout } else { NEVER };
            Policy {
                name,
                max_attempts,
                per_try_timeout,
                deadline,
                retry_on: RetryOn {
                    timeout: per_try_timeout != NEVER,
                    statuses: if retries { statuses } else { Vec::new() },
                    ..none()
                },
                retry_unknown_without_key: true,
                respect_retry_after: false,
                budget: budget.filter(|_| retries).map(|(ratio, min, ttl)| BudgetSpec {
                    kind: BudgetKind::Ratio { ratio, min_per_sec: min as f64, ttl },
                    scope: BudgetScope::Client,
                }),
                ..Policy::default()
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn grpc_import_of_export_is_the_policy(p in grpc_policy()) {
        round_trip(&p, Target::Grpc)?;
    }

    #[test]
    fn envoy_import_of_export_is_the_policy(p in envoy_policy()) {
        round_trip(&p, Target::Envoy)?;
    }

    #[test]
    fn aws_import_of_export_is_the_policy(p in aws_policy()) {
        round_trip(&p, Target::Aws)?;
    }

    #[test]
    fn istio_import_of_export_is_the_policy(p in istio_policy()) {
        round_trip(&p, Target::Istio)?;
    }

    #[test]
    fn gateway_api_import_of_export_is_the_policy(p in gateway_policy()) {
        round_trip(&p, Target::GatewayApi)?;
    }

    #[test]
    fn linkerd_import_of_export_is_the_policy(p in linkerd_policy()) {
        round_trip(&p, Target::Linkerd)?;
    }
}

/// The exactly carried presets come back whole.
#[test]
fn presets_that_a_target_carries_come_back_whole() {
    let preset =
        |n: &str| load_policy_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("policies/{n}.toml"))).unwrap();
    for (name, target) in
        [("aws-standard-2026", Target::Aws), ("istio-default", Target::Istio), ("envoy-default", Target::Envoy)]
    {
        let p = preset(name);
        let x = export(&p, target);
        let back = import(&x.text, target, "f", &p.name).unwrap().policy;
        let want =
            if target == Target::Aws { Policy { per_try_timeout: 60_000_000_000, deadline: NEVER, ..p } } else { p };
        assert_eq!(back, want, "{name} via {}", target.label());
    }
}

fn retrysim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `retrysim import FILE --from X` prints a policy file that loads, equal
/// to the library's import; what has no field is on stderr; bad input is exit 2.
#[test]
fn the_command_prints_a_policy_file_that_loads() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (preset, target, from) in [
        ("grpc-default", Target::Grpc, "grpc"),
        ("envoy-default", Target::Envoy, "envoy"),
        ("aws-adaptive", Target::Aws, "aws"),
        ("istio-default", Target::Istio, "istio"),
        ("finagle-budget", Target::GatewayApi, "gateway-api"),
        ("finagle-budget", Target::Linkerd, "linkerd"),
    ] {
        let p = load_policy_file(&root.join(format!("policies/{preset}.toml"))).unwrap();
        let config = dir.path().join(format!("{preset}-{from}.cfg"));
        std::fs::write(&config, export(&p, target).text).unwrap();
        let (code, stdout, stderr) = retrysim(&["import", config.to_str().unwrap(), "--from", from]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains(&format!("import of {}", config.display())), "{stderr}");
        let out = dir.path().join(format!("{preset}-{from}.toml"));
        std::fs::write(&out, &stdout).unwrap();
        let loaded = load_policy_file(&out).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
        let text = std::fs::read_to_string(&config).unwrap();
        let direct = import(&text, target, "x", &format!("{preset}-{from}")).unwrap().policy;
        assert_eq!(loaded, direct, "{from}");
    }
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"methodConfig\": [{\"retryPolicy\": {\"maxAttempts\": \"many\"}}]}").unwrap();
    let (code, _, stderr) = retrysim(&["import", bad.to_str().unwrap(), "--from", "grpc"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.json") && stderr.contains("maxAttempts"), "{stderr}");
}

/// An Envoy config dump (JSON) with the exported route inside a listener's
/// route config, a cluster with the retry budget and the admission_control
/// filter: the import finds each where Envoy keeps it.
#[test]
fn envoy_import_reads_a_config_dump() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = load_policy_file(&root.join("policies/sre-throttle.toml")).unwrap();
    let p = Policy {
        budget: Some(BudgetSpec {
            kind: BudgetKind::Concurrency { budget_percent: 25.0, min_retry_concurrency: 4 },
            scope: BudgetScope::Client,
        }),
        ..p
    };
    let x = export(&p, Target::Envoy);
    let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&x.text)
        .map(|d| <serde_json::Value as serde::Deserialize>::deserialize(d).unwrap())
        .collect();
    let mut route = serde_json::json!({ "cluster": "upstream" });
    route.as_object_mut().unwrap().extend(docs[0].as_object().unwrap().clone());
    let dump = serde_json::json!({ "configs": [
        { "@type": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump", "static_listeners": [{ "listener": {
            "filter_chains": [{ "filters": [{ "typed_config": {
                "route_config": { "virtual_hosts": [{ "routes": [{ "match": { "prefix": "/" }, "route": route }] }] },
                "http_filters": [docs[2].clone(), { "name": "envoy.filters.http.router" }] } }] }] } }] },
        { "@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump", "static_clusters": [{ "cluster": docs[1].clone() }] }
    ]});
    let back = import(&dump.to_string(), Target::Envoy, "dump.json", &p.name).unwrap();
    assert_eq!(back.policy.budget, p.budget);
    assert_eq!(back.policy.throttle, p.throttle);
    assert_eq!(back.policy.max_attempts, p.max_attempts);
    assert_eq!(back.policy.deadline, p.deadline);
    assert_eq!(back.policy.per_try_timeout, p.per_try_timeout);
}
