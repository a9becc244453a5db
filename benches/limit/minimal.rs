//! The smallest event loop that computes the peer scenario's numbers: the
//! yardstick retrysim's own speed is measured against.
//!
//! Open-loop Poisson clients send intents to one service with `workers`
//! workers, a FIFO queue without limit and exponential service times. An
//! error fault answers a share of the requests 503 on arrival, before any
//! work. Each attempt has a per-try timeout; timeouts and 503s are retried
//! after a capped exponential backoff with full jitter, up to
//! `max_attempts` attempts. The network adds no latency. An abandoned
//! attempt keeps its place in the queue and does its work (wasted work).
//! Summary metrics count the intents that arrive in `[warmup, duration)`,
//! followed to their end, as retrysim and `benches/peer/simpy_model.py` do.
//!
//! What makes it minimal: one binary heap of (time, sequence, event) for
//! the random delays and one FIFO for the per-try timeouts, which all have
//! one length and so fall due in the order they were armed; one sequential
//! SplitMix64 stream; no configuration beyond the flags below, no metrics
//! beyond the headline ones. Its event order is exactly (time, sequence).
//!
//! ```sh
//! cargo build --release --example limit
//! target/release/examples/limit --duration 120
//! ```
//!
//! Flags (defaults in brackets): `--seed` [1], `--rate` [700] intents/s,
//! `--duration` [120] s, `--warmup` [5] s, `--workers` [10],
//! `--service-time-mean` [0.010] s, `--error-probability` [0.02],
//! `--per-try-timeout` [0.050] s, `--max-attempts` [3], `--backoff-base`
//! [0.020] s, `--backoff-cap` [0.500] s. It prints one `name value` line
//! per metric, in `simpy_model.py`'s format, plus `latency_p99_lo_s` and
//! `latency_p99_hi_s`: a distribution-free interval for the p99 (the
//! order statistics 4 standard errors of the rank either side) and
//! `events`, the events it processed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// The scenario, in seconds and counts.
struct Config {
    seed: u64,
    rate: f64,
    duration: f64,
    warmup: f64,
    workers: u32,
    service_time_mean: f64,
    error_probability: f64,
    per_try_timeout: f64,
    max_attempts: u32,
    backoff_base: f64,
    backoff_cap: f64,
}

impl Config {
    fn from_args() -> Self {
        let mut c = Config {
            seed: 1,
            rate: 700.0,
            duration: 120.0,
            warmup: 5.0,
            workers: 10,
            service_time_mean: 0.010,
            error_probability: 0.02,
            per_try_timeout: 0.050,
            max_attempts: 3,
            backoff_base: 0.020,
            backoff_cap: 0.500,
        };
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut i = 0;
        while i < args.len() {
            let flag = args[i].as_str();
            if flag == "--bench" {
                // What `cargo bench` passes to a harness-less target.
                i += 1;
                continue;
            }
            let Some(value) = args.get(i + 1) else {
                fail(&format!("{flag} needs a value"));
            };
            let num = || value.parse::<f64>().unwrap_or_else(|_| fail(&format!("{flag}: not a number: {value}")));
            match flag {
                "--seed" => c.seed = num() as u64,
                "--rate" => c.rate = num(),
                "--duration" => c.duration = num(),
                "--warmup" => c.warmup = num(),
                "--workers" => c.workers = num() as u32,
                "--service-time-mean" => c.service_time_mean = num(),
                "--error-probability" => c.error_probability = num(),
                "--per-try-timeout" => c.per_try_timeout = num(),
                "--max-attempts" => c.max_attempts = num() as u32,
                "--backoff-base" => c.backoff_base = num(),
                "--backoff-cap" => c.backoff_cap = num(),
                _ => fail(&format!("unknown flag {flag}")),
            }
            i += 2;
        }
        if c.rate <= 0.0 || c.workers == 0 || c.max_attempts == 0 || c.service_time_mean <= 0.0 {
            fail("rate, workers, max-attempts and service-time-mean must be positive");
        }
        c
    }
}

fn fail(message: &str) -> ! {
    eprintln!("limit: {message}");
    std::process::exit(2)
}

/// SplitMix64: one sequential stream.
struct Rng(u64);

impl Rng {
    #[inline]
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// An exponential draw with mean `mean` nanoseconds.
    #[inline]
    fn exp(&mut self, mean: f64) -> u64 {
        (-mean * self.unit().ln()) as u64
    }
}

/// Events in the heap (random delays); per-try timeouts have a FIFO of their own.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The next intent arrives.
    Arrival,
    /// A worker finishes the request of attempt `serial` of intent `slot`
    /// after `work` nanoseconds (`in_window`: its intent counts).
    Done { slot: u32, serial: u64, work: u64, in_window: bool },
    /// Intent `slot`'s backoff is over: send its next attempt.
    Retry { slot: u32 },
}

/// One intent while it runs.
#[derive(Clone, Copy)]
struct Intent {
    arrived: u64,
    in_window: bool,
    attempts: u32,
    /// The serial of the attempt the client waits for (0: none).
    current: u64,
}

const NS: f64 = 1e9;

