//! Client instances with state of their own: a run's time must not grow
//! with instances that stay idle.
//!
//! `benches/clients/scenario.toml` (the peer scenario's 700 intents/s over
//! 20 s, each instance with its own token-bucket budget and circuit
//! breaker) with 1 000, 100 000 and 1 000 000 instances. The load is the
//! same in each: about 14 000 intents, so with a million instances almost
//! every instance is idle. `clients/run/<instances>` is one whole
//! replication (building the world included), reported in simulation
//! events per second; the three should be within noise of each other.
//!
//! `clients/sending/<instances>`: 70 000 intents/s to 1 000 workers for
//! 4 s, so that about 94% of 100 000 instances (and all of 10 000) send and
//! keep a budget state and a breaker memory of their own; the two differ
//! only in how many such states the run keeps.
//!
//! Run with `cargo bench --bench clients`.

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use retrysim::config::load_experiment;
use retrysim::model::simulate;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

const SCENARIO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/clients/scenario.toml");

/// The group `name`: one whole replication of the scenario with each
/// `(instances, --set overrides)`, measured for `measure` after a warm-up.
fn runs(c: &mut Criterion, name: &str, measure: Duration, cases: impl IntoIterator<Item = (u32, Vec<String>)>) {
    let mut group = c.benchmark_group(name);
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(measure);
    for (n, sets) in cases {
        let exp = load_experiment(Path::new(SCENARIO), &sets).expect("the scenario loads");
        let scenario = &exp.variants[0];
        let events = simulate(scenario, 0).events;
        group.throughput(Throughput::Elements(events));
        group.bench_with_input(BenchmarkId::from_parameter(n), scenario, |b, s| {
            b.iter(|| black_box(simulate(black_box(s), 0)).events)
        });
    }
    group.finish();
}

fn instances(c: &mut Criterion) {
    let cases = [1_000u32, 100_000, 1_000_000].map(|n| (n, vec![format!("clients.web.count={n}")]));
    runs(c, "clients/run", Duration::from_secs(4), cases);
}

fn sending(c: &mut Criterion) {
    let cases = [10_000u32, 100_000].map(|n| {
        let sets = vec![
            format!("clients.web.count={n}"),
            "clients.web.rate=70000/s".into(),
            "services.api.workers=1000".into(),
            "experiment.duration=4s".into(),
        ];
        (n, sets)
    });
    runs(c, "clients/sending", Duration::from_secs(6), cases);
}

criterion_group!(benches, instances, sending);
criterion_main!(benches);
