//! A plain HTTP/1.1 GET over `std::net` under a policy file: the runtime's
//! blocking `retry` helper gives each attempt its timeout, and the answer's
//! status and `Retry-After` decide what happens next.
//!
//! ```sh
//! cargo run -p retrysim-policy --example http_get -- policies/aws-standard.toml 127.0.0.1:8080
//! ```
//!
//! `tests/it/policy_runtime_e2e.rs` (of the simulator) sends this GET under
//! the `retry` helper to a scripted server and compares it with the
//! simulator's trace.

use retrysim_policy::{Failure, Outcome, Policy, retry};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One GET of `/` at `addr`, given up after `timeout`: the answer of a 2xx,
/// else the outcome, the status line and the Retry-After in seconds.
pub fn get(addr: &str, timeout: Option<Duration>) -> Result<String, Failure<String>> {
    let mut s = TcpStream::connect(addr).map_err(|e| Failure::new(Outcome::ConnectError, e.to_string()))?;
    s.set_read_timeout(timeout).map_err(|e| Failure::new(Outcome::Reset, e.to_string()))?;
    s.write_all(format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .map_err(|e| Failure::new(Outcome::Reset, e.to_string()))?;
    let mut text = String::new();
    if let Err(e) = s.read_to_string(&mut text) {
        let outcome = if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            Outcome::Timeout
        } else {
            Outcome::Reset
        };
        return Err(Failure::new(outcome, e.to_string()));
    }
    let status: u16 = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    if (200..300).contains(&status) {
        return Ok(text);
    }
    let retry_after = text
        .lines()
        .find_map(|l| l.strip_prefix("Retry-After:").or_else(|| l.strip_prefix("retry-after:")))
        .and_then(|v| v.trim().parse::<u64>().ok());
    let failure = Failure::new(Outcome::Status(status), text.lines().next().unwrap_or("").to_string());
    Err(match retry_after {
        Some(secs) => failure.retry_after(Duration::from_secs(secs)),
        None => failure,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(addr)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: http_get POLICY.toml HOST:PORT");
        std::process::exit(2);
    };
    let policy = match Policy::load(path.as_ref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match retry(policy, |attempt| {
        eprintln!("attempt {} (timeout {:?})", attempt.number, attempt.timeout);
        get(addr, attempt.timeout)
    }) {
        Ok(body) => println!("{body}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
