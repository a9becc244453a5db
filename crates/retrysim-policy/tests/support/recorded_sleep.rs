//! A `sleep` for the retry layer that notes every duration it is asked to
//! sleep, in order, and then sleeps it on tokio's timer. The layer asks for
//! two kinds: each attempt's timeout (raced against the attempt) and each
//! wait before a retry, so a test sees the policy's decisions to the
//! nanosecond while the clock shows that they were kept.
#![allow(dead_code)]

use retrysim_policy::tower::BoxFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The durations asked so far.
#[derive(Clone, Default)]
pub struct Sleeps(Arc<Mutex<Vec<Duration>>>);

impl Sleeps {
    /// The `sleep` function to give the layer.
    pub fn sleep(&self) -> impl Fn(Duration) -> BoxFuture<()> + Clone + Send + 'static {
        let asked = self.0.clone();
        move |d| {
            asked.lock().unwrap().push(d);
            Box::pin(tokio::time::sleep(d))
        }
    }

    /// Every duration asked, in order.
    pub fn asked(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}
