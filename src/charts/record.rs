//! `charts.json`: the record of the chart files retrysim drew into a
//! folder, each with the data file it was drawn from and its SHA-256.
//!
//! A command that rewrites a folder's data (`run`, `sweep`, `merge`,
//! `frontier`, `collapse-rate`, `tune`) then removes the charts an earlier
//! command drew there from the same data file that it did not draw again
//! (all of them with `--no-plots`), so that no chart of an earlier run
//! sits beside the new data. Only files the record names are touched, and
//! only while they are regular files that still hold exactly the bytes
//! retrysim wrote: a chart a user edited or replaced, and every other
//! file, is left alone. A `charts.json` that is not such a record is never
//! read further nor overwritten.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The record's file name, in the folder of the charts.
pub const RECORD: &str = "charts.json";
/// Its schema name.
pub const SCHEMA: &str = "retrysim.charts/1";

/// The data files charts are drawn from (the `from` of a record entry).
pub const RUN: &str = "summary.json";
pub const SWEEP: &str = "sweep.json";
pub const FRONTIER: &str = "frontier.json";
pub const COLLAPSE_RATE: &str = "collapse-rate.json";
pub const TUNE: &str = "tune.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    schema: String,
    /// File name → what it was drawn from and its contents' SHA-256.
    files: BTreeMap<String, Written>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    from: String,
    sha256: String,
}

/// The record in `dir`: empty when there is none; `None` when a file of
/// that name is something else (it is then left alone).
fn read(dir: &Path) -> Option<Record> {
    let path = dir.join(RECORD);
    if std::fs::symlink_metadata(&path).is_err() {
        return Some(Record { schema: SCHEMA.into(), files: BTreeMap::new() });
    }
    let text = crate::config::read::read_text(&path, crate::config::read::MAX_DATA_BYTES).ok()?;
    serde_json::from_str::<Record>(&text).ok().filter(|r| r.schema == SCHEMA)
}

fn write(dir: &Path, r: &Record) -> anyhow::Result<()> {
    let path = dir.join(RECORD);
    if r.files.is_empty() {
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            std::fs::remove_file(&path)?;
        }
        return Ok(());
    }
    let json = serde_json::to_string_pretty(r)? + "\n";
    crate::output::write_atomic(&path, json.as_bytes(), &[])
}

/// A name the record may hold: a chart file in the folder itself.
fn chart_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && (name.ends_with(".png") || name.ends_with(".svg"))
}

/// The files of chart `stem`.
fn files_of(stem: &str) -> [String; 2] {
    [format!("{stem}.png"), format!("{stem}.svg")]
}

/// Records the charts `stems` (their `.png` and `.svg`), just drawn into
/// `dir` from the data file `from`.
pub fn add(dir: &Path, from: &str, stems: &[String]) -> anyhow::Result<()> {
    let Some(mut r) = read(dir) else { return Ok(()) };
    for name in stems.iter().flat_map(|s| files_of(s)) {
        if !chart_name(&name) {
            continue;
        }
        if let Ok(bytes) = std::fs::read(dir.join(&name)) {
            let sha256 = crate::output::manifest::sha256_hex(&bytes);
            r.files.insert(name, Written { from: from.into(), sha256 });
        }
    }
    write(dir, &r)
}

/// Removes from `dir` the charts the record says were drawn from `from`,
/// except `keep` (stems just drawn again) and any of `inputs`, when they
/// are still as retrysim wrote them; returns the file names removed. The
/// entries of the others (changed since, or gone) are dropped from the
/// record: those files are no longer retrysim's.
pub fn prune(dir: &Path, from: &str, keep: &[String], inputs: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let Some(mut r) = read(dir) else { return Ok(Vec::new()) };
    if r.files.is_empty() {
        return Ok(Vec::new());
    }
    let keep: BTreeSet<String> = keep.iter().flat_map(|s| files_of(s)).collect();
    let inputs: Vec<PathBuf> = inputs.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let mut removed = Vec::new();
    let mut files = BTreeMap::new();
    for (name, w) in std::mem::take(&mut r.files) {
        if w.from != from || keep.contains(&name) {
            files.insert(name, w);
            continue;
        }
        if !chart_name(&name) {
            continue;
        }
        let path = dir.join(&name);
        let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        let ours = regular && std::fs::read(&path).is_ok_and(|b| crate::output::manifest::sha256_hex(&b) == w.sha256);
        let input = path.canonicalize().is_ok_and(|p| inputs.contains(&p));
        if ours && !input {
            std::fs::remove_file(&path)?;
            removed.push(name);
        }
    }
    r.files = files;
    write(dir, &r)?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unchanged_recorded_charts_of_the_same_data_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for f in ["goodput.png", "goodput.svg", "effects.png", "effects.svg", "sweep_x.png", "notes.png"] {
            std::fs::write(d.join(f), f).unwrap();
        }
        add(d, RUN, &["goodput".into(), "effects".into()]).unwrap();
        add(d, SWEEP, &["sweep_x".into()]).unwrap();
        // The user changed one file retrysim wrote.
        std::fs::write(d.join("effects.svg"), "mine now").unwrap();
        let removed = prune(d, RUN, &["goodput".into()], &[]).unwrap();
        assert_eq!(removed, ["effects.png"]);
        for kept in ["goodput.png", "goodput.svg", "effects.svg", "sweep_x.png", "notes.png"] {
            assert!(d.join(kept).is_file(), "{kept} removed");
        }
        // Nothing of the run left to remove; the sweep's chart stays recorded.
        assert!(prune(d, RUN, &[], &[]).unwrap().iter().all(|n| n.starts_with("goodput")));
        let text = std::fs::read_to_string(d.join(RECORD)).unwrap();
        assert!(text.contains("sweep_x.png") && !text.contains("effects"), "{text}");
        assert_eq!(prune(d, SWEEP, &[], &[]).unwrap(), ["sweep_x.png"]);
        assert!(!d.join(RECORD).exists(), "an empty record is removed");
    }

    #[test]
    fn a_record_that_is_not_ours_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join(RECORD), "{\"mine\": true}").unwrap();
        std::fs::write(d.join("goodput.png"), "x").unwrap();
        add(d, RUN, &["goodput".into()]).unwrap();
        assert_eq!(prune(d, RUN, &[], &[]).unwrap(), Vec::<String>::new());
        assert_eq!(std::fs::read_to_string(d.join(RECORD)).unwrap(), "{\"mine\": true}");
        // A tampered record naming another file touches nothing.
        let bad = format!(
            "{{\"schema\":\"{SCHEMA}\",\"files\":{{\"../x.png\":{{\"from\":\"summary.json\",\"sha256\":\"{}\"}}}}}}",
            crate::output::manifest::sha256_hex(b"x")
        );
        std::fs::write(d.join(RECORD), bad).unwrap();
        assert!(prune(d, RUN, &[], &[]).unwrap().is_empty());
        assert!(d.join("goodput.png").is_file());
    }
}
