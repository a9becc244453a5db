//! Reading input files with a size limit, so that an endless input
//! (`/dev/zero`, a pipe that never ends) is refused instead of filling the
//! memory.

use std::path::Path;

/// The largest experiment, policy, empirical data or imported config file
/// read: 16 MiB, far more than any hand-written file, small enough to read
/// at once.
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The largest trace file (`import-traces`, `run --compare-traces`) or
/// output file read back (`merge`'s `sweep.json`, `plot`'s `summary.json`
/// and `timeseries.csv`): 1 GiB.
pub const MAX_DATA_BYTES: u64 = 1024 * 1024 * 1024;

/// Reads the UTF-8 text file at `path`, refusing one larger than `limit`
/// bytes after reading at most `limit + 1` of them, and anything but a
/// regular file up front (a FIFO would block, a device never end). The
/// error says what is wrong ("larger than the 16 MB limit of an input
/// file", "not a regular file", "not UTF-8 text", or the system's reason)
/// for the caller to name the file.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    retrysim_policy::load::read_bounded(path, limit)
}

/// [`read_text`] with the limit of an experiment or policy file.
pub fn read_input(path: &Path) -> std::io::Result<String> {
    read_text(path, MAX_INPUT_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_input_is_refused_after_the_limit() {
        #[cfg(unix)]
        {
            // A device is refused before a byte is read, a FIFO before `open`
            // (which would block until a writer comes).
            let e = read_input(Path::new("/dev/zero")).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
            let dir = tempfile::tempdir().unwrap();
            let fifo = dir.path().join("fifo");
            assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
            let e = read_input(&fifo).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
            assert!(read_input(dir.path()).unwrap_err().to_string().contains("a folder"));
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.toml");
        std::fs::write(&p, vec![b'#'; 1001]).unwrap();
        assert!(read_text(&p, 1000).unwrap_err().to_string().contains("larger than the 1000 bytes limit"));
        assert!(read_text(&p, 1000).is_err());
        assert_eq!(read_text(&p, 1001).unwrap().len(), 1001);
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(read_input(&p).unwrap_err().to_string().contains("UTF-8"));
    }
}
