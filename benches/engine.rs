//! The bare event engine, in events per second.
//!
//! The classic "hold" workload of priority-queue benchmarks: the queue keeps
//! N pending events; each step pops the earliest event and schedules one new
//! event at now + a random delay, so the queue size stays at N. One "event"
//! below is one pop plus one schedule. Delays are exponential (mean 1 ms),
//! like the simulator's arrival gaps and service times, drawn from the
//! engine's own SplitMix64 stream so the workload is the same on every run.
//!
//! Run with `cargo bench --bench engine`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use retrysim::engine::{EventQueue, Nanos, Stream};
use std::hint::black_box;
use std::time::Duration;

/// Pending events held in the queue.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];
/// Hold steps per measured iteration.
const STEPS: u64 = 10_000;
/// Mean delay of a newly scheduled event (1 ms in nanoseconds).
const MEAN_DELAY_NS: f64 = 1e6;

/// A small copyable payload, the size of the simulator's own events.
#[derive(Clone, Copy)]
struct Ev {
    kind: u32,
    id: u64,
}

/// An exponential delay with mean [`MEAN_DELAY_NS`].
#[inline]
fn delay(rng: &mut Stream) -> Nanos {
    (-MEAN_DELAY_NS * rng.unit().ln()) as Nanos
}

/// A queue holding `n` events, already past its initial transient.
fn filled(n: usize, rng: &mut Stream) -> EventQueue<Ev> {
    let mut q = EventQueue::new();
    for i in 0..n {
        let d = delay(rng);
        q.schedule_at(d, Ev { kind: (i % 6) as u32, id: i as u64 });
    }
    // Let the event times mix before measuring.
    for _ in 0..(4 * n) {
        hold(&mut q, rng);
    }
    q
}

/// One hold step: pop the earliest event, schedule a successor.
#[inline]
fn hold(q: &mut EventQueue<Ev>, rng: &mut Stream) {
    let (_, ev) = q.pop().expect("the queue is never empty");
    let next = Ev { kind: ev.kind ^ 1, id: ev.id.wrapping_add(1) };
    q.schedule_in(delay(rng), next);
}

fn hold_model(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine/hold");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(STEPS));
    for n in SIZES {
        let mut rng = Stream::from_state(0x5EED ^ n as u64);
        let mut q = filled(n, &mut rng);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                for _ in 0..STEPS {
                    hold(&mut q, &mut rng);
                }
                black_box(q.now())
            })
        });
        assert_eq!(q.len(), n, "hold keeps the queue size constant");
    }
    group.finish();
}

/// The cost of drawing the delays alone, to subtract from the hold numbers.
fn delay_draws(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine/draw");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(STEPS));
    let mut rng = Stream::from_state(0x5EED);
    group.bench_function("exp_delay", |b| {
        b.iter(|| {
            let mut sum: Nanos = 0;
            for _ in 0..STEPS {
                sum = sum.wrapping_add(delay(&mut rng));
            }
            black_box(sum)
        })
    });
    group.finish();
}

criterion_group!(benches, hold_model, delay_draws);
criterion_main!(benches);
