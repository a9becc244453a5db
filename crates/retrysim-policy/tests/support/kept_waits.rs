//! What the example clients' tests (`reqwest_client.rs`, `tonic_client.rs`)
//! share: a shipped policy file, the draws a seeded layer's first call
//! takes, and the check that the server saw each of the policy's waits
//! kept on the wall clock.
#![allow(dead_code)]

use retrysim_policy::{Policy, Random, SplitMix};
use std::path::Path;
use std::time::Duration;

/// How much longer than asked a wait may look on the server's clock. The
/// exact waits are checked on the recorded sleeps; this bound only catches
/// a wait far longer than asked (a timer not armed as the policy says), so
/// it allows for a loaded or briefly stalled machine (0.22 s over was once
/// seen under load).
pub const TOLERANCE_S: f64 = 0.5;

/// The policy file `name` of the repository's `policies/`.
pub fn shipped(name: &str) -> Policy {
    Policy::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies").join(name)).unwrap()
}

/// The first `n` draws of `SplitMix::new(seed)`: those of a layer's first
/// call seeded with `seed`, one per failed attempt.
pub fn draws(seed: u64, n: usize) -> Vec<f64> {
    let mut r = SplitMix::new(seed);
    (0..n).map(|_| r.unit()).collect()
}

/// Each server-side gap kept its wait: at least the wait (less 1 ms of
/// timer rounding), at most [`TOLERANCE_S`] more.
pub fn assert_kept(gaps: &[Option<f64>], waits: &[Duration]) {
    assert_eq!(gaps.len(), waits.len(), "{gaps:?} {waits:?}");
    for (gap, wait) in gaps.iter().zip(waits) {
        let (gap, wait) = (gap.expect("every answer was sent before the next attempt"), wait.as_secs_f64());
        assert!(gap >= wait - 0.001 && gap <= wait + TOLERANCE_S, "waited {gap} s where the policy says {wait} s");
    }
}
