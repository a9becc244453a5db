//! Atomic file writes that refuse to overwrite inputs.

use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader never sees a half-written file. The file is not flushed to disk
/// (no `fsync`): the rename makes it atomic for other programs and against
/// an interruption, not durable against a power cut. Refuses to write over
/// any of `inputs` (the experiment and policy files that were read).
pub fn write_atomic(path: &Path, bytes: &[u8], inputs: &[PathBuf]) -> anyhow::Result<()> {
    if let Ok(target) = path.canonicalize() {
        for input in inputs {
            if input.canonicalize().is_ok_and(|i| i == target) {
                bail!("refusing to write {}: it is an input file of this run", path.display());
            }
        }
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create the output folder {}", dir.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    crate::interrupt::check()?;
    let mut f = std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    let written = f.write_all(bytes);
    drop(f);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", tmp.display()));
    }
    // Ctrl-C while writing: the file is not moved into place.
    if crate::interrupt::requested() {
        let _ = std::fs::remove_file(&tmp);
        return Err(crate::interrupt::Interrupted.into());
    }
    std::fs::rename(&tmp, path).with_context(|| format!("cannot move {} into place", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_refuses_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        write_atomic(&p, b"one", &[]).unwrap();
        write_atomic(&p, b"two", &[]).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let e = write_atomic(&p, b"three", std::slice::from_ref(&p)).unwrap_err();
        assert!(e.to_string().contains("input file"));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
    }
}
