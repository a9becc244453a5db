//! Output files: written atomically, never over an input, and safe with
//! special targets.
//!
//! A regular file (or a path that does not exist yet) is written to a
//! hidden temporary file beside it and renamed into place, so a reader
//! never sees half of it; the temporary file is removed on any failure.
//! A symbolic link is followed and its target replaced, so the link stays.
//! A character device or a FIFO (`/dev/stdout`, `/dev/null`, a named
//! pipe) and the descriptors under `/dev/fd/` and `/proc/self/fd/` are
//! written through, as any Unix tool does. Anything else (a folder, a
//! socket, a block device) is refused. Writes look at the interrupt flag
//! every 64 kB, so Ctrl-C stops a large write within milliseconds.

use anyhow::{Context, bail};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Bytes between two looks at the interrupt flag while writing.
const CHUNK: usize = 64 * 1024;

/// Symbolic links followed at most, as the kernel does (ELOOP).
const MAX_LINKS: usize = 40;

/// How an output path is written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A new file at this path (links resolved): temporary file and rename.
    Replace(PathBuf),
    /// An existing regular file at this path (links resolved), so its
    /// folder exists: temporary file and rename.
    Overwrite(PathBuf),
    /// A character device, a FIFO or a descriptor: opened and written as is.
    Through(PathBuf),
}

/// Whether `path` names one of this process's descriptors (`/dev/stdout`,
/// `/dev/fd/1`, `/proc/self/fd/1`): written through whatever they are.
fn is_descriptor(path: &Path) -> bool {
    let s = path.to_string_lossy();
    matches!(s.as_ref(), "/dev/stdout" | "/dev/stderr" | "/dev/stdin")
        || s.starts_with("/dev/fd/")
        || s.starts_with("/proc/self/fd/")
        || s.starts_with("/proc/thread-self/fd/")
}

/// What kind of file this is, in words, for a refusal.
fn kind_of(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_dir() { "a folder" } else { "not a regular file" }
}

/// Whether writing this file type goes through (character devices, FIFOs).
fn writes_through(ft: std::fs::FileType) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        ft.is_char_device() || ft.is_fifo()
    }
    #[cfg(not(unix))]
    {
        let _ = ft;
        false
    }
}

/// Decides how `path` is written, following symbolic links; with it, the
/// metadata of `path` itself when that is not a link (so that its identity
/// needs no second look).
fn target(path: &Path) -> anyhow::Result<(Target, Option<std::fs::Metadata>)> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if is_descriptor(&at) {
            return Ok((Target::Through(at), None));
        }
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Target::Replace(at), None)),
            Err(e) => bail!("cannot write {}: {e}", path.display()),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            let link = std::fs::read_link(&at).with_context(|| format!("cannot read the link {}", at.display()))?;
            at = if link.is_absolute() { link } else { at.parent().unwrap_or(Path::new("")).join(link) };
            continue;
        }
        if ft.is_file() || writes_through(ft) {
            let own = (at == path).then_some(meta);
            let how = if ft.is_file() { Target::Overwrite(at) } else { Target::Through(at) };
            return Ok((how, own));
        }
        let shown = if at == path { String::new() } else { format!(" (the target of its link, {})", at.display()) };
        bail!(
            "refusing to write {}{shown}: it is {}; give the path of a file (a character device or FIFO such as /dev/stdout works too)",
            path.display(),
            kind_of(ft)
        );
    }
    bail!("cannot write {}: more than {MAX_LINKS} symbolic links to follow", path.display())
}

/// The identity of an existing file (device and inode), so that a hard
/// link or another spelling of an input is still recognised.
#[cfg(unix)]
type Identity = (u64, u64);
#[cfg(not(unix))]
type Identity = PathBuf;

#[cfg(unix)]
fn identity(path: &Path) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(path: &Path) -> Option<Identity> {
    path.canonicalize().ok()
}

/// [`identity`] of `path` from metadata already read (not of a link).
#[cfg(unix)]
fn identity_of(_path: &Path, meta: &std::fs::Metadata) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity_of(path: &Path, _meta: &std::fs::Metadata) -> Option<Identity> {
    identity(path)
}

/// How `path` is written, after refusing it when it is one of `inputs`:
/// one look at a path that is not a link serves both.
fn inspect(path: &Path, inputs: &[PathBuf]) -> anyhow::Result<Target> {
    let (target, own) = target(path)?;
    let id = match own {
        Some(meta) => identity_of(path, &meta),
        None => identity(path),
    };
    refuse_identity(path, id, inputs)?;
    Ok(target)
}

