//! `retrysim sweep` and `retrysim merge`: shards merge into exactly the
//! files of the unsharded sweep; incomplete or mismatched sets are refused;
//! knees differ by policy.

use std::path::Path;
use std::process::Command;

const EXP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml");

fn retrysim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn sweep(out: &Path, extra: &[&str]) {
    let mut args = vec![
        "sweep",
        EXP,
        "--param",
        "experiment.load_scale=0.6..1.2:4",
        "--param",
        "clients.web.count=10,1000",
        "--replications",
        "2",
        "-q",
        "--out",
    ];
    let out = out.to_str().unwrap();
    args.push(out);
    args.extend_from_slice(extra);
    let (code, err) = retrysim(&args);
    assert_eq!(code, 0, "{err}");
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap()
}

#[test]
fn shards_merge_byte_identical_to_the_unsharded_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    sweep(&whole, &[]);
    for n in [2usize, 5] {
        let mut dirs = Vec::new();
        for k in 1..=n {
            let d = tmp.path().join(format!("n{n}-k{k}"));
            sweep(&d, &["--shard", &format!("{k}/{n}"), "--jobs", "1"]);
            dirs.push(d.to_str().unwrap().to_string());
        }
        let merged = tmp.path().join(format!("merged{n}"));
        let mut args = vec!["merge".to_string()];
        args.extend(dirs.iter().rev().cloned());
        args.extend(["--out".to_string(), merged.to_str().unwrap().to_string(), "-q".to_string()]);
        let (code, err) = retrysim(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code, 0, "{err}");
        for f in ["sweep.json", "sweep.csv"] {
            assert!(read(&whole, f) == read(&merged, f), "{f} differs after merging {n} shards");
        }
    }
}

#[test]
fn incomplete_or_mismatched_shard_sets_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));
    sweep(&a, &["--shard", "1/3"]);
    sweep(&b, &["--shard", "2/3"]);
    let out = tmp.path().join("m");
    let (code, err) = retrysim(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("missing 3/3"), "{err}");
    // Shard 3 of another seed is not part of this sweep.
    sweep(&c, &["--shard", "3/3", "--seed", "99"]);
    let (code, err) = retrysim(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        c.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("different sweep"), "{err}");
    assert!(!out.join("sweep.json").exists());
    // A shard of other variants is not part of this sweep either.
    let d = tmp.path().join("d");
    sweep(&d, &["--shard", "3/3", "--variant", "no retries"]);
    let (code, err) = retrysim(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        d.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("different sweep"), "{err}");
    // The same shard twice.
    let (code, err) = retrysim(&["merge", a.to_str().unwrap(), a.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("twice"), "{err}");
}

#[test]
fn a_load_sweep_of_the_quick_start_finds_knees_that_differ_by_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s");
    let (code, err) = retrysim(&[
        "sweep",
        EXP,
        "--param",
        "experiment.load_scale=0.6..1.4:9",
        "--replications",
        "3",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&read(&out, "sweep.json")).unwrap();
    let knee = |v: &str| -> f64 {
        let k = doc["knees"].as_array().unwrap().iter().find(|k| k["variant"] == v).unwrap();
        k["value"].as_str().map(|s| s.parse().unwrap()).unwrap_or(0.0)
    };
    // Immediate retries buy no headroom; capped exponential backoff does.
    assert!(knee("backoff, no jitter") > knee("immediate retries"), "{}", doc["knees"]);
    assert!(knee("backoff + full jitter") > knee("no retries"), "{}", doc["knees"]);
    assert_eq!(doc["points"].as_array().unwrap().len(), 9);
}

#[test]
fn bad_sweep_specs_are_bad_input() {
    for spec in ["experiment.load_scale=1..2:1", "nokey", "services.nope.workers=1,2"] {
        let (code, err) = retrysim(&["sweep", EXP, "--param", spec, "-q", "--out", "/tmp/never-written"]);
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(err.contains("--param") || err.contains("nope"), "{spec}: {err}");
    }
}
