//! Every experiment shipped in experiments/ loads and runs, and every one
//! states its question in its header comment.

use retrysim::analysis::run_all;
use retrysim::config::load_experiment;
use std::path::Path;

#[test]
fn every_shipped_experiment_loads_runs_and_asks_a_question() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# Question:"),
            "{}: the header must start with the question it answers",
            path.display()
        );
        let exp = load_experiment(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
        let set = run_all(&exp.variants, Some(1), 0).unwrap();
        for v in &set.variants {
            let intents = v.runs[0].metrics["intents"].unwrap();
            assert!(intents > 0.0, "{}: variant {} had no intents", path.display(), v.scenario.variant);
        }
        seen += 1;
    }
    assert!(seen >= 7, "only {seen} experiments found");
}
