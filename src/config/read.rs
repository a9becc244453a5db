//! Reading input files with a size limit, so that an endless input
//! (`/dev/zero`, a pipe that never ends) is refused instead of filling the
//! memory.

use std::io::Read;
use std::path::Path;

/// The largest experiment or policy file read: 16 MiB, far more than any
/// hand-written file, small enough to read at once.
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The largest output file read back (`merge`'s `sweep.json`, `plot`'s
/// `summary.json` and `timeseries.csv`): 1 GiB.
pub const MAX_DATA_BYTES: u64 = 1024 * 1024 * 1024;

/// `bytes` as a size for a message: "16 MB", "1 GB".
fn shown(bytes: u64) -> String {
    if bytes >= 1 << 30 { format!("{} GB", bytes >> 30) } else { format!("{} MB", bytes >> 20) }
}

/// Reads the text file at `path`, refusing one larger than `limit` bytes
/// after reading at most `limit + 1` of them. The error says what is wrong
/// ("larger than the 16 MB limit of an input file", "not UTF-8 text", or
/// the system's reason) for the caller to name the file.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than the {} limit of an input file", shown(limit)),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text".to_string()))
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
            let e = read_input(Path::new("/dev/zero")).unwrap_err();
            assert!(e.to_string().contains("larger than the 16 MB limit"), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.toml");
        std::fs::write(&p, vec![b'#'; 1001]).unwrap();
        assert!(read_text(&p, 1000).is_err());
        assert_eq!(read_text(&p, 1001).unwrap().len(), 1001);
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(read_input(&p).unwrap_err().to_string().contains("UTF-8"));
    }
}
