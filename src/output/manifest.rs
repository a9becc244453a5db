//! A shard's record of its own files (`shard.json`): the SHA-256 of each
//! file it wrote and the retrysim version that wrote them, so that `merge`
//! refuses a shard whose files were changed since, or that another version
//! of retrysim made, and names the file.

use crate::error::InputError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file name of the record, in the shard's folder.
pub const MANIFEST: &str = "shard.json";

/// The schema name of the record.
pub const MANIFEST_SCHEMA: &str = "retrysim.shard/1";

/// What a shard records about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub schema: String,
    /// The retrysim version that wrote the shard.
    pub retrysim: String,
    /// File name (in the shard's folder) → SHA-256, lower-case hex, as `sha256sum` prints it.
    pub sha256: BTreeMap<String, String>,
}

/// The SHA-256 of `bytes` in lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

impl Manifest {
    /// The record of `files` (name in the folder, contents), by this version.
    pub fn of(files: &[(&str, &[u8])]) -> Self {
        Self {
            schema: MANIFEST_SCHEMA.into(),
            retrysim: env!("CARGO_PKG_VERSION").into(),
            sha256: files.iter().map(|(name, bytes)| (name.to_string(), sha256_hex(bytes))).collect(),
        }
    }

    /// The record as written to `shard.json`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a manifest serializes") + "\n"
    }
}

/// Reads `dir/shard.json`, checks the version and every recorded file, and
/// returns the verified contents of `wanted` (read once, so what is checked
/// is what is used). Every refusal names the file and what to do.
pub fn verify(dir: &Path, wanted: &str) -> Result<Vec<u8>, InputError> {
    let path = dir.join(MANIFEST);
    let shown = path.display().to_string();
    let text = crate::config::read::read_input(&path).map_err(|e| {
        InputError::file(
            &shown,
            format!(
                "cannot read the shard's checksums ({e}): every `retrysim sweep --shard` writes it; rerun this shard"
            ),
        )
    })?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
        InputError::file(&shown, format!("not a shard record ({e}): rerun this shard with `retrysim sweep --shard`"))
    })?;
    if manifest.schema != MANIFEST_SCHEMA {
        return Err(InputError::field(&shown, "schema", format!("\"{}\" is not {MANIFEST_SCHEMA}", manifest.schema)));
    }
    let ours = env!("CARGO_PKG_VERSION");
    if manifest.retrysim != ours {
        return Err(InputError::field(
            &shown,
            "retrysim",
            format!(
                "the shard was made by retrysim {}, this is {ours}: results of different versions do not merge; rerun the shard",
                manifest.retrysim
            ),
        ));
    }
    if !manifest.sha256.contains_key(wanted) {
        return Err(InputError::field(&shown, "sha256", format!("records no checksum of {wanted}: rerun this shard")));
    }
    let mut verified = Vec::new();
    for (name, recorded) in &manifest.sha256 {
        if name.contains('/') || name.contains('\\') || name.starts_with('.') {
            return Err(InputError::field(&shown, format!("sha256.{name}"), "names a file outside the shard's folder"));
        }
        let file: PathBuf = dir.join(name);
        let shown_file = file.display().to_string();
        let bytes = std::fs::metadata(&file)
            .and_then(|_| {
                crate::config::read::read_text(&file, crate::config::read::MAX_DATA_BYTES).map(String::into_bytes)
            })
            .map_err(|e| InputError::file(&shown_file, format!("cannot read a file the shard recorded: {e}")))?;
        let actual = sha256_hex(&bytes);
        if &actual != recorded {
            return Err(InputError::file(
                &shown_file,
                format!(
                    "changed since the shard wrote it (its SHA-256 is {actual}, {MANIFEST} recorded {recorded}): a shard's files must be merged as written; rerun this shard"
                ),
            ));
        }
        if name == wanted {
            verified = bytes;
        }
    }
    Ok(verified)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_standard_test_vector() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn a_changed_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("sweep.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("sweep.csv"), b"a,b\n").unwrap();
        let m = Manifest::of(&[("sweep.json", b"{}"), ("sweep.csv", b"a,b\n")]);
        std::fs::write(dir.path().join(MANIFEST), m.to_json()).unwrap();
        assert_eq!(verify(dir.path(), "sweep.json").unwrap(), b"{}");
        std::fs::write(dir.path().join("sweep.csv"), b"a,c\n").unwrap();
        let e = verify(dir.path(), "sweep.json").unwrap_err();
        assert!(e.file.ends_with("sweep.csv") && e.message.contains("changed since"), "{e}");
        let old = Manifest { retrysim: "0.0.1".into(), ..m };
        std::fs::write(dir.path().join(MANIFEST), old.to_json()).unwrap();
        let e = verify(dir.path(), "sweep.json").unwrap_err();
        assert!(e.message.contains("retrysim 0.0.1"), "{e}");
    }
}
