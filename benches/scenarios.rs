//! Whole simulations through the library, on the quick start experiment.
//!
//! - `quickstart/simulate/<variant>`: one replication (replication 0) of one
//!   variant, single-threaded, reported in simulation events per second;
//! - `quickstart/run_all`: every variant and replication of the quick start
//!   on one thread (what `retrysim run --jobs 1` simulates, without writing
//!   files), reported as time per run and events per second.
//!
//! Run with `cargo bench --bench scenarios`.

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use retrysim::analysis::run_all;
use retrysim::config::{Experiment, load_experiment};
use retrysim::model::simulate;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

const QUICKSTART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml");

fn quickstart() -> Experiment {
    load_experiment(Path::new(QUICKSTART), &[]).expect("the quick start loads")
}

fn simulate_variants(c: &mut Criterion) {
    let exp = quickstart();
    let mut group = c.benchmark_group("quickstart/simulate");
    // A run takes tens of milliseconds: flat sampling (the same number of
    // runs in every sample) keeps the measurement within its time.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5));
    for scenario in &exp.variants {
        // Events of this run, counted once: every repetition processes the same.
        let events = simulate(scenario, 0).events;
        group.throughput(Throughput::Elements(events));
        group.bench_with_input(BenchmarkId::from_parameter(&scenario.variant), scenario, |b, s| {
            b.iter(|| black_box(simulate(black_box(s), 0)).events)
        });
    }
    group.finish();
}

fn run_everything(c: &mut Criterion) {
    let exp = quickstart();
    let events = run_all(&exp.variants, None, 1).expect("the quick start runs").events();
    let mut group = c.benchmark_group("quickstart");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(events));
    group.bench_function("run_all", |b| {
        b.iter(|| run_all(black_box(&exp.variants), None, 1).expect("the quick start runs").events())
    });
    group.finish();
}

criterion_group!(benches, simulate_variants, run_everything);
criterion_main!(benches);