/// [`identity`] of an input file, looked up once per process: the inputs
/// were read before anything is written, and every output is compared
/// with every input.
// `Identity` is `Copy` on Unix and a `PathBuf` elsewhere: one code for both.
#[cfg_attr(unix, allow(clippy::clone_on_copy))]
fn input_identity(path: &Path) -> Option<Identity> {
    static KNOWN: std::sync::Mutex<Vec<(PathBuf, Option<Identity>)>> = std::sync::Mutex::new(Vec::new());
    let mut known = KNOWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, id)) = known.iter().find(|(p, _)| p == path) {
        return id.clone();
    }
    let id = identity(path);
    known.push((path.to_path_buf(), id.clone()));
    id
}

/// Refuses `path` when it is one of `inputs`.
fn refuse_inputs(path: &Path, inputs: &[PathBuf]) -> anyhow::Result<()> {
    refuse_identity(path, identity(path), inputs)
}

/// Refuses `path`, whose identity is `id`, when it is one of `inputs`.
fn refuse_identity(path: &Path, id: Option<Identity>, inputs: &[PathBuf]) -> anyhow::Result<()> {
    let Some(out) = id else { return Ok(()) };
    if let Some(input) = inputs.iter().find(|i| input_identity(i).is_some_and(|id| id == out)) {
        let same = if input == path { String::new() } else { format!(" ({})", input.display()) };
        bail!("refusing to write {}: it is an input file of this command{same}", path.display());
    }
    Ok(())
}

/// Checks, before anything is written, that every one of `outputs` can be
/// written (no folder, socket or block device in the way) and that none of
/// them is one of `inputs`. Commands call it before they start, so that a
/// refusal never comes after some outputs are already in place.
pub fn check_outputs(outputs: &[PathBuf], inputs: &[PathBuf]) -> anyhow::Result<()> {
    for path in outputs {
        if let Target::Replace(p) | Target::Overwrite(p) = inspect(path, inputs)?
            && p != *path
        {
            refuse_inputs(&p, inputs)?;
        }
    }
    Ok(())
}

/// Refuses an output folder that holds one of `inputs` under a chart's
/// name (`*.png`, `*.svg`), before charts are drawn into it.
pub fn check_chart_folder(dir: &Path, inputs: &[PathBuf]) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    let charts: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "png" || x == "svg"))
        .collect();
    check_outputs(&charts, inputs)
}

/// Moves a file written elsewhere (a chart drawn by a library into a
/// temporary file) to `path` as [`write_atomic`] would write it there.
pub fn install(written: &Path, path: &Path, inputs: &[PathBuf]) -> anyhow::Result<()> {
    let bytes = std::fs::read(written).with_context(|| format!("cannot read {}", written.display()));
    let _ = std::fs::remove_file(written);
    write_atomic(path, &bytes?, inputs)
}

/// Writes `bytes` to `path` (see the module documentation): atomically for
/// a regular file, through for a device or FIFO. The file is not flushed
/// to disk (no `fsync`): the rename makes it atomic for other programs and
/// against an interruption, not durable against a power cut. Refuses to
/// write over any of `inputs` (the files the command read).
pub fn write_atomic(path: &Path, bytes: &[u8], inputs: &[PathBuf]) -> anyhow::Result<()> {
    // The bytes are all here: written as they are, without a buffer to
    // copy them into first.
    write_to(path, inputs, 0, |w| {
        for chunk in bytes.chunks(CHUNK) {
            w.write_all(chunk)?;
        }
        Ok(())
    })
}

/// [`write_atomic`] for output produced as it is written: `fill` writes
/// into a buffered writer that fails with [`crate::interrupt::Interrupted`]
/// once Ctrl-C is pressed.
pub fn write_streamed(
    path: &Path,
    inputs: &[PathBuf],
    fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    write_to(path, inputs, CHUNK, fill)
}

/// [`write_streamed`] through a buffer of `buffer` bytes (0: none, for
/// callers that write large slices).
fn write_to(
    path: &Path,
    inputs: &[PathBuf],
    buffer: usize,
    fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let target = inspect(path, inputs)?;
    crate::interrupt::check()?;
    match target {
        Target::Through(p) => {
            // This process's own stdout and stderr are written through their
            // descriptor, so that what is printed after them follows them.
            let s = p.to_string_lossy();
            let result = if matches!(s.as_ref(), "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1") {
                fill_file(std::io::stdout().lock(), buffer, fill)
            } else if matches!(s.as_ref(), "/dev/stderr" | "/dev/fd/2" | "/proc/self/fd/2") {
                fill_file(std::io::stderr().lock(), buffer, fill)
            } else {
                let file =
                    OpenOptions::new().write(true).open(&p).with_context(|| format!("cannot write {}", p.display()))?;
                fill_file(file, buffer, fill)
            };
            result.map_err(|e| interrupted_or(e, &p))
        }
        Target::Replace(p) | Target::Overwrite(p) if p != path => {
            refuse_inputs(&p, inputs)?;
            replace(&p, buffer, fill, true)
        }
        // Checked above; an existing file's folder is there.
        Target::Replace(p) => replace(&p, buffer, fill, true),
        Target::Overwrite(p) => replace(&p, buffer, fill, false),
    }
}

