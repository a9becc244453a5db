//! A scripted HTTP/1.1 server on 127.0.0.1 for the tests of the policy
//! runtime over real sockets: the n-th connection gets the n-th answer of
//! the script (after the answer's delay) and is closed; a connection past
//! the end of the script gets a 500 that no test expects. The server notes
//! when each request arrived and when its answer started (`served.rs`).
//! Requests are numbered in the order their heads were read, which is the
//! order of the attempts: a client sends the next only after the last.
//!
//! Test binaries include this file and `served.rs` with
//! `#[path = "support/http_script.rs"] mod http_script;` and
//! `#[path = "support/served.rs"] mod served;`, and use part of them.
#![allow(dead_code)]

use crate::served::{Log, Served};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

/// One scripted answer: the raw HTTP response, sent after `delay`.
#[derive(Debug, Clone)]
pub struct Answer {
    /// How long the server holds the request before answering.
    pub delay: Duration,
    /// The whole response, status line to body.
    pub text: String,
}

impl Answer {
    /// An answer with `status`, extra header lines and `body`, sent at once.
    pub fn status(status: u16, headers: &[&str], body: &str) -> Self {
        let reason = match status {
            200 => "OK",
            429 => "Too Many Requests",
            500 => "Internal Server Error",
            503 => "Service Unavailable",
            _ => "Status",
        };
        let mut text = format!("HTTP/1.1 {status} {reason}\r\n");
        for h in headers {
            text.push_str(h);
            text.push_str("\r\n");
        }
        text.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()));
        Self { delay: Duration::ZERO, text }
    }

    /// The same answer, sent only after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

/// A running script: its port and what it served so far.
pub struct Script {
    /// The port on 127.0.0.1.
    pub port: u16,
    /// What was served so far.
    pub log: Log,
}

impl Script {
    /// Binds 127.0.0.1 on a free port and serves `answers` in order.
    pub fn start(answers: Vec<Answer>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local address").port();
        let log = Log::default();
        let seen = log.clone();
        let answers = Arc::new(answers);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                let (seen, answers) = (seen.clone(), answers.clone());
                std::thread::spawn(move || {
                    if !read_head(&mut s) {
                        return;
                    }
                    let n = seen.arrived();
                    let answer = answers.get(n).cloned().unwrap_or_else(|| Answer::status(500, &[], "script ended"));
                    std::thread::sleep(answer.delay);
                    seen.answering(n);
                    // The client may have given up on a delayed answer.
                    let _ = s.write_all(answer.text.as_bytes());
                });
            }
        });
        Self { port, log }
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The requests seen so far, in the order they arrived.
    pub fn served(&self) -> Vec<Served> {
        self.log.served()
    }

    /// The server-side waits between attempts ([`Log::gaps`]).
    pub fn gaps(&self) -> Vec<Option<f64>> {
        self.log.gaps()
    }
}

/// Reads up to the blank line that ends a request head (no test sends a
/// body); false when the connection closed first.
fn read_head(s: &mut std::net::TcpStream) -> bool {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    true
}