fn main() {
    let c = Config::from_args();
    let started = std::time::Instant::now();
    let ns = |s: f64| (s * NS) as u64;
    let (duration, warmup, timeout) = (ns(c.duration), ns(c.warmup), ns(c.per_try_timeout));
    let (service_mean, gap_mean) = (c.service_time_mean * NS, NS / c.rate);
    let (base, cap) = (c.backoff_base * NS, c.backoff_cap * NS);

    let mut rng = Rng(c.seed);
    let mut heap: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::with_capacity(1024);
    // Armed per-try timeouts: (time, sequence, intent slot, attempt serial).
    let mut timeouts: VecDeque<(u64, u64, u32, u64)> = VecDeque::with_capacity(1024);
    let mut seq = 0u64;
    let mut intents: Vec<Intent> = Vec::new();
    let mut free: Vec<u32> = Vec::new();
    // Requests waiting for a worker: (slot, serial, in_window).
    let mut waiting: VecDeque<(u32, u64, bool)> = VecDeque::new();
    let mut idle = c.workers;
    let mut serial = 0u64;
    let mut events = 0u64;
    // Metrics of in-window intents.
    let (mut n_intents, mut succeeded, mut attempts) = (0u64, 0u64, 0u64);
    let mut latencies: Vec<u64> = Vec::new();
    let (mut work_ns, mut wasted_ns) = (0u64, 0u64);

    macro_rules! push {
        ($t:expr, $e:expr) => {{
            heap.push(Reverse(($t, seq, $e)));
            seq += 1;
        }};
    }
    let first = rng.exp(gap_mean);
    if first < duration {
        push!(first, Event::Arrival);
    }

    // Sends the next attempt of intent `slot` at `now`; true when a 503
    // comes back at once (the caller then retries or fails the intent).
    macro_rules! send {
        ($now:expr, $slot:expr) => {{
            let now: u64 = $now;
            let slot: u32 = $slot;
            let it = &mut intents[slot as usize];
            it.attempts += 1;
            serial += 1;
            it.current = serial;
            let in_window = it.in_window;
            attempts += in_window as u64;
            if rng.unit() < c.error_probability {
                true
            } else {
                timeouts.push_back((now + timeout, seq, slot, serial));
                seq += 1;
                if idle > 0 {
                    idle -= 1;
                    let work = rng.exp(service_mean);
                    push!(now + work, Event::Done { slot, serial, work, in_window });
                } else {
                    waiting.push_back((slot, serial, in_window));
                }
                false
            }
        }};
    }

    // A retryable failure of intent `slot`'s current attempt at `now`.
    macro_rules! retry_or_fail {
        ($now:expr, $slot:expr) => {{
            let slot: u32 = $slot;
            let it = &mut intents[slot as usize];
            it.current = 0;
            if it.attempts >= c.max_attempts {
                free.push(slot);
            } else {
                let limit = cap.min(base * 2f64.powi(it.attempts as i32 - 1));
                let wait = (rng.unit() * limit) as u64;
                push!($now + wait, Event::Retry { slot });
            }
        }};
    }

    loop {
        // The earliest of the heap's root and the timeout FIFO's front, by
        // (time, sequence).
        let from_heap = match (heap.peek(), timeouts.front()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(Reverse((t, s, _))), Some(&(tt, ts, _, _))) => (*t, *s) < (tt, ts),
        };
        events += 1;
        if !from_heap {
            let (now, _, slot, ser) = timeouts.pop_front().expect("a timeout");
            if intents[slot as usize].current == ser {
                retry_or_fail!(now, slot);
            }
            continue;
        }
        let Reverse((now, _, ev)) = heap.pop().expect("an event");
        match ev {
            Event::Arrival => {
                let next = now + rng.exp(gap_mean);
                if next < duration {
                    push!(next, Event::Arrival);
                }
                let in_window = now >= warmup;
                n_intents += in_window as u64;
                let it = Intent { arrived: now, in_window, attempts: 0, current: 0 };
                let slot = match free.pop() {
                    Some(s) => {
                        intents[s as usize] = it;
                        s
                    }
                    None => {
                        intents.push(it);
                        (intents.len() - 1) as u32
                    }
                };
                if send!(now, slot) {
                    retry_or_fail!(now, slot);
                }
            }
            Event::Retry { slot } => {
                if send!(now, slot) {
                    retry_or_fail!(now, slot);
                }
            }
            Event::Done { slot, serial: ser, work, in_window } => {
                let it = &mut intents[slot as usize];
                // Not the attempt its client waits for: it timed out (abandoned).
                let answered = it.current == ser;
                if in_window {
                    work_ns += work;
                    if !answered {
                        wasted_ns += work;
                    }
                }
                if answered {
                    if in_window {
                        succeeded += 1;
                        latencies.push(now - it.arrived);
                    }
                    it.current = 0;
                    free.push(slot);
                }
                if let Some((s, ser2, w2)) = waiting.pop_front() {
                    let work = rng.exp(service_mean);
                    push!(now + work, Event::Done { slot: s, serial: ser2, work, in_window: w2 });
                } else {
                    idle += 1;
                }
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let n = latencies.len();
    let q = |p: f64| -> f64 {
        if n == 0 {
            return f64::NAN;
        }
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
        latencies[rank - 1] as f64 / NS
    };
    let se = (0.99 * 0.01 / n.max(1) as f64).sqrt();
    let mean = latencies.iter().map(|&l| l as f64).sum::<f64>() / n.max(1) as f64 / NS;
    let rows = [
        ("intents", n_intents.to_string()),
        ("success_rate", format!("{:.6}", succeeded as f64 / n_intents as f64)),
        ("attempts_per_intent", format!("{:.6}", attempts as f64 / n_intents as f64)),
        ("latency_mean_s", format!("{mean:.6}")),
        ("latency_p99_s", format!("{:.6}", q(0.99))),
        ("latency_p99_lo_s", format!("{:.6}", q(0.99 - 4.0 * se))),
        ("latency_p99_hi_s", format!("{:.6}", q(0.99 + 4.0 * se))),
        ("wasted_fraction", format!("{:.6}", if work_ns > 0 { wasted_ns as f64 / work_ns as f64 } else { 0.0 })),
        ("events", events.to_string()),
        ("wall_s", format!("{wall:.3}")),
    ];
    for (name, value) in rows {
        println!("{name:<19} {value}");
    }
}