/// Writes a new file beside `path` and renames it over `path`; the
/// temporary file never outlives a failure.
fn replace(
    path: &Path,
    buffer: usize,
    fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
    make_folder: bool,
) -> anyhow::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if make_folder {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create the output folder {}", dir.display()))?;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let file = File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    let result = fill_file(file, buffer, fill)
        .map_err(|e| interrupted_or(e, &tmp))
        // Ctrl-C while writing: the file is not moved into place.
        .and_then(|()| Ok(crate::interrupt::check()?))
        .and_then(|()| move_into_place(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Renames `tmp` over `path`. Where the file system can swap two names
/// atomically (Linux's `renameat2` with `RENAME_EXCHANGE`), an existing
/// `path` is swapped with `tmp` and the old file, now at `tmp`, removed:
/// `path` names the old file and then the new one, never nothing, as with
/// a rename. On ext4 a rename over an existing file also starts writing
/// the new file to disk and waits for it (the `auto_da_alloc` safeguard):
/// about 0.1 ms of CPU and up to several milliseconds of waiting per
/// file, against 20 µs for the swap. A new `path`, or a file system
/// without the swap, gets the plain rename.
fn move_into_place(tmp: &Path, path: &Path) -> anyhow::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        if renameat_with(CWD, tmp, CWD, path, RenameFlags::EXCHANGE).is_ok() {
            if std::fs::symlink_metadata(tmp).is_ok_and(|m| m.file_type().is_file()) {
                // The old contents; a failure to remove them leaves a hidden
                // temporary file, never a missing output.
                let _ = std::fs::remove_file(tmp);
                return Ok(());
            }
            // Something else (a folder made since the check) was swapped
            // out: it goes back, and the move fails as a rename would.
            let _ = renameat_with(CWD, tmp, CWD, path, RenameFlags::EXCHANGE);
            bail!("cannot move {} into place: it is no longer a regular file", path.display());
        }
    }
    std::fs::rename(tmp, path).with_context(|| format!("cannot move {} into place", path.display()))
}

/// Runs `fill` on `file` through a writer that looks at the interrupt
/// flag, with a buffer of `buffer` bytes (`BufWriter` with none passes
/// every write straight through).
fn fill_file<W: Write>(
    file: W,
    buffer: usize,
    fill: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut w = BufWriter::with_capacity(buffer, Interruptible(file));
    fill(&mut w)?;
    w.flush()?;
    Ok(())
}

/// The error of a failed write: [`crate::interrupt::Interrupted`] when the
/// flag caused it, else the I/O error with the file named.
fn interrupted_or(e: anyhow::Error, path: &Path) -> anyhow::Error {
    if crate::interrupt::requested() {
        crate::interrupt::Interrupted.into()
    } else {
        e.context(format!("cannot write {}", path.display()))
    }
}

/// A writer that fails once a stop has been requested.
struct Interruptible<W>(W);

impl<W: Write> Write for Interruptible<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if crate::interrupt::requested() {
            return Err(std::io::Error::other(crate::interrupt::Interrupted));
        }
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temporaries(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect()
    }

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
        // Another spelling of the same input, and a hard link to it.
        let other = dir.path().join(".").join("a.txt");
        assert!(write_atomic(&other, b"x", std::slice::from_ref(&p)).is_err());
        let hard = dir.path().join("hard.txt");
        std::fs::hard_link(&p, &hard).unwrap();
        assert!(write_atomic(&hard, b"x", std::slice::from_ref(&p)).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        // A link to it, checked before anything is written and when writing.
        #[cfg(unix)]
        {
            let link = dir.path().join("link.txt");
            std::os::unix::fs::symlink("a.txt", &link).unwrap();
            assert!(check_outputs(std::slice::from_ref(&link), std::slice::from_ref(&p)).is_err());
            assert!(write_atomic(&link, b"x", std::slice::from_ref(&p)).is_err());
            assert!(write_streamed(&link, std::slice::from_ref(&p), |w| Ok(w.write_all(b"x")?)).is_err());
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        }
    }

    #[test]
    fn written_whole_and_streamed_in_pieces_give_the_same_file() {
        // More than two chunks, so that the unbuffered write takes several.
        let bytes: Vec<u8> = (0..3 * CHUNK + 123).map(|i| (i * 7 % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join("whole.bin");
        let pieces = dir.path().join("pieces.bin");
        write_atomic(&whole, &bytes, &[]).unwrap();
        write_streamed(&pieces, &[], |w| {
            for piece in bytes.chunks(1000) {
                w.write_all(piece)?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(std::fs::read(&whole).unwrap(), bytes);
        assert_eq!(std::fs::read(&pieces).unwrap(), bytes);
        assert!(temporaries(dir.path()).is_empty());
    }

    #[test]
    fn a_folder_in_the_way_is_refused_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("summary.json");
        std::fs::create_dir(&p).unwrap();
        let e = write_atomic(&p, b"{}", &[]).unwrap_err();
        assert!(format!("{e:#}").contains("a folder"), "{e:#}");
        assert!(temporaries(dir.path()).is_empty());
        assert!(check_outputs(std::slice::from_ref(&p), &[]).is_err());
    }

    #[test]
    fn a_failed_rename_removes_the_temporary_file() {
        // The check and the rename race with whoever makes a folder at the
        // target; the rename then fails and the temporary file must go.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        let e = replace(
            &p,
            0,
            |w: &mut dyn Write| {
                std::fs::create_dir(&p).unwrap();
                std::fs::write(p.join("keep"), b"x").unwrap();
                w.write_all(b"data")?;
                Ok(())
            },
            true,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("cannot move"), "{e:#}");
        assert!(temporaries(dir.path()).is_empty(), "{:?}", temporaries(dir.path()));
    }

    #[test]
    fn a_missing_folder_is_made_and_an_existing_file_replaced_in_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/out.txt");
        assert_eq!(target(&p).unwrap().0, Target::Replace(p.clone()));
        write_atomic(&p, b"first", &[]).unwrap();
        assert_eq!(target(&p).unwrap().0, Target::Overwrite(p.clone()));
        write_atomic(&p, b"second", &[]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        assert!(temporaries(&dir.path().join("a/b")).is_empty());
    }

    #[test]
    fn replacing_a_file_leaves_only_the_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        std::fs::write(&p, b"old contents").unwrap();
        write_atomic(&p, b"new", &[]).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["out.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_followed_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write_atomic(&link, b"new", &[]).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // A dangling link: its target is created.
        let dangling = dir.path().join("dangling.txt");
        std::os::unix::fs::symlink("made.txt", &dangling).unwrap();
        write_atomic(&dangling, b"made", &[]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).unwrap(), "made");
        // A link to an input is an input.
        assert!(write_atomic(&link, b"x", std::slice::from_ref(&real)).is_err());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }

    #[cfg(unix)]
    #[test]
    fn devices_and_fifos_are_written_through_and_sockets_refused() {
        let is_char = |p: &str| {
            use std::os::unix::fs::FileTypeExt;
            std::fs::symlink_metadata(p).unwrap().file_type().is_char_device()
        };
        write_atomic(Path::new("/dev/null"), b"gone", &[]).unwrap();
        assert!(is_char("/dev/null"), "/dev/null must stay a device");
        let e = write_atomic(Path::new("/dev/full"), &[0u8; 100_000], &[]).unwrap_err();
        assert!(format!("{e:#}").contains("/dev/full"), "{e:#}");
        assert!(is_char("/dev/full"), "/dev/full must stay a device");

        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let mut reader =
                std::process::Command::new("cat").arg(&fifo).stdout(std::process::Stdio::piped()).spawn().unwrap();
            write_atomic(&fifo, b"through the pipe\n", &[]).unwrap();
            use std::os::unix::fs::FileTypeExt;
            let still_fifo = std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo();
            if !still_fifo {
                let _ = reader.kill();
            }
            let out = reader.wait_with_output().unwrap();
            assert!(still_fifo, "the FIFO was replaced by a file");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "through the pipe\n");
        } else {
            eprintln!("SKIPPED the FIFO part: mkfifo is not available on this machine");
        }

        let sock = dir.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = write_atomic(&sock, b"x", &[]).unwrap_err();
        assert!(format!("{e:#}").contains("a socket"), "{e:#}");
        assert!(check_outputs(&[sock], &[]).is_err());
        assert!(temporaries(dir.path()).is_empty());
    }
}
