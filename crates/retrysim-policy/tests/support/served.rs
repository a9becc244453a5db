//! What a scripted server (`http_script.rs`, `grpc_script.rs`) notes of
//! each request: when it arrived and when its answer started, in the order
//! of arrival, so a test can measure the waits between attempts from the
//! server's side.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// When the server saw one request and when it started to answer it.
#[derive(Debug, Clone, Copy)]
pub struct Served {
    /// The request had been read.
    pub arrived: Instant,
    /// The answer was about to be sent (after any scripted delay); `None`
    /// while the delay runs.
    pub answering: Option<Instant>,
}

/// The requests of one script, numbered from 0 in the order they arrived.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Served>>>);

impl Log {
    /// Notes the arrival of a request now and returns its number.
    pub fn arrived(&self) -> usize {
        let mut log = self.0.lock().unwrap();
        log.push(Served { arrived: Instant::now(), answering: None });
        log.len() - 1
    }

    /// Notes that the answer to request `n` starts now.
    pub fn answering(&self, n: usize) {
        self.0.lock().unwrap()[n].answering = Some(Instant::now());
    }

    /// The requests seen so far.
    pub fn served(&self) -> Vec<Served> {
        self.0.lock().unwrap().clone()
    }

    /// The server-side waits: from the start of each answer to the arrival
    /// of the next request, in seconds (`None` after an answer still held
    /// back when the next request came: the client gave up on it).
    pub fn gaps(&self) -> Vec<Option<f64>> {
        self.served()
            .windows(2)
            .map(|w| w[0].answering.filter(|&a| a <= w[1].arrived).map(|a| (w[1].arrived - a).as_secs_f64()))
            .collect()
    }
}
