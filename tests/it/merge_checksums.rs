//! `merge` trusts no shard blindly: each shard records the SHA-256 of its
//! own files and the retrysim version in `shard.json`, and merge refuses
//! (exit 2) a shard whose file changed, naming that file, or one without a
//! record or from another version.

use std::path::{Path, PathBuf};
use std::process::Command;

const EXP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/normal-day.toml");

fn retrysim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Two shards of a small sweep, in `dir/s1` and `dir/s2`.
fn shards(dir: &Path) -> [PathBuf; 2] {
    let out = [dir.join("s1"), dir.join("s2")];
    for (k, o) in out.iter().enumerate() {
        let shard = format!("{}/2", k + 1);
        let (code, err) = retrysim(&[
            "sweep",
            EXP,
            "--param",
            "services.api.workers=8,16",
            "--replications",
            "2",
            "--set",
            "experiment.duration=5s",
            "--set",
            "experiment.warmup=1s",
            "--shard",
            &shard,
            "-q",
            "--no-plots",
            "--out",
            o.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(o.join("shard.json").is_file());
    }
    out
}

fn merge(dir: &Path, shards: &[PathBuf]) -> (i32, String) {
    let merged = dir.join("merged");
    let mut args = vec!["merge"];
    args.extend(shards.iter().map(|s| s.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap(), "-q", "--no-plots"]);
    retrysim(&args)
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} has no {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn untouched_shards_merge_and_every_changed_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = shards(dir.path());
    let (code, err) = merge(dir.path(), &s);
    assert_eq!(code, 0, "{err}");

    // A halved metric in one shard's sweep.json.
    let json = s[1].join("sweep.json");
    let original = std::fs::read_to_string(&json).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&original).unwrap();
    let mean = doc["points"][0]["variants"][0]["metrics"]["success_rate"]["mean"].as_f64().unwrap();
    edit(&json, &format!("{mean}"), &format!("{}", mean / 2.0));
    let (code, err) = merge(dir.path(), &s);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{}: changed since the shard wrote it", json.display())), "{err}");
    std::fs::write(&json, &original).unwrap();

    // A renamed column in the other shard's sweep.csv.
    let csv = s[0].join("sweep.csv");
    edit(&csv, "success_rate", "success");
    let (code, err) = merge(dir.path(), &s);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sweep.csv: changed since the shard wrote it"), "{err}");
}

#[test]
fn a_shard_without_its_record_or_from_another_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = shards(dir.path());
    let record = s[0].join("shard.json");
    let text = std::fs::read_to_string(&record).unwrap();
    edit(&record, &format!("\"{}\"", env!("CARGO_PKG_VERSION")), "\"0.0.0-other\"");
    let (code, err) = merge(dir.path(), &s);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("retrysim 0.0.0-other") && err.contains("shard.json"), "{err}");
    std::fs::write(&record, text).unwrap();
    std::fs::remove_file(&record).unwrap();
    let (code, err) = merge(dir.path(), &s);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shard.json") && err.contains("rerun this shard"), "{err}");
}
