//! retrysim's `aws_adaptive` throttle against botocore itself: botocore's
//! own `ClientRateLimiter`, `CubicCalculator`, `RateClocker` and
//! `TokenBucket` (botocore 1.44.8, pinned in the cached virtual environment
//! that `.ci/venv.sh` makes) are driven through a scripted sequence of
//! sends and throttled or successful responses on a fake clock, and every
//! send time, measured rate, fill rate and bucket level must match what
//! retrysim computes, within floating-point tolerance.
//!
//! The client is sequential (one request in flight, as a single botocore
//! client thread): it wants to send, waits for a token if the bucket says
//! so, and gets its answer after a latency. The script has phases of
//! successes, of mostly throttled answers (the limiter switches on, CUBIC
//! cuts the rate by beta and then grows it back), and of successes again.

use retrysim::engine::random::Stream;
use retrysim::policy::throttle::AdaptiveLimiter;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// One scripted request: when the client wants to send it, the latency of
/// its answer and whether that answer is a throttle.
struct Planned {
    think: f64,
    latency: f64,
    throttled: bool,
}

fn script() -> Vec<Planned> {
    let mut s = Stream::from_state(2026);
    (0..3000)
        .map(|i| {
            // 0-600: healthy; 600-1500: 60% throttled; 1500-2200: healthy;
            // 2200-2600: all throttled; then healthy.
            let p = match i {
                600..1500 => 0.6,
                2200..2600 => 1.0,
                _ => 0.0,
            };
            Planned { think: 0.02 * s.unit(), latency: 0.005 + 0.01 * s.unit(), throttled: s.unit() < p }
        })
        .collect()
}

/// The python of the real-client environment, made by `.ci/venv.sh`.
fn botocore_python() -> Result<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join(".ci/venv.sh"))
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run .ci/venv.sh: {e}"))?;
    if !out.status.success() {
        return Err(format!(".ci/venv.sh failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn retrysim_computes_botocores_send_times_and_rates() {
    let python = match botocore_python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("\n*** SKIPPED aws_adaptive_botocore: botocore could not be installed: {why} ***\n");
            return;
        }
    };
    let version = Command::new(&python).args(["-c", "import botocore; print(botocore.__version__)"]).output();
    let version = String::from_utf8_lossy(&version.expect("run python").stdout).trim().to_string();
    assert_eq!(version, "1.44.8", "the pinned botocore of .ci/venv.sh");
    // retrysim's side, which also fixes the times the script gives botocore.
    let mut limiter = AdaptiveLimiter::new(0.0);
    let (mut t, mut requests, mut ours) = (0.0f64, Vec::new(), Vec::new());
    for p in script() {
        t += p.think;
        let sent = t + limiter.acquire(t);
        let r = sent + p.latency;
        limiter.on_response(r, p.throttled);
        requests.push(json!({ "t": t, "r": r, "throttled": p.throttled }));
        ours.push((
            sent,
            limiter.measured_rate(),
            limiter.bucket().max_rate(),
            limiter.bucket().capacity(),
            limiter.enabled(),
        ));
        t = r;
    }
    let mut child = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/botocore_adaptive.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run botocore's driver");
    let input = json!({ "requests": requests }).to_string();
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write the script");
    let out = child.wait_with_output().expect("botocore's driver ends");
    assert!(out.status.success(), "botocore's driver failed: {}", out.status);
    let theirs: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON from the driver");
    assert_eq!(theirs.len(), ours.len());
    let (mut waited, mut cut, mut max_gap) = (0, 0, 0.0f64);
    for (i, (o, b)) in ours.iter().zip(&theirs).enumerate() {
        let f = |k: &str| b[k].as_f64().unwrap_or_else(|| panic!("request {i}: no {k}"));
        let (sent, measured, fill, capacity, enabled) = *o;
        assert!(close(sent, f("sent")), "request {i}: sent at {sent} here, {} in botocore", f("sent"));
        assert!(close(measured, f("measured")), "request {i}: measured rate {measured} vs {}", f("measured"));
        assert!(close(fill, f("fill_rate")), "request {i}: fill rate {fill} vs {}", f("fill_rate"));
        assert!(close(capacity, f("capacity")), "request {i}: capacity {capacity} vs {}", f("capacity"));
        assert_eq!(enabled, b["enabled"].as_bool().expect("enabled"), "request {i}");
        max_gap = max_gap.max((fill - f("fill_rate")).abs());
        if i > 0 && sent > requests[i]["t"].as_f64().unwrap() {
            waited += 1;
        }
        if i > 0 && fill < ours[i - 1].2 {
            cut += 1;
        }
    }
    println!(
        "{} requests: {waited} waited for a token, {cut} rate cuts; largest fill-rate gap {max_gap:e}",
        ours.len()
    );
    // The script exercised what it is for: waits for tokens and CUBIC cuts.
    assert!(waited > 100 && cut > 50, "waited {waited}, cut {cut}");
    // ... and the floor of botocore >= 1.44's bucket: the fill rate never
    // goes below 0.5 tokens/s, and the all-throttled phase reaches it.
    let lowest = ours.iter().map(|o| o.2).fold(f64::INFINITY, f64::min);
    assert!((lowest - 0.5).abs() < 1e-12, "lowest fill rate {lowest}");
}

/// botocore reads `retrysim export --to aws` of the aws-adaptive preset as
/// adaptive retry mode with its attempts (a client made from that config
/// file; nothing is sent).
#[test]
fn botocore_reads_the_exported_config_as_adaptive_mode() {
    let python = match botocore_python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("\n*** SKIPPED aws_adaptive_botocore: botocore could not be installed: {why} ***\n");
            return;
        }
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/aws-adaptive.toml");
    let policy = retrysim::config::load_policy_file(&path).expect("the preset loads");
    let x = retrysim::output::export::export(&policy, retrysim::output::export::Target::Aws);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = dir.path().join("config");
    std::fs::write(&config, &x.text).expect("write the config");
    let out = Command::new(&python)
        .args([
            "-c",
            "import json, botocore.session\n\
             c = botocore.session.get_session().create_client('dynamodb', region_name='us-east-1')\n\
             print(json.dumps(c.meta.config.retries))",
        ])
        .env("AWS_CONFIG_FILE", &config)
        .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"))
        .env_remove("AWS_RETRY_MODE")
        .env_remove("AWS_MAX_ATTEMPTS")
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run botocore");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let retries: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(retries["mode"], "adaptive", "{retries}");
    assert_eq!(retries["total_max_attempts"], 3, "{retries}");
}
